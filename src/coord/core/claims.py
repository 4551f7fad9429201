"""Winning a claim: one item by id, the best ready one, or a batch for agents started at once.

Exactly one of any number of concurrent claimers wins: the decision is made inside one write
transaction, and the claim takes the item's files in that same transaction (both or neither).
Each claim returns a fencing token one higher than the item's last.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from coord import model
from coord.core import landings, reservations, rules, worktree_holds
from coord.core.context import BoardContext
from coord.errors import AlreadyClaimed, NothingReady
from coord.fast.prefix_index import PrefixIndex
from coord.limits import MAX_CLAIM_SCAN
from coord.model import Claim, Item, Reservation, WorktreeSpec
from coord.storage.base import ReadTx, WriteTx
from coord.times import iso


class Claims:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def claim(
        self, ref: int | str, agent: str, lease: float, *, worktree: WorktreeSpec | None = None
    ) -> Claim:
        """``worktree``: its record is written in the claim's transaction (``landings``)."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_claimable(item, now, agent)
            _ensure_first_in_line(tx, item, agent, now)
            live = worktree_holds.live_holds(tx, now, near=item.files) if item.files else []
            return self.take(tx, item, agent, lease, now, live, worktree=worktree)

    def claim_next(
        self,
        agent: str,
        kind: str | None,
        label: str | None,
        lease: float,
        *,
        worktree: WorktreeSpec | None = None,
    ) -> Claim:
        kinds = (kind,) if kind else model.WORK_KINDS
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            expires = now + lease
            # The usual case, a pending item without files, is one statement; takeovers and
            # items with files come here only when they are first in line. A claim with a
            # worktree writes its record too: the general path.
            item = None
            if worktree is None:
                item = tx.take_first_pending(agent, kinds, label, now, expires)
            if item is not None:
                token = item.fencing_token
                details = {"token": token, "lease_expires_at": iso(expires)}
                self.ctx.changes.record(tx, agent, item.id, "claimed", now, details, worked=True)
                return Claim(item, agent, token, expires)
            scan = _Scan(self, tx, agent, now)
            for item, live in scan.ready(kinds, label):
                return self.take(tx, item, agent, lease, now, live, worktree=worktree)
        raise scan.nothing_ready(kind, label)

    def claim_batch(
        self, count: int, agent: str, kind: str | None, label: str | None, lease: float
    ) -> list[Claim]:
        """The greedy maximal set: ready items in claim order, each taken unless its files
        overlap one already taken in this batch (``take`` adds them to the holds the next
        candidates are judged against) or held by someone else. One transaction."""
        kinds = (kind,) if kind else model.WORK_KINDS
        claims: list[Claim] = []
        taken: PrefixIndex[str] = PrefixIndex()  # the files of this batch's claims
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            scan = _Scan(self, tx, agent, now)
            for item, live in scan.ready(kinds, label):
                if reservations.pairwise_disjoint(
                    [taken.near_any(item.files)], item.files, self.ctx.is_file
                ):
                    claims.append(self.take(tx, item, agent, lease, now, live))
                    for pattern in item.files:
                        taken.add(pattern, pattern)
                    if len(claims) == count:
                        break
                else:
                    scan.skipped += 1
        if not claims:
            raise scan.nothing_ready(kind, label)
        return claims

    def ready_now(self, tx: ReadTx, agent: str, now: float) -> Iterator[Item]:
        """The items ``agent`` could claim now, in claim order, read in ``tx``: claim-next's
        own scan, so that a refusal's ``other_work`` (``coord.core.next_steps``) names only
        what a claim would take; nothing is written."""
        for item, _live in _Scan(self, tx, agent, now).ready(model.WORK_KINDS, None):
            yield item

    def take(
        self,
        tx: WriteTx,
        item: Item,
        agent: str,
        lease: float,
        now: float,
        live: list[Reservation],
        *,
        by_agent: bool = True,
        worktree: WorktreeSpec | None = None,
    ) -> Claim:
        """The claim itself, with the item's files, in the caller's write transaction.

        ``item`` must be claimable (the caller checked); ``live`` holds at least every live
        reservation near its files, and gets the new ones appended. ``by_agent`` False: made
        for ``agent`` by someone else (a design document's reservation line, adopted)."""
        if item.files:
            # an item sent back (the queue's holds) or a lapsed worktree claim's (its own)
            others = landings.others_holds(item, live)
            conflicts = reservations.find_conflicts(
                agent, item.files, True, others, self.ctx.is_file
            )
            if conflicts:
                raise reservations.refusal(conflicts, f"claim of item {item.id}", claim_of=item.id)
        token = item.fencing_token + 1
        expires = now + lease
        takeover_from = item.claimed_by if item.state == "claimed" else None
        changes = {
            "state": "claimed",
            "claimed_by": agent,
            "fencing_token": token,
            "lease_expires_at": expires,
            **landings.claim_changes(item, token, worktree),
        }
        details: dict[str, Any] = {"token": token, "lease_expires_at": iso(expires)}
        if "branch" in changes:
            details["branch"] = changes["branch"]
        if worktree is not None:
            details["base_commit"] = worktree.base_commit
        if item.rework is not None:  # the queue held its files: this claim takes them over
            tx.delete_item_reservations(item.id, landings.QUEUE_HOLDER)
        if takeover_from is not None:
            details["takeover_from"] = takeover_from
            details["expired_at"] = iso(item.lease_expires_at)
            if item.question is not None:  # a stale question: it stays on the item
                details["question"] = item.question
            # expired with its lease, or (a worktree claim) held for the item: taken over
            tx.delete_item_reservations(item.id, takeover_from)
        # a worktree item's files stay held past a lapse of this claim (promise 20)
        held_until = worktree_holds.hold_until("branch" in changes, expires)
        for pattern in item.files:
            tx.insert_reservation(
                agent=agent,
                pattern=pattern,
                exclusive=True,
                item_id=item.id,
                reason=f"claim of item {item.id}",
                now=now,
                expires_at=held_until,
            )
            live.append(Reservation(0, agent, pattern, True, item.id, "", now, held_until))
        if item.files:
            details["files"] = list(item.files)
        kind = "takeover" if takeover_from is not None else "claimed"
        claimed = self.ctx.changes.apply(
            tx, item, changes, agent, kind, now, details, worked=by_agent, files_held_by=()
        )
        return Claim(claimed, agent, token, expires, takeover_from)


def _ensure_first_in_line(tx: WriteTx, item: Item, agent: str, now: float) -> None:
    """A free item others wait in line for goes to the first of them (``coord.core.waiting``
    grants it when it is freed; a lapsed lease, between the daemon's looks, would otherwise
    go to whoever claims first)."""
    line = [w.agent for w in tx.waiting(now, MAX_CLAIM_SCAN) if w.item_id == item.id]
    if line and line[0] != agent:
        raise AlreadyClaimed(
            f"item {item.ref} is free, but {len(line)} agents wait in line for it (the first: "
            f"{line[0]}): wait your turn (`coord wait {item.ref}`) or pick another "
            "(`coord next`)",
            id=item.id,
            holder=line[0],
            lease_expires_at=None,
            reason="waiters",
            waiting=len(line),
        )


class _Scan:
    """Claimable items in claim order, skipping those whose files others hold, and giving up
    after ``MAX_CLAIM_SCAN`` skipped ones.

    The bound keeps one request's hold on the daemon's event loop short however much
    file-blocked work lies ahead of the first ready item (each skipped item costs a read and
    an overlap check). Nothing is missed for long: the holds that block those items lapse
    with their leases, without a sweep, and the caller is told to try again.
    """

    def __init__(self, claims: Claims, tx: ReadTx, agent: str, now: float) -> None:
        self.tx, self.agent, self.now = tx, agent, now
        self.is_file = claims.ctx.is_file
        self.skipped = 0
        # of those, held back by files others hold, and kept for an item's last holder
        self.files_held = self.first_refusal = 0
        self.first_holder: dict[str, Any] | None = None
        # Blocked items often share their files (a document's packages on one module): the
        # verdict on a set of files is read once per request.
        self._blocked: dict[tuple[str, ...], bool] = {}
        self._line: dict[int, str] | None = None  # item -> its first waiter, when read

    def ready(
        self, kinds: Sequence[str], label: str | None
    ) -> Iterator[tuple[Item, list[Reservation]]]:
        after: tuple[int, int] | None = None
        page = 1  # the first candidate usually wins; fetch more only while skipping
        while self.skipped < MAX_CLAIM_SCAN:
            limit = min(page, MAX_CLAIM_SCAN - self.skipped)
            batch = self.tx.claimable_items(self.now, kinds, label, after, limit=limit)
            if not batch:
                return
            page = min(page * 4, 256)
            # One read of the holds near the whole page, not one per candidate: a claim earlier
            # in this batch adds only this agent's own holds, which never block it.
            unknown = {
                f
                for item in batch
                if item.files not in self._blocked or worktree_holds.may_hold_own_files(item)
                for f in item.files
            }
            live = worktree_holds.live_holds(self.tx, self.now, near=sorted(unknown))
            near = PrefixIndex((held.pattern, held) for held in live)
            for item in batch:
                if self.skipped >= MAX_CLAIM_SCAN:  # a batch skips overlapping items too
                    return
                kept = item.kept_for(self.now)  # an item sent back: its last holder's first
                if kept is not None and kept[0] != self.agent:
                    self.skipped += 1
                    self.first_refusal += 1
                    continue
                if self._first_in_line(item.id) not in (None, self.agent):  # a lapsed claim
                    self.skipped += 1  # others wait in line for: the first of them gets it
                    self.first_refusal += 1
                    continue
                # files others hold, known this request (an item that may hold its own files
                # is judged alone: the queue's or its lapsed claim's holds do not count)
                if not worktree_holds.may_hold_own_files(item) and self._blocked.get(item.files):
                    self.skipped += 1
                    self.files_held += 1
                    continue
                live = near.near_any(item.files)
                if item.files and self._blocked_by_others(item, live):
                    self.skipped += 1
                    self.files_held += 1
                    continue
                yield item, live
            after = (batch[-1].priority, batch[-1].id)

    def _first_in_line(self, item_id: int) -> str | None:
        """Who waits first for the item (``coord.core.waiting``), read once per request."""
        if self._line is None:
            self._line = {}
            for wait in self.tx.waiting(self.now, MAX_CLAIM_SCAN):
                if wait.item_id is not None:
                    self._line.setdefault(wait.item_id, wait.agent)
        return self._line.get(item_id)

    def nothing_ready(self, kind: str | None, label: str | None) -> NothingReady:
        """The refusal, with what holds the open work back, counted: an agent tells "all
        done" from "wait for the others" from "a document reserves the rest"."""
        kinds = (kind,) if kind else model.WORK_KINDS
        counts = self.tx.count_held_back(self.now, kinds, label, self.agent)
        counts.pop("open")  # what the scan saw, and judged: held files or a first refusal
        held_back = {**counts, "files_held": self.files_held, "first_refusal": self.first_refusal}
        reserved = self._reserved(kinds, label, counts)
        if self.skipped < MAX_CLAIM_SCAN:
            return rules.nothing_ready(kind, label, held_back, reserved, self.agent)
        return rules.nothing_ready_within(
            kind, label, MAX_CLAIM_SCAN, self.first_holder, held_back, reserved
        )

    def _reserved(
        self, kinds: Sequence[str], label: str | None, counts: dict[str, int]
    ) -> list[Item]:
        """The first pending items a design document holds back, to name them; read only
        when the counts say there are some (a lapsed claim the document keeps is counted,
        not named)."""
        if not counts.get("reserved_in_document") and not counts.get("reserved_for_you"):
            return []
        return self.tx.reserved_pending(kinds, label, rules.NAMED_RESERVED)

    def _blocked_by_others(self, item: Item, live: list[Reservation]) -> bool:
        holds = reservations.holds_on(
            item.files,
            landings.others_holds(item, live),
            except_agent=self.agent,
            is_file=self.is_file,
        )
        if not worktree_holds.may_hold_own_files(item):
            self._blocked[item.files] = bool(holds)
        if holds and self.first_holder is None:
            requested = next(
                f for f in item.files if reservations.meets_hold(f, holds[0], self.is_file)
            )
            self.first_holder = reservations.conflict_facts(requested, holds[0])
        return bool(holds)
