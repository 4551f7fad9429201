"""The board's talk: the log, the agents, replies, direct messages, acknowledgements and inboxes.

``Board``'s front door for what agents and people say to each other and what the log holds: each
verb checks what a face sent, one argument at a time (the nouns' checks), and hands the checked
values to ``coord.core.activity`` (or ``coord.core.tripwire`` for a change to files others hold).
A part of ``Board`` (``class Board(Talk)``), in a module of its own to keep each small.
"""

from __future__ import annotations

from typing import Any

from coord import model
from coord.core.activity import Activity
from coord.core.tripwire import Tripwire, check_report
from coord.errors import InvalidInput
from coord.limits import INBOX_PAGE, MAX_INBOX_PAGE, MAX_TITLE, MIN_PRUNE_AGE
from coord.model import Agent, Event, Item, Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class Talk:
    """The log, the agents, replies and inboxes; ``Board`` sets the parts it reads."""

    _activity: Activity
    _tripwire: Tripwire

    add: Callable[..., Item]  # Board's own verb, which a direct message uses

    def events(
        self,
        after: int = 0,
        limit: int = 500,
        item_id: int | None = None,
        *,
        max_bytes: int | None = None,
    ) -> list[Event]:
        """``max_bytes``: the page ends at the event that brings its details to that many
        bytes (the first always comes), and nothing past it is read."""
        if not 1 <= limit <= 5000:
            raise InvalidInput("limit must be between 1 and 5000", field="limit")
        return self._activity.events(after, limit, item_id, max_bytes)

    def last_seq(self) -> int:
        return self._activity.last_seq()

    def agents(self, *, everyone: bool = False) -> list[Agent]:
        """The names that acted as agents (``Agent.worked``), most recently seen first;
        ``everyone``: the people who only added, answered or replied too."""
        found = self._activity.agents()
        return found if everyone else [a for a in found if a.worked]

    def prune_agents(self, *, older_than: Any, agent: str) -> dict[str, Any]:
        """Forget everyone not seen for ``older_than`` seconds who would lose nothing by it
        (see ``Activity.prune_agents``): ``{"pruned": [names], "kept": [{name, why}]}``."""
        agent = model.check_agent(agent)
        if (
            isinstance(older_than, bool)
            or not isinstance(older_than, int | float)
            or not MIN_PRUNE_AGE <= older_than <= model.MAX_INTEGER
        ):
            raise InvalidInput(
                f"older_than must be at least {MIN_PRUNE_AGE:g} seconds, an hour: an agent seen "
                "more recently may be between two calls",
                field="older_than",
            )
        return self._activity.prune_agents(float(older_than), agent)

    def reply(self, item_id: Any, *, agent: str, body: Any) -> Reply:
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        body = model.check_body(body)
        if not body.strip():
            raise InvalidInput("a reply needs some text", field="body")
        return self._activity.reply(ref, agent, body)

    def send(self, to: Any, text: Any, *, agent: str) -> Item:
        """A direct message: a note addressed to ``to``, which reaches its inbox (and the log,
        so `coord watch` and the page show it). Its first line is the title; all of it the
        body, so a long message loses nothing."""
        agent = model.check_agent(agent)
        to = model.check_agent(to)
        body = model.check_body(text)
        if not body.strip():
            raise InvalidInput("a message needs some text", field="text")
        first = body.strip().splitlines()[0].strip()
        title = first if len(first) <= MAX_TITLE else first[: MAX_TITLE - 1] + "…"
        return self.add(title, created_by=agent, kind="note", body=body, to=to, labels=["message"])

    def report_held_change(
        self,
        *,
        agent: Any,
        files: Any,
        command: Any = None,
        tool: Any = None,
        more_files: Any = 0,
    ) -> dict[str, Any]:
        """``agent``'s tool call changed files other agents hold (the after-tool check saw
        it): one ``held_files_changed`` event, which reaches each holder's inbox."""
        return self._tripwire.report(*check_report(agent, files, command, tool, more_files))

    def ack(self, item_id: Any, *, agent: str) -> bool:
        """Acknowledge an item (seen it, agree). Returns False if already acknowledged."""
        agent = model.check_agent(agent)
        return self._activity.ack(model.check_item_ref(item_id), agent)

    def inbox(self, agent: str, *, peek: bool = False, limit: int = INBOX_PAGE) -> list[Event]:
        """What others said to ``agent`` or did to its items since it last looked, a page of
        at most ``limit`` (1 to ``MAX_INBOX_PAGE``); what is past the page stays unread."""
        if not 1 <= limit <= MAX_INBOX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_INBOX_PAGE}", field="limit")
        return self._activity.inbox(model.check_agent(agent), peek, limit)
