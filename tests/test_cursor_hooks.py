"""Cursor's hooks: `coord hook cursor EVENT` on Cursor's documented JSON, the same input
reaching coord's Claude Code hook (Cursor runs those too), and `coord init --cursor` writing
`.cursor/hooks.json` beside the user's hooks.

Cursor has no client installable here: the inputs are tests/hooks/cursor/*.json, written from
https://cursor.com/docs/hooks (tests/hooks/README.md says what each field is taken from).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from conftest import Daemon
from coord.core.board import Board
from coord.fast import identity
from test_hooks import HELD, allowed, fixture, hook, reserve
from test_wiring import coord, new_repo, snapshot, write

WRITE = "cursor/pre_tool_use_write.json"
SHELL = "cursor/before_shell_execution.json"


def cursor_denied(result: subprocess.CompletedProcess[str], *, in_claude: bool = False) -> str:
    """The reason of exactly Cursor's deny (with Claude Code's beside it in a Claude hook)."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    keys = {"permission", "agent_message", "user_message"}
    assert set(answer) == (keys | {"hookSpecificOutput"} if in_claude else keys), answer
    assert answer["permission"] == "deny" and answer["agent_message"] == answer["user_message"]
    if in_claude:
        out = answer["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny"
        assert out["permissionDecisionReason"] == answer["agent_message"]
    reason = answer["agent_message"]
    assert isinstance(reason, str) and reason.strip()
    return reason


def me(payload: dict[str, Any]) -> str:
    return identity.session_name("cursor", payload["conversation_id"])


def edit_of(repo: Path, path: str, name: str = WRITE) -> dict[str, Any]:
    payload = fixture(name, repo)
    key = "file_path" if "file_path" in payload["tool_input"] else "path"
    payload["tool_input"][key] = path
    return payload


def shell_of(repo: Path, command: str) -> dict[str, Any]:
    payload = fixture(SHELL, repo)
    payload["command"] = command
    return payload


# --- the guard ------------------------------------------------------------------------------


def test_pre_tool_use_denies_a_held_file_and_allows_a_free_one(board_dir: Path) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth/**"], "alice")
    # Write names the absolute path; StrReplace a path relative to the workspace root
    for name in (WRITE, "cursor/pre_tool_use_str_replace.json"):
        reason = cursor_denied(
            hook("cursor", "preToolUse", fixture(name, repo), cwd=repo, board_dir=board_dir)
        )
        assert "alice" in reason and HELD in reason
        allowed(
            hook(
                "cursor",
                "preToolUse",
                edit_of(repo, "docs/free.md", name),
                cwd=repo,
                board_dir=board_dir,
            )
        )
    # the holder, named after its conversation, edits its own file
    reserve(board_dir, ["docs/**"], me(fixture(WRITE, repo)))
    allowed(
        hook(
            "cursor",
            "preToolUse",
            edit_of(repo, str(repo / "docs/mine.md")),
            cwd=repo,
            board_dir=board_dir,
        )
    )
    # reading a held file is no edit
    allowed(
        hook(
            "cursor",
            "preToolUse",
            fixture("cursor/pre_tool_use_read.json", repo),
            cwd=repo,
            board_dir=board_dir,
        )
    )


def test_pre_tool_use_reads_the_workspace_root_not_the_hooks_cwd(board_dir: Path) -> None:
    """Cursor sends no cwd: a relative path is the workspace root's, wherever the hook runs."""
    repo = board_dir.parent
    reserve(board_dir, ["src/auth/**"], "alice")
    payload = fixture("cursor/pre_tool_use_str_replace.json", repo)
    elsewhere = repo.parent / "elsewhere"
    elsewhere.mkdir()
    cursor_denied(hook("cursor", "preToolUse", payload, cwd=elsewhere, board_dir=None))


def test_before_shell_execution_is_the_shell_guard(board_dir: Path) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth/**"], "alice")
    reason = cursor_denied(
        hook("cursor", "beforeShellExecution", fixture(SHELL, repo), cwd=repo, board_dir=board_dir)
    )
    assert "alice" in reason
    for command, refused in (
        ("git commit --no-verify -m x", True),
        ("rm -rf .coord", True),
        ("ls src/auth", False),
        ("echo hi > notes.txt", False),
    ):
        run = hook(
            "cursor", "beforeShellExecution", shell_of(repo, command), cwd=repo, board_dir=board_dir
        )
        if refused:
            cursor_denied(run)
        else:
            allowed(run)


def test_input_the_guard_cannot_read_is_refused(board_dir: Path) -> None:
    repo = board_dir.parent
    no_root = fixture(WRITE, repo)
    del no_root["workspace_roots"]
    no_command = fixture(SHELL, repo)
    del no_command["command"]
    for event, payload in (
        ("preToolUse", "{broken"),
        ("preToolUse", no_root),
        ("beforeShellExecution", no_command),
    ):
        reason = cursor_denied(hook("cursor", event, payload, cwd=repo, board_dir=board_dir))
        assert reason.startswith("coord hook: ") and "\n" not in reason


# --- session start and stop -----------------------------------------------------------------


def test_session_start_names_the_agent_after_its_conversation(daemon: Daemon) -> None:
    board_dir = daemon.board_dir
    repo = board_dir.parent
    payload = fixture("cursor/session_start.json", repo)
    name = me(payload)
    board = Board.open(board_dir)
    try:
        mine = board.add("Rework the session store", created_by="lead", files=["src/auth/**"])
        board.claim(mine.id, agent=name)
    finally:
        board.close()
    result = hook("cursor", "sessionStart", payload, board_dir=board_dir, cwd=repo)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert set(answer) == {"additional_context"}
    text = answer["additional_context"]
    assert f"You are coord agent `{name}`" in text and "Rework the session store" in text
    record = json.loads((board_dir / "sessions" / f"{os.getpid()}.json").read_text())
    assert record == {"agent": name, "client": "cursor", "session_id": payload["conversation_id"]}


def test_stop_heartbeats_and_never_asks_for_another_turn(daemon: Daemon) -> None:
    board_dir = daemon.board_dir
    repo = board_dir.parent
    payload = fixture("cursor/stop.json", repo)
    board = Board.open(board_dir)
    try:
        item = board.add("Rework the session store", created_by="lead")
        claim = board.claim(item.id, agent=me(payload), lease_seconds=60)
    finally:
        board.close()
    result = hook("cursor", "stop", payload, board_dir=board_dir, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {}  # a followup_message would make the agent go on
    board = Board.open(board_dir)
    try:
        renewed = board.get(item.id)
        assert renewed.fencing_token == claim.token
        assert renewed.lease_expires_at is not None
        assert renewed.lease_expires_at > claim.lease_expires_at + 600
    finally:
        board.close()


# --- Cursor running coord's Claude Code hooks -----------------------------------------------


def test_the_claude_hook_answers_cursors_input_instead_of_refusing_it(board_dir: Path) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth/**"], "alice")
    in_claude = fixture(WRITE, repo)
    in_claude["hook_event_name"] = "PreToolUse"
    reason = cursor_denied(
        hook("claude", "PreToolUse", in_claude, cwd=repo, board_dir=board_dir), in_claude=True
    )
    assert "alice" in reason
    free = edit_of(repo, "docs/free.md")
    allowed(hook("claude", "PreToolUse", free, cwd=repo, board_dir=board_dir))
    # Cursor's Shell tool through PreToolUse, and its shell event's shape
    shell = fixture(WRITE, repo)
    shell.update(tool_name="Shell", tool_input={"command": "echo x > src/auth/session.py"})
    cursor_denied(
        hook("claude", "PreToolUse", shell, cwd=repo, board_dir=board_dir), in_claude=True
    )
    shell["tool_input"] = {"command": "ls"}
    allowed(hook("claude", "PreToolUse", shell, cwd=repo, board_dir=board_dir))
    cursor_denied(
        hook("claude", "PreToolUse", fixture(SHELL, repo), cwd=repo, board_dir=board_dir),
        in_claude=True,
    )
    # the session start, in both clients' words
    start = hook(
        "claude",
        "SessionStart",
        fixture("cursor/session_start.json", repo),
        cwd=repo,
        board_dir=board_dir,
    )
    answer = json.loads(start.stdout)
    assert answer["additional_context"] == answer["hookSpecificOutput"]["additionalContext"]
    assert f"`{me(fixture(WRITE, repo))}`" in answer["additional_context"]


# --- coord init --cursor --------------------------------------------------------------------

USER_HOOKS = {
    "version": 1,
    "hooks": {
        "afterFileEdit": [{"command": "./hooks/format.sh"}],
        "beforeShellExecution": [{"command": "./hooks/audit.sh", "timeout": 5}],
    },
}


def wired(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".cursor/hooks.json").read_text())
    return data


def test_init_cursor_wires_hooks_beside_the_users_and_uninstall_restores(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    original = json.dumps(USER_HOOKS, indent=4) + "\n"
    write(repo / ".cursor/hooks.json", original)
    before = snapshot(repo)
    done = coord(repo, "init", "--cursor")
    assert done.returncode == 0, done.stderr
    data = wired(repo)
    assert data["version"] == 1
    hooks = data["hooks"]
    assert set(hooks) == {
        "afterFileEdit",
        "afterShellExecution",
        "beforeShellExecution",
        "preToolUse",
        "sessionStart",
        "stop",
    }
    assert hooks["afterFileEdit"][0] == USER_HOOKS["hooks"]["afterFileEdit"][0]
    assert hooks["beforeShellExecution"][0] == {"command": "./hooks/audit.sh", "timeout": 5}
    ours = {
        event: [e for e in entries if "coord" in e["command"]] for event, entries in hooks.items()
    }
    assert {e: len(v) for e, v in ours.items() if v} == {
        "afterFileEdit": 1,
        "afterShellExecution": 1,
        "beforeShellExecution": 1,
        "preToolUse": 1,
        "sessionStart": 1,
        "stop": 1,
    }
    # the guards fail closed: Cursor lets a failed or timed-out hook's call through otherwise
    assert set(ours["preToolUse"][0]) == {"command", "matcher", "timeout", "failClosed"}
    assert "Write" in ours["preToolUse"][0]["matcher"].split("|")
    assert set(ours["beforeShellExecution"][0]) == {"command", "timeout", "failClosed"}
    assert ours["beforeShellExecution"][0]["failClosed"] is True
    assert set(ours["afterShellExecution"][0]) == {"command", "timeout"}
    for event, (entry,) in ((e, v) for e, v in ours.items() if v):
        assert shlex.split(entry["command"])[2].count(f"hook cursor {event}") == 1
    # a second run changes nothing
    after = snapshot(repo)
    again = coord(repo, "init", "--cursor")
    assert again.returncode == 0, again.stderr
    assert snapshot(repo) == after
    gone = coord(repo, "uninstall")
    assert gone.returncode == 0, gone.stderr
    assert snapshot(repo) == before
    assert (repo / ".cursor/hooks.json").read_text() == original


def test_init_cursor_creates_hooks_json_and_uninstall_removes_it(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    assert coord(repo, "init", "--cursor").returncode == 0
    assert wired(repo)["version"] == 1
    assert coord(repo, "uninstall").returncode == 0
    assert not (repo / ".cursor").exists()


def test_without_coord_the_wired_cursor_guards_exit_2(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    assert coord(repo, "init", "--cursor").returncode == 0
    hooks = wired(repo)["hooks"]
    env = {"PATH": "/usr/bin:/bin"}
    for event, code in (("preToolUse", 2), ("beforeShellExecution", 2), ("stop", 1)):
        (entry,) = hooks[event]
        done = subprocess.run(
            ["/bin/sh", "-c", entry["command"]],
            input="{}",
            env=env,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == code, (event, done.stderr)  # Cursor: exit 2 blocks
        assert "coord is not on PATH" in done.stderr
