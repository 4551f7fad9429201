"""How the MCP tools reach the board: the daemon's HTTP API, from outside or from inside.

Both speak the same routes, so every tool is written once, on the client flow
(``coord.client.flow``), which a tool runs in a worker thread. ``HttpBackend`` is what ``coord
mcp`` (stdio) uses: the CLI's client, which starts the daemon on demand, from the agent's
working tree. ``AsgiBackend`` is what the daemon's own ``/mcp`` endpoint uses: it calls the
daemon's ASGI app in-process (no socket, no second event loop), with the board's token;
the flow's thread hands each request back to the event loop the app runs on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread

from coord.client.flow import Session
from coord.client.http import Client, answer

Backend = Session  # what a tool needs of the board: the flow's session


class HttpBackend(Session):
    def __init__(self, board_dir: Path) -> None:
        super().__init__(board_dir, Client(board_dir), local=True)


class AsgiBackend(Session):
    """Not local: the daemon is not where the agent works (no checks run here; paths start
    at the repository root)."""

    def __init__(self, board_dir: Path, app: Any, token: str) -> None:
        super().__init__(board_dir, _AsgiTransport(app, token), local=False)


class _AsgiTransport:
    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    def call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        # called from the flow's worker thread; the app runs on the event loop
        return anyio.from_thread.run(self._call, method, path, body)

    async def _call(self, method: str, path: str, body: Any) -> Any:
        raw_path, _, raw_query = path.partition("?")
        data = b"" if body is None else json.dumps(body).encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": raw_path,
            "raw_path": raw_path.encode(),
            "query_string": raw_query.encode(),
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"authorization", f"Bearer {self.token}".encode()),
            ],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}

        status, chunks = 500, []

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return answer(status, json.loads(b"".join(chunks) or b"null"))
