"""What the CLI prints for people: cut pipes, times days away, and other agents' words.

Issue 15: `coord log | head -1` printed a BrokenPipeError traceback; a 7-day reservation
showed `UNTIL 08:15:59Z` and read as expired, while `heartbeat` printed a full timestamp;
titles with newlines or ANSI escapes reached a human's terminal raw from `ls` and `show`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import Daemon, follow_log, run_cli
from coord.times import clock, clock_of_iso, iso

ESC_TITLE = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m\rover\nsecond line \u202eevil"


def test_a_reader_that_stops_early_gets_no_traceback(daemon: Daemon) -> None:
    lines = "".join(json.dumps({"title": f"item {i}"}) + "\n" for i in range(1500))
    imported = run_cli("import", "-", board_dir=daemon.board_dir, agent="lead", input=lines)
    assert imported.returncode == 0, imported.stderr
    env = {**os.environ, "COORD_DIR": str(daemon.board_dir)}
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"{sys.executable} -m coord log --limit 5000 | head -1; "
            'echo "exit ${PIPESTATUS[0]}" >&2',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(done.stdout.splitlines()) == 1
    assert done.stderr.strip() == "exit 141", done.stderr  # as if killed by SIGPIPE, silently


def test_times_say_their_date_when_it_is_not_today() -> None:
    now = 1_764_000_000.0  # some moment; "today" is its UTC day
    assert clock(now + 60, now) == time.strftime("%H:%M:%SZ", time.gmtime(now + 60))
    week = now + 7 * 86_400
    assert clock(week, now) == time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(week))
    assert clock_of_iso(iso(week), now) == clock(week, now)
    assert clock_of_iso(iso(now + 60), now) == clock(now + 60, now)
    assert clock_of_iso(None, now) == "-"


def test_a_week_long_reservation_shows_its_day_and_heartbeat_reads_like_claim(
    daemon: Daemon,
) -> None:
    board = daemon.board_dir
    held = run_cli("reserve", "src/a.py", "--lease", str(7 * 86_400), board_dir=board, agent="ann")
    assert held.returncode == 0, held.stderr
    assert "T" not in held.stdout.split("until ", 1)[1].split(")")[0], held.stdout
    listed = run_cli("reservations", board_dir=board)
    week = time.gmtime(time.time() + 7 * 86_400)
    assert time.strftime("%Y-%m-%d", week) in listed.stdout, listed.stdout
    run_cli("add", "work", board_dir=board, agent="ann")
    claimed = run_cli("claim", "1", board_dir=board, agent="ann")
    beat = run_cli("heartbeat", "1", board_dir=board, agent="ann")
    assert beat.returncode == 0, beat.stderr
    # both "until HH:MM:SSZ" (today) or both with the date: never a raw ISO timestamp
    assert "T" not in beat.stdout.split("until ", 1)[1], beat.stdout
    assert "T" not in claimed.stdout.split("until ", 1)[1], claimed.stdout


def test_other_agents_words_cannot_drive_the_terminal(daemon: Daemon) -> None:
    status, item = daemon.request(
        "POST", "/v1/items", {"agent": "mallory", "title": ESC_TITLE, "body": ESC_TITLE}
    )
    assert status == 201
    board = daemon.board_dir
    daemon.request("POST", f"/v1/items/{item['id']}/replies", {"agent": "m", "body": ESC_TITLE})
    for args in (["ls"], ["show", str(item["id"])], ["log"], ["inbox", "--as", "mallory"]):
        shown = run_cli(*args, board_dir=board)
        assert shown.returncode == 0, shown.stderr
        for raw in ("\x1b", "\x07", "\r", "\u202e"):
            assert raw not in shown.stdout, (args, shown.stdout)
        if args[0] != "inbox":
            assert "\\x1b" in shown.stdout  # shown, escaped, not dropped
    listing = run_cli("ls", board_dir=board).stdout
    assert "\\nsecond line" in listing  # a title stays on its row
    detail = run_cli("show", str(item["id"]), board_dir=board).stdout
    assert "\n  second line" in detail  # a body keeps its lines
    as_json = json.loads(run_cli("show", str(item["id"]), "--json", board_dir=board).stdout)
    assert as_json["title"] == ESC_TITLE  # JSON is for programs: exact


def test_the_line_that_confirms_a_change_keeps_a_title_on_one_line(daemon: Daemon) -> None:
    """`coord add "$(printf 'a\\nb')"` printed `added 5: a` and a second line `b`: the
    confirmation of add, edit, cancel, reopen and done showed the title as it came."""
    board = daemon.board_dir
    title = "first\nsecond\tthird\rover"
    added = run_cli("add", title, board_dir=board, agent="ann")
    assert added.returncode == 0, added.stderr
    assert added.stdout == "added 1: first\\nsecond\\tthird\\rover\n"
    for args in (
        ["edit", "1", "--priority", "1"],
        ["cancel", "1", "--reason", "dup"],
        ["reopen", "1", "--reason", "not a dup"],
    ):
        shown = run_cli(*args, board_dir=board, agent="ann")
        assert shown.returncode == 0, (args, shown.stderr)
        assert len(shown.stdout.splitlines()) == 1 and "\t" not in shown.stdout, shown.stdout
        assert "first\\nsecond" in shown.stdout
    assert run_cli("claim", "1", board_dir=board, agent="ann").returncode == 0
    done = run_cli("done", "1", board_dir=board, agent="ann")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["done 1: first\\nsecond\\tthird\\rover"]


def test_claiming_again_after_ones_own_lease_ran_out_is_no_takeover_from_oneself(
    daemon: Daemon,
) -> None:
    """`coord claim 1 --as alice` after alice's lease ran out said "took over from alice,
    whose lease had run out"."""
    board = daemon.board_dir
    assert run_cli("add", "short", board_dir=board, agent="alice").returncode == 0
    first = run_cli("claim", "1", "--lease", "1", board_dir=board, agent="alice")
    assert first.returncode == 0, first.stderr
    time.sleep(1.2)  # the lease runs out on the daemon's clock
    again = run_cli("claim", "1", board_dir=board, agent="alice")
    assert again.returncode == 0, again.stderr
    assert "took over" not in again.stdout, again.stdout
    assert "your lease had run out: claimed again" in again.stdout, again.stdout


def test_the_inbox_and_show_carry_the_question_and_its_answer(daemon: Daemon) -> None:
    board = daemon.board_dir
    run_cli("add", "pick the api", board_dir=board, agent="ann")
    run_cli("claim", "1", board_dir=board, agent="ann")
    asked = run_cli("escalate", "1", "which api version?", board_dir=board, agent="ann")
    assert asked.returncode == 0, asked.stderr
    answered = run_cli("answer", "1", "use v2", board_dir=board, agent="lead")
    assert answered.returncode == 0, answered.stderr
    inbox = run_cli("inbox", board_dir=board, agent="ann").stdout
    assert "lead answered #1 'which api version?': 'use v2'" in inbox, inbox
    shown = run_cli("show", "1", board_dir=board).stdout
    assert "which api version?" in shown and "use v2" in shown  # the question stays in view


def test_an_expired_lease_says_so_in_show(daemon: Daemon) -> None:
    board = daemon.board_dir
    run_cli("add", "short", board_dir=board, agent="ann")
    claimed = run_cli("claim", "1", "--lease", "1", board_dir=board, agent="ann")
    assert claimed.returncode == 0, claimed.stderr
    deadline = time.monotonic() + 30
    while True:  # the lease runs out on the daemon's clock; wait for it, assert no timing
        shown = json.loads(run_cli("show", "1", "--json", board_dir=board).stdout)
        if shown["lease_expired"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    text = run_cli("show", "1", board_dir=board).stdout
    assert "lease EXPIRED" in text and "can be taken over" in text, text


def test_log_follow_goes_on_across_a_daemon_restart_without_loss_or_doubles(
    board_dir: Path,
) -> None:
    import selectors

    first = Daemon(board_dir).start()
    follow = follow_log(board_dir)
    assert follow.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(follow.stdout, selectors.EVENT_READ)

    def next_event() -> dict[str, object]:
        assert selector.select(timeout=60), "no event came"
        return json.loads(follow.stdout.readline())

    try:
        first.request("POST", "/v1/items", {"agent": "ann", "title": "before"})
        assert next_event()["kind"] == "created"
        first.stop()  # the stream in flight ends; the follower waits for the next daemon
        # ...and starts none itself: a stopped daemon stays stopped (it retries every <= 2 s)
        time.sleep(5)
        assert not (board_dir / "daemon.json").exists(), "the follower started a daemon"
        added = run_cli("add", "after", board_dir=board_dir, agent="ann")
        assert added.returncode == 0, added.stderr
        after = next_event()
        assert (after["kind"], after["seq"]) == ("created", 2)  # none lost, none doubled
        assert follow.poll() is None  # still following
    finally:
        follow.send_signal(signal.SIGINT)
        _, said = follow.communicate(timeout=30)
        selector.close()
        run_cli("stop", board_dir=board_dir)
    assert follow.returncode == 130  # Ctrl-C: not a clean end of the stream
    assert "reconnecting" in said and "Traceback" not in said, said


def test_without_user_the_cli_and_open_act_under_one_name(daemon: Daemon) -> None:
    """With no $USER (cron, a container), `coord add` and the page `coord open` opens act for
    the same person: once the CLI said `human` and `coord open` the account's name."""
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "USERNAME", "LOGNAME")}
    env.pop("LNAME", None)

    def cli(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-m", "coord", *args, "--json"],
            env={**env, "COORD_DIR": str(daemon.board_dir)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    added = cli("add", "a person's task")
    opened = cli("open", "--no-browser")
    assert added["created_by"] == opened["as"], (added["created_by"], opened["as"])
