"""Who said and did what: the event log, the agents seen, replies, acknowledgements, and each
agent's inbox of what others said to it or did to its items since it last looked."""

from __future__ import annotations

import re

from coord.core import rules
from coord.core.context import BoardContext
from coord.model import Agent, Event, Reply

_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9._:+-]{0,63})")


class Activity:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def events(self, after: int, limit: int, item_id: int | None) -> list[Event]:
        with self.ctx.storage.read() as tx:
            return tx.events_after(after, limit, item_id=item_id)

    def last_seq(self) -> int:
        with self.ctx.storage.read() as tx:
            return tx.last_seq()

    def agents(self) -> list[Agent]:
        with self.ctx.storage.read() as tx:
            return tx.agents()

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
                tx.set_inbox_cursor(agent, seen, now)
            return found
