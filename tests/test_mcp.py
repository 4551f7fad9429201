"""coord's MCP server, driven by the official SDK client (mcp ≥ 2).

In process (the SDK's in-memory transport), as `coord mcp` over stdio in a real subprocess,
and as streamable HTTP at the real daemon's /mcp. Races use two clients in separate
processes released together.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import Daemon, init_board_dir, run_cli
from coord.core.board import Board
from coord.fast import board_files
from coord.mcp.backends import AsgiBackend
from coord.mcp.tools import build_server
from coord.server.app import create_app

TOOLS = {
    "claim",
    "heartbeat",
    "done",
    "release",
    "post",
    "reply",
    "inbox",
    "reserve_files",
    "release_files",
    "who_holds",
    "board",
    "escalate",
    "reopen",
    "spec_status",
    "thread",
}


@pytest.fixture
def board_dir(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    return init_board_dir(tmp_path)


@pytest.fixture
def board(board_dir: Path) -> Iterator[Board]:
    b = Board.open(board_dir)
    yield b
    b.close()


def in_process(board: Board, board_dir: Path, agent: str) -> Any:
    token = board_files.read_token(board_dir)
    app = create_app(board, token)
    return build_server(AsgiBackend(board_dir, app, token), lambda ctx: agent)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_tools_are_few_and_described(board: Board, board_dir: Path) -> None:
    async def go() -> Any:
        async with Client(in_process(board, board_dir, "a")) as client:
            return (await client.list_tools()).tools

    tools = run(go())
    assert {t.name for t in tools} == TOOLS and len(tools) <= 15
    for t in tools:
        assert t.description and len(t.description) > 40, t.name
        assert t.input_schema["type"] == "object"


def test_claim_work_and_finish_through_tools(board: Board, board_dir: Path) -> None:
    board.add("fix login", created_by="h", files=["src/login.py"])

    async def go() -> tuple[Any, ...]:
        async with Client(in_process(board, board_dir, "agent-a")) as client:
            won = await client.call_tool("claim", {})
            held = await client.call_tool("who_holds", {"path": "src/login.py"})
            summary = await client.call_tool("board", {})
            done = await client.call_tool("done", {"item": str(won.structured_content["id"])})
            return won, held, summary, done

    won, held, summary, done = run(go())
    assert not won.is_error
    assert won.structured_content["title"] == "fix login"
    assert won.structured_content["files"] == ["src/login.py"]
    assert held.structured_content["holders"][0]["agent"] == "agent-a"
    assert [i["title"] for i in summary.structured_content["mine"]] == ["fix login"]
    assert not done.is_error and done.structured_content["state"] == "done"
    assert board.get(1).state == "done"


def test_a_refusal_is_a_result_naming_holder_and_expiry(board: Board, board_dir: Path) -> None:
    board.add("x", created_by="h")
    board.claim(1, agent="other")

    async def go() -> Any:
        async with Client(in_process(board, board_dir, "agent-a")) as client:
            return await client.call_tool("claim", {"item": "1"})

    lost = run(go())
    assert lost.is_error
    refusal = lost.structured_content
    assert refusal["error"] == "already_claimed"
    assert refusal["holder"] == "other" and refusal["lease_expires_at"]
    assert "pick another" in refusal["message"]
    assert json.loads(lost.content[0].text)["holder"] == "other"  # text for clients without it


def test_done_runs_the_checks_and_a_failure_keeps_the_claim(
    board: Board, board_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coord.mcp.backends import HttpBackend

    board.add("x", created_by="h")
    board.edit(1, agent="h", add_checks=["test -f src/ok.py"])
    monkeypatch.chdir(tmp_path)
    daemon = Daemon(board_dir).start()
    try:
        server = build_server(HttpBackend(board_dir), lambda ctx: "agent-a")

        async def go() -> tuple[Any, Any]:
            async with Client(server) as client:
                await client.call_tool("claim", {"item": "1"})
                failed = await client.call_tool("done", {"item": "1"})
                (tmp_path / "src" / "ok.py").write_text("")
                passed = await client.call_tool("done", {"item": "1"})
                return failed, passed

        failed, passed = run(go())
    finally:
        daemon.stop()
    assert failed.is_error and failed.structured_content["error"] == "checks_failed"
    assert not passed.is_error and passed.structured_content["state"] == "done"
    evidence = passed.structured_content["evidence"]
    assert evidence["passed"] is True and evidence["runs"][0]["exit_code"] == 0


def test_escalate_through_a_tool(board: Board, board_dir: Path) -> None:
    board.add("x", created_by="h")

    async def go() -> Any:
        async with Client(in_process(board, board_dir, "agent-a")) as client:
            await client.call_tool("claim", {"item": "1"})
            return await client.call_tool("escalate", {"item": "1", "question": "v1 or v2?"})

    asked = run(go())
    assert asked.structured_content["state"] == "needs_human"
    assert board.get(1).question == "v1 or v2?"


def test_reopen_through_a_tool_by_the_creator_only(board: Board, board_dir: Path) -> None:
    item = board.add("x", created_by="agent-a")
    board.cancel(item.id, agent="agent-a", reason="too early")

    async def go(agent: str) -> Any:
        async with Client(in_process(board, board_dir, agent)) as client:
            return await client.call_tool("reopen", {"item": "1", "reason": "now is the time"})

    refused = run(go("agent-b"))
    assert refused.is_error and refused.structured_content["error"] == "not_permitted"
    assert refused.structured_content["may"] == ["agent-a"]
    reopened = run(go("agent-a"))
    assert not reopened.is_error and reopened.structured_content["state"] == "pending"


def test_stdio_server_as_a_real_subprocess(daemon: Daemon) -> None:
    board = Board.open(daemon.board_dir)
    board.add("over stdio", created_by="h")
    board.close()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coord", "mcp"],
        env={**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "stdio-agent"},
        cwd=str(daemon.board_dir.parent),
    )

    async def go() -> tuple[Any, Any]:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            return names, await client.call_tool("claim", {})

    names, won = run(go())
    assert names == TOOLS
    assert won.structured_content["title"] == "over stdio"
    _, item = daemon.request("GET", "/v1/items/1")
    assert item["claimed_by"] == "stdio-agent"


def test_daemon_serves_the_same_tools_over_http(daemon: Daemon) -> None:
    board = Board.open(daemon.board_dir)
    board.add("over http", created_by="h")
    board.claim(1, agent="holder")
    board.add("free", created_by="h")
    board.close()
    headers = {"Authorization": f"Bearer {daemon.token}", "X-Coord-Agent": "http-agent"}

    async def go(with_headers: dict[str, str]) -> tuple[Any, Any]:
        import httpx2

        async with httpx2.AsyncClient(headers=with_headers) as http:
            from mcp.client.streamable_http import streamable_http_client

            transport = streamable_http_client(daemon.url + "/mcp", http_client=http)
            async with Client(transport) as client:
                lost = await client.call_tool("claim", {"item": "1"})
                won = await client.call_tool("claim", {})
                return lost, won

    lost, won = run(go(headers))
    assert lost.is_error and lost.structured_content["holder"] == "holder"
    assert won.structured_content["title"] == "free"
    status, item = daemon.request("GET", "/v1/items/2")
    assert item["claimed_by"] == "http-agent"
    status, _ = daemon.request("POST", "/mcp", {"jsonrpc": "2.0"}, token=None)
    assert status == 401  # like every write, MCP needs the board's token


def _race_worker(board_dir: str, name: str, barrier: Any, out: Any) -> None:
    from coord.mcp.backends import HttpBackend

    async def go() -> Any:
        server = build_server(HttpBackend(Path(board_dir)), lambda ctx: name)
        async with Client(server) as client:
            await client.list_tools()
            barrier.wait()
            result = await client.call_tool("claim", {})
            return {"agent": name, "error": result.is_error, "body": result.structured_content}

    out.put(asyncio.run(go()))


def test_two_mcp_clients_race_for_one_item_and_one_wins(daemon: Daemon) -> None:
    board = Board.open(daemon.board_dir)
    board.add("the only one", created_by="h")
    board.close()
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(str(daemon.board_dir), n, barrier, out))
        for n in ("racer-1", "racer-2")
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    winners = [r for r in results if not r["error"]]
    losers = [r for r in results if r["error"]]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0]["body"]["error"] == "nothing_ready"
    _, item = daemon.request("GET", "/v1/items/1")
    assert item["claimed_by"] == winners[0]["agent"]


PREFIXED_PLAN = """# Plan

- [ ] **A1 — one.** Dependencies: none.
  - Files: `src/a1.py`
- [ ] **A2 — two.** Dependencies: none.
  - Files: `src/a2.py`
- [ ] **A3 — three.** Dependencies: A2.
  - Files: `src/a3.py`
"""


async def _over_daemon_mcp(daemon: Daemon, agent: str, tool: str, arguments: dict) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {daemon.token}", "X-Coord-Agent": agent}
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(daemon.url + "/mcp", http_client=http)
        async with Client(transport) as client:
            return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("face", ["stdio backend", "daemon /mcp"])
def test_spec_status_after_a_prefixed_import_agrees_with_the_cli(
    daemon: Daemon, face: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package another agent holds is not claimable, whichever face asks: the MCP tool once
    looked the board's items up without the import's prefix and offered it as free."""
    from coord.mcp.backends import HttpBackend

    root = daemon.board_dir.parent
    (root / "docs").mkdir()
    (root / "docs" / "plan.md").write_text(PREFIXED_PLAN)

    def cli(*args: str, agent: str = "lead") -> Any:
        result = run_cli(*args, "--json", board_dir=daemon.board_dir, agent=agent, cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        return json.loads(result.stdout)

    cli("spec", "import", "docs/plan.md", "--prefix", "P.")
    assert cli("claim", "P.A2", agent="other")["agent"] == "other"
    by_cli = cli("spec", "status", "docs/plan.md", "--prefix", "P.")
    assert by_cli["claimable"] == ["A1"]

    if face == "stdio backend":
        monkeypatch.chdir(root)
        server = build_server(HttpBackend(daemon.board_dir), lambda ctx: "asker")

        async def go() -> Any:
            async with Client(server) as client:
                return await client.call_tool("spec_status", {"doc": "docs/plan.md"})

        result = run(go())
    else:
        result = run(_over_daemon_mcp(daemon, "asker", "spec_status", {"doc": "docs/plan.md"}))

    assert not result.is_error, result.structured_content
    by_mcp = result.structured_content
    assert by_mcp["claimable"] == by_cli["claimable"] == ["A1"]
    held = {p["id"]: p["board"] for p in by_mcp["packages"]}["A2"]
    assert held["state"] == "claimed" and held["claimed_by"] == "other"
    assert [p["board"] for p in by_mcp["packages"]] == [p["board"] for p in by_cli["packages"]]
