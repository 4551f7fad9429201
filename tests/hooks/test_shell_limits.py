"""The shell guard's limits, held to what docs/files-and-the-guard.md and the module's
docstring say: the commands it lets through unread, and the bounds past which it refuses
(issue 22 items 3, 5)."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
from shell_cases import make_repo, verdict

from coord.hooks import shell, shell_guard, shell_programs

ROOT = Path(__file__).resolve().parents[2]
GUARD_PAGE = ROOT / "docs" / "files-and-the-guard.md"
PAGE_TITLE = "**Let through unread**:"
DOCSTRING_TITLE = "Let through unread ("


def listed(text: str, title: str, end: str = "(with any") -> list[str]:
    """The commands named in backticks after ``title``, up to ``end``."""
    after = text.split(title, 1)[1]
    return re.findall(r"`+([^`]+)`+", after.split(end, 1)[0])


def table() -> list[str]:
    return [" ".join(entry) for entry in shell_programs.LET_THROUGH]


def test_the_docs_and_the_docstring_name_exactly_the_commands_let_through_unread() -> None:
    page = GUARD_PAGE.read_text(encoding="utf-8")
    assert listed(page, PAGE_TITLE) == table()
    docstring = shell.__doc__ or ""
    assert listed(docstring.split(DOCSTRING_TITLE, 1)[1], "):", ". Beyond") == table()


def test_the_list_check_fails_on_a_list_that_says_more_or_less() -> None:
    """The test of the test: one entry more, or one less, is seen."""
    page = GUARD_PAGE.read_text(encoding="utf-8")
    more = page.replace("`go test`", "`go test`, `npm run build`")
    less = page.replace("`make -n`, ", "")
    assert listed(more, PAGE_TITLE) != table()
    assert listed(less, PAGE_TITLE) != table()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("limits") / "repo"
    make_repo(root)
    (root / "Makefile").write_text("build:\n\trm -f src/a.py\ntest:\n\t@true\ncheck:\n\t@true\n")
    return root


@pytest.mark.parametrize("command", table())
def test_each_listed_command_is_let_through_where_others_hold_files(
    repo: Path, command: str
) -> None:
    assert shell_programs.let_through(shlex.split(command))
    assert verdict(repo / ".coord", command + " -q") is None


@pytest.mark.parametrize(
    "command",
    ["make nothing-here", "npm run build", "cargo build", "python3 scripts/gen.py", "go run ."],
)
def test_a_runner_not_listed_is_refused_where_others_hold_files(repo: Path, command: str) -> None:
    assert not shell_programs.let_through(shlex.split(command))
    reason = verdict(repo / ".coord", command)
    assert reason is not None and "the guard cannot tell what it writes" in reason, reason
    assert "alice" in reason


def test_an_unreadable_command_is_allowed_where_nobody_else_holds_anything(repo: Path) -> None:
    for command in ("make build", 'eval "$CMD"', "rm -rf $X", "python3 scripts/gen.py", "$X y"):
        assert verdict(repo / ".coord", command) is not None, command  # bob: alice holds files
        reason = shell_guard.refusal(str(repo / ".coord"), command, "alice", str(repo))
        assert reason is None, (command, reason)  # alice: nobody else holds anything


def test_a_command_past_the_size_limit_is_refused_with_the_reason(repo: Path) -> None:
    big = "\n".join(f"cp /tmp/x{i} free/f{i}.txt" for i in range(20_001))  # the 729 KB
    started = time.monotonic()
    reason = verdict(repo / ".coord", big)
    assert time.monotonic() - started < 5  # a liveness bound: it answers, it does not read it
    assert reason is not None and f"limit of {shell.MAX_COMMAND:,}" in reason
    many = "; ".join(["true"] * (shell.MAX_SIMPLE_COMMANDS + 1))
    assert len(many) < shell.MAX_COMMAND
    reason = verdict(repo / ".coord", many)
    assert reason is not None and "simple commands" in reason
    paths = "touch " + " ".join(f"free/{i}" for i in range(shell.MAX_PATHS + 1))
    reason = verdict(repo / ".coord", paths)
    assert reason is not None and f"limit of {shell.MAX_PATHS:,}" in reason
    # just inside the limits it is judged: a held file among them is named
    inside = "touch " + " ".join(f"free/{i}" for i in range(shell.MAX_PATHS - 1)) + " src/a.py"
    reason = verdict(repo / ".coord", inside)
    assert reason is not None and "writes src/a.py" in reason
    # where coord is not used, the hook stays out of the way, whatever the size
    assert shell_guard.refusal(None, big, "bob", str(repo / "free")) is None


def test_a_batch_of_targets_is_judged_on_one_read_of_the_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file a command writes is judged on the board read once (and once more for the
    held names a hard-linked file is compared with), however many are hard links: it was a
    read of the board per linked file (issue 22: the guard's cost grew with the command)."""
    import os
    import sqlite3

    root = tmp_path / "repo"
    board_dir = make_repo(root)
    for i in range(200):
        (root / "free" / f"f{i}").write_text("x")
        os.link(root / "free" / f"f{i}", root / "free" / f"g{i}")
    os.link(root / "src" / "a.py", root / "free" / "alias.py")
    opened: list[object] = []
    connect = sqlite3.connect

    def counting(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(database)
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counting)
    command = "touch " + " ".join(f"free/f{i}" for i in range(200)) + " free/alias.py"
    reason = verdict(board_dir, command)
    assert reason is not None and "writes free/alias.py" in reason and "src/a.py" in reason
    assert len(opened) <= 2, opened
