"""What you need in view (issue 15, items 2 and 13): `coord ls --mine` and `--holder NAME`,
`coord ls --state blocked`, `coord agents` that tells who is active and who is an agent, and
that can prune the ones long gone. Real daemon, real CLI processes."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock, Daemon, run_cli
from coord import model
from coord.core.board import Board
from coord.errors import InvalidInput


def _ids(result: object) -> list[int]:
    return [item["id"] for item in json.loads(result.stdout)["items"]]  # type: ignore[attr-defined]


def _items_claimed(board: Path, count: int, claims: tuple[tuple[str, str], ...]) -> None:
    """``count`` items added by ann, then each (item, agent) of ``claims`` claimed."""
    lines = "".join(json.dumps({"title": f"item {n}"}) + "\n" for n in range(1, count + 1))
    assert run_cli("import", "-", board_dir=board, agent="ann", input=lines).returncode == 0
    for item, agent in claims:
        assert run_cli("claim", item, board_dir=board, agent=agent).returncode == 0


def test_ls_mine_and_holder_list_what_an_agent_holds(daemon: Daemon) -> None:
    board = daemon.board_dir
    _items_claimed(board, 5, (("1", "claude-1"), ("2", "codex-1"), ("3", "claude-1")))
    assert run_cli("done", "3", board_dir=board, agent="claude-1").returncode == 0

    assert _ids(run_cli("ls", "--mine", "--json", board_dir=board, agent="claude-1")) == [1]
    assert _ids(run_cli("ls", "--mine", "--json", board_dir=board, agent="codex-1")) == [2]
    holder = run_cli("ls", "--holder", "codex-1", "--json", board_dir=board)
    assert _ids(holder) == [2]
    finished = run_cli(
        "ls", "--mine", "--state", "done", "--json", board_dir=board, agent="claude-1"
    )
    assert _ids(finished) == [3]
    everything = run_cli("ls", "--mine", "--all", "--json", board_dir=board, agent="claude-1")
    assert _ids(everything) == [1, 3]
    table = run_cli("ls", "--holder", "claude-1", board_dir=board).stdout
    assert "item 1" in table and "item 2" not in table and "item 3" not in table

    # the same filter over HTTP, the one the CLI uses
    status, answer = daemon.request("GET", "/v1/items?holder=codex-1")
    assert status == 200 and [i["id"] for i in answer["items"]] == [2]
    status, answer = daemon.request("GET", "/v1/items?holder=not%20a%20name")
    assert status == 422 and answer["error"] == "invalid_input"

    # --mine needs a name, as every command that acts for one agent does
    nameless = run_cli("ls", "--mine", board_dir=board)
    assert nameless.returncode == 2 and "pass --as NAME or set COORD_AGENT" in nameless.stderr
    both = run_cli("ls", "--mine", "--holder", "x", board_dir=board, agent="claude-1")
    assert both.returncode == 2 and "not both" in both.stderr


def test_ls_refuses_filters_it_would_drop(daemon: Daemon) -> None:
    """`coord ls --all --state done` listed every state (--state dropped), `--needs-human
    --state done` listed needs_human (--state dropped), and `--holder ""` listed everyone's:
    the README offers `--state S | --all | --needs-human`, one of them."""
    board = daemon.board_dir
    _items_claimed(board, 2, (("1", "claude-1"),))
    for args in (
        ("--all", "--state", "done"),
        ("--needs-human", "--state", "done"),
        ("--all", "--needs-human"),
    ):
        refused = run_cli("ls", *args, board_dir=board)
        assert refused.returncode == 2, (args, refused.stdout)
        assert "one of --state, --all, --needs-human" in refused.stderr, refused.stderr
    nameless = run_cli("ls", "--holder", "", board_dir=board)
    assert nameless.returncode == 2, nameless.stdout
    assert "--holder needs a name" in nameless.stderr


def test_ls_state_blocked_lists_the_rows_ls_shows_as_blocked(daemon: Daemon) -> None:
    board = daemon.board_dir
    assert run_cli("add", "first", board_dir=board, agent="ann").returncode == 0
    assert run_cli("add", "second", "--dep", "1", board_dir=board, agent="ann").returncode == 0
    assert run_cli("add", "third", board_dir=board, agent="ann").returncode == 0
    shown = run_cli("ls", board_dir=board).stdout
    blocked_rows = [line for line in shown.splitlines() if " blocked " in line]
    assert len(blocked_rows) == 1 and "second" in blocked_rows[0]

    blocked = run_cli("ls", "--state", "blocked", "--json", board_dir=board)
    assert blocked.returncode == 0, blocked.stderr
    assert _ids(blocked) == [2]
    table = run_cli("ls", "--state", "blocked", board_dir=board).stdout
    assert "second" in table and "first" not in table
    # once its dependency is done it is no longer blocked
    assert run_cli("claim", "1", board_dir=board, agent="bob").returncode == 0
    assert run_cli("done", "1", board_dir=board, agent="bob").returncode == 0
    assert _ids(run_cli("ls", "--state", "blocked", "--json", board_dir=board)) == []


def test_every_listing_bounds_its_limit() -> None:
    """`/v1/inbox` took any `limit` (a page of a billion events); every listing states its
    largest page in the document, which the contract suite holds the server to."""
    from coord.server.openapi import OPENAPI

    found = []
    for path, operations in OPENAPI["paths"].items():
        for method, op in operations.items():
            params = {p["name"]: p["schema"] for p in op.get("parameters", [])}
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            fields = body.get("schema", {}).get("properties", {})
            for where in (params, fields):
                if "limit" in where:
                    found.append((method, path, where["limit"].get("maximum")))
    assert ("post", "/v1/inbox", 1000) in found
    assert all(maximum is not None and maximum <= 5000 for _, _, maximum in found), found


def _last_seen(board: Path, **ages: float) -> None:
    """Set when each named agent was last seen, ``ages`` seconds ago (the daemon keeps
    running: another connection to the board file, as the guard is)."""
    with contextlib.closing(sqlite3.connect(board / "board.db")) as conn, conn:
        for name, age in ages.items():
            conn.execute(
                "UPDATE agents SET last_seen = ?, first_seen = min(first_seen, ?) WHERE name = ?",
                (time.time() - age, time.time() - age, name),
            )


def _agents(board: Path, *flags: str) -> dict[str, dict[str, Any]]:
    listed = run_cli("agents", *flags, "--json", board_dir=board)
    assert listed.returncode == 0, listed.stderr
    return {a["name"]: a for a in json.loads(listed.stdout)["agents"]}


def test_agents_are_active_when_seen_lately_and_people_are_not_agents(daemon: Daemon) -> None:
    board = daemon.board_dir
    _items_claimed(board, 3, (("1", "old-holder"), ("2", "busy")))
    assert run_cli("reply", "3", "looks good", board_dir=board, agent="human").returncode == 0
    assert run_cli("answer", "3", "x", board_dir=board, agent="lead").returncode != 0  # no q
    _last_seen(board, **{"old-holder": 3 * 3600})

    agents = _agents(board)
    # ann imported, human replied: people, not agents (`--all` shows them)
    assert set(agents) == {"old-holder", "busy"}
    # seen three hours ago: not active, though it still holds item 1 (was: ACTIVE yes)
    assert agents["old-holder"]["active"] is False and agents["old-holder"]["holding"] == [1]
    assert agents["busy"]["active"] is True and agents["busy"]["role"] == "agent"
    everyone = _agents(board, "--all")
    assert {everyone["ann"]["role"], everyone["human"]["role"]} == {"person"}
    table = run_cli("agents", board_dir=board).stdout
    row = next(line for line in table.splitlines() if line.startswith("old-holder"))
    assert row.split()[1] == "no"
    assert "ann" not in table
    assert "ROLE" in run_cli("agents", "--all", board_dir=board).stdout
    # `coord status` counts the same agents as active
    status = json.loads(run_cli("status", "--json", board_dir=board).stdout)
    active = status["board"]["active_agents"]
    assert sorted(a["name"] for a in active) == ["busy"], status


def test_agents_prune_forgets_only_those_who_would_lose_nothing(daemon: Daemon) -> None:
    board = daemon.board_dir
    _items_claimed(board, 4, (("1", "holder"), ("2", "gone"), ("3", "told")))
    for item, agent in (("2", "gone"), ("3", "told")):
        assert run_cli("done", item, board_dir=board, agent=agent).returncode == 0
        assert run_cli("inbox", board_dir=board, agent=agent).returncode == 0  # all read
    week = ("--lease", "604800")
    reserved = run_cli("reserve", "docs/plan.md", *week, board_dir=board, agent="res")
    assert reserved.returncode == 0, reserved.stderr
    assert run_cli("claim", "4", board_dir=board, agent="recent").returncode == 0
    month = 30 * 86400
    _last_seen(board, holder=month, gone=month, told=month, res=month, ann=month)
    # said to "told" after it was last seen: news it has not read
    mention = run_cli("reply", "3", "@told why this way?", board_dir=board, agent="lead")
    assert mention.returncode == 0

    too_soon = run_cli("agents", "--prune", "--older-than", "10m", board_dir=board, agent="lead")
    assert too_soon.returncode == 2 and "at least 3600" in too_soon.stderr
    bad = run_cli("agents", "--prune", "--older-than", "soon", board_dir=board, agent="lead")
    assert bad.returncode == 2 and "not a duration" in bad.stderr

    pruned = run_cli("agents", "--prune", "--json", board_dir=board, agent="lead")
    assert pruned.returncode == 0, pruned.stderr
    answer = json.loads(pruned.stdout)
    assert answer["pruned"] == ["gone"], answer
    why = {kept["name"]: kept["why"] for kept in answer["kept"]}
    # ann never read its inbox: the claims of its items came after it was last seen
    assert set(why) == {"holder", "told", "res", "ann"}  # recent and lead: seen lately
    assert "holds item 1" in why["holder"]
    assert "reservation" in why["res"]
    assert why["told"] == "was told something after it was last seen (unread inbox)"
    left = _agents(board, "--all")
    assert "gone" not in left and {"holder", "told", "res", "ann"} <= set(left)
    # the log says who was forgotten, and keeps what they did
    log = json.loads(run_cli("log", "--json", board_dir=board).stdout)["events"]
    event = [e for e in log if e["kind"] == "agents_pruned"]
    assert len(event) == 1 and event[0]["details"]["agents"] == ["gone"]
    assert event[0]["agent"] == "lead"
    assert any(e["agent"] == "gone" and e["kind"] == "done" for e in log)
    # nothing more to forget: a second prune says so, and why each is kept
    again = run_cli("agents", "--prune", board_dir=board, agent="lead")
    assert again.returncode == 0 and "forgot 0 agent(s)" in again.stdout
    assert "kept holder: holds item 1" in again.stdout
    # a forgotten agent that comes back is an agent again
    assert run_cli("reserve", "b.txt", board_dir=board, agent="gone").returncode == 0
    assert _agents(board)["gone"]["role"] == "agent"


def test_prune_says_its_age_as_given_and_older_than_needs_prune(daemon: Daemon) -> None:
    """`coord agents --prune --older-than 2h` said "unseen for 0.0833333 day(s)", and
    `coord agents --older-than 2h` (no --prune) listed the agents as if it were not there."""
    board = daemon.board_dir
    for given, said in (("2h", "unseen for 2h"), ("90m", "unseen for 90m"), (None, "for 7d")):
        extra = ("--older-than", given) if given else ()
        pruned = run_cli("agents", "--prune", *extra, board_dir=board, agent="lead")
        assert pruned.returncode == 0, pruned.stderr
        assert said in pruned.stdout, pruned.stdout
    # too short: said in the option's own terms (it said "older_than must be a number of
    # seconds" to one who typed `--older-than 30m`)
    short = run_cli("agents", "--prune", "--older-than", "30m", board_dir=board, agent="lead")
    assert short.returncode == 2 and "give --older-than as a duration" in short.stderr
    assert "at least 3600" in short.stderr
    alone = run_cli("agents", "--older-than", "2h", board_dir=board, agent="lead")
    assert alone.returncode == 2, alone.stdout
    assert "--older-than goes with --prune" in alone.stderr


def test_prune_keeps_what_came_after_an_agent_was_last_seen(board_dir: Path, clock: Clock) -> None:
    """The rule on the board's own clock: unread news from while a name was around does not
    keep it; news after it left does, and so does a claim, lapsed or not."""
    board = Board.open(board_dir, clock=clock)
    try:
        first = board.add("first", created_by="ann")
        second = board.add("second", created_by="ann")
        third = board.add("third", created_by="ann")
        board.claim(first.id, agent="holder")
        board.claim(second.id, agent="late")
        board.release(second.id, agent="late", token=1)
        board.claim(third.id, agent="done-with-it")
        board.release(third.id, agent="done-with-it", token=1)
        clock.advance(2 * 86400)
        board.reply(second.id, agent="ann", body="@late still on it?")  # after late left
        clock.advance(8 * 86400)
        with pytest.raises(InvalidInput, match="at least 3600"):
            board.prune_agents(older_than=60, agent="lead")
        result = board.prune_agents(older_than=7 * 86400, agent="lead")
        # ann's inbox holds the claims and releases of its items, unread, but they came while
        # ann was around (it replied after them): ann loses nothing
        assert sorted(result["pruned"]) == ["ann", "done-with-it"]
        assert {k["name"]: k["why"] for k in result["kept"]} == {
            "holder": "holds item 1",  # its lease ran out days ago: still its claim
            "late": "was told something after it was last seen (unread inbox)",
        }
        assert sorted(a.name for a in board.agents(everyone=True)) == ["holder", "late", "lead"]
    finally:
        board.close()


def test_a_board_of_schema_9_learns_who_acted_as_an_agent_from_its_past(tmp_path: Path) -> None:
    """Migration 10: a name that claimed, took over or reserved (the log says so) or read its
    inbox is an agent; one that only added or replied is a person."""
    from coord.storage.sqlite import SQLiteStorage
    from test_sqlite_backend import _board_of_schema

    db = tmp_path / "board.db"
    conn = _board_of_schema(db, 9)
    conn.executemany(
        "INSERT INTO agents (name, first_seen, last_seen, inbox_seq) VALUES (?, 1, 1, ?)",
        [("claimer", 0), ("reserver", 0), ("reader", 3), ("adder", 0), ("taker", 0)],
    )
    conn.executemany(
        "INSERT INTO events (at, agent, item_id, kind, details) VALUES (1, ?, 1, ?, '{}')",
        [
            ("adder", "created"),
            ("claimer", "claimed"),
            ("reserver", "reserved"),
            ("taker", "takeover"),
            ("adder", "reply"),
        ],
    )
    conn.close()
    storage = SQLiteStorage(db)
    try:
        with storage.read() as tx:
            marked = {a.name: a.worked for a in tx.agents()}
    finally:
        storage.close()
    assert marked == {
        "claimer": True,
        "reserver": True,
        "reader": True,
        "taker": True,
        "adder": False,
    }


def test_a_board_of_schema_8_counts_its_items_by_state_after_the_upgrade(tmp_path: Path) -> None:
    """Migration 9 counts the items a board already has; from then on its writes keep the
    counts (`coord status` reads them, not every item)."""
    from coord.storage.sqlite import SQLiteStorage
    from test_sqlite_backend import _board_of_schema

    db = tmp_path / "board.db"
    conn = _board_of_schema(db, 8)
    conn.executemany(
        "INSERT INTO items (kind, title, priority, state, created_by, created_at, updated_at, "
        "claimed_by, lease_expires_at, question) VALUES ('task', 't', 2, ?, 'h', 1, 1, ?, ?, ?)",
        [("pending", None, None, None)] * 3
        + [("claimed", "a", 5.0, None), ("claimed", "a", 5.0, "?"), ("done", "a", None, None)],
    )
    conn.close()
    storage = SQLiteStorage(db)
    try:
        with storage.read() as tx:
            counts = tx.count_items_by_state()
        with storage.write() as tx:
            tx.update_item(1, 0, {"state": "cancelled", "closed_at": 2.0})
        with storage.read() as tx:
            after = tx.count_items_by_state()
    finally:
        storage.close()
    assert counts == {
        **dict.fromkeys(model.SHOWN_STATES, 0),
        "pending": 3,
        "claimed": 1,
        "needs_human": 1,
        "done": 1,
    }
    assert after == {**counts, "pending": 2, "cancelled": 1}
