"""The fair wait on a team board (issue 26): waiters on two machines, each with its daemon,
one PostgreSQL database. A release through one daemon grants the first waiter in line
whichever daemon it waits through, in arrival order (the queue is the database's, and the
grant is in the release's transaction); the other daemon's long polls learn it from the
database's notices or their re-reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _pg_team import Team, team_on
from test_wait_race import _events, _granted_line, _post, _queue_in_order, _stop

pytestmark = pytest.mark.postgres
WAITERS = 16 if os.environ.get("COORD_SOAK") == "1" else 8


@pytest.fixture
def team(pg_dsn: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    with team_on(pg_dsn, tmp_path, 2) as made:
        yield made


def test_waiters_through_two_daemons_are_granted_in_arrival_order(team: Team) -> None:
    first, second = team.daemons
    item = _post(first, "/v1/items", {"agent": "lead", "title": "contended"}, 201)["id"]
    token = _post(first, f"/v1/items/{item}/claim", {"agent": "holder"})["token"]
    agents = [f"w{n:02}" for n in range(WAITERS)]
    waiters = []
    try:
        for n, agent in enumerate(agents):  # every other one on the other machine
            daemon = (first, second)[n % 2]
            waiters += _queue_in_order(daemon, [agent], str(item), "--timeout", "120", before=n)
        holder = "holder"
        for n, agent in enumerate(agents):
            releasing = (first, second)[n % 2]
            _post(releasing, f"/v1/items/{item}/release", {"agent": holder, "token": token})
            # read as the one granted: a claim's token shows to its holder alone (issue 27)
            _, shown = second.request("GET", f"/v1/items/{item}?agent={agent}")
            assert shown["claimed_by"] == agent  # granted by the release itself
            assert f"item {item} is yours" in _granted_line(waiters[n])
            holder, token = agent, shown["fencing_token"]
        assert [e["agent"] for e in _events(first, "wait_granted")] == agents
    finally:
        _stop(waiters)
