"""Agents in linked git worktrees use the main working tree's board, and name files the same.

Two layouts: a worktree beside the repository (`git worktree add ../wt`) and one nested under
it (`.claude/worktrees/wt`, as some clients make them). Before, the first found no board and
the second named `src/a.py` as `.claude/worktrees/wt/src/a.py`, which no reservation covers:
the hooks let such edits through.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import init_board_dir, run_cli
from coord.core.board import Board
from coord.fast import worktree


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture(params=["beside", "nested"])
def layout(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path]:
    """(the main working tree, a linked worktree of it), with `src/a.py` held by agent a."""
    main = tmp_path / "repo"
    (main / "src").mkdir(parents=True)
    (main / "src" / "a.py").write_text("a\n")
    (main / ".gitignore").write_text(".coord/\n.claude/\n")
    git(main, "init", "-q")
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "init")
    linked = tmp_path / "wt" if request.param == "beside" else main / ".claude" / "worktrees" / "wt"
    git(main, "worktree", "add", "-q", "--detach", str(linked))
    board_dir = init_board_dir(main)
    board = Board.open(board_dir)
    board.reserve(["src/a.py"], agent="a")
    board.close()
    return main, linked


def test_paths_in_a_linked_worktree_are_the_repository_paths(layout: tuple[Path, Path]) -> None:
    main, linked = layout
    assert worktree.root_for(str(linked / "src"), str(main)) == str(linked.resolve())
    assert worktree.root_for(str(main / "src"), str(main)) == str(main.resolve())
    assert worktree.board_root_for(str(linked / "src")) == str(main.resolve())
    assert worktree.board_root_for(str(main / "src")) is None


def coord_in(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real `coord` as a process in ``cwd``, finding the board by itself (no COORD_DIR)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    return subprocess.run(
        [sys.executable, "-m", "coord", *args],
        input=stdin,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_guard_refuses_a_held_file_from_a_linked_worktree(layout: tuple[Path, Path]) -> None:
    _, linked = layout
    held = coord_in(linked, "guard", "src/a.py", "--as", "b")
    assert held.returncode == 2, held.stderr
    assert "held by a (src/a.py)" in held.stderr
    mine = coord_in(linked, "guard", "src/a.py", "--as", "a")
    assert mine.returncode == 0, mine.stderr


def test_the_edit_hook_refuses_a_held_file_in_a_linked_worktree(layout: tuple[Path, Path]) -> None:
    _, linked = layout
    event = {
        "session_id": "5e55101d-0000-4000-8000-000000000000",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(linked),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {
            "file_path": str(linked / "src" / "a.py"),
            "old_string": "a",
            "new_string": "b",
        },
    }
    answer = coord_in(linked, "hook", "claude", "PreToolUse", stdin=json.dumps(event))
    decision = json.loads(answer.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "src/a.py" in decision["permissionDecisionReason"]


def test_another_worktrees_copy_of_a_file_is_the_same_repository_file(
    layout: tuple[Path, Path],
) -> None:
    """From the main tree, the linked worktree's src/a.py is src/a.py, and the other way
    round. Before, one of them read as outside the repository, and a nested worktree's
    copy seen from the main tree as `.claude/worktrees/wt/src/a.py`, which nobody holds."""
    main, linked = layout
    for cwd, path in ((main, linked / "src" / "a.py"), (linked, main / "src" / "a.py")):
        event = {
            "session_id": "5e55101d-0000-4000-8000-000000000000",
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": str(path), "content": "b\n"},
        }
        answer = coord_in(cwd, "hook", "claude", "PreToolUse", stdin=json.dumps(event))
        assert answer.stdout, (cwd, answer.stderr)
        reason = json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
        assert "src/a.py is held by a (src/a.py)" in reason, (cwd, reason)
        held = coord_in(cwd, "guard", str(path), "--as", "b")
        assert held.returncode == 2 and "src/a.py is held by a" in held.stderr, (cwd, held)
        assert coord_in(cwd, "guard", str(path), "--as", "a").returncode == 0


def test_the_cli_in_a_linked_worktree_reserves_repository_paths(
    layout: tuple[Path, Path],
) -> None:
    main, linked = layout
    made = coord_in(linked, "reserve", "src/b.py", "--as", "c", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    patterns = [r["pattern"] for r in json.loads(made.stdout)["reservations"]]
    assert patterns == ["src/b.py"]  # not "../wt/src/b.py" nor ".claude/worktrees/wt/src/b.py"
    board = run_cli("reservations", "--json", board_dir=main / ".coord")
    assert {r["pattern"] for r in json.loads(board.stdout)["reservations"]} == {
        "src/a.py",
        "src/b.py",
    }
    run_cli("stop", board_dir=main / ".coord")


def test_the_pre_commit_guard_reads_the_linked_worktrees_staged_files(
    layout: tuple[Path, Path],
) -> None:
    _, linked = layout
    (linked / "src" / "a.py").write_text("changed in the worktree\n")
    git(linked, "add", "src/a.py")
    staged = coord_in(linked, "guard", "--staged", "--as", "b")
    assert staged.returncode == 2, staged.stderr
    assert "src/a.py is held by a" in staged.stderr
