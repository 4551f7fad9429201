"""From claim to main, the board's half (issue 24): a worktree item's claim, its submit to the
landing queue, the board's one landing lease, and what landing made of it: merged, or sent
back for rework.

A worktree item's life: claimed with a worktree record (``branch`` named after the item and
the claim's fencing token, ``base_commit``, ``worktree``) → submitted: ``queued`` with the
branch head, the claim's lease ended, its files handed to the queue (``QUEUE_HOLDER``, never a
valid agent name) until it is merged or abandoned → landed by the runner that holds the
landing lease: ``merged`` (done with the merged commit: the only done of a worktree item, and
what unblocks its dependents) or ``needs_rework`` (pending with the failure's facts; its last
holder alone may claim it for ``FIRST_REFUSAL_SECONDS``, and the claim takes the files over
from the queue). The git steps are ``coord.landing``'s; nothing here runs git.

Every verb is one write transaction that appends exactly one event; bad input or a stale
token (the item's or the landing lease's) changes nothing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from coord import model
from coord.core import rules, worktree_holds
from coord.core.context import BoardContext
from coord.errors import AlreadyClaimed, Conflict, InvalidInput, LeaseLost, NotPermitted
from coord.limits import MAX_EVIDENCE_OUTPUT
from coord.model import Claim, Item, LandingLease, Reservation, WorktreeSpec
from coord.storage.base import WriteTx
from coord.times import iso

if TYPE_CHECKING:
    from coord.core.claims import Claims

QUEUE_HOLDER = model.QUEUE_HOLDER  # who holds a submitted item's files until it lands
# The queue's hold never lapses while the item waits (9999-12-31T23:59:59Z): it ends when the
# item is merged or abandoned, or passes to the next claim of an item sent back.
QUEUE_HOLD_UNTIL = worktree_holds.HOLD_UNTIL
# How long an item sent back for rework is kept for its last holder before anyone may take it.
FIRST_REFUSAL_SECONDS = 15 * 60
# How a merge found outside coord's own landing was recognised.
FOUND_BY = ("ancestry", "patch_id", "tree")
_REF_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def branch_name(item: Item, token: int) -> str:
    """``coord/<key or id>-t<token>``: a git ref name whatever the package key holds (``:``
    and ``.`` runs become ``-``; a key changed so keeps the id, to stay unique)."""
    if item.key is None:
        return f"coord/{item.id}-t{token}"
    safe = _REF_UNSAFE.sub("-", item.key).strip("-") or str(item.id)
    if safe != item.key:
        safe = f"{safe}-{item.id}"
    return f"coord/{safe}-t{token}"


def others_holds(item: Item, live: list[Reservation]) -> list[Reservation]:
    """``live`` without the item's holds on its own files: the queue's (an item sent back)
    and a lapsed worktree claim's (``worktree_holds.own_hold``)."""
    if not worktree_holds.may_hold_own_files(item):
        return live
    return [held for held in live if not worktree_holds.own_hold(held, item)]


def claim_changes(item: Item, token: int, worktree: WorktreeSpec | None) -> dict[str, Any]:
    """What a claim writes beside the claim itself: the worktree record when asked for, and
    the end of an item's first refusal. A worktree item claimed again (by claim-next, a
    takeover, a claim without a new record) keeps its record, its branch renamed after the new
    token. A re-claim of an item sent back keeps its old branch in the rework facts (the git
    side renames it)."""
    changes: dict[str, Any] = {}
    if item.rework_for is not None:
        changes.update(rework_for=None, rework_until=None)
    if worktree is not None:
        branch = branch_name(item, token)
        changes.update(
            branch=branch,
            base_commit=worktree.base_commit,
            worktree=model.worktree_path(worktree.path_root, branch),
        )
    elif item.branch is not None:
        changes["branch"] = branch_name(item, token)
    if item.rework is not None and item.branch is not None and "branch" in changes:
        changes["rework"] = {**item.rework, "previous_branch": item.branch}
    return changes


class Landings:
    def __init__(self, ctx: BoardContext, claims: Claims) -> None:
        self.ctx = ctx
        self.claims = claims

    # --- the holder's half -----------------------------------------------------------------

    def claim(
        self, item_id: Any, *, agent: str, worktree: WorktreeSpec, lease_seconds: Any = None
    ) -> Claim:
        """Claim an item with a worktree: in the claim's own transaction the item records its
        branch (``coord/<key or id>-t<token>``), ``base_commit`` and worktree path."""
        agent, ref = model.check_agent(agent), model.check_item_ref(item_id)
        if not isinstance(worktree, WorktreeSpec):
            raise InvalidInput("worktree must be a WorktreeSpec", field="worktree")
        lease = model.check_lease(lease_seconds, self.ctx.default_lease_seconds)
        return self.claims.claim(ref, agent, lease, worktree=worktree)

    def submit(self, item_id: Any, *, agent: str, token: Any, head: Any) -> Item:
        """Hand the finished branch head to the landing queue: the item is queued, the claim's
        lease ends, and the item's files pass to the queue, held until it is merged or
        abandoned."""
        agent, ref, token = rules.claim_args(agent, item_id, token)
        head = model.check_commit(head, "head")
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            if item.branch is None:
                raise Conflict(
                    f"item {item.ref} has no worktree (it was claimed without one): close it "
                    f"with `coord done {item.ref}`, or release it and claim it with a worktree",
                    id=item.id,
                )
            files = _hand_to_queue(tx, item, agent, now)
            changes = {
                "state": "queued",
                "lease_expires_at": None,
                "question": None,
                "submitted_head": head,
                "submitted_at": now,
            }
            details = {"token": token, "head": head, "branch": item.branch, "files": files}
            return self.ctx.changes.apply(
                tx, item, changes, agent, "submitted", now, details, worked=True
            )

    def abandon(self, item_id: Any, *, agent: str, reason: Any) -> Item:
        """Take a queued item, one sent back for rework, or one whose worktree claim lapsed
        off its way to main: pending, its files freed (its worktree and branch stay, for
        ``coord worktree gc`` to judge). Its last holder or one of the board's humans may."""
        agent, ref = model.check_agent(agent), model.check_item_ref(item_id)
        reason = model.check_reason(reason, "reason")
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            if item.state == "queued":
                holder = item.claimed_by
            elif item.state == "pending" and item.rework is not None:
                holder = item.rework_for
            elif worktree_holds.lapsed_claim(item, now):
                holder = item.claimed_by
            else:
                raise Conflict(
                    f"item {item.ref} is {item.shown_state}, not queued or needs_rework (nor "
                    "a worktree claim that lapsed): release a claim instead (`coord release`)",
                    id=item.id,
                    state=item.shown_state,
                )
            if agent != holder and agent not in self.ctx.humans:
                raise NotPermitted(
                    f"only {holder} (its last holder) or one of the board's humans may "
                    f"abandon item {item.ref}",
                    id=item.id,
                    holder=holder,
                )
            tx.delete_item_reservations(item.id, QUEUE_HOLDER)
            if item.state == "claimed" and item.claimed_by is not None:
                tx.delete_item_reservations(item.id, item.claimed_by)  # the lapsed claim's
            changes = {
                "state": "pending",
                "claimed_by": None,
                "lease_expires_at": None,
                "question": None,
                "submitted_head": None,
                "submitted_at": None,
                "rework": None,
                "rework_for": None,
                "rework_until": None,
            }
            details = {"reason": reason, "was": item.shown_state, "holder": holder}
            return self.ctx.changes.apply(tx, item, changes, agent, "abandoned", now, details)

    # --- the queue and the landing lease ---------------------------------------------------

    def queue(self, limit: int = 100) -> list[Item]:
        """The queued items, in submit order: what the landing runner lands next."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000", field="limit")
        with self.ctx.storage.read() as tx:
            return tx.queued_items(limit)

    def lease(self) -> LandingLease | None:
        with self.ctx.storage.read() as tx:
            return tx.landing_lease()

    def acquire(self, *, runner: str, lease_seconds: Any = None) -> LandingLease:
        """The board's landing lease, if it is free or lapsed: its token is one higher than
        any before. Exactly one of any number of concurrent runners wins."""
        runner = model.check_agent(runner)
        lease = model.check_lease(lease_seconds, self.ctx.default_lease_seconds)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            current = tx.landing_lease()
            if current is not None and current.live(now):
                raise AlreadyClaimed(
                    f"the landing lease is held by {current.holder} until "
                    f"{iso(current.expires_at)}: one runner lands at a time; try again later",
                    holder=current.holder,
                    lease_expires_at=iso(current.expires_at),
                )
            won = LandingLease(runner, (current.token if current else 0) + 1, now + lease)
            tx.set_landing_lease(won.holder, won.token, won.expires_at)
            details: dict[str, Any] = {"token": won.token, "lease_expires_at": iso(now + lease)}
            if current is not None and current.holder is not None:
                details["takeover_from"] = current.holder
            self.ctx.changes.record(tx, runner, None, "landing_acquired", now, details)
            return won

    def renew(self, *, runner: str, token: Any, lease_seconds: Any = None) -> LandingLease:
        runner, token = model.check_agent(runner), model.check_token(token)
        lease = model.check_lease(lease_seconds, self.ctx.default_lease_seconds)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            _ensure_landing(tx, runner, token, now)
            renewed = LandingLease(runner, token, now + lease)
            tx.set_landing_lease(runner, token, renewed.expires_at)
            details = {"token": token, "lease_expires_at": iso(renewed.expires_at)}
            self.ctx.changes.record(tx, runner, None, "landing_renewed", now, details)
            return renewed

    def release(self, *, runner: str, token: Any) -> None:
        runner, token = model.check_agent(runner), model.check_token(token)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            _ensure_landing(tx, runner, token, now)
            tx.set_landing_lease(None, token, None)  # the token stays: the next one is higher
            self.ctx.changes.record(tx, runner, None, "landing_released", now, {"token": token})

    # --- what landing made of an item ------------------------------------------------------

    def mark_merged(
        self, item_id: Any, *, runner: str, landing_token: Any, item_token: Any, commit: Any
    ) -> Item:
        """The runner landed the item's submitted head as ``commit`` on main: merged (done),
        its files freed, its dependents ready. ``item_token``: the item's fencing token when
        the runner read it from the queue (a re-submitted item is not the one it landed)."""
        runner, ref = model.check_agent(runner), model.check_item_ref(item_id)
        landing_token, item_token = model.check_token(landing_token), model.check_token(item_token)
        commit = model.check_commit(commit, "commit")
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            _ensure_landing(tx, runner, landing_token, now)
            item = rules.require_item(tx, ref)
            _ensure_queued(item, item_token)
            details = {
                "commit": commit,
                "head": item.submitted_head,
                "token": item_token,
                "landing_token": landing_token,
            }
            return self._merged(tx, item, runner, commit, now, details)

    def merged_outside(self, item_id: Any, *, agent: str, commit: Any, found_by: Any) -> Item:
        """The item's commits were found on main by other means (``found_by``: ancestry,
        patch id or tree equality): merged, from claimed or queued; a live claim ends."""
        agent, ref = model.check_agent(agent), model.check_item_ref(item_id)
        commit = model.check_commit(commit, "commit")
        if found_by not in FOUND_BY:
            raise InvalidInput(f"found_by must be one of {', '.join(FOUND_BY)}", field="found_by")
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            if item.state not in ("claimed", "queued") or item.branch is None:
                raise Conflict(
                    f"item {item.ref} is {item.shown_state}"
                    + ("" if item.branch is not None else " and has no worktree")
                    + ": only a claimed or queued worktree item can be found merged",
                    id=item.id,
                    state=item.shown_state,
                )
            details = {"commit": commit, "found_by": found_by, "was": item.shown_state}
            if item.state == "claimed":
                details["token"] = item.fencing_token
            return self._merged(tx, item, agent, commit, now, details)

    def needs_rework(
        self, item_id: Any, *, runner: str, landing_token: Any, item_token: Any, facts: Any
    ) -> Item:
        """Landing failed for a reason the holder must fix: the item goes back to pending with
        the facts, its files stay held by the queue, and its last holder alone may claim it
        for ``FIRST_REFUSAL_SECONDS``."""
        runner, ref = model.check_agent(runner), model.check_item_ref(item_id)
        landing_token, item_token = model.check_token(landing_token), model.check_token(item_token)
        checked = _check_facts(facts)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            _ensure_landing(tx, runner, landing_token, now)
            item = rules.require_item(tx, ref)
            _ensure_queued(item, item_token)
            rework = {
                **checked,
                "branch": item.branch,
                "head": item.submitted_head,
                "at": iso(now),
            }
            until = now + FIRST_REFUSAL_SECONDS
            changes = {
                "state": "pending",
                "claimed_by": None,
                "rework": rework,
                "rework_for": item.claimed_by,
                "rework_until": until,
            }
            details = {
                **rework,
                "holder": item.claimed_by,  # the news reaches the last holder's inbox
                "token": item_token,
                "landing_token": landing_token,
                "rework_for": item.claimed_by,
                "rework_until": iso(until),
            }
            return self.ctx.changes.apply(tx, item, changes, runner, "needs_rework", now, details)

    def waiting(
        self, item_id: Any, *, runner: str, landing_token: Any, item_token: Any, wait: Any
    ) -> Item:
        """The runner cannot land the item now, for a reason its holder cannot fix (local
        changes in the checkout of main in the way, or main kept moving): it stays queued, and
        the event says why, for the faces that show the queue. Nothing of the item changes."""
        runner, ref = model.check_agent(runner), model.check_item_ref(item_id)
        landing_token, item_token = model.check_token(landing_token), model.check_token(item_token)
        checked = _check_wait(wait)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            _ensure_landing(tx, runner, landing_token, now)
            item = rules.require_item(tx, ref)
            _ensure_queued(item, item_token)
            details = {**checked, "token": item_token, "landing_token": landing_token}
            self.ctx.changes.record(tx, runner, item.id, "landing_waits", now, details)
            return item

    def _merged(
        self, tx: WriteTx, item: Item, agent: str, commit: str, now: float, details: dict[str, Any]
    ) -> Item:
        tx.delete_item_reservations(item.id, None)
        changes = {
            "state": "done",
            "lease_expires_at": None,
            "question": None,
            "closed_at": now,
            "merged_commit": commit,
            "rework_for": None,
            "rework_until": None,
        }
        return self.ctx.changes.apply(tx, item, changes, agent, "merged", now, details)


def _hand_to_queue(tx: WriteTx, item: Item, agent: str, now: float) -> list[str]:
    """The holder's reservations that belong to the item pass to the queue, in the submit's
    transaction: the files are never free between the claim and the landing."""
    mine = [r for r in tx.live_reservations(now, agent=agent) if r.item_id == item.id]
    tx.delete_reservations([r.id for r in mine])
    for held in mine:
        tx.insert_reservation(
            agent=QUEUE_HOLDER,
            pattern=held.pattern,
            exclusive=held.exclusive,
            item_id=item.id,
            reason=f"item {item.id} queued to land",
            now=now,
            expires_at=QUEUE_HOLD_UNTIL,
        )
    return [r.pattern for r in mine]


def _ensure_landing(tx: WriteTx, runner: str, token: int, now: float) -> None:
    """The zombie check of the landing lease: only its live holder, with its token."""
    current = tx.landing_lease()
    if (
        current is not None
        and current.live(now)
        and (current.holder, current.token)
        == (
            runner,
            token,
        )
    ):
        return
    if current is None or not current.live(now):
        held = "free" if current is None or current.holder is None else "lapsed"
        message = f"the landing lease is {held}; acquire it again to land"
    else:
        message = (
            f"the landing lease is now held by {current.holder} until "
            f"{iso(current.expires_at)}; your token {token} is stale: stop landing"
        )
    # the current token is told to its holder alone: it opens the lease (issue 27)
    theirs = current is not None and current.holder is not None and current.holder != runner
    raise LeaseLost(
        message,
        holder=current.holder if current is not None and current.live(now) else None,
        current_token=None if theirs else (current.token if current is not None else 0),
    )


def _ensure_queued(item: Item, item_token: int) -> None:
    if item.state != "queued":
        raise Conflict(
            f"item {item.ref} is {item.shown_state}, not queued: it left the queue (abandoned, "
            "or landed already); read the queue again",
            id=item.id,
            state=item.shown_state,
        )
    if item.fencing_token != item_token:
        raise LeaseLost(
            f"item {item.ref} was claimed again since (token {item.fencing_token}, not "
            f"{item_token}): the head you landed is not its submission; read the queue again",
            id=item.id,
            current_token=item.fencing_token,
        )


def _check_facts(facts: Any) -> dict[str, Any]:
    """Why landing sent an item back, as the runner saw it."""
    if not isinstance(facts, dict):
        raise InvalidInput("facts must be an object with at least a reason", field="facts")
    rules.refuse_unknown_fields(
        facts, {"reason", "files", "check_output", "main_commit"}, "facts", 0
    )
    reason = facts.get("reason")
    if reason not in model.REWORK_REASONS:
        raise InvalidInput(
            f"reason must be one of {', '.join(model.REWORK_REASONS)}, not {reason!r}",
            field="reason",
        )
    output = facts.get("check_output", "")
    if not isinstance(output, str):
        raise InvalidInput(
            "check_output must be text (the tail of the output)", field="check_output"
        )
    checked: dict[str, Any] = {
        "reason": reason,
        "files": list(model.check_files(facts.get("files"))),
        "check_output": output[-MAX_EVIDENCE_OUTPUT:],
    }
    if facts.get("main_commit") is not None:
        checked["main_commit"] = model.check_commit(facts["main_commit"], "main_commit")
    return checked


def _check_wait(facts: Any) -> dict[str, Any]:
    """Why the runner waits, as it saw it."""
    if not isinstance(facts, dict):
        raise InvalidInput("wait must be an object with at least a reason", field="wait")
    rules.refuse_unknown_fields(facts, {"reason", "files", "message", "main_commit"}, "wait", 0)
    reason = facts.get("reason")
    if reason not in model.WAIT_REASONS:
        raise InvalidInput(
            f"reason must be one of {', '.join(model.WAIT_REASONS)}, not {reason!r}",
            field="reason",
        )
    message = facts.get("message", "")
    if not isinstance(message, str):
        raise InvalidInput("message must be text", field="message")
    checked: dict[str, Any] = {
        "reason": reason,
        "files": list(model.check_files(facts.get("files"))),
        "message": message[-MAX_EVIDENCE_OUTPUT:],
    }
    if facts.get("main_commit") is not None:
        checked["main_commit"] = model.check_commit(facts["main_commit"], "main_commit")
    return checked
