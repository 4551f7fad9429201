"""What coord's MCP server answers before any tool runs, for the front to give at once.

``manifest.json`` holds, for each protocol version the ``initialize`` handshake reaches, the
server's exact results of the requests a client makes as it connects (``METHODS``:
``initialize``, the lists of tools, prompts and resources, ``ping``), as the SDK server writes
them on stdio. It is generated from that server, never written by hand:

    python -m coord.mcp.manifest --write

and ``tests/test_mcp_front.py`` fails when it differs from what the server answers now (a tool
added, a description or a schema changed, the SDK or coord's version moved).

Loading it is the standard library only (``coord.mcp.front`` runs before the SDK is imported);
generating it imports the SDK.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("manifest.json")
# what a client asks as it connects (Claude Code lists prompts and resources beside the tools)
METHODS = (
    "initialize",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "ping",
)


def load() -> dict[str, Any]:
    answers: dict[str, Any] = json.loads(PATH.read_text(encoding="utf-8"))
    return answers


def negotiate(answers: dict[str, Any], params: dict[str, Any] | None) -> str | None:
    """The version the SDK server answers an ``initialize`` with these params (the client's if
    the handshake reaches it, else the latest), or None if it would refuse them."""
    if not params:
        return None
    requested, info = params.get("protocolVersion"), params.get("clientInfo")
    if not isinstance(requested, str) or not isinstance(params.get("capabilities"), dict):
        return None
    if not isinstance(info, dict) or not all(
        isinstance(info.get(key), str) for key in ("name", "version")
    ):
        return None
    return requested if requested in answers["versions"] else str(answers["latest"])


def generate() -> dict[str, Any]:
    """Ask the SDK server itself, over its stdio transport, once per handshake version."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from coord.mcp.front import run_on_pipes
    from coord.mcp.tools import build_server

    versions = {}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        server = build_server(None, lambda ctx: "manifest")  # type: ignore[arg-type]
        versions[version] = _ask(server, version, run_on_pipes)
    return {
        "generated_by": "python -m coord.mcp.manifest --write",
        "latest": LATEST_HANDSHAKE_VERSION,
        "versions": versions,
    }


def _ask(server: Any, version: str, run_on_pipes: Any) -> dict[str, Any]:
    client = {"name": "coord-manifest", "version": "0"}
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    requests += [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(METHODS[1:], 2)]
    results: dict[int, Any] = {}
    answered = threading.Event()

    def feed(send: Any) -> None:
        for request in requests:
            send(json.dumps(request).encode())
        answered.wait(60)

    def take(line: bytes) -> None:
        message = json.loads(line)
        if "id" in message and "method" not in message:
            results[message["id"]] = message.get("result", message)
            if len(results) == len(METHODS):
                answered.set()

    run_on_pipes(server, feed, take)
    return {method: results[i] for i, method in enumerate(METHODS, 1)}


def main(argv: list[str]) -> int:
    text = json.dumps(generate(), indent=1, ensure_ascii=False) + "\n"
    if argv == ["--write"]:
        PATH.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
