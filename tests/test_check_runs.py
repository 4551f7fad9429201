"""Checks that end cleanly and show what they print (issue 15, item 10).

A check runs in its own process group; on a timeout or a Ctrl-C the whole group is ended, so
nothing it started outlives ``coord done``; what it printed is kept as evidence, said in the
refusal and streamed to stderr as it runs. The real CLI and daemon as processes, real shells.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import Daemon, run_cli
from coord.client import checks
from test_checks_shown import _claimed_item_with_check
from test_git_mode import coord_text, isolated, make_world  # noqa: F401 (isolated: autouse)

# Prints, then starts a grandchild that would outlive the shell, recording both pids (written
# whole: the test reads them while the check runs), then waits for it.
LINGERING = (
    "echo before the wait; echo $$ > shell.tmp && mv shell.tmp shell.pid; "
    "sleep 30 & echo $! > child.tmp && mv child.tmp child.pid; wait"
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie nobody reaped has ended: it holds no resources)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (OSError, IndexError):
            return False
    found = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return found.stdout.strip()[:1] not in ("", "Z")


def _ended(pid: int) -> bool:
    """The process is gone, or goes within moments: a SIGKILL is delivered asynchronously.
    The orphan of the old code slept 30 s, far beyond this."""
    deadline = time.monotonic() + 5
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _pid(path: Path) -> int:
    return int(path.read_text().strip())


def _coord_done(daemon: Daemon, ref: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "worker"}
    return subprocess.Popen(
        [sys.executable, "-m", "coord", "done", ref, *extra],
        cwd=daemon.board_dir.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _lines_of(stream: object) -> queue.Queue[str | None]:
    """The stream's lines as they come, read in a thread (None at its end)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for_line(lines: queue.Queue[str | None], wanted: str, seen: list[str]) -> None:
    while True:
        line = lines.get(timeout=30)  # queue.Empty fails the test: the line never came
        assert line is not None, f"stderr ended without {wanted!r}: {seen}"
        seen.append(line)
        if line == wanted:
            return


def test_a_timeout_ends_the_checks_whole_group_and_keeps_what_it_printed(
    daemon: Daemon,
) -> None:
    where = daemon.board_dir.parent
    ref = _claimed_item_with_check(daemon, LINGERING)
    done = run_cli(
        "done", ref, "--check-timeout", "1", board_dir=daemon.board_dir, agent="worker", cwd=where
    )
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    # nothing of the check's group outlives coord done: the shell and its grandchild
    assert _ended(_pid(where / "child.pid")), "the check's `sleep 30` outlived coord done"
    assert _ended(_pid(where / "shell.pid"))
    # what it printed before the timeout: streamed (once: the refusal no longer repeats what
    # was just shown, issue 25) and in the evidence
    assert "  | before the wait" in done.stderr.splitlines()
    assert "timed out after 1 s: ended its process group" in done.stderr
    assert done.stderr.count("\nbefore the wait") + done.stderr.count("| before the wait") == 1
    shown = json.loads(run_cli("show", ref, "--json", board_dir=daemon.board_dir).stdout)
    assert shown["state"] == "claimed" and shown["claimed_by"] == "worker"
    (run,) = shown["evidence"]["runs"]
    assert run["exit_code"] == 124
    assert run["output_tail"].splitlines()[0] == "before the wait"
    assert "timed out after 1 s" in run["output_tail"]


def test_a_checks_lines_reach_stderr_while_it_runs(daemon: Daemon) -> None:
    where = daemon.board_dir.parent
    # the check prints one line, then waits for the test to have read it before the next
    command = "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"
    ref = _claimed_item_with_check(daemon, command)
    process = _coord_done(daemon, ref, "--check-timeout", "60")
    try:
        lines = _lines_of(process.stderr)
        seen: list[str] = []
        _wait_for_line(lines, "  | first", seen)
        (where / "go").touch()
        rest = []
        while (line := lines.get(timeout=60)) is not None:
            rest.append(line)
        assert process.wait(30) == 0, seen + rest
        assert process.stdout is not None and process.stdout.read().startswith(f"done {ref}")
    finally:
        _finish(process)
    assert rest[0] == "  | second"
    assert rest[1].startswith(f"coord: {command}: passed in ") and rest[1].endswith(" s")


def test_ctrl_c_mid_check_ends_its_group_and_keeps_the_claim(daemon: Daemon) -> None:
    where = daemon.board_dir.parent
    ref = _claimed_item_with_check(daemon, LINGERING)
    process = _coord_done(daemon, ref, "--check-timeout", "60")
    try:
        deadline = time.monotonic() + 30
        while not (where / "child.pid").exists():  # the check is under way, grandchild and all
            assert process.poll() is None and time.monotonic() < deadline, process.stderr
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
        assert process.stderr is not None
        stderr = process.stderr.read()
    finally:
        _finish(process)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert _ended(_pid(where / "child.pid")), "the check's `sleep 30` outlived Ctrl-C"
    assert _ended(_pid(where / "shell.pid"))
    assert "interrupted after" in stderr and "ended its process group" in stderr
    shown = json.loads(run_cli("show", ref, "--json", board_dir=daemon.board_dir).stdout)
    assert shown["state"] == "claimed" and shown["claimed_by"] == "worker"
    # the claim's token is still remembered: the next done needs no --token
    (where / "child.pid").unlink()
    again = run_cli(
        "done", ref, "--skip-checks", "--reason", "r", board_dir=daemon.board_dir, agent="worker"
    )
    assert again.returncode == 0, again.stderr


@pytest.mark.process  # the check runs in a shell: tests/tiers.py cannot see it
def test_output_that_is_not_text_is_kept_readable_and_shown_escaped(tmp_path: Path) -> None:
    heard: list[str] = []

    class Heard(checks.Watch):
        def line(self, text: str) -> None:
            heard.append(text)

    command = r"printf 'caf\351 \033[2Jwiped\n'; printf 'no newline at the end'"
    (run,) = checks.run([command], tmp_path, watch=Heard())
    assert run["exit_code"] == 0
    assert run["output_tail"] == "caf\ufffd \x1b[2Jwiped\nno newline at the end"
    assert heard == ["caf\ufffd \x1b[2Jwiped", "no newline at the end"]


def test_the_cli_escapes_what_a_check_prints(daemon: Daemon) -> None:
    where = daemon.board_dir.parent
    ref = _claimed_item_with_check(daemon, r"printf '\033]0;retitled\007\n'")
    done = run_cli("done", ref, board_dir=daemon.board_dir, agent="worker", cwd=where)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "  | \\x1b]0;retitled\\x07" in done.stderr.splitlines()


def test_a_check_that_leaves_a_child_holding_its_output_ends_when_its_shell_does(
    tmp_path: Path,
) -> None:
    """A background process still holding the check's output does not keep coord waiting
    until the timeout: the check is over when its shell exits, and the leftovers are ended."""
    command = "sleep 30 & echo $! > child.pid; echo shell done"
    (run,) = checks.run([command], tmp_path, timeout=25)
    assert run["exit_code"] == 0  # not held to the timeout (124) by the leftover
    assert "shell done" in run["output_tail"]
    assert _ended(_pid(tmp_path / "child.pid"))


def test_git_done_runs_its_checks_the_same_way(tmp_path: Path) -> None:
    """`coord git done` streams the check and ends its whole group on a timeout too; the
    refusal carries what it printed, and nothing is pushed."""
    plan = (
        "# Plan\n\n- [ ] **X1 — slow.** Dependencies: none.\n"
        f"  - Files: `src/x1.py`\n  - Checks: `{LINGERING}`\n"
    )
    world = make_world(tmp_path / "world", {"docs/plan.md": plan})
    alice = world.clone("alice")
    assert coord_text(alice, "git", "reserve", "X1")[0] == 0
    reserved = world.tip()
    code, _, stderr = coord_text(alice, "git", "done", "X1", "--check-timeout", "1")
    assert code == 3, stderr
    assert _ended(_pid(alice / "child.pid")), "the check's `sleep 30` outlived coord git done"
    assert "  | before the wait" in stderr.splitlines()
    assert "timed out after 1 s: ended its process group" in stderr
    refusal = stderr[stderr.index("coord: X1 is not done") :]
    assert "before the wait" in refusal
    assert world.tip() == reserved


@pytest.mark.process  # the check runs in a shell: tests/tiers.py cannot see it
def test_a_silent_check_is_said_to_still_run(tmp_path: Path) -> None:
    """A watch that asks hears `quiet` while the check prints nothing; here the check runs
    until it has (order, not timing)."""
    heard: list[str] = []

    class Asks(checks.Watch):
        quiet_every = 0.05

        def quiet(self, command: str, elapsed: float) -> None:
            heard.append(command)
            (tmp_path / "go").touch()

    command = "while [ ! -e go ]; do sleep 0.05; done"
    (run,) = checks.run([command], tmp_path, timeout=60, watch=Asks())
    assert run["exit_code"] == 0 and heard and set(heard) == {command}
