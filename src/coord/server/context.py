"""What a handler works with: the daemon's state (``Server``) and one request (``Call``).

A handler is a plain function of a ``Call``; a test builds one with a board and a body and
calls the handler directly, no HTTP in between.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from coord import model
from coord.core.board import Board
from coord.errors import InvalidInput
from coord.limits import MAX_STREAM_BEHIND
from coord.server.web.access import WebAccess

NOTHING: Mapping[str, str] = MappingProxyType({})
# How often a long-poll looks at the board when nothing woke it: another process (a hook,
# the library) may have written.
POLL_SECONDS = 0.25


class Changes:
    """Wakes long-polling readers of /v1/events when the board changes: at once when this
    daemon writes, and (``notify_threadsafe``) when another daemon on the same PostgreSQL
    board does (``coord.server.follower``). ``poll_seconds``: how often a waiting reader
    looks at the board anyway, for writers that cannot wake it (a hook's or the library's
    write to a SQLite board; a PostgreSQL board's while the listener reconnects)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.poll_seconds = POLL_SECONDS

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def notify_threadsafe(self) -> None:
        """``notify`` from another thread: on the loop the readers wait on (none yet: no
        reader to wake)."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the daemon is stopping
                loop.call_soon_threadsafe(self.notify)

    async def wait(self, timeout: float) -> None:
        self._loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)

    def mark(self) -> asyncio.Event:
        """The notice the next change sets: taken *before* a reader looks at the board, so a
        change between the look and ``wait_on`` is not missed (the event is set already)."""
        self._loop = asyncio.get_running_loop()
        return self._event

    async def wait_on(self, notice: asyncio.Event, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(notice.wait(), timeout)


@dataclass
class Server:
    """The daemon's state, one per app (``app.state.coord``): every handler shares it."""

    board: Board
    write_token: str
    check_host: bool = True
    on_shutdown: Callable[[], None] | None = None
    changes: Changes = field(default_factory=Changes)
    # what /v1/identity proves: the id in daemon.json and the port it listens on
    instance: str = ""
    port: int = 0
    # the web page's codes and session key (this process's alone); None: no page session
    web: WebAccess | None = None
    # on a PostgreSQL board: the LISTEN thread and the guard's mirror (coord.server.follower)
    follower: Any = None
    # event streams (stream.py): a reader further behind than this reloads; `closing` ends
    # them all when the daemon stops
    stream_max_behind: int = MAX_STREAM_BEHIND
    closing: bool = False
    stream_feed: Any = None  # feed.Feed, made when the first stream opens
    # on a PostgreSQL board: the worker threads its board calls run on (offload.BoardCalls);
    # None: inline on the loop (SQLite)
    board_calls: Any = None
    # the daemon's landing runner (coord.landing.in_daemon.InDaemon), woken by a submit;
    # None: this daemon lands nothing; ``landing_off``: why
    lander: Any = None
    landing_off: str = ""

    @property
    def checkout(self) -> str | None:
        """The checkout this daemon serves, as every event it logs records it."""
        root = self.board.repo_root
        return None if root is None else str(root)

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, a board call made by a handler that awaits (the long poll, the
        stream): off the loop where the board's calls are (``board_calls``)."""
        if self.board_calls is None:
            return fn(*args)
        return await self.board_calls.run(fn, *args)

    def close_streams(self) -> None:
        self.closing = True
        self.changes.notify()
        if self.stream_feed is not None:  # at once, not at the feed's next turn
            self.stream_feed.stop()


class Call:
    """One request as its handler sees it: the server, the checked body, path and query."""

    __slots__ = ("body", "headers", "path", "query", "server")

    def __init__(
        self,
        server: Server,
        body: dict[str, Any] | None = None,
        *,
        path: Mapping[str, Any] = NOTHING,
        query: Mapping[str, str] = NOTHING,
        headers: Mapping[str, str] = NOTHING,
    ) -> None:
        self.server = server
        self.body: dict[str, Any] = body if body is not None else {}
        self.path = path
        self.query = query
        self.headers = headers

    @property
    def board(self) -> Board:
        return self.server.board

    @property
    def item_id(self) -> Any:
        """The ``{id}`` of the path: an item id or a package id; the board checks it."""
        return self.path["id"]

    def agent(self) -> str:
        return model.check_agent(self.body.get("agent"))

    def optional_str(self, key: str) -> str | None:
        value = self.body.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{key} must be a string", field=key)
        return value

    def flag(self, key: str) -> bool:
        """A true/false field of the body (false when absent)."""
        value = self.body.get(key, False)
        if not isinstance(value, bool):
            raise InvalidInput(f"{key} must be true or false", field=key)
        return value


def answer_headers(status: int, content: Any) -> dict[str, str]:
    """The headers an answer carries beside its body: Retry-After when the board asks for a
    wait (board_busy, database_unreachable), and on a 401 the challenge HTTP requires (RFC
    9110 §15.5.2): Bearer, the board's token. Without one, MCP clients start an OAuth flow
    no daemon serves."""
    headers = {}
    if status == 503 and isinstance(content, dict) and "retry_after" in content:
        headers["retry-after"] = str(content["retry_after"])
    if status == 401:
        headers["www-authenticate"] = "Bearer"
    return headers


# --- query parameters: strings, read the way HTML forms and curl send them --------------------


def query_flag(value: str | None) -> bool:
    if value in (None, "", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise InvalidInput(f"expected true or false, not {value!r}")


def count(value: Any, name: str, default: int, minimum: int = 0) -> int:
    """An integer from ``minimum`` up, given as a JSON integer or as digits (a query string)."""
    if value is None or value == "":
        return default
    value = model.digits(value)
    if model.is_stored_integer(value) and value >= minimum:
        return value
    what = "a non-negative integer" if minimum == 0 else f"an integer of at least {minimum}"
    raise InvalidInput(
        f"{name} must be {what} up to {model.MAX_INTEGER}, not {value!r}", field=name
    )


def number(value: str | None, name: str, default: float) -> float:
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, not {value!r}", field=name) from None
