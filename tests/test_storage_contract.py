"""The storage contract: every backend runs this same suite, SQLite and PostgreSQL.

A backend is added to ``BACKENDS`` and must pass unchanged. The PostgreSQL entry runs each
test on a fresh database (``pg_support``); without a server it is skipped, under CI it fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from coord.model import SHOWN_STATES, Item
from coord.storage.base import ItemQuery, ReadTx, Storage, WriteTx
from coord.storage.sqlite import SQLiteStorage
from pg_support import fresh_database, open_storage


@contextmanager
def _sqlite(tmp: Path) -> Iterator[Storage]:
    yield SQLiteStorage(tmp / "board.db")


@contextmanager
def _postgres(tmp: Path) -> Iterator[Storage]:
    with fresh_database() as dsn:
        yield open_storage(dsn)


BACKENDS: dict[str, Callable[[Path], AbstractContextManager[Storage]]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
}


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.postgres] if name == "postgres" else [])
        for name in sorted(BACKENDS)
    ]
)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    with BACKENDS[request.param](tmp_path) as s:
        try:
            yield s
        finally:
            s.close()


def _add(
    tx: WriteTx,
    title: str = "t",
    priority: int = 2,
    kind: str = "task",
    labels: tuple[str, ...] = (),
    now: float = 100.0,
) -> int:
    return tx.insert_item(
        kind=kind,
        title=title,
        body="",
        priority=priority,
        labels=labels,
        created_by="me",
        recipient=None,
        now=now,
    )


def next_claimable(tx: ReadTx, now: float, kinds: tuple[str, ...], label: str | None) -> int | None:
    found = tx.claimable_items(now, kinds, label, limit=1)
    return found[0].id if found else None


def test_claimable_items_page_in_claim_order(storage: Storage) -> None:
    with storage.write() as tx:
        ids = [_add(tx, priority=p) for p in (3, 1, 1, 0, 2)]
        tx.update_item(
            ids[4],
            0,
            {"state": "claimed", "claimed_by": "a", "fencing_token": 1, "lease_expires_at": 10.0},
        )
    with storage.read() as tx:
        first = tx.claimable_items(20.0, ("task",), None, limit=2)
        after = (first[-1].priority, first[-1].id)
        rest = tx.claimable_items(20.0, ("task",), None, after=after, limit=10)
    # the expired claim (priority 2) takes its place among the pending ones
    assert [i.id for i in first + rest] == [ids[3], ids[1], ids[2], ids[4], ids[0]]


def test_claimable_items_are_read_whole_and_skip_unmet_dependencies(storage: Storage) -> None:
    with storage.write() as tx:
        ids = [_add(tx, title=f"t{p}", priority=p) for p in (4, 0, 2, 0)]
        tx.add_deps(ids[1], [ids[0]])  # waits on a pending item: not claimable
    with storage.read() as tx:
        items = tx.claimable_items(0.0, ("task",), None, limit=10)
        later = tx.claimable_items(0.0, ("task",), None, after=(0, ids[3]), limit=10)
    assert [(i.priority, i.id) for i in items] == [(0, ids[3]), (2, ids[2]), (4, ids[0])]
    assert [i.title for i in items] == ["t0", "t2", "t4"]
    assert [i.id for i in later] == [ids[2], ids[0]]


def test_inserted_item_reads_back_whole(storage: Storage) -> None:
    with storage.write() as tx:
        item_id = _add(tx, "hello", priority=1, kind="bug", labels=("auth", "ui"))
    with storage.read() as tx:
        item = tx.get_item(item_id)
    assert item is not None
    assert (item.title, item.priority, item.kind, item.labels) == (
        "hello",
        1,
        "bug",
        ("auth", "ui"),
    )
    assert (item.state, item.fencing_token, item.claimed_by) == ("pending", 0, None)


def test_ids_are_small_increasing_integers(storage: Storage) -> None:
    with storage.write() as tx:
        ids = [_add(tx) for _ in range(3)]
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    assert ids[0] == 1


def test_update_is_compare_and_set_on_the_token(storage: Storage) -> None:
    with storage.write() as tx:
        item_id = _add(tx)
        claim = {
            "state": "claimed",
            "claimed_by": "a",
            "fencing_token": 1,
            "lease_expires_at": 200.0,
        }
        assert tx.update_item(item_id, 0, claim)
        # the same expected token again is stale now: nothing changes
        assert not tx.update_item(item_id, 0, {**claim, "claimed_by": "b", "fencing_token": 1})
    with storage.read() as tx:
        item = tx.get_item(item_id)
    assert item is not None and (item.claimed_by, item.fencing_token) == ("a", 1)


def test_write_transaction_is_all_or_nothing(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.write() as tx:
        _add(tx)
        tx.append_event(at=1.0, agent="a", item_id=1, kind="created", details={})
        raise RuntimeError("boom")
    with storage.read() as tx:
        assert tx.get_item(1) is None
        assert tx.last_seq() == 0


def test_schema_refuses_a_claim_without_lease(storage: Storage) -> None:
    with storage.write() as tx:
        item_id = _add(tx)
    with pytest.raises(Exception, match=r"(?i)check"), storage.write() as tx:
        tx.update_item(item_id, 0, {"state": "claimed", "claimed_by": "a"})


def test_next_claimable_orders_by_priority_then_age(storage: Storage) -> None:
    with storage.write() as tx:
        low = _add(tx, priority=3)
        high_old = _add(tx, priority=1)
        _add(tx, priority=1)
    with storage.read() as tx:
        assert next_claimable(tx, 0.0, ("task",), None) == high_old
    with storage.write() as tx:
        tx.update_item(high_old, 0, {"state": "done", "closed_at": 1.0})
        tx.update_item(high_old + 1, 0, {"state": "cancelled", "closed_at": 1.0})
    with storage.read() as tx:
        assert next_claimable(tx, 0.0, ("task",), None) == low


def test_a_cancelled_item_set_back_to_pending_is_claimable_again(storage: Storage) -> None:
    """What reopen asks of a backend: an item written back from cancelled to pending (no new
    verb, the compare-and-set update) is in the pending index again, listed and claimable,
    and its token did not move."""
    with storage.write() as tx:
        item_id = _add(tx)
        assert tx.update_item(item_id, 0, {"state": "cancelled", "closed_at": 1.0})
    with storage.read() as tx:
        assert next_claimable(tx, 0.0, ("task",), None) is None
        assert [i.id for i in tx.list_items(ItemQuery(state="cancelled"))] == [item_id]
    with storage.write() as tx:
        assert tx.update_item(item_id, 0, {"state": "pending", "closed_at": None})
    with storage.read() as tx:
        assert next_claimable(tx, 0.0, ("task",), None) == item_id
        assert [i.id for i in tx.list_items(ItemQuery(state="pending"))] == [item_id]
        item = tx.get_item(item_id)
        assert item is not None
        assert (item.state, item.closed_at, item.fencing_token) == ("pending", None, 0)


def test_next_claimable_filters_kind_label_and_skips_unmet_deps(storage: Storage) -> None:
    with storage.write() as tx:
        dep = _add(tx, priority=4)
        blocked = _add(tx, priority=0)
        tx.add_deps(blocked, [dep])
        bug = _add(tx, priority=3, kind="bug", labels=("ui",))
    with storage.read() as tx:
        assert next_claimable(tx, 0.0, ("task",), None) == dep
        assert next_claimable(tx, 0.0, ("bug",), None) == bug
        assert next_claimable(tx, 0.0, ("task", "bug"), "ui") == bug
        assert next_claimable(tx, 0.0, ("task",), "nope") is None
    with storage.write() as tx:
        tx.update_item(dep, 0, {"state": "done", "closed_at": 1.0})
    with storage.read() as tx:
        assert next_claimable(tx, 0.0, ("task",), None) == blocked
        assert tx.get_item(blocked).blocked_by == ()  # type: ignore[union-attr]


def test_next_claimable_finds_expired_leases_but_not_live_ones(storage: Storage) -> None:
    with storage.write() as tx:
        item_id = _add(tx)
        tx.update_item(
            item_id,
            0,
            {"state": "claimed", "claimed_by": "a", "fencing_token": 1, "lease_expires_at": 50.0},
        )
    with storage.read() as tx:
        assert next_claimable(tx, 49.0, ("task",), None) is None
        assert next_claimable(tx, 50.0, ("task",), None) == item_id


# Every shape an item can be in for claim-next: (state, lease end, question, dependency state).
_CLAIM_SHAPES = [
    (state, lease, question, dep)
    for state, lease, question in [
        ("pending", None, None),
        ("claimed", 40.0, None),  # lease ran out
        ("claimed", 60.0, None),  # live
        ("claimed", 60.0, "which db?"),  # needs_human within the escalation bound
        ("claimed", 40.0, "which db?"),  # needs_human past the bound: stale, lapsed
        ("done", None, None),
        ("cancelled", None, None),
    ]
    for dep in (None, "pending", "done")
]


def test_claimable_in_storage_is_the_models_claimable(storage: Storage) -> None:
    """The claimable predicate lives in SQL (it must: claim-next is one indexed statement)
    and in the model (``Item.claimable``); on every shape of item they agree."""
    now = 50.0
    shaped: list[int] = []
    with storage.write() as tx:
        for state, lease, question, dep in _CLAIM_SHAPES:
            item_id = _add(tx)
            shaped.append(item_id)
            if dep is not None:
                dep_id = _add(tx)
                if dep == "done":
                    tx.update_item(dep_id, 0, {"state": "done", "closed_at": 1.0})
                tx.add_deps(item_id, [dep_id])
            changes: dict[str, Any] = {"state": state, "question": question}
            if state == "claimed":
                changes |= {"claimed_by": "a", "fencing_token": 1, "lease_expires_at": lease}
            elif state != "pending":
                changes["closed_at"] = 1.0
            assert tx.update_item(item_id, 0, changes)
    with storage.read() as tx:
        every = tx.list_items(ItemQuery(limit=1000))
        listed = [i.id for i in tx.list_items(ItemQuery(claimable_at=now, limit=1000))]
        paged = [i.id for i in tx.claimable_items(now, ("task",), None, limit=1000)]
    claimable = [i.id for i in every if i.claimable(now)]
    # pending, lapsed or stale, with no dependency or a done one (and pending dependencies)
    assert len([i for i in claimable if i in shaped]) == 6
    assert listed == claimable
    assert sorted(paged) == claimable


def test_list_items_filters(storage: Storage) -> None:
    with storage.write() as tx:
        a = _add(tx, labels=("x",))
        b = _add(tx, kind="note")
        tx.update_item(b, 0, {"state": "done", "closed_at": 1.0})
    with storage.read() as tx:
        assert [i.id for i in tx.list_items(ItemQuery())] == [a, b]
        assert [i.id for i in tx.list_items(ItemQuery(state="open"))] == [a]
        assert [i.id for i in tx.list_items(ItemQuery(state="done"))] == [b]
        assert [i.id for i in tx.list_items(ItemQuery(label="x"))] == [a]
        assert [i.id for i in tx.list_items(ItemQuery(kinds=("note",)))] == [b]
        assert [i.id for i in tx.list_items(ItemQuery(after_id=a))] == [b]
        assert [i.id for i in tx.list_items(ItemQuery(claimable_at=0.0))] == [a]


def test_list_items_by_holder_and_blocked(storage: Storage) -> None:
    """`coord ls --mine/--holder` and `--state blocked`: a holder's items are those it holds
    (a question waiting included) and, done, those it finished; blocked is pending with a
    dependency not done, the rows `coord ls` shows as blocked."""
    claimed = {"state": "claimed", "fencing_token": 1, "lease_expires_at": 50.0}
    with storage.write() as tx:
        held, asked, finished, other, dep, waits, free = (_add(tx) for _ in range(7))
        assert tx.update_item(held, 0, {**claimed, "claimed_by": "a"})
        assert tx.update_item(asked, 0, {**claimed, "claimed_by": "a", "question": "?"})
        assert tx.update_item(finished, 0, {**claimed, "claimed_by": "a"})
        assert tx.update_item(finished, 1, {"state": "done", "lease_expires_at": None})
        assert tx.update_item(other, 0, {**claimed, "claimed_by": "b"})
        tx.add_deps(waits, [dep])
        tx.add_deps(free, [finished])  # its dependency is done: not blocked
    with storage.read() as tx:

        def ids(**query: Any) -> list[int]:
            return [i.id for i in tx.list_items(ItemQuery(**query))]

        assert ids(holder="a") == [held, asked, finished]
        assert ids(holder="a", state="open") == [held, asked]
        assert ids(holder="a", state="claimed") == [held]
        assert ids(holder="a", state="done") == [finished]
        assert ids(holder="b") == [other]
        assert ids(holder="nobody") == []
        assert ids(state="blocked") == [waits]
        blocked = tx.list_items(ItemQuery(state="blocked"))
        assert [i.blocked_by for i in blocked] == [(dep,)]
        assert ids(state="blocked", after_id=waits) == []


def test_events_are_gapless_and_readable_by_item(storage: Storage) -> None:
    with storage.write() as tx:
        seqs = [
            tx.append_event(at=float(n), agent="a", item_id=n % 2, kind="k", details={"n": n})
            for n in range(6)
        ]
    assert seqs == list(range(1, 7))
    with storage.read() as tx:
        assert [e.details["n"] for e in tx.events_after(2, 10)] == [2, 3, 4, 5]
        assert [e.seq for e in tx.events_after(0, 10, item_id=1)] == [2, 4, 6]
        assert tx.last_seq() == 6


def test_events_are_read_by_bytes_never_decoding_past_the_budget(storage: Storage) -> None:
    """A page of big events is cut by the bytes of their details (an edit's event keeps a
    64 KB body): the stream reads 256 KiB, not 200 events of 65 KB. At least one event comes,
    however big, or a reader could never pass it."""
    big = "x" * 10_000
    with storage.write() as tx:
        for n in range(10):
            tx.append_event(at=float(n), agent="a", item_id=1 + n % 2, kind="k", details={"t": big})
    with storage.read() as tx:
        # the event that reaches the budget is taken, none after it
        assert [e.seq for e in tx.events_after(0, 200, max_bytes=25_000)] == [1, 2, 3]
        assert [e.seq for e in tx.events_after(3, 200, max_bytes=1)] == [4]
        assert [e.seq for e in tx.events_after(0, 200, item_id=2, max_bytes=15_000)] == [2, 4]
        assert [e.seq for e in tx.events_after(0, 2, max_bytes=10**9)] == [1, 2]  # and by count
        assert [e.seq for e in tx.events_after(9, 200, max_bytes=1)] == [10]
        assert tx.events_after(10, 200, max_bytes=1) == []


def test_event_log_is_append_only(storage: Storage) -> None:
    with storage.write() as tx:
        tx.append_event(at=1.0, agent="a", item_id=None, kind="k", details={})
    with pytest.raises(Exception, match="append-only"), storage.write() as tx:
        tx.conn.execute("DELETE FROM events")  # type: ignore[attr-defined]


def test_deps_and_existing_ids(storage: Storage) -> None:
    with storage.write() as tx:
        a, b, c = _add(tx), _add(tx), _add(tx)
        tx.add_deps(c, [a, b])
        tx.add_deps(c, [a])  # idempotent
        tx.remove_deps(c, [b])
    with storage.read() as tx:
        assert tx.deps_of([a, c]) == {c: [a]}
        assert tx.existing_ids([a, 99]) == {a}


def test_acks_replies_agents_and_inbox_cursor(storage: Storage) -> None:
    with storage.write() as tx:
        item_id = _add(tx)
        assert tx.add_ack(item_id, "b", 1.0)
        assert not tx.add_ack(item_id, "b", 2.0)
        tx.add_reply(item_id, "b", "hi", 3.0)
        tx.touch_agent("b", 3.0)
        tx.touch_agent("b", 4.0)
        tx.set_inbox_cursor("b", 7, 4.0)
        tx.set_inbox_cursor("b", 5, 4.0)  # never moves back
    with storage.read() as tx:
        assert tx.acks(item_id) == [("b", 1.0)]
        assert [(r.author, r.body) for r in tx.replies(item_id)] == [("b", "hi")]
        agents = tx.agents()
        assert [(a.name, a.first_seen, a.last_seen) for a in agents] == [("b", 3.0, 4.0)]
        assert tx.inbox_cursor("b") == 7
        assert tx.inbox_cursor("nobody") == 0


def test_agents_marked_as_working_and_deleted(storage: Storage) -> None:
    """`coord agents` lists the names that acted as agents (the mark stays once set) and
    `--prune` deletes agents, cursor and all."""
    with storage.write() as tx:
        tx.touch_agent("person", 1.0)
        tx.touch_agent("worker", 2.0, worked=True)
        tx.touch_agent("worker", 3.0)  # seen again: still an agent
        tx.touch_agent("reader", 4.0)
        tx.set_inbox_cursor("reader", 9, 4.0)
    with storage.read() as tx:
        seen = {a.name: (a.worked, a.last_seen) for a in tx.agents()}
    assert seen == {"person": (False, 1.0), "worker": (True, 3.0), "reader": (False, 4.0)}
    with storage.write() as tx:
        tx.delete_agents(["worker", "reader", "nobody"])
    with storage.read() as tx:
        assert [a.name for a in tx.agents()] == ["person"]
        assert tx.inbox_cursor("reader") == 0  # forgotten with it
    with storage.write() as tx:
        tx.touch_agent("worker", 5.0)  # back after the prune: seen, not yet an agent
    with storage.read() as tx:
        assert {a.name: a.worked for a in tx.agents()} == {"worker": False, "person": False}


def test_replies_come_a_page_at_a_time(storage: Storage) -> None:
    with storage.write() as tx:
        item_id = _add(tx)
        ids = [tx.add_reply(item_id, "b", f"r{n}", float(n)) for n in range(5)]
    with storage.read() as tx:
        assert [r.body for r in tx.replies(item_id, ids[1], 2)] == ["r2", "r3"]
        assert [r.body for r in tx.replies(item_id, ids[3])] == ["r4"]
        assert len(tx.replies(item_id)) == 5


def test_the_inbox_tells_a_holder_its_claim_was_taken_or_cancelled(storage: Storage) -> None:
    """The item no longer names its former holder once another took it or a human cancelled
    it; the event does (``takeover_from``, ``holder``), and the inbox reads it there."""
    with storage.write() as tx:
        item_id = _add(tx)  # created by "me"
        for kind, details in (
            ("takeover", {"takeover_from": "worker"}),
            ("cancelled", {"reason": "design changed", "holder": "worker"}),
            ("cancelled", {"reason": "someone else's", "holder": "other"}),
        ):
            tx.append_event(at=1.0, agent="lead", item_id=item_id, kind=kind, details=details)
    with storage.read() as tx:
        seen = [(e.kind, e.details.get("reason")) for e in tx.inbox_events("worker", 0, 10)]
        assert seen == [("takeover", None), ("cancelled", "design changed")]


def test_the_inbox_skips_what_came_before_the_agent_first_acted(storage: Storage) -> None:
    """One rule on every backend: on an item I made, hold or replied on, only what others did
    after my own first event on it is news (issue 25: the history of an item just taken is not)."""
    with storage.write() as tx:
        item_id = _add(tx)  # made by "me"; "worker" is only its replier
        for agent, kind in (("lead", "edited"), ("worker", "reply"), ("lead", "reply")):
            tx.append_event(at=1.0, agent=agent, item_id=item_id, kind=kind, details={})
        tx.add_reply(item_id, "worker", "mine", 1.0)
    with storage.read() as tx:
        assert [e.seq for e in tx.inbox_events("worker", 0, 10)] == [3]


def test_an_event_is_read_with_its_items_package_id(storage: Storage) -> None:
    """Every face names an item as `coord ls` does; the log, a page within a byte budget and
    the inbox carry the package id with each event (``None`` for an item without one)."""
    with storage.write() as tx:
        keyed = tx.insert_item(
            kind="task", title="t", body="", priority=2, labels=(), created_by="me",
            recipient="w", now=1.0, key="T3",
        )  # fmt: skip
        plain = _add(tx)
        for item_id in (keyed, plain, None):
            tx.append_event(at=1.0, agent="lead", item_id=item_id, kind="edited", details={})
    with storage.read() as tx:
        assert [e.item_key for e in tx.events_after(0, 10)] == ["T3", None, None]
        assert [e.item_key for e in tx.events_after(0, 10, max_bytes=1000)] == ["T3", None, None]
        assert [e.item_key for e in tx.events_after(0, 10, item_id=keyed)] == ["T3"]
        assert [e.item_key for e in tx.inbox_events("w", 0, 10)] == ["T3"]


def test_live_reservations_near_returns_every_possible_overlap(storage: Storage) -> None:
    held = [
        "src",
        "src/a",
        "src/a/b.py",
        "src/a/b.py/deeper",
        "**/*.sql",
        "src/*/b.py",
        "docs",
        "src/ab",
        "srcx/a/b.py",
        "src/a/c.py",
    ]
    with storage.write() as tx:
        for n, pattern in enumerate(held):
            tx.insert_reservation(
                agent=f"a{n}",
                pattern=pattern,
                exclusive=True,
                item_id=None,
                reason="",
                now=1.0,
                expires_at=100.0,
            )
        tx.insert_reservation(
            agent="gone",
            pattern="src/a/b.py",
            exclusive=True,
            item_id=None,
            reason="",
            now=1.0,
            expires_at=50.0,
        )
    with storage.read() as tx:
        near = {r.pattern for r in tx.live_reservations(60.0, near=["src/a/b.py"])}
        everything = tx.live_reservations(60.0)
        mine = tx.live_reservations(60.0, agent="a3")
        from_glob = tx.live_reservations(60.0, near=["**/x"])
    # ancestors, itself, what lies beneath, and patterns starting with a glob: all there
    assert {"src", "src/a", "src/a/b.py", "src/a/b.py/deeper", "**/*.sql", "src/*/b.py"} <= near
    # what cannot overlap may be left out, and the expired one never counts
    assert not near & {"docs", "srcx/a/b.py", "src/ab"}
    assert len(everything) == len(held)
    assert [r.pattern for r in mine] == ["src/a/b.py/deeper"]
    assert len(from_glob) == len(held)  # a pattern starting with a glob may meet anything


# --- claim-next's one-statement claim ---------------------------------------------------------
# A backend may leave ``take_first_pending`` at its default (None: the core does the claim);
# the answers it does give must be exactly the core's.


def _claimed_fields(item: Item | None) -> tuple[Any, ...]:
    assert item is not None
    return (item.id, item.state, item.claimed_by, item.fencing_token, item.lease_expires_at)


class _Undo(Exception):
    pass


def _offers_one_statement_claim(storage: Storage) -> bool:
    took = None
    with pytest.raises(_Undo), storage.write() as tx:  # rolled back: leaves nothing behind
        _add(tx)
        took = tx.take_first_pending("a", ("task",), None, 1.0, 2.0)
        raise _Undo
    return took is not None


def test_take_first_pending_claims_the_item_claimable_items_puts_first(storage: Storage) -> None:
    if not _offers_one_statement_claim(storage):
        pytest.skip("this backend leaves every claim to the core")
    with storage.write() as tx:
        dep = _add(tx, priority=4)
        blocked = _add(tx, priority=0)
        tx.add_deps(blocked, [dep])
        low = _add(tx, priority=3)
        bug = _add(tx, priority=1, kind="bug", labels=("ui",))
        first = _add(tx, priority=1)
    cases = [(("task",), None), (("task", "bug"), "ui"), (("task", "bug"), None)] * 2
    taken = []
    for kinds, label in cases:
        with storage.write() as tx:
            in_line = tx.claimable_items(500.0, kinds, label)
            took = tx.take_first_pending("agent", kinds, label, 500.0, 800.0)
            if not in_line:
                assert took is None
                continue
            expected = in_line[0]
            assert _claimed_fields(took) == (
                expected.id,
                "claimed",
                "agent",
                expected.fencing_token + 1,
                800.0,
            )
            assert took is not None and took.updated_at == 500.0 and took.deps == expected.deps
            assert _claimed_fields(tx.get_item(took.id)) == _claimed_fields(took)
            taken.append(took.id)
    # the dependency is claimed, not done: the item waiting on it is never taken
    assert taken == [first, bug, low, dep]
    with storage.read() as tx:
        assert tx.get_item(blocked).state == "pending"  # type: ignore[union-attr]


def test_take_first_pending_leaves_files_and_takeovers_to_the_core(storage: Storage) -> None:
    offers = _offers_one_statement_claim(storage)
    with storage.write() as tx:
        with_files = _add(tx, priority=0)
        tx.set_item_files(with_files, ["src/a.py"])
        plain = _add(tx, priority=1)
        lapsed = _add(tx, priority=4, kind="bug")
        tx.update_item(
            lapsed,
            0,
            {"state": "claimed", "claimed_by": "x", "fencing_token": 1, "lease_expires_at": 50.0},
        )
    with storage.write() as tx:
        # first in line declares files: the core must check them; nothing is written
        assert tx.take_first_pending("a", ("task", "bug"), None, 10.0, 99.0) is None
        tx.update_item(with_files, 0, {"state": "cancelled", "closed_at": 1.0})
        # a lapsed lease is claimable (even behind a better pending item): a takeover
        assert tx.take_first_pending("a", ("task", "bug"), None, 60.0, 99.0) is None
    with storage.read() as tx:
        assert [(i.state, i.fencing_token) for i in map(tx.get_item, (plain, lapsed))] == [  # type: ignore[union-attr]
            ("pending", 0),
            ("claimed", 1),
        ]
    with storage.write() as tx:
        # the lapsed one is a bug, outside this filter: it does not stand in the way
        took = tx.take_first_pending("a", ("task",), None, 60.0, 99.0)
        if offers:
            assert _claimed_fields(took) == (plain, "claimed", "a", 1, 99.0)
        else:
            assert took is None
        assert tx.take_first_pending("a", ("task",), None, 60.0, 99.0) is None  # none left


def test_counts_by_state_and_claims_ending_in_a_window(storage: Storage) -> None:
    """`coord status` reads these on a board of any size: grouped counts, and the claims whose
    lease ends soon (a question waiting on a human is counted and listed apart)."""
    claimed = {"state": "claimed", "claimed_by": "a", "fencing_token": 1}
    with storage.write() as tx:
        _add(tx)  # pending
        ends = {lease: _add(tx) for lease in (40.0, 70.0, 60.0, 200.0)}
        for lease, item_id in ends.items():
            assert tx.update_item(item_id, 0, {**claimed, "lease_expires_at": lease})
        waiting = _add(tx)
        assert tx.update_item(waiting, 0, {**claimed, "lease_expires_at": 65.0, "question": "?"})
        for state in ("done", "done", "cancelled"):
            assert tx.update_item(_add(tx), 0, {"state": state, "closed_at": 1.0})
    with storage.read() as tx:
        assert tx.count_items_by_state() == {
            "pending": 1,
            "needs_rework": 0,
            "claimed": 4,
            "needs_human": 1,
            "queued": 0,
            "done": 2,
            "merged": 0,
            "cancelled": 1,
        }
        soon = tx.claims_ending_between(50.0, 100.0, limit=10)
        assert [i.id for i in soon] == [ends[60.0], ends[70.0]]
        assert [i.id for i in tx.claims_ending_between(50.0, 100.0, limit=1)] == [ends[60.0]]
        assert [i.id for i in tx.claims_ending_between(0.0, 50.0, limit=10)] == [ends[40.0]]


def test_counts_follow_every_write_and_a_rollback(storage: Storage) -> None:
    """The counts are kept by the writes themselves (no read of the items): an item added,
    claimed, closed, set back; a transaction rolled back leaves them as they were."""
    with storage.write() as tx:
        a, b = _add(tx), _add(tx)
        assert tx.update_item(
            a, 0, {"state": "claimed", "claimed_by": "x", "lease_expires_at": 9.0}
        )
        assert tx.update_item(a, 0, {"title": "retitled"})  # no state change
    with pytest.raises(RuntimeError), storage.write() as tx:
        _add(tx)
        tx.update_item(b, 0, {"state": "cancelled", "closed_at": 1.0})
        raise RuntimeError("rolled back")
    with storage.write() as tx:
        assert tx.update_item(
            a, 0, {"state": "done", "claimed_by": "x", "lease_expires_at": None, "closed_at": 2.0}
        )
        assert tx.update_item(b, 0, {"state": "cancelled", "closed_at": 1.0})
        assert tx.update_item(b, 0, {"state": "pending", "closed_at": None})
    with storage.read() as tx:
        counts = tx.count_items_by_state()
    assert counts == {**dict.fromkeys(SHOWN_STATES, 0), "pending": 1, "done": 1}


def test_counts_of_an_empty_board_name_every_state(storage: Storage) -> None:
    with storage.read() as tx:
        assert tx.count_items_by_state() == dict.fromkeys(
            (
                "pending",
                "needs_rework",
                "claimed",
                "needs_human",
                "queued",
                "done",
                "merged",
                "cancelled",
            ),
            0,
        )


def test_the_landing_queue_is_in_submit_order_and_the_counts_follow_it(storage: Storage) -> None:
    """Queued items come back by ``submitted_at`` (then id), not by id; 'queued' and 'merged'
    are counted by the writes themselves, and a rollback leaves the counts as they were."""
    queued = {"state": "queued", "claimed_by": "a", "lease_expires_at": None}
    with storage.write() as tx:
        ids = [_add(tx) for _ in range(3)]
        for item_id, at in zip(ids, (30.0, 10.0, 20.0), strict=True):
            assert tx.update_item(item_id, 0, {**queued, "submitted_at": at})
        assert [i.id for i in tx.queued_items(10)] == [ids[1], ids[2], ids[0]]
        assert [i.id for i in tx.queued_items(1)] == [ids[1]]
    with pytest.raises(RuntimeError), storage.write() as tx:
        tx.update_item(ids[0], 0, {"state": "done", "merged_commit": "c" * 40})
        raise RuntimeError("rolled back")
    with storage.write() as tx:
        assert tx.update_item(ids[1], 0, {"state": "done", "merged_commit": "c" * 40})
        rework = {"reason": "conflict", "files": ["a.py"]}
        assert tx.update_item(ids[2], 0, {"state": "pending", "claimed_by": None, "rework": rework})
    with storage.read() as tx:
        counts = tx.count_items_by_state()
        assert [i.id for i in tx.queued_items(10)] == [ids[0]]
        back = tx.get_item(ids[2])
    assert back is not None and back.rework == rework and back.shown_state == "needs_rework"
    assert counts == {**dict.fromkeys(SHOWN_STATES, 0), "queued": 1, "merged": 1, "needs_rework": 1}


def test_the_landing_lease_row_is_written_once_and_kept(storage: Storage) -> None:
    with storage.read() as tx:
        assert tx.landing_lease() is None
    with storage.write() as tx:
        tx.set_landing_lease("r1", 1, 50.0)
        tx.set_landing_lease(None, 1, None)
    with storage.read() as tx:
        lease = tx.landing_lease()
    assert lease is not None and (lease.holder, lease.token, lease.expires_at) == (None, 1, None)
    with storage.write() as tx:
        tx.set_landing_lease("r2", 2, 90.0)
    with storage.read() as tx:
        lease = tx.landing_lease()
    assert lease is not None and (lease.holder, lease.token, lease.live(89.0)) == ("r2", 2, True)
    assert not lease.live(90.0)  # inclusive: at its expiry the lease is over


def test_open_items_are_counted_by_what_holds_each_back(storage: Storage) -> None:
    """Claim-next's refusal counts (issue 25): one reason per open item, the first that
    applies; done items and other kinds are not counted."""
    claim = {"state": "claimed", "fencing_token": 1}
    with storage.write() as tx:
        mine, theirs, asked, lapsed, waits, reserved, for_me, free, done, queued = (
            _add(tx, title=f"t{n}") for n in range(10)
        )
        bug = _add(tx, kind="bug")
        tx.update_item(mine, 0, {**claim, "claimed_by": "me", "lease_expires_at": 50.0})
        tx.update_item(theirs, 0, {**claim, "claimed_by": "b", "lease_expires_at": 50.0})
        tx.update_item(
            asked, 0, {**claim, "claimed_by": "b", "lease_expires_at": 50.0, "question": "?"}
        )
        tx.update_item(lapsed, 0, {**claim, "claimed_by": "b", "lease_expires_at": 5.0})
        tx.add_deps(waits, [free])
        tx.update_item(reserved, 0, {"reserved_for": "alice"})
        tx.update_item(for_me, 0, {"reserved_for": "me"})
        tx.update_item(done, 0, {"state": "done"})
        tx.update_item(queued, 0, {**claim, "state": "queued", "claimed_by": "b"})
    with storage.read() as tx:
        counts = tx.count_held_back(10.0, ("task",), None, "me")
        bugs = tx.count_held_back(10.0, ("bug",), None, "me")
        labelled = tx.count_held_back(10.0, ("task",), "nope", "me")
    assert counts == {
        "landing": 1,
        "needs_human": 1,
        "yours": 1,
        "claimed": 1,
        "waiting_on_dependencies": 1,
        "reserved_for_you": 1,
        "reserved_in_document": 1,
        "open": 2,  # the free one and the lapsed claim: the core judges their files
    }
    assert bugs["open"] == 1 and sum(bugs.values()) == 1 and bug
    assert sum(labelled.values()) == 0


def test_the_pending_items_a_document_reserves_are_named_in_claim_order(storage: Storage) -> None:
    """Claim-next's refusal names them (issue 25): pending, reserved, no dependency open (the
    ones ``count_held_back`` calls ``reserved_*``), of these kinds, by priority then id."""
    with storage.write() as tx:
        late, first, waits, done, free = (_add(tx, title=f"t{n}") for n in range(5))
        bug = _add(tx, kind="bug")
        tx.update_item(late, 0, {"reserved_for": "alice", "priority": 3})
        tx.update_item(first, 0, {"reserved_for": "me", "priority": 1})
        tx.update_item(waits, 0, {"reserved_for": "bob"})
        tx.add_deps(waits, [free])
        tx.update_item(done, 0, {"reserved_for": "bob", "state": "done"})
        tx.update_item(bug, 0, {"reserved_for": "bob"})
    with storage.read() as tx:
        named = tx.reserved_pending(("task",), None, 5)
        one = tx.reserved_pending(("task",), None, 1)
        bugs = tx.reserved_pending(("bug",), None, 5)
    assert [(i.id, i.reserved_for) for i in named] == [(first, "me"), (late, "alice")]
    assert [i.id for i in one] == [first] and [i.id for i in bugs] == [bug]


def test_access_tokens_are_kept_by_hash_listed_without_it_and_revoked_once(
    storage: Storage,
) -> None:
    alice, robot = "a" * 64, "b" * 64
    with storage.write() as tx:
        first = tx.insert_access_token("alice", False, alice, 10.0)
        second = tx.insert_access_token("ci", True, robot, 11.0)
    assert second > first
    with storage.read() as tx:
        found = tx.access_token(alice)
        assert found is not None
        assert (found.id, found.name, found.machine, found.revoked_at) == (
            first,
            "alice",
            False,
            None,
        )
        assert tx.access_token("c" * 64) is None
        assert [(t.name, t.machine) for t in tx.access_tokens()] == [
            ("alice", False),
            ("ci", True),
        ]
        # the identity proof's key: named by the hash's first 16 digits, a live token's only
        assert tx.access_token_hash("b" * 16) == robot
        assert tx.access_token_hash("c" * 16) is None
    with storage.write() as tx:
        tx.touch_access_token(first, 20.0)
        tx.touch_access_token(first, 30.0)  # within a minute of the last: not written
        assert tx.revoke_access_token(second, 40.0)
        assert not tx.revoke_access_token(second, 50.0)  # revoked at its first time
        assert not tx.revoke_access_token(999, 50.0)
    with storage.read() as tx:
        used, revoked = tx.access_tokens()
        assert (used.last_used_at, used.revoked_at) == (20.0, None)
        assert revoked.revoked_at == 40.0
        assert tx.access_token_hash("b" * 16) is None  # a revoked token proves nothing


def test_a_secret_hash_is_issued_once(storage: Storage) -> None:
    with storage.write() as tx:
        tx.insert_access_token("alice", False, "d" * 64, 1.0)
    with pytest.raises(Exception), storage.write() as tx:  # noqa: B017 - each driver's own
        tx.insert_access_token("bob", False, "d" * 64, 2.0)
    with storage.read() as tx:
        assert [t.name for t in tx.access_tokens()] == ["alice"]
