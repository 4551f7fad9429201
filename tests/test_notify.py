"""People are told (issue 26 item 5): the daemon runs the board's ``notify`` command once per
event that needs a person, with the event as JSON on standard input; a command that hangs or
fails changes nothing on the board, and the board answers meanwhile.

A real daemon (`coord serve` as a process) on a real SQLite board; the notify commands are
real processes that write what they were given to files. Nothing here asserts a duration:
each wait is for something to happen, with a generous deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon
from coord.errors import InvalidInput
from coord.fast import board_files

TELL = """import json, os, sys
given = sys.stdin.read()
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({"stdin": given, "argv": sys.argv[1:]}) + "\\n")
"""
HANG = """import os, sys, time
with open(sys.argv[1], "a") as out:
    out.write(str(os.getpid()) + "\\n")
time.sleep(600)
"""


def _until(what: Callable[[], Any], deadline: float = 30.0) -> Any:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        found = what()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("it did not happen")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []

    def start(notify: Any, **config: Any) -> Daemon:
        repo = tmp_path / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        daemon = Daemon(init_board_dir(repo, notify=notify, **config)).start()
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.stop()
        stop_leftover_daemon(daemon.board_dir)


def _post(daemon: Daemon, path: str, body: dict[str, Any]) -> Any:
    status, answer = daemon.request("POST", path, body)
    assert status < 300, (status, answer)
    return answer


def _escalated(daemon: Daemon, title: str) -> int:
    item = _post(daemon, "/v1/items", {"agent": "lead", "title": title})
    won = _post(daemon, f"/v1/items/{item['id']}/claim", {"agent": "a"})
    _post(
        daemon,
        f"/v1/items/{item['id']}/escalate",
        {"agent": "a", "token": won["token"], "question": f"which way for {title}?"},
    )
    return int(item["id"])


def test_the_command_runs_once_per_event_with_the_event_on_stdin(
    board: Callable[..., Daemon], tmp_path: Path
) -> None:
    script, told = tmp_path / "tell.py", tmp_path / "told.jsonl"
    script.write_text(TELL)
    daemon = board([sys.executable, str(script), str(told)])
    first = _escalated(daemon, "one")
    _post(daemon, "/v1/items", {"agent": "lead", "title": "needs nobody"})  # not told
    second = _escalated(daemon, "two")
    # the notices run in the log's order, one at a time: the second's arrival means the first
    # has run, and the third's that nothing before it runs again
    _until(lambda: len(_lines(told)) >= 2)
    third = _escalated(daemon, "three")
    _until(lambda: len(_lines(told)) >= 3)
    runs = [json.loads(line) for line in _lines(told)]
    assert len(runs) == 3
    events = [json.loads(run["stdin"]) for run in runs]
    assert [e["why"] for e in events] == ["escalation"] * 3
    assert [e["event"]["item_id"] for e in events] == [first, second, third]
    assert [e["event"]["kind"] for e in events] == ["escalated"] * 3
    assert events[0]["event"]["details"]["question"] == "which way for one?"
    assert events[0]["item"]["state"] == "needs_human"
    assert len({e["event"]["seq"] for e in events}) == 3
    # the event never comes in the command's arguments: only what config.json says
    assert all(run["argv"] == [str(told)] for run in runs)


def test_a_command_that_hangs_is_killed_and_changes_nothing_while_the_board_answers(
    board: Callable[..., Daemon], tmp_path: Path
) -> None:
    script, started = tmp_path / "hang.py", tmp_path / "started"
    script.write_text(HANG)
    daemon = board([sys.executable, str(script), str(started)], notify_timeout_seconds=1)
    item = _escalated(daemon, "hangs")
    pid = int(_until(lambda: _lines(started))[0])  # the command runs, and hangs
    events = daemon.request("GET", "/v1/events?after=0")[1]["events"]
    # meanwhile the board answers, reads and writes
    listed = run_cli("ls", "--json", board_dir=daemon.board_dir, agent="b")
    assert listed.returncode == 0, listed.stderr
    other = _post(daemon, "/v1/items", {"agent": "lead", "title": "meanwhile"})
    _post(daemon, f"/v1/items/{other['id']}/claim", {"agent": "b"})
    _until(lambda: "killed it" in daemon.log_path.read_text())
    _until(lambda: not _alive(pid), deadline=10)  # gone, with its group
    after = daemon.request("GET", "/v1/events?after=0")[1]["events"]
    assert after[: len(events)] == events  # nothing the command did is on the board
    assert [e["kind"] for e in after[len(events) :]] == ["created", "claimed"]  # ours only
    assert daemon.request("GET", f"/v1/items/{item}")[1]["state"] == "needs_human"


def test_a_command_that_fails_is_logged_and_changes_nothing(
    board: Callable[..., Daemon],
) -> None:
    daemon = board("echo 'the webhook said no' >&2; exit 3")
    _escalated(daemon, "fails")
    events = daemon.request("GET", "/v1/events?after=0")[1]["events"]
    said = _until(
        lambda: [ln for ln in daemon.log_path.read_text().splitlines() if "exited 3" in ln]
    )
    assert "the webhook said no" in said[0] and "escalation" in said[0]
    assert daemon.request("GET", "/v1/events?after=0")[1]["events"] == events


def test_needs_rework_and_an_ask_to_a_human_are_told_and_an_ask_to_an_agent_is_not() -> None:
    from coord.model import Event
    from coord.server.notify import humans_of, why_notified

    humans = humans_of({"humans": ["alice"], "escalate_to": "lead"})
    assert humans == {"alice", "lead"}
    seen = [
        why_notified(Event(1, 0.0, "runner", 3, "needs_rework", {}), humans),
        # `coord ask`'s event names the one asked as its holder
        why_notified(Event(2, 0.0, "b", 3, "asked", {"holder": "alice"}), humans),
        why_notified(Event(3, 0.0, "b", 3, "asked", {"holder": "claude-a"}), humans),
        why_notified(Event(4, 0.0, "b", 3, "claimed", {}), humans),
        why_notified(Event(5, 0.0, "b", 3, "escalated", {}), humans),
    ]
    assert seen == ["needs_rework", "ask", None, None, "escalation"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("notify", ""),
        ("notify", []),
        ("notify", ["ok", 3]),
        ("notify", {"command": "x"}),
        ("notify_timeout_seconds", 0),
        ("notify_timeout_seconds", "10"),
        ("notify_timeout_seconds", True),
    ],
)
def test_a_wrong_notify_setting_is_refused_naming_it(setting: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as refused:
        board_files.check_config({**board_files.DEFAULT_CONFIG, setting: value}, Path("c.json"))
    assert refused.value.details["field"] == setting
    assert setting in refused.value.message


def test_a_lapsed_worktree_claim_is_told_once_and_a_plain_one_is_not(
    tmp_path: Path, clock: Any
) -> None:
    """No event records a lapse: the notifier finds claims whose lease ended since it last
    looked, on the board's clock (moved by hand here)."""
    from coord.core.board import Board
    from coord.model import WorktreeSpec
    from coord.server.notify import Notifier

    repo = tmp_path / "repo"
    repo.mkdir()
    board_dir = init_board_dir(repo, notify=["true"])
    board = Board.open(board_dir, clock=clock)
    try:
        for title in ("in a worktree", "plain"):
            board.add(title, created_by="lead")
        spec = WorktreeSpec("0" * 40, str(tmp_path / "wt"))
        board.claim(1, agent="a", lease_seconds=60, worktree=spec)
        board.claim(2, agent="b", lease_seconds=60)
        logged: list[str] = []
        notifier = Notifier(board, board_dir, log=logged.append)
        notifier._cursor, notifier._lapses_after = board.last_seq(), board.now()
        notifier.look()
        assert notifier._waiting.empty()  # nothing lapsed yet
        clock.advance(120)
        notifier.look()
        notifier.look()  # looked again: the same lapse is not told twice
        told = []
        while not notifier._waiting.empty():
            job = notifier._waiting.get_nowait()
            assert job is not None
            told.append(json.loads(job[2]))
        assert [(t["why"], t["event"]["item_id"]) for t in told] == [("lease_lapsed", 1)]
        assert told[0]["event"]["agent"] == "a" and told[0]["item"]["branch"]
        assert logged == []
    finally:
        board.close()
