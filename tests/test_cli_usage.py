"""Usage mistakes are said plainly, by the command they belong to (issue 15 items 6 and 12)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli


def test_a_mistyped_command_gets_a_suggestion(board_dir: Path) -> None:
    done = run_cli("nxt", board_dir=board_dir)
    assert done.returncode == 2
    assert "no command 'nxt'; did you mean next?" in done.stderr
    assert len(done.stderr.splitlines()) <= 3  # not 31 commands on one line


def test_an_unknown_option_is_refused_with_the_commands_own_usage(board_dir: Path) -> None:
    done = run_cli("guard", "--bogus", board_dir=board_dir)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: coord guard"), done.stderr
    assert "unrecognized arguments: --bogus" in done.stderr


def test_file_takes_one_pattern_and_the_title_is_not_swallowed(board_dir: Path) -> None:
    swallowed = run_cli("add", "--file", "a.py", "b.py", "the title", board_dir=board_dir)
    assert swallowed.returncode == 2
    assert "--file takes one pattern: repeat it" in swallowed.stderr
    added = run_cli(
        "add",
        "--file",
        "a.py",
        "--file",
        "b.py",
        "the title",
        "--json",
        board_dir=board_dir,
        agent="ann",
    )
    assert added.returncode == 0, added.stderr
    item = json.loads(added.stdout)
    assert (item["title"], item["files"]) == ("the title", ["a.py", "b.py"])


def test_usage_errors_are_json_under_json(board_dir: Path) -> None:
    for args in (["add", "--json"], ["nxt", "--json"], ["show", "--json", "--bogus", "1"]):
        done = run_cli(*args, board_dir=board_dir)
        assert done.returncode == 2
        answer = json.loads(done.stdout)
        assert answer["error"] == "usage" and answer["message"], args


def test_a_hook_event_coord_does_not_answer_is_said_not_swallowed(board_dir: Path) -> None:
    done = run_cli("hook", "claude", "Foo", board_dir=board_dir, input="{}")
    assert done.returncode == 1  # shown by the client, without blocking the call
    assert "no event 'Foo'" in done.stderr and "PreToolUse" in done.stderr


def _coord_here(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `coord` in ``cwd``, finding its board from there (no COORD_DIR)."""
    env = {k: v for k, v in os.environ.items() if k != "COORD_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "coord", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_init_outside_a_git_repository_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    done = _coord_here(tmp_path, "init")
    assert done.returncode == 2
    assert "not inside a git repository" in done.stderr and "COORD_DIR" in done.stderr
    assert not (tmp_path / ".coord").exists()


def test_an_out_of_range_lease_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    done = _coord_here(tmp_path, "init", "--lease", "99999999")
    assert done.returncode == 2 and "out of range" in done.stderr
    assert not (tmp_path / ".coord").exists()
    assert _coord_here(tmp_path, "init").returncode == 0
    listed = _coord_here(tmp_path, "ls")
    assert listed.returncode == 0, listed.stderr  # the board works: nothing bad was kept
    _coord_here(tmp_path, "stop")


def test_import_errors_name_the_line_of_the_file(board_dir: Path) -> None:
    lines = '{"title": "a"}\n\n{"title": "b", "priority": 9}\n'
    done = run_cli("import", "-", board_dir=board_dir, agent="ann", input=lines)
    assert done.returncode == 2
    # line 3 of the input
    assert "-:3: priority must be at most 4, not 9" in done.stderr, done.stderr


def test_help_says_the_defaults() -> None:
    import subprocess
    import sys

    shown = {
        command: subprocess.run(
            [sys.executable, "-m", "coord", command, "--help"], capture_output=True, text=True
        ).stdout
        for command in ("ls", "log", "serve", "claim")
    }
    assert "(default: 100)" in shown["ls"] and "(default: 500)" in shown["log"]
    assert "(default: warning)" in shown["serve"]
    # a team board's daemon ignores --idle-exit (it said so only in daemon.log)
    assert "team board's never does (ignored there)" in " ".join(shown["serve"].split())
    assert "(default: )" not in "".join(shown.values())  # nothing said of empty defaults


def test_every_option_and_argument_says_what_it_is() -> None:
    """`coord ls --help` listed --kind and --label with no word of what they do (and so did
    add, edit, next, release, reply, unreserve, who, guard and hook for some of theirs)."""
    import argparse

    from coord.cli.main import build_parser

    silent = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}".strip())
            elif not action.help:
                silent.append(f"coord {path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "")
    assert silent == []


# every command that takes an item, with what else it needs
ITEM_COMMANDS = {
    "show": [],
    "edit": ["--title", "t"],
    "cancel": ["--reason", "r"],
    "claim": [],
    "heartbeat": [],
    "release": [],
    "done": [],
    "escalate": ["why?"],
    "answer": ["yes"],
    "reply": ["hi"],
    "ack": [],
    "reopen": ["--reason", "r"],
    "abandon": ["--reason", "r"],
}


def test_no_such_item_is_exit_5_from_every_command(daemon: object) -> None:
    from conftest import Daemon

    assert isinstance(daemon, Daemon)
    for command, rest in ITEM_COMMANDS.items():
        for ref in ("999", "Z9"):  # an id and a package id that are not on the board
            done = run_cli(command, ref, *rest, board_dir=daemon.board_dir, agent="ann")
            assert done.returncode == 5, (command, ref, done.returncode, done.stderr)
            assert "on this board" in done.stderr, (command, done.stderr)


def test_a_write_without_a_token_names_the_holder(daemon: object) -> None:
    from conftest import Daemon

    assert isinstance(daemon, Daemon)
    board = daemon.board_dir
    run_cli("add", "x", board_dir=board, agent="claude-1")
    assert run_cli("claim", "1", board_dir=board, agent="claude-1").returncode == 0
    for command in ("done", "heartbeat", "release"):
        done = run_cli(command, "1", board_dir=board, agent="codex-1")
        assert done.returncode == 3, (command, done.stderr)  # a conflict, not a usage error
        assert "held by claude-1, not codex-1" in done.stderr, done.stderr
    run_cli("add", "y", board_dir=board, agent="claude-1")
    pending = run_cli("done", "2", board_dir=board, agent="codex-1")
    assert pending.returncode == 3 and "not claimed: claim it first" in pending.stderr


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"colour": 1}, "unknown setting 'colour'"),
        ({"synchronous": "SOMETIMES"}, "synchronous 'SOMETIMES' is not one of NORMAL, FULL"),
        ({"default_lease_seconds": 99999999}, "default_lease_seconds: lease_seconds"),
        ({"humans": "alice"}, "must be a list of names"),
        ({"escalate_to": ""}, "escalate_to:"),
    ],
)
def test_a_wrong_setting_is_named_by_the_command_that_read_it(
    tmp_path: Path, setting: dict[str, object], said: str
) -> None:
    from conftest import init_board_dir

    board_dir = init_board_dir(tmp_path)
    config = board_dir / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **setting}))
    done = run_cli("ls", board_dir=board_dir)
    assert done.returncode == 2, done.stderr
    assert str(config) in done.stderr and said in done.stderr, done.stderr
    assert "daemon.log" not in done.stderr


def test_commands_that_print_no_json_refuse_json(board_dir: Path) -> None:
    for args in (["serve", "--json"], ["mcp", "--json"], ["hook", "claude", "Stop", "--json"]):
        done = run_cli(*args, board_dir=board_dir, input="{}")
        assert done.returncode == 2, (args, done.stderr)
        assert "--json:" in done.stderr and done.stdout == "", (args, done.stderr)
