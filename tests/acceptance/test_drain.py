"""16 processes drain a board with claim-next + done: every item is claimed exactly once."""

from __future__ import annotations

from collections import Counter

from _workers import CTX, drain_worker, fetch_events, import_items, run_processes

from conftest import SOAK

WORKERS = 16
ITEMS = 20_000 if SOAK else 2_000


def test_16_processes_drain_the_board_each_item_claimed_once(daemon):
    ids = import_items(daemon, ITEMS)
    assert len(set(ids)) == ITEMS
    barrier = CTX.Barrier(WORKERS)
    args = [(daemon.url, daemon.token, f"drainer-{n}", barrier, ITEMS) for n in range(WORKERS)]
    results = run_processes(drain_worker, args, timeout=240 if SOAK else 120)

    for agent, _, surprises in results:
        assert surprises == [], (agent, surprises)
    reported = [item_id for _, claimed, _ in results for item_id in claimed]
    duplicates = [i for i, n in Counter(reported).items() if n > 1]
    assert duplicates == []
    assert sorted(reported) == sorted(ids)
    status, body = daemon.request("GET", "/v1/items?state=open&limit=10")
    assert (status, body["items"]) == (200, [])

    events = fetch_events(daemon)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = Counter(e["kind"] for e in events)
    assert kinds == {"created": ITEMS, "claimed": ITEMS, "done": ITEMS}
    for kind in ("claimed", "done"):
        per_item = Counter(e["item_id"] for e in events if e["kind"] == kind)
        assert set(per_item) == set(ids) and set(per_item.values()) == {1}, kind
    # The log names the same claimer as the worker that was told it won.
    told = {item_id: agent for agent, claimed, _ in results for item_id in claimed}
    logged = {e["item_id"]: e["agent"] for e in events if e["kind"] == "claimed"}
    assert logged == told
