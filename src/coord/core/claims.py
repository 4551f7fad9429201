"""Winning a claim: one item by id, the best ready one, or a batch for agents started at once.

Exactly one of any number of concurrent claimers wins: the decision is made inside one write
transaction, and the claim takes the item's files in that same transaction (both or neither).
Each claim returns a fencing token one higher than the item's last.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from coord import model
from coord.core import reservations, rules
from coord.core.context import BoardContext
from coord.model import Claim, Item, Reservation
from coord.storage.base import WriteTx
from coord.times import iso


class Claims:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def claim(self, ref: int | str, agent: str, lease: float) -> Claim:
        with self.ctx.storage.write() as tx:
            now = self.ctx.clock()
            item = rules.require_item(tx, ref)
            rules.ensure_claimable(item, now, agent)
            live = tx.live_reservations(now, near=item.files) if item.files else []
            return self.take(tx, item, agent, lease, now, live)

    def claim_next(self, agent: str, kind: str | None, label: str | None, lease: float) -> Claim:
        kinds = (kind,) if kind else model.WORK_KINDS
        with self.ctx.storage.write() as tx:
            now = self.ctx.clock()
            expires = now + lease
            # The usual case, a pending item without files, is one statement; takeovers and
            # items with files come here only when they are first in line.
            item = tx.take_first_pending(agent, kinds, label, now, expires)
            if item is not None:
                token = item.fencing_token
                details = {"token": token, "lease_expires_at": iso(expires)}
                self.ctx.changes.record(tx, agent, item.id, "claimed", now, details)
                return Claim(item, agent, token, expires)
            for item, live in self._ready_for(tx, agent, kinds, label, now):
                return self.take(tx, item, agent, lease, now, live)
        raise rules.nothing_ready(kind, label)

    def claim_batch(
        self, count: int, agent: str, kind: str | None, label: str | None, lease: float
    ) -> list[Claim]:
        kinds = (kind,) if kind else model.WORK_KINDS
        claims: list[Claim] = []
        with self.ctx.storage.write() as tx:
            now = self.ctx.clock()
            for item, live in self._ready_for(tx, agent, kinds, label, now):
                chosen = [c.item.files for c in claims]
                if reservations.pairwise_disjoint(chosen, item.files, self.ctx.is_file):
                    claims.append(self.take(tx, item, agent, lease, now, live))
                    if len(claims) == count:
                        break
        if not claims:
            raise rules.nothing_ready(kind, label)
        return claims

    def take(
        self,
        tx: WriteTx,
        item: Item,
        agent: str,
        lease: float,
        now: float,
        live: list[Reservation],
    ) -> Claim:
        """The claim itself, with the item's files, in the caller's write transaction.

        ``item`` must be claimable (the caller checked); ``live`` holds at least every live
        reservation near its files, and gets the new ones appended."""
        if item.files:
            conflicts = reservations.find_conflicts(agent, item.files, True, live, self.ctx.is_file)
            if conflicts:
                raise reservations.refusal(conflicts, f"claim of item {item.id}")
        token = item.fencing_token + 1
        expires = now + lease
        takeover_from = item.claimed_by if item.state == "claimed" else None
        changes = {
            "state": "claimed",
            "claimed_by": agent,
            "fencing_token": token,
            "lease_expires_at": expires,
        }
        details: dict[str, Any] = {"token": token, "lease_expires_at": iso(expires)}
        if takeover_from is not None:
            details["takeover_from"] = takeover_from
            details["expired_at"] = iso(item.lease_expires_at)
            tx.delete_item_reservations(item.id, takeover_from)  # expired with its lease
        for pattern in item.files:
            tx.insert_reservation(
                agent=agent,
                pattern=pattern,
                exclusive=True,
                item_id=item.id,
                reason=f"claim of item {item.id}",
                now=now,
                expires_at=expires,
            )
            live.append(Reservation(0, agent, pattern, True, item.id, "", now, expires))
        if item.files:
            details["files"] = list(item.files)
        kind = "takeover" if takeover_from is not None else "claimed"
        claimed = self.ctx.changes.apply(
            tx, item, changes, agent, kind, now, details, files_held_by=()
        )
        return Claim(claimed, agent, token, expires, takeover_from)

    def _ready_for(
        self, tx: WriteTx, agent: str, kinds: Sequence[str], label: str | None, now: float
    ) -> Iterator[tuple[Item, list[Reservation]]]:
        """Claimable items in claim order, skipping those whose files others hold."""
        after: tuple[int, int] | None = None
        limit = 1  # the first candidate usually wins; fetch more only while skipping
        while batch := tx.claimable_items(now, kinds, label, after, limit=limit):
            limit = min(limit * 4, 64)
            for item in batch:
                live = tx.live_reservations(now, near=item.files) if item.files else []
                if item.files and reservations.find_conflicts(
                    agent, item.files, True, live, self.ctx.is_file
                ):
                    continue
                yield item, live
            after = (batch[-1].priority, batch[-1].id)
