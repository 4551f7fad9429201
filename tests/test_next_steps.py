"""Every refusal says what to do next, the same in every face (issue 26 item 1).

A real daemon on a real SQLite board; each face is driven as a client drives it: the HTTP
API, the `coord` command as a subprocess (``--json`` and its text), the MCP server over stdio
through the official SDK client, and `coord hook CLIENT EVENT` for each client's edit tool.
``other_work`` is judged by what it predicts: every pending item is then claimed by a fresh
agent in a process of its own, and exactly the named ones are won.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon

HELD = "src/auth/session.py"  # the hook fixtures' file (tests/hooks/), alice's by item 1
HOOK_EDITS = [
    ("claude", "PreToolUse", "claude/pre_tool_use_edit.json"),
    ("codex", "PreToolUse", "codex/pre_tool_use_apply_patch.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_write_file.json"),
    ("cursor", "preToolUse", "cursor/pre_tool_use_write.json"),
    # a shell command that writes the held file: the shell guard's deny
    ("claude", "PreToolUse", "claude/pre_tool_use_bash.json"),
    ("codex", "PreToolUse", "codex/pre_tool_use_bash.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_run_shell_command.json"),
    ("cursor", "beforeShellExecution", "cursor/before_shell_execution.json"),
]
FIXTURES = Path(__file__).parent / "hooks"


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Daemon]:
    """alice holds item 1 (and HELD); item 2 wants HELD too; carol holds item 5 and, with no
    item, src/d.py, which item 6 wants; item 7 waits on item 1; items 3 and 4 are free."""
    repo = tmp_path / "repo"
    (repo / "src/auth").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    board_dir = init_board_dir(repo)
    daemon = Daemon(board_dir).start()
    try:
        items: list[tuple[str, dict[str, Any]]] = [
            ("alice's", {"files": [HELD]}),
            ("wants alice's file", {"files": [HELD], "priority": 0}),
            ("free, with a file", {"files": ["src/free.py"], "priority": 1}),
            ("free, no files", {}),
            ("carol's", {"files": ["src/c.py"]}),
            ("wants carol's reservation", {"files": ["src/d.py"], "priority": 0}),
            ("after alice's", {"deps": [1], "priority": 0}),
        ]
        for title, extra in items:
            _ok(daemon, "POST", "/v1/items", {"agent": "lead", "title": title, **extra})
        _ok(daemon, "POST", "/v1/items/1/claim", {"agent": "alice"})
        _ok(daemon, "POST", "/v1/items/5/claim", {"agent": "carol"})
        _ok(daemon, "POST", "/v1/reservations", {"agent": "carol", "patterns": ["src/d.py"]})
        yield daemon
    finally:
        daemon.stop()
        stop_leftover_daemon(board_dir)


def _ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def _refused_over_http(daemon: Daemon, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = daemon.request("POST", path, body)
    assert status in (404, 409), (status, answer)
    assert "next" in answer, answer
    return dict(answer["next"])


def _refused_by_cli(daemon: Daemon, *args: str) -> tuple[dict[str, Any], str]:
    """(the ``next`` of ``--json``, the text's line that says it)."""
    repo = daemon.board_dir.parent
    as_json = run_cli(*args, "--json", board_dir=daemon.board_dir, agent="bob", cwd=repo)
    assert as_json.returncode == 3, (as_json.stdout, as_json.stderr)
    text = run_cli(*args, board_dir=daemon.board_dir, agent="bob", cwd=repo)
    assert text.returncode == 3 and "Traceback" not in text.stderr, text.stderr
    said = [ln for ln in text.stderr.splitlines() if ln.startswith("coord: next: ")]
    assert len(said) == 1, text.stderr
    return json.loads(as_json.stdout)["next"], said[0]


def _refused_over_mcp(
    daemon: Daemon, tool: str, arguments: dict[str, Any], said: list[str] | None = None
) -> dict[str, Any]:
    said = [] if said is None else said
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coord", "mcp"],
        env={**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "bob"},
        cwd=str(daemon.board_dir.parent),
    )

    async def call() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    result = asyncio.run(call())
    assert result.is_error, result
    content = result.structured_content
    # the line a model reads says the options as tool calls, never a CLI line it cannot run
    assert "next: " in content["message"] and "`coord next`" not in content["message"]
    said.append(content["message"])
    return dict(content["next"])


def test_a_claim_refused_because_held_says_the_same_next_in_http_cli_and_mcp(
    scene: Daemon,
) -> None:
    over_http = _refused_over_http(scene, "/v1/items/1/claim", {"agent": "bob"})
    over_cli, said = _refused_by_cli(scene, "claim", "1")
    over_mcp = _refused_over_mcp(scene, "claim", {"item": 1})
    assert over_http == over_cli == over_mcp
    assert list(over_http) == ["wait", "other_work", "ask_holder", "escalate"]
    wait = over_http["wait"]
    assert (wait["command"], wait["holder"], wait["alive"]) == ("coord wait 1", "alice", True)
    assert wait["lease_expires_at"] == _item(scene, 1)["lease_expires_at"]
    assert over_http["ask_holder"] == {
        "holder": "alice",
        "command": "coord ask 1 --reason TEXT",
        "item": "1",
        "paths": None,
    }
    assert (wait["item"], wait["paths"]) == ("1", None)
    assert "wait for alice" in said and "`coord wait 1`" in said


def test_a_claim_refused_for_held_files_and_a_reservation_refused_say_next(
    scene: Daemon,
) -> None:
    claim = _refused_over_http(scene, "/v1/items/2/claim", {"agent": "bob"})
    assert claim["wait"]["command"] == "coord wait 2"  # the item wanted, not its files
    assert claim["ask_holder"]["command"] == f"coord ask {HELD} --reason TEXT"
    reserve = _refused_over_http(scene, "/v1/reservations", {"agent": "bob", "patterns": [HELD]})
    over_cli, _ = _refused_by_cli(scene, "reserve", HELD)
    told: list[str] = []
    over_mcp = _refused_over_mcp(scene, "reserve_files", {"patterns": [HELD]}, told)
    assert reserve == over_cli == over_mcp
    # over MCP the paths are waited for by the reservation's tool, read off ``paths``
    assert f"`reserve_files` with patterns {HELD}" in told[0]
    assert reserve["wait"]["command"] == f"coord wait {HELD}"
    assert (reserve["wait"]["item"], reserve["wait"]["paths"]) == (None, [HELD])
    assert reserve["wait"]["holder"] == "alice"
    # carol's reservation has no item: asked about the path too, reaching her all the same
    standalone = _refused_over_http(
        scene, "/v1/reservations", {"agent": "bob", "patterns": ["src/d.py"]}
    )
    assert standalone["ask_holder"]["holder"] == "carol"


def test_other_work_names_exactly_the_items_another_agent_can_then_claim(scene: Daemon) -> None:
    """The oracle: after the refusal, each pending item is claimed by a fresh agent, each in a
    process of its own; the items won are exactly those ``other_work`` named (unnamed ones
    first, so a won claim cannot hide another's refusal)."""
    offered = _refused_over_http(scene, "/v1/items/1/claim", {"agent": "bob"})["other_work"]
    named = [item["id"] for item in offered["items"]]
    assert named == [3, 4]  # priority 1 before 2; 2, 6 and 7 are held back
    assert offered["command"] == "coord claim 3"
    pending = [i["id"] for i in _ok(scene, "GET", "/v1/items?state=pending")["items"]]
    won = []
    for item_id in sorted(pending, key=lambda i: i in named):
        ran = run_cli(
            "claim", str(item_id), "--json", board_dir=scene.board_dir, agent=f"probe-{item_id}"
        )
        assert ran.returncode in (0, 3), ran.stderr
        if ran.returncode == 0:
            won.append(item_id)
    assert sorted(won) == sorted(named)


def test_nothing_ready_says_whose_claim_ends_first(scene: Daemon) -> None:
    for item_id in (3, 4):
        _ok(scene, "POST", f"/v1/items/{item_id}/claim", {"agent": "dave"})
    found = _refused_over_http(scene, "/v1/claim-next", {"agent": "bob"})
    assert "other_work" not in found  # nothing to offer: that is the refusal
    assert found["wait"]["holder"] in ("alice", "carol", "dave")
    assert found["wait"]["command"].startswith("coord wait ")


@pytest.mark.parametrize(
    ("client", "event", "name"), HOOK_EDITS, ids=[f"{c}:{Path(n).stem}" for c, _, n in HOOK_EDITS]
)
def test_each_clients_deny_says_the_next_step_in_its_own_words(
    scene: Daemon, client: str, event: str, name: str
) -> None:
    """The guard's refusal of an edit carries the options the board gives a reservation of
    the same path (wait, ask, escalate alike; other work by the command that finds it)."""
    from coord.hooks import claude, codex, cursor, gemini

    repo = scene.board_dir.parent
    raw = (FIXTURES / name).read_text().replace("/REPO", str(repo))
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    result = subprocess.run(
        [sys.executable, "-m", "coord", "hook", client, event],
        input=raw,
        env={**env, "COORD_DIR": str(scene.board_dir)},
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    reason = _deny_reason(json.loads(result.stdout))
    how = {"claude": claude, "codex": codex, "gemini": gemini, "cursor": cursor}[client].NEXT_HOW
    assert how in reason  # the client's own words for running a command
    # as the session runs it: under its own name, which its shell may not carry
    assert f"`coord wait {HELD} --as " in reason
    given = json.loads(reason.split("\ncoord next: ", 1)[1].splitlines()[0])
    board = _refused_over_http(scene, "/v1/reservations", {"agent": "bob", "patterns": [HELD]})
    assert list(given) == list(board)
    for option in ("ask_holder", "escalate"):
        assert given[option] == board[option], option
    # the line's length is the board's to tell (the guard reads holds, not the waiters)
    queue = ("place", "waiting", "first")
    assert {k: v for k, v in given["wait"].items() if k not in queue} == {
        k: v for k, v in board["wait"].items() if k not in queue
    }
    assert all(given["wait"][k] is None for k in queue)
    assert given["other_work"]["command"] == "coord next"


def _deny_reason(answer: dict[str, Any]) -> str:
    if "agent_message" in answer:  # Cursor's
        return str(answer["agent_message"])
    if answer.get("decision") == "deny":  # Gemini CLI's
        return str(answer["reason"])
    return str(answer["hookSpecificOutput"]["permissionDecisionReason"])


def _item(daemon: Daemon, item_id: int) -> dict[str, Any]:
    return dict(_ok(daemon, "GET", f"/v1/items/{item_id}"))


# --- the core, on each backend -----------------------------------------------------------


@pytest.fixture(
    params=[
        pytest.param("sqlite"),
        pytest.param("postgres", marks=[pytest.mark.postgres]),
    ]
)
def core_board(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    from conftest import Clock
    from coord.core.board import Board
    from coord.storage.sqlite import SQLiteStorage
    from pg_support import fresh_database, open_storage

    (tmp_path / "src").mkdir()
    if request.param == "sqlite":
        board = Board(SQLiteStorage(tmp_path / "b.db"), clock=Clock(), repo_root=tmp_path)
        yield board
        board.close()
        return
    with fresh_database() as dsn:
        board = Board(open_storage(dsn), clock=Clock(), repo_root=tmp_path)
        yield board
        board.close()


def test_the_core_gives_the_same_next_on_every_backend(core_board: Any) -> None:
    """The storage answers the claim's scan inside a read transaction on both backends: the
    refusal's ``next`` names what the claim itself would take, and a won claim of it agrees."""
    from coord.errors import AlreadyClaimed, FilesReserved

    board = core_board
    board.add("held", created_by="lead", files=["src/a.py"])
    board.add("wants a", created_by="lead", files=["src/a.py"], priority=0)
    board.add("free", created_by="lead", files=["src/b.py"])
    board.claim(1, agent="alice")
    with pytest.raises(AlreadyClaimed) as held:
        board.claim(1, agent="bob")
    found = held.value.details["next"]
    assert [i["id"] for i in found["other_work"]["items"]] == [3]
    assert found["wait"]["holder"] == "alice"
    with pytest.raises(FilesReserved) as reserved:
        board.claim(2, agent="bob")
    assert reserved.value.details["next"]["wait"]["command"] == "coord wait 2"
    assert board.claim(3, agent="bob").item.id == 3  # what it offered, won


def test_the_waiters_seam_is_asked_about_the_item_or_the_paths(core_board: Any) -> None:
    """``queue_place`` is where the waiters' queue plugs in: asked with the item of a refused
    claim, or the paths of a refused reservation; what it answers is the ``wait`` option's
    line (``waiting``, ``first``, and ``your_place`` said as ``place``)."""
    from coord.core import next_steps
    from coord.errors import AlreadyClaimed, FilesReserved

    board = core_board
    board.add("held", created_by="lead", files=["src/a.py"])
    board.claim(1, agent="alice")
    asked: list[dict[str, Any]] = []

    def place(tx: Any, now: float, agent: str, **target: Any) -> dict[str, Any]:
        asked.append({"agent": agent, "item": target.get("item"), "paths": target.get("paths")})
        return {"waiting": 2, "first": "carol", "your_place": 3}

    for refused in (AlreadyClaimed, FilesReserved):
        with pytest.raises(refused) as err:
            if refused is AlreadyClaimed:
                board.claim(1, agent="bob")
            else:
                board.reserve(["src/a.py"], agent="bob")
        found = next_steps.for_refusal(board._context, err.value, "bob", place=place)
        assert found is not None
        wait = found["wait"]
        assert (wait["waiting"], wait["first"], wait["place"]) == (2, "carol", 3)
    assert asked == [
        {"agent": "bob", "item": 1, "paths": None},
        {"agent": "bob", "item": None, "paths": ["src/a.py"]},
    ]
