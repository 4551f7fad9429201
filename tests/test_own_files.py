"""coord's own files (issue 13 item 5): no agent edits, overwrites or deletes ``.coord/``.

Through every client's real hook JSON (tests/hooks/), ``coord guard`` as a process, and for
``git clean`` a real git repository: each command the guard refuses is run in a copy to show
it really deletes the board, and each one it allows is run to show the board survives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_hooks import EDITS, IDS, SHELLS, allowed, denied, fixture, hook, with_command, with_path

WHY = "`.coord/` is coord's board"


def git_repo(board_dir: Path) -> Path:
    repo = board_dir.parent
    run = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "src").mkdir(exist_ok=True)
    (repo / "src" / "a.py").write_text("a = 1\n")
    subprocess.run(["git", "add", "src"], cwd=repo, check=True)
    subprocess.run([*run, "commit", "-qm", "init"], cwd=repo, check=True)
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("x")  # untracked, for git clean to remove
    return repo


def guard(board_dir: Path, *paths: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    return subprocess.run(
        [sys.executable, "-m", "coord", "guard", *paths],
        env={**env, "COORD_AGENT": "bob"},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def board_spellings(repo: Path) -> list[str]:
    """The board's files however spelled: directly, through ``..``, a symlink, absolutely."""
    (repo / "src").mkdir(exist_ok=True)
    (repo / "board-link").symlink_to(".coord")
    return [
        ".coord/board.db",
        ".coord/token",
        "src/../.coord/token",
        "./.coord/config.json",
        "board-link/board.db",
        str(repo / ".coord" / "sessions" / "123.json"),
        ".coord/new-file",
    ]


@pytest.mark.parametrize(("client", "event", "name"), EDITS, ids=IDS)
def test_every_edit_tool_refuses_the_board_however_spelled(
    board_dir: Path, client: str, event: str, name: str
) -> None:
    repo = board_dir.parent
    for path in board_spellings(repo):
        payload = with_path(fixture(name, repo), path)
        result = hook(client, event, payload, board_dir=None, cwd=repo)
        assert WHY in denied(result, client), path
    # the files beside it stay free
    allowed(
        hook(client, event, with_path(fixture(name, repo), "src/x.py"), board_dir=None, cwd=repo)
    )


def test_coord_guard_refuses_the_board_even_for_a_fail_open_guard(board_dir: Path) -> None:
    repo = board_dir.parent
    for path in board_spellings(repo):
        result = guard(board_dir, path, cwd=repo)
        assert result.returncode == 2 and WHY in result.stderr, path
        assert "Traceback" not in result.stderr
    assert guard(board_dir, "--fail-open", ".coord/token", cwd=repo).returncode == 2
    assert guard(board_dir, "src/x.py", ".coord2/x", ".coordinates.md", cwd=repo).returncode == 0


def test_a_board_named_by_coord_dir_outside_the_repository_is_refused(tmp_path: Path) -> None:
    from conftest import init_board_dir

    board = init_board_dir(tmp_path / "boards" / "team")
    repo = tmp_path / "repo"
    repo.mkdir()
    payload = with_path(fixture("claude/pre_tool_use_write.json", repo), str(board / "board.db"))
    result = hook("claude", "PreToolUse", payload, board_dir=board, cwd=repo)
    assert WHY in denied(result, "claude")


REFUSED = [
    "rm -rf .coord",
    "rm -rf ./.coord/",
    "rm .coord/board.db",
    "rm -rf .c*",
    "rm -rf .",
    "cd src && rm -rf ..",
    "mv .coord /tmp/elsewhere",
    "echo '' > .coord/board.db",
    "cat /dev/null > .coord/token",
    "cp /etc/hostname .coord/token",
    "sed -i s/a/b/ .coord/config.json",
    "bash -c 'rm -rf .coord'",
    "git clean -fdx",
    "git clean -xdf",
    "git clean -f -d -x",
    "git clean -fdX",
    "git clean -fx .",
    "git clean -fX .coord",
    "git clean -ffdx",
    "cd src && git clean -fdx ..",
    "git -C src clean -fdx ..",
    "sudo git clean -fdx",
]
ALLOWED = [
    "rm -rf build",
    "rm -rf *",
    "git clean -fd",
    "git clean -fdx build",
    "git clean -fx",
    "git clean -ndx",
    "git clean -fdx --dry-run",
    "git clean -fdx -e .coord",
    "git clean -fdx --exclude=/.coord/",
    "cd src && git clean -fdx",
    "cat .coord/config.json",
    "ls -la .coord",
    "coord status > /tmp/status.txt",
]


@pytest.mark.parametrize(("client", "event", "name"), SHELLS, ids=[c for c, _, _ in SHELLS])
def test_every_shell_hook_refuses_commands_that_delete_or_overwrite_the_board(
    board_dir: Path, client: str, event: str, name: str
) -> None:
    repo = git_repo(board_dir)
    for command in REFUSED:
        payload = with_command(fixture(name, repo), command)
        reason = denied(hook(client, event, payload, board_dir=None, cwd=repo), client)
        assert WHY in reason and "\n" not in reason, command
    for command in ALLOWED:
        payload = with_command(fixture(name, repo), command)
        allowed(hook(client, event, payload, board_dir=None, cwd=repo))


def test_the_git_clean_rule_matches_what_git_does(
    board_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each ``git clean`` refused really deletes the board; each allowed really keeps it."""
    repo = git_repo(board_dir)
    (repo / "src" / "ignored.log").write_text("x")
    for command in [c for c in REFUSED + ALLOWED if "git" in c and "sudo" not in c]:
        copy = tmp_path_factory.mktemp("copy") / "repo"
        shutil.copytree(repo, copy, symlinks=True)
        subprocess.run(command, shell=True, cwd=copy, check=True, capture_output=True)
        survived = (copy / ".coord" / "board.db").exists()
        assert survived == (command in ALLOWED), command
        shutil.rmtree(copy)


def test_git_clean_of_a_board_git_does_not_ignore_is_refused_without_x(board_dir: Path) -> None:
    repo = git_repo(board_dir)
    (board_dir / ".gitignore").unlink()  # a board from before coord wrote it, not ignored
    payload = with_command(fixture("codex/pre_tool_use_bash.json", repo), "git clean -fd")
    assert WHY in denied(hook("codex", "PreToolUse", payload, board_dir=None, cwd=repo), "codex")
    (repo / ".gitignore").write_text(".coord/\n")  # ignored by the repository instead
    allowed(hook("codex", "PreToolUse", payload, board_dir=None, cwd=repo))
