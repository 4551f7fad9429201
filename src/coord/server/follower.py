"""A daemon on a PostgreSQL board follows what every daemon writes: LISTEN/NOTIFY.

Each write transaction that appends events notifies ``NOTIFY_CHANNEL`` on commit, carrying
its last sequence number (``coord.storage.postgres``). Here one thread per daemon LISTENs on
a connection of its own and, for each notification (or burst of them), at once

- wakes this daemon's event readers (``Changes``: the long poll of ``GET /v1/events`` and
  anything else waiting on it), so a write through another daemon reaches them within a
  round trip or two instead of a polling interval;
- rewrites the guard's mirror of the live reservations (``coord.fast.mirror``), and at
  least every ``REFRESH_SECONDS`` without one, so its stamp stays fresh.

While the listening connection is down (the server restarted, ``pg_terminate_backend``,
a network cut) readers poll as on a SQLite board (``Changes.poll_seconds``), the thread
reconnects with backoff (``RECONNECT_SECONDS``), and the mirror ages until the guard no
longer believes it: the guard then asks ``POST /v1/mirror:refresh`` and refuses edits if
that fails too. After a reconnect readers are woken once, for what was missed.

A thread, not an asyncio task on the daemon's loop: the mirror's rewrite (a query and a small
SQLite file) would stall every request while it ran, and a notification would be heard only
between the loop's other work. ``Connection.notifies(timeout=…)`` blocks in the server's
socket without the GIL and gives the refresh its tick.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from coord.errors import BoardIOError, CoordError, DatabaseUnreachable
from coord.fast import mirror
from coord.server.context import POLL_SECONDS, Server

REFRESH_SECONDS = 1.0  # the mirror's stamp is renewed at least this often
RECONNECT_SECONDS = (0.1, 5.0)  # first wait after a lost connection, and the longest
# after a NOTIFY the mirror is rewritten at once, unless it was less than this long ago
REFRESH_GAP_SECONDS = 0.05
STOP_SECONDS = 0.5  # a wait for a NOTIFY ends this often to see whether the daemon stops
REFRESH_WAIT_SECONDS = 2.0  # how long a refresh asked over HTTP waits for one under way
# While the listener is up a reader's poll is only a safety net: every writer notifies, and a
# listening session misses no notification (after a reconnect the readers are woken anyway).
LISTENING_POLL_SECONDS = 30.0


class Follower:
    """LISTEN on one connection, keep the mirror from another; ``start`` and ``stop``."""

    def __init__(
        self,
        dsn: str,
        board_dir: str,
        wake: Callable[[], None],
        on_listening: Callable[[bool], None] = lambda up: None,
    ) -> None:
        # the driver, lazily: this module is imported by the daemon of a PostgreSQL board only
        from coord.storage.postgres_listen import Listener, LiveReader

        self.board_dir = board_dir
        self._wake = wake
        self._on_listening = on_listening
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="coord-follower", daemon=True)
        self._listener = Listener(dsn)
        self._reader = LiveReader(dsn)
        self._reader_lock = threading.Lock()
        self.listening = False
        self._refreshed_at = 0.0  # time.monotonic() of the last refresh tried

    def start(self) -> Follower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # seen within STOP_SECONDS, when a wait for a NOTIFY ends
        if self._thread.ident is not None:
            self._thread.join(timeout=10 * STOP_SECONDS)
        with self._reader_lock:
            self._reader.close()

    # --- the mirror ------------------------------------------------------------------------

    def refresh(self) -> dict[str, Any]:
        """Rewrite the mirror from the database now. ``DatabaseUnreachable`` when it cannot
        be read (the mirror is left to age: the guard judges its stamp)."""
        # the guard waits for this answer: never long behind a refresh stuck on the database
        # (each wait for the server ends at postgres_listen.BOUNDS)
        if not self._reader_lock.acquire(timeout=REFRESH_WAIT_SECONDS):
            raise DatabaseUnreachable(
                "the database has not answered this daemon's last read of the reservations "
                f"for {REFRESH_WAIT_SECONDS:g} s; check that the server runs"
            )
        try:
            database_now, last_seq, rows, items = self._reader.read()
            taken_at = time.time()  # after the answer: the estimate never runs ahead
            try:
                mirror.write(
                    self.board_dir,
                    rows,
                    database_now=database_now,
                    taken_at=taken_at,
                    last_seq=last_seq,
                    items=items,
                )
            except OSError as err:  # a full disk, a read-only .coord/: the mirror ages
                raise BoardIOError(
                    f"cannot write {mirror.path_of(self.board_dir)}: {err.strerror or err}; "
                    "free space on that file system or fix the directory's permissions"
                ) from None
        finally:
            self._reader_lock.release()
        return {"refreshed": True, "reservations": len(rows), "last_seq": last_seq}

    def _refresh_quietly(self) -> None:
        self._refreshed_at = time.monotonic()
        try:
            self.refresh()
        except CoordError as err:  # the guard sees the old stamp age
            _log(f"reservation mirror not refreshed: {err.message}")

    # --- the listener ----------------------------------------------------------------------

    def _run(self) -> None:
        backoff = RECONNECT_SECONDS[0]
        while not self._stopping.is_set():
            try:
                self._listener.listen()
            except CoordError as err:
                _log(f"cannot listen for the other daemons' writes: {err.message}")
                self._refresh_quietly()  # a lost listener need not mean a lost database
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, RECONNECT_SECONDS[1])
                continue
            backoff = RECONNECT_SECONDS[0]
            self._set_listening(True)
            self._wake()  # what was written while nobody listened
            try:
                self._follow()
            except CoordError as err:
                if not self._stopping.is_set():
                    _log(f"lost the listening connection ({err.message}); reconnecting")
            finally:
                self._set_listening(False)
                self._listener.close()

    def _follow(self) -> None:
        """Wake the readers at each NOTIFY; refresh the mirror after one, at most every
        ``REFRESH_GAP_SECONDS`` (a write storm costs a refresh per gap, not per write), and
        at least every ``REFRESH_SECONDS``."""
        self._refresh_quietly()
        due = time.monotonic() + REFRESH_SECONDS
        while not self._stopping.is_set():
            heard = self._listener.wait(min(STOP_SECONDS, max(0.0, due - time.monotonic())))
            if heard is not None:
                self._wake()  # first: a reader waits on this, the guard on the refresh
                due = min(due, self._refreshed_at + REFRESH_GAP_SECONDS)
            if time.monotonic() >= due:
                self._refresh_quietly()
                due = time.monotonic() + REFRESH_SECONDS

    def _set_listening(self, up: bool) -> None:
        self.listening = up
        self._on_listening(up)


def _log(line: str) -> None:
    with contextlib.suppress(OSError):
        print(f"coord daemon: {line}", file=sys.stderr, flush=True)


def follow(server: Server, dsn: str, board_dir: str) -> Follower:
    """Start following the board for the daemon whose state is ``server``: its readers
    woken by every daemon's writes, its poll relaxed while the listener is up, its route
    ``POST /v1/mirror:refresh`` served. ``stop()`` it when the daemon stops."""
    changes = server.changes

    def on_listening(up: bool) -> None:
        changes.poll_seconds = LISTENING_POLL_SECONDS if up else POLL_SECONDS

    follower = Follower(dsn, board_dir, changes.notify_threadsafe, on_listening)
    server.follower = follower
    return follower.start()
