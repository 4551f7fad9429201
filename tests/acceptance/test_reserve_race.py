"""16 processes reserve overlapping patterns at the same instant: exactly one wins."""

from __future__ import annotations

from _workers import CTX, fetch_events, reserve_worker, run_processes

from conftest import SOAK

WORKERS = 16
ROUNDS = 20 if SOAK else 3
# Every pair of these overlaps (through src/a.py), and the last asks for two patterns at once.
REQUESTS = [["src/**"], ["src/a.py"], ["src/*.py"], ["src/a.py", "README.md"]]


def test_exactly_one_of_16_overlapping_reservations_wins(daemon):
    agents = [f"reserver-{n}" for n in range(WORKERS)]
    barrier = CTX.Barrier(WORKERS)
    args = [
        (
            daemon.url,
            daemon.token,
            agent,
            barrier,
            [REQUESTS[(n + r) % len(REQUESTS)] for r in range(ROUNDS)],
        )
        for n, agent in enumerate(agents)
    ]
    answers = dict(run_processes(reserve_worker, args))
    assert sorted(answers) == sorted(agents)
    for r in range(ROUNDS):
        this_round = {agent: replies[r] for agent, replies in answers.items()}
        winners = [a for a, (status, _) in this_round.items() if status == 201]
        assert len(winners) == 1, {a: s for a, (s, _) in this_round.items()}
        (winner,) = winners
        granted = {res["pattern"] for res in this_round[winner][1]["reservations"]}
        for agent, (status, body) in this_round.items():
            if agent == winner:
                continue
            assert status == 409, body
            assert body["error"] == "files_reserved"
            assert body["holders"] == [winner]
            for conflict in body["conflicts"]:
                assert conflict["holder"] == winner
                assert conflict["pattern"] in granted
                assert conflict["expires_at"]
    # the log agrees: one grant per round, and every grant was freed again
    kinds = [e["kind"] for e in fetch_events(daemon)]
    assert kinds == ["reserved", "unreserved"] * ROUNDS
    assert daemon.request("GET", "/v1/reservations")[1]["reservations"] == []
