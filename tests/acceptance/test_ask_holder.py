"""Asking the holder (issue 26) end to end: the real `coord` command and the daemon as
processes, and the holder's Claude Code hook as Claude Code runs it (`coord hook claude
PostToolUse` with the hook's JSON on stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import Daemon, run_cli


def _hook(board_dir: Path, agent: str, cwd: Path) -> str:
    payload = {
        "session_id": "s-holder",
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": str(cwd / "README")},
        "tool_response": {},
        "tool_use_id": "t1",
    }
    env = {**os.environ, "COORD_DIR": str(board_dir), "COORD_AGENT": agent}
    done = subprocess.run(
        [sys.executable, "-m", "coord", "hook", "claude", "PostToolUse"],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr or done.stdout
    return json.loads(done.stdout)


def test_the_holder_hears_the_ask_in_its_next_hook_and_its_release_grants_the_waiter(
    daemon: Daemon,
) -> None:
    board_dir = daemon.board_dir
    repo = board_dir.parent
    item = _json(run_cli("add", "contended", "--json", board_dir=board_dir, agent="lead"))["id"]
    claim = _json(run_cli("claim", str(item), "--json", board_dir=board_dir, agent="holder"))
    before = claim["lease_expires_at"]
    env = {**os.environ, "COORD_DIR": str(board_dir), "COORD_AGENT": "asker"}
    waiter = subprocess.Popen(
        [sys.executable, "-m", "coord", "wait", str(item), "--timeout", "60"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        asked = _json(
            run_cli(
                "ask",
                str(item),
                "--reason",
                "the fix needs it",
                "--json",
                board_dir=board_dir,
                agent="asker",
            )
        )
        assert asked["holder"] == "holder" and asked["state"] == "open"
        said = json.loads(_hook(board_dir, "holder", repo))
        context = said["hookSpecificOutput"]["additionalContext"]
        assert said["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
        assert f"asker asks you to let go of item {item}" in context
        assert f"coord answer-ask {asked['id']} release" in context
        assert _hook(board_dir, "holder", repo) == ""  # said once
        assert _hook(board_dir, "asker", repo) == ""  # to the holder only
        _, shown = daemon.request("GET", f"/v1/items/{item}")
        assert shown["lease_expires_at"] == before  # asking shortened nothing
        listed = run_cli("asks", board_dir=board_dir, agent="holder")
        assert f"ask {asked['id']}: asker asks for item {item}" in listed.stdout
        answered = _json(
            run_cli(
                "answer-ask",
                str(asked["id"]),
                "release",
                "--json",
                board_dir=board_dir,
                agent="holder",
            )
        )
        assert answered["state"] == "released"
        told = json.loads(_hook(board_dir, "asker", repo))  # the asker's next hook says so
        assert (
            f"holder released item {item} as you asked"
            in (told["hookSpecificOutput"]["additionalContext"])
        )
        assert _hook(board_dir, "asker", repo) == ""  # once
        out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, err
        assert out.startswith(f"granted: item {item} is yours")
        inbox = _json(run_cli("inbox", "--json", board_dir=board_dir, agent="asker"))
        assert "ask_released" in [e["kind"] for e in inbox["events"]]
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate(timeout=10)


def test_a_deferral_is_on_the_board_and_a_wait_out_of_time_exits_6(daemon: Daemon) -> None:
    board_dir = daemon.board_dir
    item = _json(run_cli("add", "contended", "--json", board_dir=board_dir, agent="lead"))["id"]
    run_cli("claim", str(item), board_dir=board_dir, agent="holder")
    asked = _json(
        run_cli("ask", str(item), "--reason", "soon?", "--json", board_dir=board_dir, agent="b")
    )
    deferred = run_cli(
        "answer-ask",
        str(asked["id"]),
        "defer",
        "--until",
        "20m",
        "--reason",
        "tests first",
        board_dir=board_dir,
        agent="holder",
    )
    assert deferred.returncode == 0, deferred.stderr
    assert "deferred until" in deferred.stdout
    _, shown = daemon.request("GET", f"/v1/asks/{asked['id']}")
    assert shown["state"] == "deferred" and shown["answer_reason"] == "tests first"
    refused = run_cli("answer-ask", str(asked["id"]), "release", board_dir=board_dir, agent="b")
    assert refused.returncode == 3 and "addressed to holder" in refused.stderr
    waited = run_cli("wait", str(item), "--timeout", "1", board_dir=board_dir, agent="b")
    assert waited.returncode == 6, waited.stderr
    assert waited.stdout == ""
    assert "still waiting for item" in waited.stderr and "place 1" in waited.stderr
    _, shown = daemon.request("GET", f"/v1/items/{item}")
    assert shown["claimed_by"] == "holder"
    bad = run_cli("wait", str(item), "src/a.py", board_dir=board_dir, agent="b")
    assert bad.returncode == 2 and "not both" in bad.stderr
