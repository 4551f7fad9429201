"""``/mcp`` on the daemon: coord's MCP tools over streamable HTTP.

Built on the first request, so a daemon nobody asks for MCP never imports the SDK (the CLI
starts daemons on demand, and their start-up is on an agent's critical path). The tools call
the daemon's own ASGI app in-process (``AsgiBackend``). The caller's agent name comes from the
``X-Coord-Agent`` header; like every write, a request needs the board's token, and it must
address the daemon by a loopback name. Sessions are stateless: the daemon keeps nothing
per MCP client between requests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from coord.errors import InvalidInput

AGENT_HEADER = "x-coord-agent"


class McpMount:
    def __init__(self, board_dir: Path, token: str) -> None:
        self.board_dir = board_dir
        self.token = token
        self._app: Any = None
        self._lock = asyncio.Lock()
        self._holder: asyncio.Task[None] | None = None

    async def handle(self, coord_app: Any, scope: Any, receive: Any, send: Any) -> None:
        app = self._app or await self._start(coord_app)
        await app(scope, receive, send)

    async def _start(self, coord_app: Any) -> Any:
        async with self._lock:
            if self._app is not None:
                return self._app
            from coord.mcp.backends import AsgiBackend
            from coord.mcp.tools import build_server

            server = build_server(AsgiBackend(self.board_dir, coord_app, self.token), _agent)
            # Stateless: every tool call is one request that carries all it needs (the token,
            # X-Coord-Agent), so no session is kept between requests, and none can pile up
            # (each held ~37 KB until an idle timeout, however many clients came and went).
            app = server.streamable_http_app(
                streamable_http_path="/mcp",
                host="127.0.0.1",
                stateless_http=True,
            )
            started = asyncio.Event()

            async def hold() -> None:
                # the session manager's task group lives in this one task until shutdown
                async with server.session_manager.run():
                    started.set()
                    await asyncio.Event().wait()

            self._holder = asyncio.create_task(hold(), name="coord-mcp-sessions")
            await started.wait()
            self._app = app
            return app


def _agent(ctx: Any) -> str:
    headers = getattr(ctx, "headers", None) if ctx is not None else None
    name = headers.get(AGENT_HEADER) if headers else None
    if not name:
        raise InvalidInput(
            "send your agent name in the X-Coord-Agent header (the same name you use with "
            "the CLI and hooks)"
        )
    return str(name)
