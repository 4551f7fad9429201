"""`coord mcp` answers as the SDK server alone does, with its tools listed before the SDK loads.

The front (``coord.mcp.front``) answers ``initialize``, ``ping`` and the lists from the
manifest, then hands the session to the SDK server. Here: the manifest is what the SDK server
answers now (regenerated in a fresh process); the same requests, line for line, get the same
results from ``coord mcp`` as from ``COORD_MCP_FRONT=0 coord mcp`` (the SDK alone), and tool
calls after them work; with the SDK's import held back (a test hook), the official client lists
the tools, then its call waits for the SDK and is answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import Daemon
from coord.core.board import Board
from coord.mcp import front, manifest
from test_mcp import TOOLS


def _request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return request if params is None else {**request, "params": params}


def _initialize(request_id: Any, version: str) -> dict[str, Any]:
    client = {"name": "test", "version": "1"}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    return _request(request_id, "initialize", params)


def _env(daemon: Daemon, **extra: str) -> dict[str, str]:
    return {**os.environ, "COORD_DIR": str(daemon.board_dir), **extra}


def _converse(daemon: Daemon, lines: list[dict[str, Any]], *args: str, **env: Any) -> list[Any]:
    """Every message ``coord mcp`` wrote for these lines, all sent at once; stdin is closed
    once each request has its answer (at end of input the SDK drops what is in flight), after
    ``on_answers(pid)`` if given."""
    on_answers = env.pop("on_answers", None)
    env.setdefault("COORD_AGENT", "raw-agent")
    asked = {json.dumps(line["id"]) for line in lines if "id" in line}
    process = subprocess.Popen(
        [sys.executable, "-m", "coord", "mcp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(daemon, **env),
        cwd=daemon.board_dir.parent,
    )
    assert process.stdin and process.stdout
    process.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
    process.stdin.flush()
    written = []
    while asked - set(_by_id(written)):
        line = process.stdout.readline()
        assert line, process.communicate(timeout=60)[1]
        written.append(json.loads(line))  # stdout is JSON-RPC, one message a line, only
    if on_answers:
        on_answers(process.pid)
    rest, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    assert "coord mcp:" not in errors  # the front said nothing went wrong
    return written + [json.loads(line) for line in rest.splitlines()]


def _by_id(messages: list[Any]) -> dict[Any, Any]:
    return {json.dumps(m["id"]): m for m in messages if "id" in m and "method" not in m}


def test_the_manifest_is_what_the_sdk_server_answers_now() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coord.mcp.manifest"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # if this fails: python -m coord.mcp.manifest --write, and read the diff
    assert json.loads(done.stdout) == manifest.load()
    listed = manifest.load()["versions"][manifest.load()["latest"]]["tools/list"]["tools"]
    assert {t["name"] for t in listed} == TOOLS and len(listed) <= 15


def test_the_front_answers_as_the_sdk_alone_and_the_session_goes_on(daemon: Daemon) -> None:
    board = Board.open(daemon.board_dir)
    board.add("over the front", created_by="h")
    board.close()
    # string and numeric ids, an old protocol version, notifications between the requests
    lines: list[dict[str, Any]] = [
        _initialize("i-1", "2024-11-05"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        # a call waits for the SDK; the lists after it are answered meanwhile
        _request(5, "tools/call", {"name": "who_holds", "arguments": {"path": "src/x.py"}}),
        _request(2, "tools/list", {}),
        _request("p", "ping"),
        _request(4, "resources/list"),
        _request(7, "prompts/list", {"cursor": None}),
        _request(8, "resources/templates/list", {"_meta": {"progressToken": 1}}),
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        _request(6, "no/such"),
        _request(9, "initialize", {}),  # a second one, and malformed: the SDK's to answer
    ]
    alone = _by_id(_converse(daemon, lines, COORD_MCP_FRONT="0"))
    fronted = _by_id(_converse(daemon, lines))
    assert set(fronted) == set(alone) == {'"i-1"', "2", '"p"', "4", "5", "6", "7", "8", "9"}
    assert fronted == alone
    assert alone['"i-1"']["result"]["protocolVersion"] == "2024-11-05"
    assert alone["6"]["error"]  # the SDK's own answer, through the front

    # a version the handshake does not reach gets the latest, as from the SDK; then a claim,
    # as the agent --as names (read before argparse loads)
    lines = [
        _initialize(1, "1999-01-01"),
        _request(2, "tools/list"),
        _request(3, "tools/call", {"name": "claim", "arguments": {}}),
    ]
    fronted = _by_id(_converse(daemon, lines, "--as", "front-agent"))
    latest = manifest.load()["latest"]
    assert fronted["1"]["result"]["protocolVersion"] == latest
    assert fronted["2"]["result"] == manifest.load()["versions"][latest]["tools/list"]
    assert fronted["3"]["result"]["structuredContent"]["title"] == "over the front"
    _, item = daemon.request("GET", "/v1/items/1")
    assert item["claimed_by"] == "front-agent"


async def _session(params: StdioServerParameters) -> dict[str, Any]:
    async with Client(params, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        return {
            "protocol": client.protocol_version,
            "server": client.server_info.model_dump() if client.server_info else None,
            "capabilities": client.server_capabilities.model_dump(),
            "instructions": client.instructions,
            "tools": [tool.model_dump() for tool in tools],
        }


def _params(daemon: Daemon, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "coord", "mcp"],
        env=_env(daemon, COORD_AGENT="sdk-client", **env),
        cwd=str(daemon.board_dir.parent),
    )


def test_the_official_client_sees_the_same_server_through_the_front(daemon: Daemon) -> None:
    alone = asyncio.run(_session(_params(daemon, COORD_MCP_FRONT="0")))
    fronted = asyncio.run(_session(_params(daemon)))
    assert fronted == alone
    assert {tool["name"] for tool in fronted["tools"]} == TOOLS


def test_the_tools_are_listed_before_the_sdk_is_imported(daemon: Daemon, tmp_path: Path) -> None:
    """The SDK's import waits for a file the test makes only after the tools were listed: the
    front alone answered. The call after it waits for the SDK, and is answered."""
    board = Board.open(daemon.board_dir)
    board.add("after the gate", created_by="h")
    board.close()
    gate = tmp_path / "sdk-may-load"

    async def go() -> tuple[set[str], Any]:
        params = _params(daemon, **{front.SDK_GATE_VAR: str(gate)})
        async with Client(params, mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            gate.touch()  # only now may the SDK load: the front alone answered so far
            return names, await client.call_tool("claim", {})

    names, won = asyncio.run(go())
    assert names == TOOLS
    assert not won.is_error and won.structured_content["title"] == "after the gate"
    _, item = daemon.request("GET", "/v1/items/1")
    assert item["claimed_by"] == "sdk-client"


def test_a_client_that_leaves_before_the_sdk_loads_ends_the_process(
    daemon: Daemon, tmp_path: Path
) -> None:
    """With the SDK's import held back, the answers come from a process that has not loaded
    the SDK (nor pydantic, which it is built on); at end of input it ends, the SDK unloaded."""
    lines = [
        _initialize(1, "2025-06-18"),
        _request(2, "tools/list"),
    ]
    seen: list[bool] = []

    def loaded(pid: int) -> None:
        maps = Path(f"/proc/{pid}/maps")
        if maps.exists():
            seen.append("pydantic_core" in maps.read_text())

    gate = str(tmp_path / "never")
    answers = _by_id(_converse(daemon, lines, **{front.SDK_GATE_VAR: gate, "on_answers": loaded}))
    assert answers["1"]["result"]["protocolVersion"] == "2025-06-18"
    assert answers["2"]["result"] == manifest.load()["versions"]["2025-06-18"]["tools/list"]
    assert seen in ([], [False])  # [] where there is no /proc to look in


# --- the front alone, in process ----------------------------------------------------------------


def _front(*lines: dict[str, Any]) -> tuple[front.Front, list[Any]]:
    written: list[bytes] = []
    taken = front.Front(written.append, manifest.load())
    for line in lines:
        taken.take(json.dumps(line).encode())
    return taken, [json.loads(line) for line in written]


def test_the_front_answers_what_it_knows_and_queues_the_rest_for_the_sdk_in_order() -> None:
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    call = _request(1, "tools/call", {"name": "board", "arguments": {}})
    taken, answers = _front(
        _initialize(0, "2025-06-18"), initialized, call, _request(2, "tools/list")
    )
    assert [a["id"] for a in answers] == [0, 2]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    # the initialize to replay (its answer dropped), then the rest as it came
    queued = [(json.loads(line).get("id"), drop) for line, drop in taken.to_sdk]
    assert queued == [(0, 0), (None, None), (1, None)]
    assert taken.waiting


def test_the_front_leaves_to_the_sdk_what_it_might_answer_otherwise() -> None:
    malformed = _request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    modern = _request(0, "server/discover")
    cases: list[tuple[list[dict[str, Any]], list[int]]] = [
        ([malformed, _request(1, "tools/list")], []),  # no clientInfo: the SDK refuses it
        ([modern, _initialize(1, "2025-06-18")], []),  # the SDK decides the era
        ([_request(1, "tools/list")], []),  # before initialize
        ([_initialize(0, "2025-06-18"), _request(1, "tools/list", {"cursor": "x"})], [0]),
    ]
    for lines, answered in cases:
        taken, answers = _front(*lines)
        assert [a["id"] for a in answers] == answered, lines
        assert taken.waiting
