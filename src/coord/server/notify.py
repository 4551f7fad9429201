"""People are told (issue 26): the daemon runs the board's ``notify`` command when a person is
needed, with the event as JSON on its standard input.

A person is needed when an item is escalated (``escalated``), when an ask is addressed to a
human (``asked`` whose ``holder`` is one of the board's ``humans`` or its ``escalate_to``), when
landing sends an item back (``needs_rework``), and when the lease of a worktree item's claim
lapses with nobody renewing it (``lease_lapsed``: no event records a lapse, so the daemon looks
for claims whose lease ended since it last looked).

Fire-and-forget: a thread of its own follows the log and hands each such event to another,
which runs the command once per event with ``notify_timeout_seconds`` to finish (then it is
killed, its whole process group). Neither thread holds a transaction while a command runs, so
a command that hangs or fails changes nothing on the board and delays no request; what went
wrong goes to the daemon's log. The command comes only from the board's ``config.json``,
read again on each pass (never from a request), and the event goes on standard input, never
in its arguments.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coord.errors import CoordError
from coord.fast import board_files
from coord.model import Event
from coord.times import iso

POLL_SECONDS = 1.0  # the log read this often
TIMEOUT_SECONDS = 10.0  # how long a command runs before it is killed (notify_timeout_seconds)
QUEUE_BOUND = 256  # events waiting for the command: past it they are logged, not run
_PAGE = 500
_PAGE_BYTES = 1 << 20  # what one read of the log may bring at most (the first event always)

# the board's event kinds that need a person, and the ``why`` the command is told
PERSON_NEEDED = {"escalated": "escalation", "needs_rework": "needs_rework"}
# an ask's event (issue 26 item 3, ``coord ask``): ``asked``, whose details name the one asked
# as ``holder`` (``to`` read too, for an ask addressed by name)
ASK_KINDS = ("asked", "ask")


def log_line(text: str) -> None:
    with contextlib.suppress(OSError):
        print(f"coord daemon: notify: {text}", file=sys.stderr, flush=True)


def why_notified(event: Event, humans: set[str]) -> str | None:
    """Why ``event`` needs a person, or None."""
    if event.kind in PERSON_NEEDED:
        return PERSON_NEEDED[event.kind]
    if event.kind in ASK_KINDS:
        asked = event.details.get("holder") or event.details.get("to")
        return "ask" if asked in humans else None
    return None


def humans_of(config: dict[str, Any]) -> set[str]:
    named = set(config.get("humans") or [])
    if config.get("escalate_to"):
        named.add(str(config["escalate_to"]))
    return named


class Notifier:
    """The two threads: ``_follow`` reads the log and finds what needs a person, ``_run`` runs
    the command for each, one at a time (a slow command delays the next notice, never the
    board)."""

    def __init__(
        self,
        board: Any,
        board_dir: Path,
        *,
        every: float = POLL_SECONDS,
        log: Callable[[str], None] = log_line,
    ) -> None:
        self.board = board
        self.board_dir = board_dir
        self.every = every
        self.log = log
        self._stopping = threading.Event()
        self._waiting: queue.Queue[tuple[list[str], float, bytes, str] | None] = queue.Queue(
            QUEUE_BOUND
        )
        self._threads: list[threading.Thread] = []
        self._cursor = 0
        self._lapses_after = 0.0
        self._bad_config: str | None = None

    def start(self) -> Notifier:
        # what happened before this daemon started was told by the one before, or by nobody
        self._cursor = self.board.last_seq()
        self._lapses_after = self.board.now()
        for name, target in (("coord-notify", self._follow), ("coord-notify-run", self._run)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        with contextlib.suppress(queue.Full):
            self._waiting.put_nowait(None)
        for thread in self._threads:
            thread.join(timeout=1.0)

    # --- what needs a person ---------------------------------------------------------------

    def _follow(self) -> None:
        while not self._stopping.wait(self.every):
            try:
                self.look()
            except CoordError as err:  # a busy or unreachable board: looked at next time
                self.log(f"cannot read the board ({err.message}); trying again")
            except Exception as err:  # a bug of ours: said, and the board serves on
                self.log(f"failed: {err!r}")

    def look(self) -> None:
        """One pass: every new event that needs a person, and every lapsed worktree claim,
        handed to the command once."""
        config = self._config()
        command = _argv(config.get("notify")) if config else None
        timeout = float((config or {}).get("notify_timeout_seconds") or TIMEOUT_SECONDS)
        humans = humans_of(config or {})
        if command is None:
            # nobody to tell: the log is not read (a storm of big events would pass through
            # this thread's memory for nothing), and a command set later hears from then on
            self._cursor = self.board.last_seq()
            self._lapses_after = self.board.now()
            return
        while True:
            # a page within a byte budget: big events (an edit keeps the old body whole) are
            # read a few at a time, not _PAGE of them at once
            events = self.board.events(self._cursor, _PAGE, max_bytes=_PAGE_BYTES)
            for event in events:
                self._cursor = event.seq
                why = why_notified(event, humans)
                if why is not None:
                    self._hand(command, timeout, why, event.to_dict(), event.item_id)
            if not events:
                break
        self._lapsed(command, timeout)

    def _lapsed(self, command: list[str] | None, timeout: float) -> None:
        now = self.board.now()
        with self.board.storage.read() as tx:
            ended = tx.claims_ending_between(self._lapses_after, now, _PAGE)
        # a full page: the rest are read from the last one's end next time
        self._lapses_after = ended[-1].lease_expires_at if len(ended) == _PAGE else now
        for item in ended:
            if item.branch is None or command is None:
                continue
            lapse = {
                "kind": "lease_lapsed",
                "item_id": item.id,
                "agent": item.claimed_by,
                "details": {"branch": item.branch, "lease_expired_at": iso(item.lease_expires_at)},
            }
            self._hand(command, timeout, "lease_lapsed", lapse, item.id)

    def _config(self) -> dict[str, Any] | None:
        try:
            config = board_files.read_config(self.board_dir)
        except CoordError as err:  # said once, until it is fixed
            if err.message != self._bad_config:
                self.log(f"{err.message}; no notices until it is fixed")
            self._bad_config = err.message
            return None
        self._bad_config = None
        return config

    def _hand(
        self, command: list[str], timeout: float, why: str, event: dict[str, Any], item: Any
    ) -> None:
        told: dict[str, Any] = {"why": why, "board": str(self.board_dir), "event": event}
        if item is not None:
            with contextlib.suppress(CoordError):
                told["item"] = self.board.get(item).to_dict(self.board.now())
        payload = json.dumps(told).encode() + b"\n"
        try:
            self._waiting.put_nowait((command, timeout, payload, why))
        except queue.Full:
            self.log(f"{QUEUE_BOUND} notices wait for the command already; dropped a {why}")

    # --- the command -----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._waiting.get()
            if job is None or self._stopping.is_set():
                return
            command, timeout, payload, why = job
            try:
                self.run(command, timeout, payload, why)
            except Exception as err:  # a bug of ours: said, and the next notice runs
                self.log(f"failed to run the command: {err!r}")

    def run(self, command: list[str], timeout: float, payload: bytes, why: str) -> None:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.board_dir.parent,
                start_new_session=True,  # its own group: a timeout kills what it started too
            )
        except OSError as err:
            self.log(f"cannot run {command[0]!r} for a {why}: {err}")
            return
        try:
            _, errors = process.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            self.log(f"the command ran past {timeout:g} s for a {why}; killed it")
            return
        if process.returncode != 0:
            said = errors.decode(errors="replace").strip().splitlines()[-1:] or [""]
            self.log(f"the command exited {process.returncode} for a {why}: {said[0][:300]}")


def _argv(command: Any) -> list[str] | None:
    """The command's words: a list as it is, a string through the shell."""
    if command is None:
        return None
    if isinstance(command, list):
        return [str(word) for word in command]
    return ["/bin/sh", "-c", str(command)]
