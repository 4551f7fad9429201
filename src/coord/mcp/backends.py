"""How the MCP tools reach the board: the daemon's HTTP API, from outside or from inside.

Both speak the same routes, so every tool is written once. ``HttpBackend`` is what ``coord
mcp`` (stdio) uses: the CLI's client, which starts the daemon on demand. ``AsgiBackend`` is
what the daemon's own ``/mcp`` endpoint uses: it calls the daemon's ASGI app in-process (no
socket, no second event loop), with the board's write token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode

import anyio

from coord.errors import CoordError, error_from_dict


class Backend(Protocol):
    board_dir: Path
    runs_checks_here: bool  # can ``done`` run the item's checks in the agent's working tree?

    async def call(self, method: str, path: str, body: Any = None) -> Any: ...


def query(path: str, params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "", False)}
    return f"{path}?{urlencode(kept)}" if kept else path


class HttpBackend:
    runs_checks_here = True

    def __init__(self, board_dir: Path) -> None:
        from coord.client.http import Client

        self.board_dir = board_dir
        self.client = Client(board_dir)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        # the CLI's client blocks; a worker thread keeps the MCP session responsive
        return await anyio.to_thread.run_sync(lambda: self.client.call(method, path, body))


class AsgiBackend:
    runs_checks_here = False  # the daemon is not where the agent works

    def __init__(self, board_dir: Path, app: Any, token: str) -> None:
        self.board_dir = board_dir
        self.app = app
        self.token = token

    async def call(self, method: str, path: str, body: Any = None) -> Any:
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
        payload = json.loads(b"".join(chunks) or b"null")
        if status >= 400:
            if isinstance(payload, dict) and "error" in payload:
                raise error_from_dict(payload)
            raise CoordError(f"the board answered {status}")
        return payload
