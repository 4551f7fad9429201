"""Who said and did what: the event log, the agents seen, replies, acknowledgements, and each
agent's inbox of what others said to it or did to its items since it last looked."""

from __future__ import annotations

import re
from typing import Any

from coord.core import rules
from coord.core.context import BoardContext
from coord.limits import MAX_INBOX_PAGE
from coord.model import Agent, Event, Reply
from coord.storage.base import ReadTx

_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9._:+-]{0,63})")


class Activity:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def events(
        self, after: int, limit: int, item_id: int | None, max_bytes: int | None = None
    ) -> list[Event]:
        with self.ctx.storage.read() as tx:
            return tx.events_after(after, limit, item_id=item_id, max_bytes=max_bytes)

    def last_seq(self) -> int:
        with self.ctx.storage.read() as tx:
            return tx.last_seq()

    def agents(self) -> list[Agent]:
        with self.ctx.storage.read() as tx:
            return tx.agents()

    def prune_agents(self, older_than: float, by: str) -> dict[str, Any]:
        """Forget the names not seen for ``older_than`` seconds that would lose nothing: no
        claim (a lapsed one is still theirs until someone takes it over), no live reservation,
        nothing said to them or done to their items after they were last seen that they have
        not read (their inbox; what came while they were around, such as the creation of an
        item they then claimed, they had the chance to read). The rest are kept, each with
        why. One event, ``agents_pruned``, names the forgotten; their past stays in the log,
        and a forgotten name that comes back starts its inbox from the beginning."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            reserving: dict[str, int] = {}
            for hold in tx.live_reservations(now):
                reserving[hold.agent] = reserving.get(hold.agent, 0) + 1
            pruned: list[str] = []
            kept: list[dict[str, Any]] = []
            for agent in tx.agents():
                if now - agent.last_seen < older_than:
                    continue
                keeps = []
                if agent.holding:
                    keeps.append(f"holds {_items_text(agent.holding)}")
                if agent.name in reserving:
                    keeps.append(f"holds {reserving[agent.name]} reservation(s)")
                if _told_since_seen(tx, agent):
                    keeps.append("was told something after it was last seen (unread inbox)")
                if keeps:
                    kept.append({"name": agent.name, "why": "; ".join(keeps)})
                else:
                    pruned.append(agent.name)
            if pruned:
                tx.delete_agents(pruned)
                details = {"agents": pruned, "older_than_seconds": older_than}
                self.ctx.changes.record(tx, by, None, "agents_pruned", now, details)
        self.ctx.changes.forget(set(pruned))
        return {"pruned": pruned, "kept": kept, "older_than_seconds": older_than}

    def reply(self, ref: int | str, agent: str, body: str) -> Reply:
        """A reply on the item; ``@name`` in it reaches that agent's inbox."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item_id = rules.require_item(tx, ref).id
            reply_id = tx.add_reply(item_id, agent, body, now)
            mentions = sorted(set(_MENTION.findall(body)) - {agent})
            details = {"reply_id": reply_id, "mentions": mentions, "excerpt": body[:200]}
            self.ctx.changes.record(tx, agent, item_id, "reply", now, details)
            return Reply(reply_id, item_id, agent, body, now)

    def ack(self, ref: int | str, agent: str) -> bool:
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item_id = rules.require_item(tx, ref).id
            added = tx.add_ack(item_id, agent, now)
            if added:
                self.ctx.changes.record(tx, agent, item_id, "ack", now, {})
            else:
                self.ctx.changes.touch(tx, agent, now)
            return added

    def inbox(self, agent: str, peek: bool, limit: int) -> list[Event]:
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            cursor = tx.inbox_cursor(agent)
            found = tx.inbox_events(agent, cursor, limit)
            if not peek:
                # Past a full page, resume after what we showed; otherwise all is seen.
                seen = found[-1].seq if len(found) == limit else tx.last_seq()
                self.ctx.changes.work(tx, agent, now)
                tx.set_inbox_cursor(agent, seen, now)
            return found


def _items_text(ids: tuple[int, ...]) -> str:
    return f"item {ids[0]}" if len(ids) == 1 else f"items {', '.join(map(str, ids))}"


def _told_since_seen(tx: ReadTx, agent: Agent, pages: int = 5) -> bool:
    """Whether an unread inbox event of ``agent`` came after it was last seen. The log is in
    time order, so the last unread event is the newest; past ``pages`` pages, say yes."""
    after = tx.inbox_cursor(agent.name)
    for _ in range(pages):
        found = tx.inbox_events(agent.name, after, MAX_INBOX_PAGE)
        if len(found) < MAX_INBOX_PAGE:
            return bool(found) and found[-1].at > agent.last_seen
        after = found[-1].seq
    return True
