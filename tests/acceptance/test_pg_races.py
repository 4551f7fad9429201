"""Races across daemons: three checkouts (machines), three real daemons on three ports, one
PostgreSQL database; separate OS processes released together, each talking real HTTP to
one of the daemons.

The single-daemon versions (test_claim_race, test_drain, test_reserve_race, test_fencing)
prove the rules inside one process; here the only thing the daemons share is the database,
so these prove the rules hold where they are decided: in its transactions.
Skipped without a PostgreSQL server; under CI=true a skip is a failure (``pg_support``).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from _pg_team import Team, item_of, team_on
from _workers import CTX, drain_worker, fetch_events, import_items, race_worker, reserve_worker
from _workers import run_processes as run

from conftest import SOAK

pytestmark = pytest.mark.postgres
DAEMONS = 3


@pytest.fixture
def team(pg_dsn: str, tmp_path: Path):
    with team_on(pg_dsn, tmp_path, DAEMONS) as made:
        yield made


def test_32_processes_through_3_daemons_claim_one_item_exactly_one_wins(team: Team) -> None:
    racers, rounds = 32, 20 if SOAK else 4
    first = team.daemons[0]
    item_ids = import_items(first, rounds)
    (last,) = import_items(team.daemons[1], 1)  # the only ready item for the claim-next round
    barrier = CTX.Barrier(racers)
    agents = [f"racer-{n}" for n in range(racers)]
    args = [
        (url, token, agent, barrier, [*item_ids, None])
        for (url, token), agent in zip(team.endpoints(racers), agents, strict=True)
    ]
    answers = dict(run(race_worker, args, timeout=180))
    assert sorted(answers) == sorted(agents)

    for index, item_id in enumerate([*item_ids, last]):
        this_round = {agent: replies[index] for agent, replies in answers.items()}
        winners = [agent for agent, (status, _) in this_round.items() if status == 200]
        assert len(winners) == 1, (item_id, Counter(s for s, _ in this_round.values()))
        (winner,) = winners
        claim = this_round[winner][1]
        assert (claim["id"], claim["agent"], claim["token"]) == (item_id, winner, 1)
        for agent, (status, body) in this_round.items():
            if agent == winner:
                continue
            if item_id != last:
                assert (status, body["error"], body["holder"]) == (409, "already_claimed", winner)
                assert body["lease_expires_at"] == claim["lease_expires_at"]
            else:
                assert (status, body["error"]) == (404, "nothing_ready"), body
        for daemon in team.daemons:  # every machine sees the one winner
            item = item_of(daemon, item_id, reader=winner)
            assert (item["state"], item["claimed_by"], item["fencing_token"]) == (
                "claimed",
                winner,
                1,
            )
    claimed = Counter(e["item_id"] for e in fetch_events(first) if e["kind"] == "claimed")
    assert claimed == Counter([*item_ids, last])


def test_16_processes_drain_2000_items_through_3_daemons_each_claimed_once(team: Team) -> None:
    workers, items = 16, 20_000 if SOAK else 2_000
    ids = import_items(team.daemons[0], items)
    barrier = CTX.Barrier(workers)
    args = [
        (url, token, f"drainer-{n}", barrier, items)
        for n, (url, token) in enumerate(team.endpoints(workers))
    ]
    results = run(drain_worker, args, timeout=600 if SOAK else 300)

    for agent, _, surprises in results:
        assert surprises == [], (agent, surprises)
    reported = [item_id for _, claimed, _ in results for item_id in claimed]
    assert [i for i, n in Counter(reported).items() if n > 1] == []  # none twice
    assert sorted(reported) == sorted(ids)  # none lost
    per_daemon = Counter(n % DAEMONS for n, (_, claimed, _) in enumerate(results) if claimed)
    assert len(per_daemon) == DAEMONS, per_daemon  # the work really went through all three
    status, body = team.daemons[2].request("GET", "/v1/items?state=open&limit=10")
    assert (status, body["items"]) == (200, [])

    events = fetch_events(team.daemons[1])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # gapless
    assert Counter(e["kind"] for e in events) == {"created": items, "claimed": items, "done": items}
    told = {item_id: agent for agent, claimed, _ in results for item_id in claimed}
    assert {e["item_id"]: e["agent"] for e in events if e["kind"] == "claimed"} == told


def test_overlapping_reservations_raced_through_3_daemons_one_wins(team: Team) -> None:
    racers, rounds = 12, 20 if SOAK else 4
    # every pair overlaps (through src/a.py); the last asks for two patterns at once
    requests = [["src/**"], ["src/a.py"], ["src/*.py"], ["src/a.py", "README.md"]]
    barrier = CTX.Barrier(racers)
    args = [
        (url, token, f"reserver-{n}", barrier, [requests[(n + r) % 4] for r in range(rounds)])
        for n, (url, token) in enumerate(team.endpoints(racers))
    ]
    answers = dict(run(reserve_worker, args, timeout=180))
    for r in range(rounds):
        this_round = {agent: replies[r] for agent, replies in answers.items()}
        winners = [agent for agent, (status, _) in this_round.items() if status == 201]
        assert len(winners) == 1, {agent: status for agent, (status, _) in this_round.items()}
        for agent, (status, body) in this_round.items():
            if agent != winners[0]:
                assert (status, body["error"], body["holders"]) == (
                    409,
                    "files_reserved",
                    winners,
                ), body
    kinds = [e["kind"] for e in fetch_events(team.daemons[0])]
    assert kinds == ["reserved", "unreserved"] * rounds
    for daemon in team.daemons:
        assert daemon.request("GET", "/v1/reservations")[1]["reservations"] == []


def test_a_zombie_is_refused_naming_the_holder_after_a_takeover_through_another_daemon(
    team: Team,
) -> None:
    one, two, three = team.daemons
    (item_id,) = import_items(one, 1)
    status, old = one.request(
        "POST", f"/v1/items/{item_id}/claim", {"agent": "zombie", "lease_seconds": 1}
    )
    assert status == 200, old
    deadline = time.monotonic() + 30
    while True:  # the lease runs out on the database's clock: ask it, through another daemon
        status, taken = two.request("POST", f"/v1/items/{item_id}/claim", {"agent": "heir"})
        if status == 200:
            break
        assert (status, taken["error"], taken["holder"]) == (409, "already_claimed", "zombie")
        assert time.monotonic() < deadline, "a one-second lease never ran out"
        time.sleep(0.1)
    assert (taken["token"], taken["takeover_from"]) == (old["token"] + 1, "zombie")

    for daemon, verb in ((one, "heartbeat"), (three, "done"), (one, "release")):
        status, body = daemon.request(
            "POST", f"/v1/items/{item_id}/{verb}", {"agent": "zombie", "token": old["token"]}
        )
        assert (status, body["error"]) == (409, "lease_lost"), (verb, body)
        # the heir's token is told to nobody else: the zombie could take the claim with it
        assert (body["holder"], body["current_token"]) == ("heir", None), body
        assert "heir" in body["message"]
    for daemon in team.daemons:  # nothing the zombie sent changed the item
        item = item_of(daemon, item_id, reader="heir")
        assert (item["state"], item["claimed_by"], item["fencing_token"]) == (
            "claimed",
            "heir",
            taken["token"],
        )
        assert item["lease_expires_at"] == taken["lease_expires_at"]
    status, done = three.request(
        "POST", f"/v1/items/{item_id}/done", {"agent": "heir", "token": taken["token"]}
    )
    assert (status, done["state"]) == (200, "done"), done
    kinds = [e["kind"] for e in fetch_events(two) if e["item_id"] == item_id]
    assert kinds == ["created", "claimed", "takeover", "done"]
