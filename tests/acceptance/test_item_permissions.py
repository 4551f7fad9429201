"""Who may cancel and reopen, over real HTTP to a real daemon (issue 14, item 2).

The daemon reads the board's ``humans`` from ``.coord/config.json`` when it starts; agents
and humans alike carry the board token. The refusals are 403 ``not_permitted``, naming who
may, and change nothing on the board.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, init_board_dir, run_cli


@pytest.fixture
def board_daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(init_board_dir(tmp_path, humans=["lead"])).start()
    yield d
    d.stop()


def post(daemon: Daemon, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    return daemon.request("POST", path, body)


def state_and_log(daemon: Daemon, item_id: int) -> tuple[str, int]:
    status, item = daemon.request("GET", f"/v1/items/{item_id}")
    assert status == 200, item
    return item["state"], len(item["history"])


def test_cancel_and_reopen_permissions_over_http(board_daemon: Daemon) -> None:
    daemon = board_daemon
    status, item = post(daemon, "/v1/items", {"agent": "planner", "title": "the plan"})
    assert status == 201, item
    cancel = f"/v1/items/{item['id']}/cancel"
    before = state_and_log(daemon, item["id"])

    status, refused = post(daemon, cancel, {"agent": "rogue", "reason": "mine now"})
    assert status == 403, refused
    assert refused["error"] == "not_permitted"
    assert refused["may"] == ["planner", "lead"]
    assert "planner" in refused["message"] and "lead" in refused["message"]
    status, no_reason = post(daemon, cancel, {"agent": "planner"})
    assert status == 422 and no_reason["field"] == "reason", no_reason
    assert state_and_log(daemon, item["id"]) == before

    status, cancelled = post(daemon, cancel, {"agent": "planner", "reason": "superseded"})
    assert (status, cancelled["state"]) == (200, "cancelled"), cancelled

    reopen = f"/v1/items/{item['id']}/reopen"
    status, refused = post(daemon, reopen, {"agent": "rogue", "reason": "want it"})
    assert (status, refused["error"]) == (403, "not_permitted"), refused
    status, reopened = post(daemon, reopen, {"agent": "lead", "reason": "we need it after all"})
    assert (status, reopened["state"]) == (200, "pending"), reopened

    status, events = daemon.request("GET", f"/v1/events?item={item['id']}")
    assert status == 200
    logged = [(e["kind"], e["agent"], e["details"].get("reason")) for e in events["events"]]
    assert logged[1:] == [
        ("cancelled", "planner", "superseded"),
        ("reopened", "lead", "we need it after all"),
    ]


def test_a_human_cancels_a_claim_and_the_holder_is_fenced_out(board_daemon: Daemon) -> None:
    daemon = board_daemon
    status, item = post(daemon, "/v1/items", {"agent": "planner", "title": "work"})
    assert status == 201
    status, won = post(daemon, f"/v1/items/{item['id']}/claim", {"agent": "worker"})
    assert status == 200, won
    cancel = f"/v1/items/{item['id']}/cancel"
    status, refused = post(daemon, cancel, {"agent": "planner", "reason": "stop"})
    assert (status, refused["error"], refused["holder"]) == (403, "not_permitted", "worker")
    status, cancelled = post(daemon, cancel, {"agent": "lead", "reason": "design changed"})
    assert (status, cancelled["state"]) == (200, "cancelled"), cancelled
    status, lost = post(
        daemon,
        f"/v1/items/{item['id']}/heartbeat",
        {"agent": "worker", "token": won["token"]},
    )
    assert (status, lost["error"]) == (409, "lease_lost"), lost


def test_the_cli_needs_a_reason_and_says_who_may(board_daemon: Daemon) -> None:
    daemon = board_daemon
    status, item = post(daemon, "/v1/items", {"agent": "planner", "title": "work"})
    assert status == 201
    ref = str(item["id"])
    board_dir = daemon.board_dir

    missing = run_cli("cancel", ref, board_dir=board_dir, agent="planner")
    assert missing.returncode == 2 and "--reason" in missing.stderr
    refused = run_cli("cancel", ref, "--reason", "x", board_dir=board_dir, agent="rogue")
    assert refused.returncode == 3, refused.stderr
    assert "planner (its creator)" in refused.stderr and "lead" in refused.stderr
    assert "Traceback" not in refused.stderr
    done = run_cli("cancel", ref, "--reason", "dup", board_dir=board_dir, agent="planner")
    assert done.returncode == 0 and "cancelled" in done.stdout, done.stderr
    back = run_cli("reopen", ref, "--reason", "not a dup", board_dir=board_dir, agent="lead")
    assert back.returncode == 0 and "pending again" in back.stdout, back.stderr
    again = run_cli("reopen", ref, "--reason", "twice", board_dir=board_dir, agent="lead")
    assert again.returncode == 3 and "not cancelled" in again.stderr, again.stderr
    log = run_cli("log", "--item", ref, board_dir=board_dir).stdout
    assert f"planner cancelled #{ref}: 'dup'" in log
    assert f"lead reopened #{ref}: 'not a dup'" in log
