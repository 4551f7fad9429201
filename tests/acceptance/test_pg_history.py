"""A real-time history across daemons, checked for linearizability.

16 OS processes run a random mix of claim / heartbeat / release / done, with 1-2 s leases, on
80 items, for ~12 s, each request to one of three daemons on one PostgreSQL database picked
at random. Every operation's start, end (one monotonic clock for all processes), arguments and
answer are recorded; ``history_check`` then proves the answers are those of one serial order
of the operations that respects real time, item by item: no two live claims of an item, no
stale token accepted, tokens increasing by one, every refusal naming the state as it was.
``COORD_SOAK=1`` runs it for a minute.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from _pg_team import team_on
from _pg_workers import history_worker
from _workers import CTX, fetch_events, import_items, run_processes

from conftest import SOAK
from history_check import NotLinearizable, Op, check, op_from_answer

pytestmark = pytest.mark.postgres
WORKERS, ITEMS = 16, 80
SECONDS = 60.0 if SOAK else 12.0


def test_a_random_history_through_3_daemons_is_linearizable(pg_dsn: str, tmp_path: Path) -> None:
    with team_on(pg_dsn, tmp_path, 3) as team:
        item_ids = import_items(team.daemons[0], ITEMS)
        endpoints = team.endpoints(3)
        barrier = CTX.Barrier(WORKERS)
        args = [
            (endpoints, f"agent-{n}", barrier, item_ids, SECONDS, 1000 + n) for n in range(WORKERS)
        ]
        results = run_processes(history_worker, args, timeout=SECONDS + 180)
        events = fetch_events(team.daemons[1])

    records = [record for _, recorded in results for record in recorded]
    unanswered = [r for r in records if r["status"] not in (200, 409)]
    assert unanswered == [], unanswered[:5]
    ops = [op_from_answer(record) for record in records]
    orders = check(ops)  # raises NotLinearizable with the item, the prefix and the culprits
    assert sorted(orders) == sorted({op.item for op in ops})

    # The run exercised what the check is about, not only uncontended claims.
    seen = Counter(
        f"{op.kind} {op.error or ('takeover' if op.takeover_from else 'granted')}" for op in ops
    )
    for outcome in (
        "claim granted",
        "claim takeover",
        "claim already_claimed",
        "heartbeat granted",
        "release granted",
        "done granted",
    ):
        assert seen[outcome] > 0, (outcome, seen)
    stale = [op for op in ops if op.error == "lease_lost" and op.holder not in (None, op.agent)]
    assert stale, "no write with a token another agent had taken over"

    # Every granted write is in the log, once, and nothing else happened to these items.
    granted = Counter(
        "takeover"
        if op.takeover_from
        else {"claim": "claimed", "release": "released"}.get(op.kind, op.kind)
        for op in ops
        if op.error is None
    )
    logged = Counter(e["kind"] for e in events if e["kind"] != "created")
    assert logged == granted
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))

    # The check has teeth on this very history: one answer changed, and it is refused.
    _refused_with(ops, lambda op: op.kind == "claim" and op.error is None, _a_second_winner)
    _refused_with(ops, lambda op: op in stale, _accepted_stale)


def _refused_with(ops: list[Op], pick, change) -> None:
    (index, op) = next((i, op) for i, op in enumerate(ops) if pick(op))
    with pytest.raises(NotLinearizable):
        check([*ops[:index], *change(op), *ops[index + 1 :]])


def _a_second_winner(op: Op) -> list[Op]:
    """The claim as it was, and another agent told it won the same claim at the same time."""
    return [op, replace(op, agent=f"{op.agent}-twin", takeover_from=None)]


def _accepted_stale(op: Op) -> list[Op]:
    """The zombie's refused heartbeat (or release, done) answered as granted."""
    at = max(o for o in (op.lease_end, 0.0) if o is not None)
    return [replace(op, error=None, at=at, new_token=op.token, lease_end=at + (op.lease or 1))]
