"""The storage contract for the waiters' queue and the asks (issue 26), on every backend:
the same suite as ``test_storage_contract`` (its ``storage`` fixture), SQLite and PostgreSQL."""

from __future__ import annotations

from coord.storage.base import Storage
from test_storage_contract import storage  # noqa: F401 (the fixture: every backend)


def test_the_queue_is_live_places_in_arrival_order(storage: Storage) -> None:  # noqa: F811
    with storage.write() as tx:
        first = tx.insert_wait(
            agent="b", item_id=7, patterns=(), lease_seconds=60, now=100.0, expires_at=130.0
        )
        second = tx.insert_wait(
            agent="c",
            item_id=None,
            patterns=("src/a.py", "src/b.py"),
            lease_seconds=30,
            now=101.0,
            expires_at=110.0,
        )
        third = tx.insert_wait(
            agent="d", item_id=7, patterns=(), lease_seconds=60, now=102.0, expires_at=140.0
        )
    assert first < second < third
    with storage.read() as tx:
        assert [w.id for w in tx.waiting(105.0, 10)] == [first, second, third]
        # a place past its lease is out of the queue, though no write said so
        assert [w.id for w in tx.waiting(115.0, 10)] == [first, third]
        assert [w.id for w in tx.waiting(105.0, 1)] == [first]
        got = tx.get_wait(second)
    assert got is not None
    assert (got.agent, got.item_id, got.patterns, got.state) == (
        "c",
        None,
        ("src/a.py", "src/b.py"),
        "waiting",
    )
    assert got.lease_seconds == 30.0 and got.expires_at == 110.0


def test_an_ended_place_stays_ended(storage: Storage) -> None:  # noqa: F811
    with storage.write() as tx:
        wait = tx.insert_wait(
            agent="b", item_id=3, patterns=(), lease_seconds=60, now=100.0, expires_at=130.0
        )
        tx.renew_wait(wait, 200.0)
        tx.end_wait(wait, "granted", 150.0, token=4)
        tx.end_wait(wait, "cancelled", 151.0)  # too late: it was granted
        tx.renew_wait(wait, 999.0)  # an ended place is not renewed
    with storage.read() as tx:
        got = tx.get_wait(wait)
        assert tx.waiting(160.0, 10) == []
        assert tx.get_wait(wait + 1000) is None
    assert got is not None
    assert (got.state, got.token, got.ended_at, got.expires_at) == ("granted", 4, 150.0, 200.0)


def test_open_asks_are_the_unanswered_unexpired_ones_of_a_holder(storage: Storage) -> None:  # noqa: F811
    with storage.write() as tx:
        ids = [
            tx.insert_ask(
                asker="b",
                holder=holder,
                item_id=item,
                token=token,
                patterns=paths,
                reason="need it",
                now=100.0,
                expires_at=expires,
            )
            for holder, item, token, paths, expires in (
                ("a", 5, 2, (), 200.0),
                ("a", None, None, ("x.py",), 120.0),
                ("z", 6, 1, (), 200.0),
                ("a", 7, 1, (), 200.0),
            )
        ]
        tx.answer_ask(ids[3], "defer", "after the tests", 300.0, 110.0)
    with storage.read() as tx:
        assert [a.id for a in tx.open_asks("a", 105.0, 10)] == ids[:2]
        assert [a.id for a in tx.open_asks("a", 125.0, 10)] == ids[:1]  # timed out
        deferred = tx.get_ask(ids[3])
        paths = tx.get_ask(ids[1])
    assert deferred is not None and paths is not None
    assert (deferred.answer, deferred.answer_reason, deferred.deferred_until) == (
        "defer",
        "after the tests",
        300.0,
    )
    assert deferred.shown_state(1000.0) == "deferred"
    assert (paths.patterns, paths.item_id, paths.token) == (("x.py",), None, None)
    assert paths.shown_state(105.0) == "open" and paths.shown_state(125.0) == "timed_out"
