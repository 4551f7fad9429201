"""What becomes of a live claim: kept (heartbeat), given back (release), finished (done, with
the evidence of its checks judged), or held while a human is asked, up to the escalation
bound (escalate, answer).

Every write about a claim carries its fencing token; a stale token changes nothing and is
refused as ``lease_lost`` (the zombie check, ``rules.ensure_holder``).
"""

from __future__ import annotations

from typing import Any

from coord.core import rules, worktree_holds
from coord.core.context import BoardContext
from coord.core.evidence import judge
from coord.errors import Conflict, NotWaiting
from coord.model import Claim, Item
from coord.times import iso


class Leases:
    def __init__(self, ctx: BoardContext, escalation_hold_seconds: float) -> None:
        self.ctx = ctx
        # How long a question may wait with the claim and files held: past it, the item can
        # be taken over like any lapsed claim (a forgotten question must not hold files).
        self.escalation_hold_seconds = escalation_hold_seconds

    def heartbeat(self, ref: int | str, agent: str, token: int, lease: float) -> Claim:
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            expires = now + lease
            if item.question is not None and item.lease_expires_at is not None:
                expires = max(expires, item.lease_expires_at)  # never shortens the wait
            # a worktree item's files stay held past its lease (a claim made before that rule
            # gets it here)
            held_until = worktree_holds.hold_until(item.branch is not None, expires)
            tx.extend_item_reservations(item.id, agent, held_until)
            changes = {"lease_expires_at": expires}
            details = {"token": token, "lease_expires_at": iso(expires)}
            extended = self.ctx.changes.apply(tx, item, changes, agent, "heartbeat", now, details)
            return Claim(extended, agent, token, expires)

    def release(self, ref: int | str, agent: str, token: int, reason: str) -> Item:
        changes = {"state": "pending", "claimed_by": None}
        return self._end(ref, agent, token, "released", changes, {"reason": reason})

    def done(
        self,
        ref: int | str,
        agent: str,
        token: int,
        summary: str,
        runs: list[dict[str, Any]] | None,
        skip_reason: str | None,
    ) -> Item:
        """Close the item if its checks passed in ``runs`` or ``skip_reason`` is given; a
        failed run is recorded too, and the item stays claimed."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            if item.branch is not None:  # merged is the only done of a worktree item
                raise Conflict(
                    f"item {item.ref} was claimed with a worktree: submit its branch head to "
                    "land it (it is done once merged), or release it",
                    id=item.id,
                    branch=item.branch,
                )
            record, refusal = judge(item, runs, skip_reason, agent, now)
            if refusal is None:
                tx.delete_item_reservations(item.id, agent)
                changes: dict[str, Any] = {
                    "state": "done",
                    "lease_expires_at": None,
                    "question": None,
                    "closed_at": now,
                }
                details: dict[str, Any] = {"token": token, "summary": summary}
                if record is not None:
                    changes["evidence"] = record
                    details["checks_passed"] = record.get("passed")
                if skip_reason is not None:
                    details["checks_skipped"] = skip_reason
                return self.ctx.changes.apply(tx, item, changes, agent, "done", now, details)
            if record is not None:  # the failed run is news: keep it, keep the claim
                changes = {"evidence": record}
                details = {"token": token, "failed": refusal.details.get("failed", [])}
                self.ctx.changes.apply(tx, item, changes, agent, "checks_failed", now, details)
        raise refusal

    def escalate(self, ref: int | str, agent: str, token: int, question: str) -> Item:
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            # Asking (or asking again) holds the claim and its files up to the bound.
            expires = now + self.escalation_hold_seconds
            held_until = worktree_holds.hold_until(item.branch is not None, expires)
            tx.extend_item_reservations(item.id, agent, held_until)
            changes: dict[str, Any] = {
                "question": question,
                "escalate_to": item.escalate_to or self.ctx.escalate_to,
                "lease_expires_at": expires,
            }
            details = {"token": token, **changes, "lease_expires_at": iso(expires)}
            return self.ctx.changes.apply(tx, item, changes, agent, "escalated", now, details)

    def answer(self, ref: int | str, agent: str, text: str) -> Item:
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            if item.state != "claimed" or item.question is None:
                raise NotWaiting(
                    f"item {item.ref} is not waiting for an answer (it is {item.shown_state}); "
                    "reply instead: `coord reply`",
                    id=item.id,
                    state=item.shown_state,
                )
            holder = item.claimed_by or ""
            expires = now + self.ctx.default_lease_seconds
            held_until = worktree_holds.hold_until(item.branch is not None, expires)
            tx.extend_item_reservations(item.id, holder, held_until)
            details = {
                "question": item.question,
                "answer": text[:2000],
                "reply_id": tx.add_reply(item.id, agent, text, now),
                "holder": holder,
                "lease_expires_at": iso(expires),
            }
            changes = {"question": None, "lease_expires_at": expires}
            return self.ctx.changes.apply(tx, item, changes, agent, "answered", now, details)

    def _end(
        self,
        ref: int | str,
        agent: str,
        token: int,
        kind: str,
        changes: dict[str, Any],
        details: dict[str, Any],
    ) -> Item:
        """End the claim: the holder's files are freed with it."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            changes = {**changes, "lease_expires_at": None, "question": None}
            tx.delete_item_reservations(item.id, agent)
            return self.ctx.changes.apply(
                tx, item, changes, agent, kind, now, {"token": token, **details}
            )
