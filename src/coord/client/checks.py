"""Running an item's checks where the agent works, and packing their output as evidence.

``coord done`` (the CLI, the MCP face and git mode alike) runs the commands in the agent's own
working tree (often a separate git worktree) and sends the runs with ``done``; the core judges
them (``coord.core.evidence``).

Each check runs in a process group of its own, so that what it started can be ended with it:
on a timeout, a Ctrl-C, or when its shell has exited but left processes holding its output,
the whole group gets SIGTERM, then SIGKILL after a short grace. Killing only the shell would
orphan its children (a test server, a ``sleep``) and keep their output pipe open. What a check
prints is read as it comes: a face may show it line by line (``Watch``), and whatever it
printed before it was ended is kept as evidence.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coord.errors import GitError
from coord.fast.git import Git
from coord.limits import MAX_EVIDENCE_OUTPUT

OUTPUT_LINES = 30
TIMED_OUT_EXIT = 124  # as timeout(1) reports it
# after SIGTERM, how long the group may take to end before SIGKILL
END_GRACE_SECONDS = 2.0
# after the shell exits, how long processes it left may hold its output before they are ended
LEFTOVER_GRACE_SECONDS = 1.0
# how often the shell is looked at while its output is silent
POLL_SECONDS = 0.2
# output kept in memory: well above what the evidence keeps (its last lines, in characters)
KEPT_BYTES = 16 * MAX_EVIDENCE_OUTPUT
LONGEST_LINE = 64 * 1024  # a longer run without a newline is shown in pieces


class Stopped(Exception):
    """The checks were told to stop (``run``'s ``stop`` was set: the daemon that runs them is
    shutting down): the running check's process group was ended, and no verdict is given."""


class Watch:
    """What a face hears while the checks run; here, nothing is done with it.

    ``quiet_every``: after this many seconds without output, ``quiet`` is called (then again
    each time as long again passes); None never calls it."""

    quiet_every: float | None = None

    def started(self, command: str) -> None:
        """The command is about to run."""

    def running(self, pid: int) -> None:
        """It runs as process ``pid``, the leader of its own process group (the landing
        runner records it, so that the next runner can end what a killed one left)."""

    def line(self, text: str) -> None:
        """One line the check printed, as text (undecodable bytes replaced), control
        characters and all: a face that shows it escapes them."""

    def quiet(self, command: str, elapsed: float) -> None:
        """The check has printed nothing for a while and still runs."""

    def ended(self, command: str, outcome: str) -> None:
        """How it went, in words: ``passed in 1.2 s``, ``failed (exit 1) after 4.0 s``,
        ``timed out after 30 s: ended its process group``, ``interrupted after 3.1 s: ...``."""


def run(
    commands: list[str],
    cwd: str | Path,
    timeout: float = 1800.0,
    *,
    watch: Watch | None = None,
    stop: threading.Event | None = None,
) -> list[dict[str, Any]]:
    """Run each command with the shell in ``cwd``; all of them, even after a failure, so the
    evidence shows the whole picture. Output is kept as its last lines. A KeyboardInterrupt
    ends the running check's group, then goes on up; so does ``Stopped`` once ``stop`` is set
    (looked at as often as the output is)."""
    head = git_head(cwd)
    watch = watch or Watch()
    runs = []
    for command in commands:
        started = time.monotonic()
        watch.started(command)
        if stop is not None and stop.is_set():
            raise Stopped(f"stopped before `{command}` ran")
        code, output, outcome = _run_one(command, cwd, timeout, watch, stop)
        watch.ended(command, outcome)
        runs.append(
            {
                "command": command,
                "exit_code": code,
                "duration_s": round(time.monotonic() - started, 3),
                "head": head,
                "output_tail": tail(output),
            }
        )
    return runs


def _run_one(
    command: str, cwd: str | Path, timeout: float, watch: Watch, stop: threading.Event | None
) -> tuple[int, bytes, str]:
    """(exit code, output, outcome in words) of one check."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "COORD_CHECK": "1"},
        start_new_session=True,  # its own session and process group, led by the shell
    )
    watch.running(process.pid)
    output = _Output(process, watch)
    try:
        ending = _follow(process, output, started + timeout, command, watch, stop)
    except BaseException:  # Ctrl-C (or anything): nothing of the check may outlive coord
        _end_group(process, output)
        output.close()
        watch.ended(command, f"interrupted after {_took(started)}: ended its process group")
        raise
    if ending is not None:
        _end_group(process, output)
    code = process.wait()
    output.close()
    took = _took(started)
    if ending == "timeout":
        said = f"timed out after {timeout:g} s: ended its process group"
        output.note(f"[{said}]")
        return TIMED_OUT_EXIT, output.kept, said
    verdict = f"passed in {took}" if code == 0 else f"failed (exit {code}) after {took}"
    if ending == "leftovers":
        left = "its shell exited but left processes holding its output: ended its process group"
        output.note(f"[{left}]")
        verdict += f"; {left}"
    return code, output.kept, verdict


def _follow(
    process: subprocess.Popen[bytes],
    output: _Output,
    deadline: float,
    command: str,
    watch: Watch,
    stop: threading.Event | None = None,
) -> str | None:
    """Read the check's output until it ends: None when its shell exited and the output
    closed; "timeout"; "leftovers" when the shell exited but its output stays open. Raises
    ``Stopped`` once ``stop`` is set (the caller ends the group)."""
    started = time.monotonic()
    every = watch.quiet_every
    next_quiet = started + every if every else None
    shell_exited_at: float | None = None
    while True:
        now = time.monotonic()
        if shell_exited_at is None and _exited(process):
            shell_exited_at = now
        if shell_exited_at is not None:
            if output.closed:
                return None
            if now - shell_exited_at > LEFTOVER_GRACE_SECONDS:
                return "leftovers"
        if now >= deadline:
            return "timeout"
        if stop is not None and stop.is_set():
            raise Stopped(f"`{command}` was stopped: ended its process group")
        wait = min(POLL_SECONDS, deadline - now)
        if next_quiet is not None:
            wait = max(0.0, min(wait, next_quiet - now))
        if output.read(wait) and every:
            next_quiet = time.monotonic() + every
        elif next_quiet is not None and time.monotonic() >= next_quiet:
            watch.quiet(command, time.monotonic() - started)
            next_quiet += every or 0.0


def _exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the shell has exited, without reaping it: while it is not reaped, its process
    group id cannot be taken by another process, so signalling the group stays safe."""
    try:
        found = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped already (a host process that ignores SIGCHLD)
        return True
    return found is not None


def _end_group(process: subprocess.Popen[bytes], output: _Output) -> None:
    """SIGTERM to the check's whole group; SIGKILL to whatever is left after a grace (or
    once the shell has exited and the output closed). The shell is reaped only after the
    last signal, so the group id is still the check's. A second Ctrl-C does not cut it
    short: that would leave the processes it is ending."""
    with _no_interrupts():
        _signal_group(process.pid, signal.SIGTERM)
        until = time.monotonic() + END_GRACE_SECONDS
        while time.monotonic() < until and not (output.closed and _exited(process)):
            output.read(POLL_SECONDS)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        until = time.monotonic() + END_GRACE_SECONDS  # the killed ones let go of the output
        while not output.closed and time.monotonic() < until:
            output.read(POLL_SECONDS)


def _signal_group(group: int, sig: int) -> None:
    # it may be gone already (or hold only its unreaped shell, which some systems refuse)
    with contextlib.suppress(OSError):
        os.killpg(group, sig)


@contextlib.contextmanager
def _no_interrupts() -> Iterator[None]:
    """SIGINT ignored inside (only the main thread can change it; none arrives elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _took(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"


class _Output:
    """The check's output as it comes: each complete line to the watch, the last
    ``KEPT_BYTES`` kept for the evidence."""

    def __init__(self, process: subprocess.Popen[bytes], watch: Watch) -> None:
        assert process.stdout is not None
        self.pipe = process.stdout
        self.watch = watch
        self.kept = b""
        self.partial = b""
        self.closed = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.pipe, selectors.EVENT_READ)

    def read(self, wait: float) -> bool:
        """Whatever arrives within ``wait`` seconds; whether anything did."""
        if self.closed:
            time.sleep(wait)
            return False
        if not self.selector.select(max(wait, 0.0)):
            return False
        data = os.read(self.pipe.fileno(), 65536)
        if not data:
            self._finish()
            return False
        self.kept = (self.kept + data)[-KEPT_BYTES:]
        *lines, self.partial = (self.partial + data).split(b"\n")
        if len(self.partial) > LONGEST_LINE:
            lines.append(self.partial)
            self.partial = b""
        for line in lines:
            self.watch.line(_text(line))
        return True

    def note(self, text: str) -> None:
        """coord's own word on the run, at the end of its evidence."""
        self.kept += f"\n{text}".encode()

    def _finish(self) -> None:
        if self.partial:
            self.watch.line(_text(self.partial))
            self.partial = b""
        self.closed = True

    def close(self) -> None:
        if not self.closed:
            self._finish()
        self.selector.close()
        self.pipe.close()


def _text(line: bytes) -> str:
    return line.removesuffix(b"\r").decode("utf-8", errors="replace")


def failed_output(runs: list[dict[str, Any]]) -> str:
    """The failed runs' last lines, for a refusal to carry: what went wrong, said where the
    agent reads the refusal (a timed-out run's ends with coord's note on it)."""
    return "\n".join(
        f"--- {r['command']} (exit {r['exit_code']}), last lines:\n{r['output_tail']}"
        for r in runs
        if r["exit_code"] != 0
    )


def git_head(cwd: str | Path) -> str | None:
    """The commit the checks ran on, or None outside a repository (or without git)."""
    try:
        found = Git(Path(cwd)).run("rev-parse", "HEAD", check=False, timeout=10)
    except GitError:
        return None
    head = found.stdout.decode("ascii", "replace").strip()
    return head or None if found.returncode == 0 else None


def tail(output: bytes) -> str:
    text = output.decode("utf-8", errors="replace")
    kept = "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])
    return kept[-MAX_EVIDENCE_OUTPUT:]
