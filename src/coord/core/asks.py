"""Asking the holder: one agent asks whoever holds an item (or paths) to let go, and the
holder answers release or defer.

The ask is an event addressed to the holder (``details.holder``: its inbox, its next hook's
context, `coord watch` and the page all read the log), and a row on the board until it is
answered or times out. Nothing here touches the holder's lease unless the holder answers
release: a peer's "please release" that quietly cut the lease was the bug this avoids. A
release answers the claim that was asked about only (its fencing token is kept on the ask):
a holder that lost the claim since cannot release its successor's. The release is an
ordinary release, so the first waiter is granted in the same transaction
(``coord.core.waiting``).

An unanswered ask times out at ``expires_at`` on the board's clock: it is read that way
(``Ask.shown_state``), with no sweep to wait for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coord import model
from coord.core import reservations, rules, worktree_holds
from coord.core.context import BoardContext
from coord.errors import AskNotOpen, Conflict, InvalidInput, LeaseLost, NotFound, NotPermitted
from coord.model import Ask
from coord.times import iso

DEFAULT_ASK_SECONDS = 600.0  # how long an ask waits for its answer
MAX_ASK_SECONDS = 24 * 3600.0
MAX_OPEN_ASKS = 50  # what one holder is shown at a time
ANSWERS = ("release", "defer")


def check_ask_seconds(value: Any) -> float:
    if value is None:
        return DEFAULT_ASK_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("timeout_seconds must be a number of seconds", field="timeout_seconds")
    if not 1 <= value <= MAX_ASK_SECONDS:
        raise InvalidInput(
            f"timeout_seconds {value} is out of range: use 1 to {MAX_ASK_SECONDS:g}",
            field="timeout_seconds",
        )
    return float(value)


def _ask_id(value: Any) -> int:
    value = model.digits(value)
    if not model.is_stored_integer(value) or value < 1:
        raise InvalidInput(f"an ask id is a positive integer, not {value!r}", field="ask")
    return int(value)


class Asks:
    """The board's verbs for asking a holder, and for its answer."""

    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def ask(
        self,
        *,
        agent: Any,
        item: Any = None,
        paths: Any = None,
        reason: Any = None,
        timeout_seconds: Any = None,
    ) -> dict[str, Any]:
        """Ask the holder of ``item`` (or of ``paths``) to let go, saying why."""
        return self._ask(
            model.check_agent(agent),
            model.check_item_ref(item) if item is not None else None,
            model.check_files(paths),
            model.check_reason(reason, "reason"),
            check_ask_seconds(timeout_seconds),
        )

    def _ask(
        self,
        asker: str,
        item_ref: int | str | None,
        paths: Sequence[str],
        reason: str,
        timeout: float,
    ) -> dict[str, Any]:
        wanted = reservations.canonical(paths, self.ctx.repo_root)
        if (item_ref is None) == (not wanted):
            raise InvalidInput(
                "ask about one item, or about paths: name exactly one of them", field="item"
            )
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item_id: int | None = None
            token: int | None = None
            held: tuple[str, ...] = ()
            if item_ref is not None:
                item = rules.require_item(tx, item_ref)
                if item.state != "claimed" or not item.lease_live(now) or not item.claimed_by:
                    raise Conflict(
                        f"nobody holds item {item.ref} (it is {item.shown_state}): nothing to "
                        f"ask; claim it (`coord claim {item.ref}`)",
                        id=item.id,
                        state=item.shown_state,
                    )
                holder, item_id, token = item.claimed_by, item.id, item.fencing_token
            else:
                holder, item_id, token, held = self._holder_of(tx, now, asker, wanted)
            if holder == asker:
                # the board's state, not the request's shape: 409, as any refusal of what is held
                raise Conflict("you hold it yourself: nobody else to ask")
            expires = now + timeout
            ask_id = tx.insert_ask(
                asker=asker,
                holder=holder,
                item_id=item_id,
                token=token,
                patterns=held,
                reason=reason,
                now=now,
                expires_at=expires,
            )
            details: dict[str, Any] = {
                "ask": ask_id,
                "holder": holder,  # the holder's inbox reads this
                "reason": reason,
                "expires_at": iso(expires),
                "answer_with": f"`coord answer-ask {ask_id} release` (or defer, with until when)",
            }
            if held:
                details["paths"] = list(held)
            self.ctx.changes.record(tx, asker, item_id, "asked", now, details, worked=True)
            found = tx.get_ask(ask_id)
            assert found is not None
            return found.to_dict(now)

    def _holder_of(
        self, tx: Any, now: float, asker: str, wanted: Sequence[str]
    ) -> tuple[str, int | None, int | None, tuple[str, ...]]:
        """Who holds these paths against ``asker``: one holder, and its claim when the hold
        is a claimed item's (then releasing the claim is what frees them)."""
        live = worktree_holds.live_holds(tx, now, near=list(wanted))
        conflicts = reservations.find_conflicts(asker, wanted, True, live, self.ctx.is_file)
        holders = sorted({c["holder"] for c in conflicts})
        if not holders:
            raise Conflict(
                f"nobody else holds {', '.join(wanted)}: nothing to ask; reserve them "
                "(`coord reserve`)",
                paths=list(wanted),
            )
        if len(holders) > 1:
            raise Conflict(
                f"{', '.join(holders)} hold these paths: ask about one holder's paths at a time",
                holders=holders,
            )
        holder = holders[0]
        items = sorted({c["item"] for c in conflicts if c["item"] is not None})
        if items:
            item = tx.get_item(items[0])
            if item is not None and item.claimed_by == holder and item.lease_live(now):
                return holder, item.id, item.fencing_token, ()
        return holder, None, None, tuple(sorted({c["pattern"] for c in conflicts}))

    def answer(
        self,
        ask_id: Any,
        *,
        agent: Any,
        answer: Any,
        until: Any = None,
        for_seconds: Any = None,
        reason: Any = None,
    ) -> dict[str, Any]:
        """The holder's answer: ``release`` (now, what it was asked for) or ``defer`` until
        ``until`` (epoch seconds) or for ``for_seconds`` from now on the board's clock, a
        reason optional."""
        for name, value in (("until", until), ("for_seconds", for_seconds)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise InvalidInput(f"{name} must be a number of seconds", field=name)
        if until is not None and for_seconds is not None:
            raise InvalidInput("defer until a time, or for a while: not both", field="until")
        return self._answer(
            _ask_id(ask_id),
            model.check_agent(agent),
            answer,
            None if until is None else float(until),
            model.check_body(reason or ""),
            None if for_seconds is None else float(for_seconds),
        )

    def _answer(
        self,
        ask_id: int,
        agent: str,
        answer: Any,
        until: float | None,
        reason: str,
        for_seconds: float | None = None,
    ) -> dict[str, Any]:
        if answer not in ANSWERS:
            raise InvalidInput(
                f"answer {answer!r}: say release, or defer with until when", field="answer"
            )
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            ask = self._open(tx, ask_id, agent, now)
            details: dict[str, Any] = {
                "ask": ask.id,
                "answer": answer,
                "reason": reason,
                "mentions": [ask.asker],  # the asker's inbox reads this
            }
            if answer == "defer":
                if for_seconds is not None:
                    until = now + for_seconds
                if until is None or until <= now:
                    raise InvalidInput(
                        "a deferral says until when: a time still to come, or for how long",
                        field="until",
                    )
                details["deferred_until"] = iso(until)
            else:
                until = None
                self._release(tx, ask, now)
            tx.answer_ask(ask.id, answer, reason, until, now)
            kind = "ask_released" if answer == "release" else "ask_deferred"
            self.ctx.changes.record(tx, agent, ask.item_id, kind, now, details, worked=True)
            answered = tx.get_ask(ask.id)
            assert answered is not None
            return answered.to_dict(now)

    def _release(self, tx: Any, ask: Ask, now: float) -> None:
        """The holder lets go of what it was asked for: the claim it held then (by its
        token), or its own holds on the paths."""
        reason = f"asked by {ask.asker} (ask {ask.id})"
        if ask.item_id is not None:
            item = rules.require_item(tx, ask.item_id)
            if not (
                item.state == "claimed"
                and item.claimed_by == ask.holder
                and item.fencing_token == ask.token
            ):
                raise LeaseLost(
                    f"the claim of item {item.ref} you were asked about has ended (it is "
                    f"{item.shown_state}{', held by ' + item.claimed_by if item.claimed_by else ''}"
                    "): nothing of yours to release",
                    id=item.id,
                )
            tx.delete_item_reservations(item.id, ask.holder)
            changes = {
                "state": "pending",
                "claimed_by": None,
                "lease_expires_at": None,
                "question": None,
            }
            self.ctx.changes.apply(
                tx,
                item,
                changes,
                ask.holder,
                "released",
                now,
                {"token": ask.token, "reason": reason},
            )
            return
        fold = reservations.fold_of(self.ctx.is_file)
        asked = {fold(p) for p in ask.patterns}
        mine = [
            r
            for r in worktree_holds.live_holds(tx, now, agent=ask.holder)
            if r.item_id is None and fold(r.pattern) in asked
        ]
        tx.delete_reservations(r.id for r in mine)
        freed = sorted({r.pattern for r in mine})
        self.ctx.changes.record(
            tx, ask.holder, None, "unreserved", now, {"patterns": freed, "reason": reason}
        )

    def _open(self, tx: Any, ask_id: int, agent: str, now: float) -> Ask:
        ask = tx.get_ask(ask_id)
        if ask is None:
            raise NotFound(f"no ask {ask_id} on this board; `coord asks` lists yours", id=ask_id)
        if ask.holder != agent:
            raise NotPermitted(
                f"ask {ask_id} is addressed to {ask.holder}, not {agent}: only the holder answers",
                id=ask_id,
                holder=ask.holder,
            )
        state = ask.shown_state(now)
        if state != "open":
            raise AskNotOpen(
                f"ask {ask_id} is {state} already: nothing to answer",
                id=ask_id,
                state=state,
            )
        return ask

    def get(self, ask_id: Any) -> dict[str, Any]:
        ask_id = _ask_id(ask_id)
        with self.ctx.storage.read() as tx:
            ask = tx.get_ask(ask_id)
            if ask is None:
                raise NotFound(f"no ask {ask_id} on this board", id=ask_id)
            return ask.to_dict(self.ctx.now(tx))

    def open_for(self, holder: Any) -> list[dict[str, Any]]:
        """The asks waiting for ``holder``'s answer, oldest first."""
        holder = model.check_agent(holder)
        with self.ctx.storage.read() as tx:
            now = self.ctx.now(tx)
            return [a.to_dict(now) for a in tx.open_asks(holder, now, MAX_OPEN_ASKS)]
