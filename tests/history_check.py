"""Is a recorded history of claim / heartbeat / release / done linearizable? Per item.

A history is what concurrent clients saw: each operation's real-time interval (``start``,
``end``: one monotonic clock for every client process, CLOCK_MONOTONIC is system-wide on
Linux), its arguments, and its answer. The history is accepted when, for every item, some
serial order of that item's operations

1. respects real time: an operation that ended before another started comes first; and
2. replayed through the sequential model below, gives exactly the answers recorded.

Per item, because these four verbs read and write one item's row only; the board serialises
all writes (one lock), so a global order exists, and its restriction to one item is a serial
order of that item's operations. (Checking each item alone is the standard decomposition for
an object made of independent registers.)

**The model.** An item is ``(state, holder, token, lease_end)``, initially
``("pending", None, 0, None)``. Every operation runs at a database time ``t`` (the server's
clock, read once the write lock is granted). A claim is *live* at ``t`` while
``state == "claimed"`` and ``lease_end > t``.

- claim(agent, L): done → ``not_claimable``; live → ``already_claimed`` naming the holder and
  its lease end; otherwise granted: token + 1, lease end ``t + L``, ``takeover_from`` the
  previous holder when the item was still marked claimed (its lease ran out).
- heartbeat / release / done (agent, token): granted only while the item is claimed by that
  agent with that token and live at ``t`` (heartbeat: new lease end; release: pending;
  done: done); otherwise ``lease_lost`` with the item's state, holder, current token and
  lease end as they are.

**Time.** The database clock is not the clients' clock, so it is never compared with
``start``/``end``. Instead each operation's ``t`` is a hidden variable, and the check asks
for values of them that are non-decreasing along the serial order (writes are serialised
by one lock and each reads the clock after taking it). A granted write's answer gives its
``t`` (the item's ``updated_at``); a refusal's ``t`` is unknown, and the search gives it the
least value its answer allows (``t`` at least every earlier one; a ``lease_lost`` of the
holder's own token needs ``t >= lease_end``; an ``already_claimed`` needs ``t < lease_end``).
The least value is never worse for what follows, so this loses no valid order. Answers
give times in milliseconds (ISO 8601), so every comparison allows ``EPS`` (two roundings of
half a millisecond): the check cannot see a violation smaller than that, and never rejects a
history for rounding.

**Search.** Depth-first over orders (Wing & Gong), trying at each step only operations no
unplaced operation precedes in real time, with the set of placed operations, the item and
the clock bound memoised (Lowe's refinement): a state reached twice is explored once. An
operation whose outcome is unknown (a timeout, a 5xx) is not supported: the history is
rejected as incomplete rather than guessed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

EPS = 0.0011  # two half-millisecond roundings, and a little float slack
KINDS = ("claim", "heartbeat", "release", "done")
State = tuple[str, "str | None", int, "float | None"]
INITIAL: State = ("pending", None, 0, None)


@dataclass(frozen=True)
class Op:
    """One operation as a client saw it. ``at`` is the database time of a granted write
    (None for a refusal); the rest of the answer is in the fields after it."""

    agent: str
    kind: str  # claim | heartbeat | release | done
    item: int
    start: float
    end: float
    token: int | None = None  # presented (heartbeat, release, done)
    lease: float | None = None  # asked for (claim, heartbeat)
    error: str | None = None  # None: granted; else already_claimed | lease_lost | not_claimable
    at: float | None = None
    new_token: int | None = None  # a granted claim's token (a heartbeat's: the same)
    lease_end: float | None = None  # a granted claim's or heartbeat's lease end
    takeover_from: str | None = None
    # the facts of a refusal, as the answer states them
    holder: str | None = None
    current_token: int | None = None
    state: str | None = None

    def describe(self) -> str:
        args = f"token={self.token}" if self.token is not None else f"lease={self.lease}"
        if self.error is None:
            answer = f"granted at t={self.at}"
            if self.kind in ("claim", "heartbeat"):
                answer += f" token={self.new_token} lease_end={self.lease_end}"
            if self.takeover_from:
                answer += f" takeover_from={self.takeover_from}"
        else:
            answer = (
                f"{self.error} (state={self.state} holder={self.holder} "
                f"token={self.current_token} lease_end={self.lease_end})"
            )
        return (
            f"{self.agent} {self.kind}({args}) on item {self.item} "
            f"[{self.start:.4f}, {self.end:.4f}] -> {answer}"
        )


class NotLinearizable(AssertionError):
    pass


def seconds(iso: str | None) -> float | None:
    """Board time from the answers' ISO 8601 ("2026-12-01T18:30:00.123Z")."""
    if iso is None:
        return None
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def op_from_answer(record: Mapping[str, Any]) -> Op:
    """An ``Op`` from what a client recorded: ``agent, kind, item, start, end, token, lease,
    status`` and ``answer`` (the JSON body). Raises ``NotLinearizable`` for an answer the
    model has no place for (a 5xx, a lost connection, an unexpected error code)."""
    common = {
        key: record.get(key) for key in ("agent", "kind", "item", "start", "end", "token", "lease")
    }
    status, body = record.get("status"), record.get("answer") or {}
    if status == 200:
        item = body.get("item", body)  # claim and heartbeat answer a Claim around the item
        return Op(
            **common,
            at=seconds(item["updated_at"]),
            new_token=body.get("token"),
            lease_end=seconds(body.get("lease_expires_at")),
            takeover_from=body.get("takeover_from"),
        )
    error = body.get("error") if isinstance(body, dict) else None
    if status == 409 and error in ("already_claimed", "lease_lost", "not_claimable"):
        return Op(
            **common,
            error=error,
            holder=body.get("holder"),
            current_token=body.get("current_token"),
            state=body.get("state"),
            lease_end=seconds(body.get("lease_expires_at")),
        )
    raise NotLinearizable(f"an answer the model cannot place: {status} {body!r} for {common}")


def check(ops: Iterable[Op]) -> dict[int, list[Op]]:
    """Every item's history linearizable, or ``NotLinearizable`` saying where it fails.
    Returns one serial order per item (a witness)."""
    by_item: dict[int, list[Op]] = defaultdict(list)
    for op in ops:
        if op.kind not in KINDS or not op.start <= op.end:
            raise NotLinearizable(f"malformed operation: {op}")
        by_item[op.item].append(op)
    return {item: check_item(history) for item, history in sorted(by_item.items())}


def check_item(history: list[Op]) -> list[Op]:
    ops = sorted(history, key=lambda op: op.start)
    everything = (1 << len(ops)) - 1
    seen: set[tuple[int, State, float]] = set()
    # Each frame: placed set, model state, clock bound, the order so far.
    stack: list[tuple[int, State, float, tuple[int, ...]]] = [(0, INITIAL, -math.inf, ())]
    deepest: tuple[int, ...] = ()
    deepest_state: State = INITIAL
    while stack:
        placed, state, bound, order = stack.pop()
        if placed == everything:
            return [ops[i] for i in order]
        if len(order) > len(deepest):
            deepest, deepest_state = order, state
        for index in _minimal(ops, placed):
            for after, new_bound in step(state, bound, ops[index]):
                key = (placed | 1 << index, after, new_bound)
                if key not in seen:
                    seen.add(key)
                    stack.append((key[0], after, new_bound, (*order, index)))
    placed_ops = [ops[i] for i in deepest]
    stuck = [op for i, op in enumerate(ops) if i not in deepest]
    raise NotLinearizable(
        f"item {ops[0].item}: no serial order respecting real time explains the answers.\n"
        f"  longest explained prefix ({len(placed_ops)} of {len(ops)} operations), ending in "
        f"state {deepest_state}:\n"
        + "".join(f"    {op.describe()}\n" for op in placed_ops[-6:])
        + "  none of these can come next:\n"
        + "".join(f"    {op.describe()}\n" for op in stuck[:6])
    )


def _minimal(ops: list[Op], placed: int) -> list[int]:
    """The unplaced operations that no unplaced operation precedes in real time."""
    left = [i for i in range(len(ops)) if not placed >> i & 1]
    first_end = min(ops[i].end for i in left)
    return [i for i in left if ops[i].start <= first_end]


def step(state: State, bound: float, op: Op) -> list[tuple[State, float]]:
    """What ``op`` can do to the item, placed next: each (state after, clock bound after)
    under which the model gives exactly the recorded answer; empty when none does."""
    if op.at is not None:  # a granted write: its time is known
        if op.at + EPS < bound:
            return []
        bound = max(bound, op.at)
    kind, holder, token, _ = state
    holders_write = op.kind != "claim" and (kind, holder, token) == ("claimed", op.agent, op.token)
    if not holders_write and (op.kind != "claim" or kind == "done"):
        # liveness cannot change the answer: the time stays as early as it can be
        after = _apply(state, False, op)
        return [] if after is None else [(after, bound)]
    outcomes: dict[State, float] = {}
    for live, at_least in _liveness(state, bound, op):
        after = _apply(state, live, op)
        if after is not None:  # of two ways to one state, the earlier clock dominates
            outcomes[after] = min(at_least, outcomes.get(after, math.inf))
    return list(outcomes.items())


def _liveness(state: State, bound: float, op: Op) -> list[tuple[bool, float]]:
    """Whether the claim can be live at the operation's time, and the clock bound each
    answer implies."""
    kind, _, _, lease_end = state
    if kind != "claimed" or lease_end is None:
        return [(False, bound)]
    if op.at is not None:  # known time: live, lapsed, or (within EPS of the end) either
        could_be = ((True, lease_end + EPS > op.at), (False, lease_end - EPS <= op.at))
        return [(live, bound) for live, possible in could_be if possible]
    # unknown time: as early as possible (live if the bound allows), or after the lease end
    lapsed = [(False, max(bound, lease_end))]
    return [(True, bound), *lapsed] if bound < lease_end + EPS else lapsed


def _apply(state: State, live: bool, op: Op) -> State | None:
    kind, holder, token, lease_end = state
    if op.kind == "claim":
        if kind == "done":
            return state if op.error == "not_claimable" else None
        if live:
            refused = op.error == "already_claimed" and (op.holder, op.lease_end) == (
                holder,
                lease_end,
            )
            return state if refused else None
        granted = (
            op.error is None
            and op.new_token == token + 1
            and op.takeover_from == (holder if kind == "claimed" else None)
            and _lease_matches(op)
        )
        return ("claimed", op.agent, token + 1, op.lease_end) if granted else None
    if live and (holder, token) == (op.agent, op.token):  # the holder, in time
        if op.error is not None:
            return None
        if op.kind == "heartbeat":
            ok = op.new_token == token and _lease_matches(op)
            return (kind, holder, token, op.lease_end) if ok else None
        if op.kind == "release":
            return ("pending", None, token, None)
        return ("done", holder, token, None)
    # a refusal tells the current token to nobody but its holder (issue 27)
    told = None if kind in ("claimed", "needs_human") and holder != op.agent else token
    refused = op.error == "lease_lost" and (
        op.state,
        op.holder,
        op.current_token,
        op.lease_end,
    ) == (kind, holder if kind == "claimed" else None, told, lease_end)
    return state if refused else None


def _lease_matches(op: Op) -> bool:
    """A granted claim's or heartbeat's lease ends ``lease`` seconds after its time."""
    if op.lease is None or op.at is None or op.lease_end is None:
        return False
    return abs(op.lease_end - (op.at + op.lease)) <= EPS
