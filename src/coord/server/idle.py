"""When a daemon nobody started by hand should go: idle for a while, or its board gone.

A daemon the CLI started on demand (``coord add`` with none running) once ran forever, even
after its repository was deleted. One started with ``--idle-exit SECONDS`` (the CLI passes the
board's ``idle_exit_seconds``, 30 minutes by default) exits once no request has come for that
long and none is open: an event stream (``coord log --follow``, the web page), a long poll or
an MCP call in flight keeps it. The daemon's own landing runner (``coord.landing.in_daemon``)
is not activity: its requests say who they are (``X-Coord-Landing``); but a landing under way
keeps the daemon (``Activity.keep``), so it never exits mid-landing.
Any daemon exits when its board directory is gone. ``coord serve`` by hand never idles out.

A daemon of a team board (PostgreSQL) never idles out either, however it was started
(``coord.server.daemon`` drops ``--idle-exit`` there): agents on other machines work on the same
board, and this machine's hooks and guard rely on its daemon answering; it stops with
``coord stop`` or when its board directory is gone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# requests that say nothing of use: a monitor's health checks must not keep a daemon alive
_NOT_ACTIVITY = frozenset({"/v1/health", "/v1/identity", "/v1/web/proof"})
# the header the daemon's own landing runner sends: its polling is not a client's activity
_RUNNER_HEADER = b"x-coord-landing"

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class Activity:
    """The daemon's ASGI app, counting the requests in flight and when the last one ended."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self.last = time.monotonic()
        # while this says true (a landing under way), the daemon is not idle
        self.keep: Callable[[], bool] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("path") in _NOT_ACTIVITY
            or any(name == _RUNNER_HEADER for name, _ in scope.get("headers", ()))
        ):
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        self.last = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last = time.monotonic()

    def idle_for(self) -> float:
        """Seconds with no request open and none arriving (0 while one is open, or while
        ``keep`` holds: idleness counts from the end of a landing)."""
        if self.keep is not None and self.keep():
            self.last = time.monotonic()
        return 0.0 if self.in_flight else time.monotonic() - self.last


def watch(
    board_dir: Path,
    activity: Activity,
    idle_exit: float | None,
    stop: Callable[[str], None],
    *,
    every: float = 1.0,
) -> threading.Thread:
    """A thread that calls ``stop(reason)`` once the board directory is gone or, with
    ``idle_exit``, the daemon has been idle that long."""

    def run() -> None:
        while True:
            time.sleep(every)
            if not os.path.isdir(board_dir):
                stop(f"its board {board_dir} is gone")
                return
            if idle_exit and activity.idle_for() >= idle_exit:
                stop(f"idle for {idle_exit:g} s (started on demand; `coord serve` never idles)")
                return

    thread = threading.Thread(target=run, name="coord-idle", daemon=True)
    thread.start()
    return thread
