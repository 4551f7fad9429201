"""The HTTP face: a thin Starlette adapter over ``coord.core.board.Board``, built from the
route table (``routes.py``).

Each handler takes the request as a ``Call``, calls one Board method and returns the answer;
the pipeline (``pipeline.py``) does the rest, for every route alike. Errors are
``CoordError``s, rendered once.

A SQLite board's calls run inline on the event loop. A board call is one short SQLite
transaction (tens of microseconds); a hop to a worker thread costs more than it saves and adds
GIL hand-off latency under load (measured in bench/). The daemon is the board's only regular
writer, so the write lock is rarely contended; when another process holds it, the daemon's
short busy timeout (``daemon.BUSY_TIMEOUT_MS``) bounds how long the loop waits, and the write
is answered 503 ``board_busy`` with Retry-After instead of stalling every other request: no
handler waits on the loop without a bound (the long poll and the stream wait in asyncio). A
PostgreSQL board's calls are round trips to a server that may stop answering: they run on
worker threads (``offload.py``), every route but those that read no board
(``Route.board``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.routing import Route as StarletteRoute

from coord.core.board import Board
from coord.errors import CoordError
from coord.server.context import Server, answer_headers
from coord.server.hot import HotEndpoint, HotPaths
from coord.server.pipeline import Endpoint, JSONResponse, check_host, check_token
from coord.server.routes import ROUTES
from coord.server.web.access import WebAccess
from coord.server.web.handoff import HANDOFF_DIR
from coord.server.web.page import page_routes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def create_app(
    board: Board,
    write_token: str,
    *,
    check_host: bool = True,
    on_shutdown: Callable[[], None] | None = None,
    board_dir: Path | None = None,
    instance: str = "",
    port: int = 0,
) -> HotPaths:
    """The daemon's ASGI app for ``board``. ``board_dir`` mounts MCP at /mcp; ``instance`` and
    ``port`` are what /v1/identity proves (the daemon's record)."""
    server = Server(
        board,
        write_token,
        check_host=check_host,
        on_shutdown=on_shutdown,
        instance=instance,
        port=port,
        # the page's codes and sessions are this process's alone (web/access.py); the
        # browser's hand-off files go in the board directory (web/handoff.py)
        web=WebAccess(handoff_dir=board_dir / HANDOFF_DIR if board_dir is not None else None),
    )
    hot: dict[tuple[str, str], HotEndpoint] = {}
    routes = []
    for route in ROUTES:
        endpoint = Endpoint(route, server)
        if route.hot:
            hot[(route.method, route.path)] = HotEndpoint(endpoint)
            serve: Callable[..., object] = hot[(route.method, route.path)]
        else:
            serve = _starlette_endpoint(endpoint)
        routes.append(StarletteRoute(route.path, serve, methods=[route.method]))
    server_error = _server_error_handler(where_the_log_is(board_dir))
    app = Starlette(
        routes=[*page_routes(), *routes],
        exception_handlers={HTTPException: _http_error, Exception: server_error},
    )
    app.state.coord = server
    mount = None
    if board_dir is not None:  # MCP over streamable HTTP at /mcp
        from coord.server.mcp_mount import McpMount

        mount = McpMount(board_dir, write_token)
    return HotPaths(app, hot, server_error, mcp=mount, guard_mcp=_mcp_guard(server))


def _starlette_endpoint(endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    async def serve(request: Request) -> Response:
        headers = request.headers
        status, content = await endpoint.answer(
            headers.get("host", ""),
            headers.get("authorization", ""),
            headers.get("content-length"),
            request.receive,
            request.path_params,
            request.query_params,
            headers,
        )
        if isinstance(content, Response):  # a stream (stream.py): it writes its own answer
            return content
        return JSONResponse(content, status_code=status, headers=answer_headers(status, content))

    serve.__name__ = endpoint.route.handler.__name__
    return serve


def _mcp_guard(server: Server) -> Callable[[Request], Awaitable[Response | None]]:
    """/mcp takes the same host check and token as every write."""

    async def guard(request: Request) -> Response | None:
        try:
            if server.check_host:
                check_host(request.headers.get("host", ""))
            check_token(request.headers.get("authorization", ""), server.write_token)
        except CoordError as err:
            content = err.to_dict()
            return JSONResponse(
                content,
                status_code=err.http_status,
                headers=answer_headers(err.http_status, content),
            )
        return None

    return guard


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    message = {
        404: f"no such endpoint: {request.method} {request.url.path}; see /openapi.json",
        405: f"{request.method} is not allowed on {request.url.path}; see /openapi.json",
    }.get(status, str(getattr(exc, "detail", "error")))
    headers = None
    if status == 405:  # RFC 9110: a 405 says which methods the resource takes
        headers = {"Allow": ", ".join(_allowed_methods(request))}
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path: the table has a route per method, so
    Starlette's own answer would name only the first route's."""
    allowed: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches({**request.scope, "method": "OPTIONS"})
        if match is not Match.NONE:
            allowed |= getattr(route, "methods", None) or set()
    return sorted(allowed)


def where_the_log_is(board_dir: Path | None) -> str:
    """Where this daemon's log goes, for a 500's message: .coord/daemon.log when the CLI
    started it on demand (its standard error is that file), else its standard error (the
    terminal or the service manager of `coord serve`: it writes no file of its own)."""
    if board_dir is not None:
        log = board_dir / "daemon.log"
        try:
            ours, theirs = os.fstat(2), os.stat(log)
            if (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino):
                return str(log)
        except OSError:
            pass
    return "the daemon's standard error (where `coord serve` was started, or its service log)"


def _server_error_handler(log: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def server_error(request: Request, exc: Exception) -> Response:
        # A bug of ours, not bad input: say so plainly and keep the details in the log.
        return JSONResponse(
            {
                "error": "internal",
                "message": f"internal error: {type(exc).__name__}; nothing was changed; the "
                f"details are in {log}: please report it",
            },
            status_code=500,
        )

    return server_error
