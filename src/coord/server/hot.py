"""The hot path: claim-next as a bare ASGI app, dispatched before Starlette's routing.

Starlette's middleware and routing measured ~100 µs of the daemon's CPU per claim, as much
as the claim's own SQL, and its Request/Response objects another ~30 µs (bench/). Only that
framing is skipped: the request goes through the same ``Endpoint.answer`` as every route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from coord.server.context import NOTHING, answer_headers
from coord.server.pipeline import Endpoint, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.server.mcp_mount import McpMount

_JSON = (b"content-type", b"application/json")


class HotEndpoint:
    """One route of the table as a bare ASGI app. Starlette sees an ASGI app here, so the
    route is listed (tests, ``app.routes``) like the rest."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:  # the first of a repeated header, as Starlette
            headers.setdefault(name, value)
        declared = headers.get(b"content-length")
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        # without the token, the web page's session may stand in: its X-Coord-Session and
        # Origin headers are read then (agents always send the token, and skip this)
        named = (
            NOTHING
            if authorization
            else {k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items()}
        )
        status, content = await self.endpoint.answer(
            headers.get(b"host", b"").decode("latin-1"),
            authorization,
            declared.decode("latin-1") if declared else None,
            receive,
            headers=named,
        )
        payload = render(content)
        headers_out = [(b"content-length", str(len(payload)).encode()), _JSON]
        for name, value in answer_headers(status, content).items():
            headers_out.append((name.encode(), value.encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers_out})
        await send({"type": "http.response.body", "body": payload})


class HotPaths:
    """Sends the hot routes straight to their ``HotEndpoint``s, ``/mcp`` to the MCP mount,
    the rest to Starlette. An unexpected exception on a hot route is answered with the same
    500 as Starlette's, then raised for the log."""

    def __init__(
        self,
        app: Starlette,
        routes: dict[tuple[str, str], HotEndpoint],
        on_error: Callable[[Request, Exception], Awaitable[Response]],
        *,
        mcp: McpMount | None = None,
        guard_mcp: Callable[[Request], Awaitable[Response | None]] | None = None,
    ) -> None:
        self.app = app
        self.hot = routes
        self.on_error = on_error
        self.mcp = mcp
        self.guard_mcp = guard_mcp

    @property
    def routes(self) -> list[Any]:
        return self.app.routes

    @property
    def state(self) -> Any:
        return self.app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        handler = (
            self.hot.get((scope.get("method"), scope.get("path")))
            if scope["type"] == "http"
            else None
        )
        if handler is None:
            if self.mcp is not None and scope["type"] == "http" and scope["path"] == "/mcp":
                await self._mcp(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        try:
            await handler(scope, receive, send)
        except Exception as exc:  # a bug of ours: answer 500 as Starlette would, then log it
            await (await self.on_error(Request(scope, receive), exc))(scope, receive, send)
            raise

    async def _mcp(self, scope: Any, receive: Any, send: Any) -> None:
        assert self.mcp is not None and self.guard_mcp is not None
        refused = await self.guard_mcp(Request(scope, receive))
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.mcp.handle(self, scope, receive, send)
