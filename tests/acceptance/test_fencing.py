"""Fenced leases: a zombie holder whose lease ran out can no longer write."""

from __future__ import annotations

import time

from conftest import run_cli
from coord.core.board import Board


def wait_for_expiry(daemon, item_id: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if get_item(daemon, item_id)["lease_expired"]:
            return
        time.sleep(0.05)
    raise AssertionError(f"the lease on {item_id} never expired")


def new_item(daemon) -> int:
    status, item = daemon.request("POST", "/v1/items", {"agent": "lead", "title": "fenced"})
    assert status == 201, item
    return item["id"]


def get_item(daemon, item_id, reader: str = "") -> dict:
    """The item as ``reader`` reads it: a claim's token is shown to its holder alone."""
    status, item = daemon.request("GET", f"/v1/items/{item_id}?agent={reader or 'lead'}")
    assert status == 200, item
    return item


def call(daemon, action: str, item_id: int, **body):
    return daemon.request("POST", f"/v1/items/{item_id}/{action}", body)


def test_takeover_after_expiry_fences_out_the_old_holder(daemon):
    item_id = new_item(daemon)
    status, a = call(daemon, "claim", item_id, agent="a", lease_seconds=1)
    assert status == 200, a
    wait_for_expiry(daemon, item_id)

    status, b = call(daemon, "claim", item_id, agent="b")
    assert status == 200, b
    assert b["takeover_from"] == "a"
    assert b["token"] > a["token"]

    for action in ("heartbeat", "done", "release"):
        status, body = call(daemon, action, item_id, agent="a", token=a["token"])
        assert status == 409, (action, body)
        assert body["error"] == "lease_lost"
        assert body["holder"] == "b"
    item = get_item(daemon, item_id, reader="b")
    assert (item["state"], item["claimed_by"], item["fencing_token"]) == (
        "claimed",
        "b",
        b["token"],
    )
    assert not item["lease_expired"]
    assert get_item(daemon, item_id, reader="a")["fencing_token"] is None  # not the zombie's

    status, done = call(daemon, "done", item_id, agent="b", token=b["token"])
    assert (status, done["state"]) == (200, "done"), done
    kinds = [e["kind"] for e in daemon.request("GET", f"/v1/events?item={item_id}")[1]["events"]]
    assert kinds == ["created", "claimed", "takeover", "done"]


def test_tokens_strictly_increase_over_the_item_history(daemon):
    item_id = new_item(daemon)
    tokens = []
    for agent in ("a", "b", "a"):
        status, claim = call(daemon, "claim", item_id, agent=agent)
        assert status == 200, claim
        tokens.append(claim["token"])
        status, body = call(daemon, "release", item_id, agent=agent, token=claim["token"])
        assert status == 200, body
        # The released token is dead even for the same agent.
        status, body = call(daemon, "heartbeat", item_id, agent=agent, token=claim["token"])
        assert (status, body["error"]) == (409, "lease_lost"), body
    status, claim = call(daemon, "claim", item_id, agent="c", lease_seconds=1)
    assert status == 200, claim
    tokens.append(claim["token"])
    wait_for_expiry(daemon, item_id)
    status, claim = call(daemon, "claim", item_id, agent="d")
    assert (status, claim["takeover_from"]) == (200, "c"), claim
    tokens.append(claim["token"])
    assert tokens == sorted(set(tokens)), tokens

    # the board's own log, which keeps the tokens that no read of it shows (issue 27)
    board = Board.open(daemon.board_dir)
    try:
        history = [{"kind": e.kind, "details": e.details} for e in board.events(item_id=item_id)]
    finally:
        board.close()
    granted = [e["details"]["token"] for e in history if e["kind"] in ("claimed", "takeover")]
    assert granted == tokens
    # Every write made with a token was made with the claim granted just before it.
    live = None
    for event in history:
        if event["kind"] in ("claimed", "takeover"):
            live = event["details"]["token"]
        elif "token" in event["details"]:
            assert event["details"]["token"] == live, event


def test_zombie_done_through_the_cli_exits_3_naming_the_new_holder(daemon, board_dir):
    item_id = str(new_item(daemon))
    first = run_cli("claim", item_id, "--lease", "1", board_dir=board_dir, agent="a")
    assert first.returncode == 0, first.stderr
    wait_for_expiry(daemon, int(item_id))
    second = run_cli("claim", item_id, "--json", board_dir=board_dir, agent="b")
    assert second.returncode == 0, second.stderr

    zombie = run_cli("done", item_id, board_dir=board_dir, agent="a")
    assert zombie.returncode == 3, (zombie.stdout, zombie.stderr)
    assert "held by b" in zombie.stderr
    item = get_item(daemon, item_id)
    assert (item["state"], item["claimed_by"]) == ("claimed", "b")

    finished = run_cli("done", item_id, board_dir=board_dir, agent="b")
    assert finished.returncode == 0, finished.stderr
    assert get_item(daemon, item_id)["state"] == "done"
