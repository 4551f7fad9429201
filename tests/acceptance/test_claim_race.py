"""32 processes claim the same item at the same instant: exactly one wins."""

from __future__ import annotations

from collections import Counter

from _workers import CTX, fetch_events, import_items, race_worker, run_processes

from conftest import SOAK

WORKERS = 32
ROUNDS = 20 if SOAK else 3


def test_exactly_one_of_32_processes_wins_each_claim(daemon):
    item_ids = import_items(daemon, ROUNDS)
    # A last item left pending for the claim-next round; the raced items are all claimed by
    # then, so it is the only ready item on the board.
    (last,) = import_items(daemon, 1)
    rounds = [*item_ids, None]
    barrier = CTX.Barrier(WORKERS)
    agents = [f"racer-{n}" for n in range(WORKERS)]
    results = run_processes(
        race_worker, [(daemon.url, daemon.token, a, barrier, rounds) for a in agents]
    )
    answers = {agent: replies for agent, replies in results}
    assert sorted(answers) == sorted(agents)

    for index, item_id in enumerate([*item_ids, last]):
        round_answers = {agent: replies[index] for agent, replies in answers.items()}
        winners = [a for a, (status, _) in round_answers.items() if status == 200]
        assert len(winners) == 1, (item_id, Counter(s for s, _ in round_answers.values()))
        winner = winners[0]
        claim = round_answers[winner][1]
        assert claim["id"] == item_id
        assert claim["agent"] == winner
        assert claim["token"] == 1
        for agent, (status, body) in round_answers.items():
            if agent == winner:
                continue
            if index < len(item_ids):
                assert status == 409, body
                assert body["error"] == "already_claimed"
                assert body["holder"] == winner
                assert body["lease_expires_at"] == claim["lease_expires_at"]
            else:
                assert (status, body["error"]) == (404, "nothing_ready"), body
        status, item = daemon.request("GET", f"/v1/items/{item_id}?agent={winner}")
        assert (item["state"], item["claimed_by"], item["fencing_token"]) == (
            "claimed",
            winner,
            claim["token"],
        )

    claimed = Counter(e["item_id"] for e in fetch_events(daemon) if e["kind"] == "claimed")
    assert claimed == Counter([*item_ids, last])
