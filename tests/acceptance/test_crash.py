"""kill -9 the daemon in the middle of a claim storm: no claim a client was told it won is lost."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter

from _workers import CTX, Workers, fetch_events, import_items, storm_worker

from conftest import Daemon

WORKERS = 12
ITEMS = 4_000
KILL_AFTER = 300  # claims won (and on the clients' disks) before the daemon is killed


def read_wins(files) -> list[dict]:
    wins = []
    for path in files:
        if path.exists():
            # Only whole lines: a worker may be writing the next one as we read.
            *lines, _partial = path.read_text().split("\n")
            wins.extend(json.loads(line) for line in lines)
    return wins


def test_kill_9_mid_storm_loses_no_acknowledged_claim(daemon, board_dir, tmp_path):
    import_items(daemon, ITEMS)
    files = [tmp_path / f"wins-{n}.jsonl" for n in range(WORKERS)]
    barrier = CTX.Barrier(WORKERS)
    workers = Workers(
        storm_worker,
        [
            (daemon.url, daemon.token, f"stormer-{n}", barrier, str(f), ITEMS)
            for n, f in enumerate(files)
        ],
    )
    try:
        deadline = time.monotonic() + 60
        while len(read_wins(files)) < KILL_AFTER:
            assert time.monotonic() < deadline, "the storm never got going"
            time.sleep(0.005)
        daemon.kill9()
        stopped = dict(workers.results(timeout=60))
    finally:
        workers.kill()
    assert all(why.startswith("connection lost") for why in stopped.values()), stopped

    wins = read_wins(files)
    assert len(wins) >= KILL_AFTER
    assert len({w["id"] for w in wins}) == len(wins), "one item was won twice"

    db = sqlite3.connect(board_dir / "board.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # the tokens the log keeps, which no read of it shows (issue 27)
        logged = set(
            db.execute(
                "SELECT item_id, agent, json_extract(details, '$.token') FROM events "
                "WHERE kind = 'claimed'"
            )
        )
    finally:
        db.close()

    revived = Daemon(board_dir).start()
    try:
        events = fetch_events(revived)
        served = {(e["item_id"], e["agent"]) for e in events if e["kind"] == "claimed"}
        claimed = {(item, agent, token) for item, agent, token in logged}
        assert {(item, agent) for item, agent, _ in claimed} == served
        per_item = Counter(item_id for item_id, _, _ in claimed)
        assert set(per_item.values()) == {1}
        for win in wins:
            status, item = revived.request("GET", f"/v1/items/{win['id']}?agent={win['agent']}")
            assert status == 200, item
            assert (item["state"], item["claimed_by"], item["fencing_token"]) == (
                "claimed",
                win["agent"],
                win["token"],
            ), win
            assert (win["id"], win["agent"], win["token"]) in claimed, win
        # The storm was cut short: work is left, and the board still hands it out.
        status, claim = revived.request("POST", "/v1/claim-next", {"agent": "survivor"})
        assert status == 200, claim
        assert claim["id"] not in {w["id"] for w in wins}
        assert claim["token"] == 1
        status, body = revived.request(
            "POST", f"/v1/items/{claim['id']}/done", {"agent": "survivor", "token": claim["token"]}
        )
        assert status == 200, body
    finally:
        revived.stop()
