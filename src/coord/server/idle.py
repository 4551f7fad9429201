"""When a daemon nobody started by hand should go: idle for a while, or its board gone.

A daemon the CLI started on demand (``coord add`` with none running) once ran forever, even
after its repository was deleted. One started with ``--idle-exit SECONDS`` (the CLI passes the
board's ``idle_exit_seconds``, 30 minutes by default) exits once no request has come for that
long and none is open: an event stream (``coord log --follow``, the web page), a long poll or
an MCP call in flight keeps it.
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

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class Activity:
    """The daemon's ASGI app, counting the requests in flight and when the last one ended."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self.last = time.monotonic()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") in _NOT_ACTIVITY:
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
        """Seconds with no request open and none arriving (0 while one is open)."""
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
