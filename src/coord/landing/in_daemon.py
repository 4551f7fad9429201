"""The landing runner inside the daemon (issue 24): the queue lands with no `coord land`.

A daemon serving a board that sits in a git repository runs one ``Runner`` on a thread of its
own (``land_in_daemon``: on by default for a SQLite board; a team board's daemons land only
where it is set true, since each machine's branches are in its own checkout). The thread
does what ``coord land --watch`` does: it reads the queue when a submit wakes it (``wake``,
called by the submit route) and every ``POLL_SECONDS`` anyway (a submit through another
process's board), and looks for items merged by hand every ``SWEEP_SECONDS``; the runner is
made again with the board's landing settings whenever ``config.json`` changes. All its git
work runs on this thread, never on the daemon's event loop; it reaches the board over the
daemon's own HTTP API like any runner, under the landing lease, so a `coord land` beside it
takes turns with it (the one waits while the other holds the lease).

Its requests carry ``HEADER``: they are not activity, and an idle daemon with a runner still
idles out (``coord.server.idle``); a landing in progress is (``busy``): it never exits mid-way.
A merged item's worktree and branch are removed on a thread of their own
(``coord.landing.tidy``) while the next item lands; removals pending count as busy too, and
``stop`` waits for them within its bound (one cut short leaves a merged item's worktree,
which ``coord worktree gc`` removes).

A failed pass is never a silent dead thread: the error goes to the daemon's log and to
``describe`` (``GET /v1/status``, ``coord status``), and the pass is tried again after
``RETRY_SECONDS``. ``stop`` (the daemon shutting down) ends a check that is running and lets a
landing past its checks finish, while the HTTP face still answers: no half landing is left,
and a runner killed outright is safe anyway (the lease lapses; main moves only by
compare-and-set).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coord.errors import AlreadyClaimed, CoordError
from coord.fast import worktree as fast_worktree
from coord.landing.runner import Landed, Runner
from coord.times import iso

RUNNER_NAME = "coord-daemon"  # the landing lease's holder while the daemon lands
HEADER = "X-Coord-Landing: daemon"  # on each of its requests: not a client's activity
POLL_SECONDS = 5.0  # the queue read this often when no submit woke the runner
SWEEP_SECONDS = 30.0  # items merged by hand looked for this often (git work per item)
RETRY_SECONDS = 10.0  # after a failed pass
STOP_SECONDS = 15.0  # how long a stopping daemon waits for the runner to put its work down


def wanted(board_dir: Path, config: dict[str, Any], shared: bool) -> str | None:
    """Why this daemon does not land the queue, or None when it does."""
    setting = config.get("land_in_daemon")
    if setting is False:
        return "land_in_daemon is false in config.json: `coord land` lands the queue"
    if shared and setting is not True:
        return "a team board's daemon lands only with land_in_daemon true in config.json"
    if fast_worktree.toplevel(str(board_dir.parent)) is None:
        return f"{board_dir.parent} is in no git repository"
    return None


def log_line(text: str) -> None:
    with contextlib.suppress(OSError):  # a full disk under the log: the status still says it
        print(f"coord daemon: {text}", file=sys.stderr, flush=True)


class InDaemon:
    """The daemon's landing runner and its thread."""

    def __init__(
        self,
        make_runner: Callable[[threading.Event], Runner],
        *,
        every: float = POLL_SECONDS,
        sweep_every: float = SWEEP_SECONDS,
        retry_every: float = RETRY_SECONDS,
        log: Callable[[str], None] = log_line,
        settings_stamp: Callable[[], object] = lambda: None,
    ) -> None:
        self._make_runner = make_runner
        # changes when the board's settings do: the runner is made again with them
        self._settings_stamp = settings_stamp
        self._stamp: object = None
        self.every, self.sweep_every, self.retry_every = every, sweep_every, retry_every
        self.log = log
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._runner: Runner | None = None
        self.state = "starting"
        self.note = ""  # who holds the lease, while another runner does
        self.error: str | None = None
        self.failed_at: float | None = None
        self.failures = 0
        self.last_pass_at: float | None = None
        self.landed = 0

    @classmethod
    def for_board(cls, board_dir: Path, host: str, port: int, token: str) -> InDaemon:
        """The runner of the daemon listening at ``host:port``, talking to it over HTTP."""
        from coord.client.http import Client

        def make(stop: threading.Event) -> Runner:
            client = Client(board_dir, autostart=False, headers=(HEADER,))
            client._address = (_reachable(host), port)  # this very process: no proof to ask
            client._token = token
            runner = Runner.for_board(client, board_dir, RUNNER_NAME, stop=stop)
            runner.tidy_in_background(lambda landed: log_line(f"landing: {_said_tidied(landed)}"))
            return runner

        def stamp() -> object:
            try:
                found = os.stat(board_dir / "config.json")
            except OSError:
                return None
            return (found.st_mtime_ns, found.st_size, found.st_ino)

        return cls(make, settings_stamp=stamp)

    # --- what the daemon asks of it --------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="coord-landing", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Something was queued: read the queue now (thread-safe, cheap)."""
        self._wake.set()

    @property
    def busy(self) -> bool:
        """A landing is under way (the lease held, or the merged items' worktrees tidied)."""
        runner = self._runner
        return runner is not None and (runner.busy or runner.tidying)

    def stop(self, timeout: float = STOP_SECONDS) -> bool:
        """Stop landing: a running check is ended, a landing past its checks finishes. True
        when the thread ended within ``timeout``."""
        self._stop.set()
        self._wake.set()
        if self._thread is None:
            return True
        deadline = time.monotonic() + timeout
        self._thread.join(timeout)
        runner = self._runner
        tidied = runner is None or runner.tidier is None
        if runner is not None and runner.tidier is not None:
            tidied = runner.tidier.drain(max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive() and tidied

    def describe(self) -> dict[str, Any]:
        """What ``GET /v1/status`` says of it."""
        alive = self._thread is not None and self._thread.is_alive()
        state = self.state if alive or self.state == "stopped" else "dead"
        out: dict[str, Any] = {"runner": RUNNER_NAME, "state": state, "landed": self.landed}
        runner = self._runner
        if runner is not None and runner.busy and runner.current is not None:
            out["item"] = runner.current
        if self.note and state == "lease_held":
            out["note"] = self.note
        if self.last_pass_at is not None:
            out["last_pass_at"] = iso(self.last_pass_at)
        if self.error is not None:
            out.update(error=self.error, failures=self.failures)
            if self.failed_at is not None:
                out["failed_at"] = iso(self.failed_at)
        return out

    # --- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
            self.state = "stopped"
        except BaseException as err:  # never a silent dead thread: said, and shown as dead
            self._failed(err, again=False)
            raise

    def _loop(self) -> None:
        swept: float | None = None
        while not self._stop.is_set():
            wait = self.every
            try:
                stamp = self._settings_stamp()
                if self._runner is None or stamp != self._stamp:  # main_branch, land_strategy…
                    if self._runner is not None and self._runner.tidier is not None:
                        self._runner.tidier.drain(STOP_SECONDS)  # busy says the new one's only
                    self._runner, self._stamp = self._make_runner(self._stop), stamp
                due = swept is None or time.monotonic() - swept >= self.sweep_every
                self.state = "watching"
                results = self._runner.land_all(sweep=due)
                if due:
                    swept = time.monotonic()
                self._passed(results)
            except AlreadyClaimed as held:  # `coord land` lands now: its turn
                self.state, self.note = "lease_held", held.message
            except Exception as err:
                self._failed(err, again=True)
                if self._runner is not None and self._runner.tidier is not None:
                    self._runner.tidier.drain(STOP_SECONDS)
                self._runner = None  # made again: the settings may have been fixed
                wait = self.retry_every
            self._wake.wait(wait)
            self._wake.clear()

    def _passed(self, results: list[Landed]) -> None:
        self.last_pass_at = time.time()
        if self.error is not None:
            self.log("landing works again")
            self.error = None
        for landed in results:
            if landed.kind == "merged":
                self.landed += 1
            self.log(f"landing: {_said(landed)}")

    def _failed(self, err: BaseException, *, again: bool) -> None:
        said = err.message if isinstance(err, CoordError) else f"{type(err).__name__}: {err}"
        self.failures += 1
        self.failed_at = time.time()
        self.state = "failed" if again else "dead"
        repeated = said == self.error
        self.error = said
        if repeated:
            return  # said once: the log does not fill with it every few seconds
        then = f"; trying again every {self.retry_every:g} s" if again else "; it lands no more"
        self.log(f"the landing runner failed: {said}{then} (`coord land` lands meanwhile)")
        if not isinstance(err, CoordError):
            self.log("".join(traceback.format_exception(err)).rstrip())


def _reachable(host: str) -> str:
    """Where this process's own socket answers: a wildcard bind on its loopback address."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def _said_tidied(landed: Landed) -> str:
    return f"item {landed.ref}: {landed.cleaned or 'its worktree was gone already'}"


def _said(landed: Landed) -> str:
    line = f"item {landed.ref}: {landed.kind}"
    if landed.commit:
        line += f" as {landed.commit[:12]}"
    if landed.reason:
        line += f": {landed.reason}"
    if landed.files:
        line += f" ({', '.join(landed.files)})"
    return line
