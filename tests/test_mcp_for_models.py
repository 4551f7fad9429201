"""coord's MCP tools as a model meets them: schemas that explain every argument, ids the way a
model writes them, refusals as the board's error object in the tools' own words, one item's
whole thread, and a 401 that says how to authenticate.

Driven by the official SDK client, in process and over real HTTP to a daemon.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import typing
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import test_mcp
from conftest import Daemon
from coord import model
from coord.core.board import Board
from test_mcp import in_process

board_dir, board = test_mcp.board_dir, test_mcp.board  # the fixtures, shared

SRC = Path(__file__).resolve().parent.parent / "src" / "coord"


def calls(board: Board, board_dir: Path, agent: str, *steps: tuple[str, dict]) -> list[Any]:
    """Each (tool, arguments) called in turn by one in-process client, the results in order."""

    async def go() -> list[Any]:
        async with Client(in_process(board, board_dir, agent)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]

    return asyncio.run(go())


def listed_tools(board: Board, board_dir: Path) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(in_process(board, board_dir, "a")) as client:
            return list((await client.list_tools()).tools)

    return asyncio.run(go())


def error_object(result: Any) -> dict[str, Any]:
    """The refusal as both channels carry it: they must agree, and be the board's object."""
    assert result.is_error
    text = result.content[0].text
    assert "pydantic" not in text and "Error executing tool" not in text, text
    refusal = json.loads(text)
    assert refusal == result.structured_content
    assert set(refusal) >= {"error", "message"}
    return refusal


# --- what the tool list tells a model ---------------------------------------------------------


def _enum_of(schema: dict[str, Any]) -> list[Any] | None:
    if "enum" in schema:
        return [v for v in schema["enum"] if v is not None]
    for option in schema.get("anyOf", []):
        if "enum" in option:
            return [v for v in option["enum"] if v is not None]
    return None


def test_every_parameter_is_described_and_kinds_are_an_enum(board: Board, board_dir: Path) -> None:
    listed = listed_tools(board, board_dir)
    assert len(listed) <= 15, [t.name for t in listed]  # the budget
    undescribed = [
        f"{t.name}.{name}"
        for t in listed
        for name, schema in t.input_schema.get("properties", {}).items()
        if len(schema.get("description") or "") < 12
    ]
    assert undescribed == []
    by_name = {t.name: t.input_schema["properties"] for t in listed}
    assert _enum_of(by_name["post"]["kind"]) == list(model.KINDS)
    assert _enum_of(by_name["claim"]["kind"]) == list(model.KINDS)


def test_the_clients_page_lists_exactly_the_tools(board: Board, board_dir: Path) -> None:
    """docs/clients.md's table of the tools, in words (docs/reference/mcp.md is generated)."""
    page = (SRC.parent.parent / "docs" / "clients.md").read_text()
    table = page.split("| tool | what it does |", 1)[1].split("\n\n", 1)[0]
    documented = {
        name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])
    }
    assert documented == {t.name for t in listed_tools(board, board_dir)}


def test_the_kind_enum_is_the_boards_own_list() -> None:
    from coord.mcp import tools

    assert typing.get_args(tools.Kind) == model.KINDS


def test_descriptions_carry_no_source_indentation(board: Board, board_dir: Path) -> None:
    texts = []
    for t in listed_tools(board, board_dir):
        texts.append((t.name, t.description or ""))
        for name, schema in t.input_schema.get("properties", {}).items():
            texts.append((f"{t.name}.{name}", schema.get("description") or ""))
    indented = [name for name, text in texts if text[:1].isspace() or re.search(r"\n {4}", text)]
    assert indented == []


# --- ids as a model writes them ---------------------------------------------------------------


def test_an_integer_id_a_string_id_and_a_package_id_all_work(board: Board, board_dir: Path) -> None:
    board.add("one", created_by="h")
    board.add("two", created_by="h")
    board.import_items([{"title": "three", "key": "R3"}], created_by="h")
    by_int, by_str, by_key, reply, after = calls(
        board,
        board_dir,
        "agent-a",
        ("claim", {"item": 1}),
        ("claim", {"item": "2"}),
        ("claim", {"item": "R3"}),
        ("reply", {"item": 1, "text": "on it"}),
        ("post", {"title": "after", "deps": ["R3", 1, "2"]}),
    )
    for result in (by_int, by_str, by_key, reply, after):
        assert not result.is_error, result.content[0].text
    assert [by_int.structured_content["id"], by_str.structured_content["id"]] == [1, 2]
    assert by_key.structured_content["key"] == "R3"
    assert board.get(1).claimed_by == "agent-a" and board.get(3).claimed_by == "agent-a"
    assert sorted(after.structured_content["deps"]) == [1, 2, 3]  # R3 is item 3


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("claim", {"item": -1}, "id"),
        ("claim", {"item": [1]}, "item"),
        ("claim", {"item": True}, "item"),  # not item 1
        ("claim", {"item": "no such id!"}, "id"),
        ("thread", {}, "item"),
    ],
)
def test_a_bad_id_is_the_boards_error_object(
    board: Board, board_dir: Path, tool: str, arguments: dict, field: str
) -> None:
    board.add("x", created_by="h")
    (result,) = calls(board, board_dir, "agent-a", (tool, arguments))
    refusal = error_object(result)
    assert refusal["error"] == "invalid_input"
    assert refusal["field"] == field
    assert "errors.pydantic.dev" not in refusal["message"]
    assert board.get(1).state == "pending"


def test_a_wrong_type_or_an_unknown_argument_is_the_boards_error_object(
    board: Board, board_dir: Path
) -> None:
    bad_priority, typo, unknown_kind = calls(
        board,
        board_dir,
        "agent-a",
        ("post", {"title": "x", "priority": "urgent"}),
        ("post", {"title": "x", "prority": 0}),
        ("post", {"title": "x", "kind": "epic"}),
    )
    assert error_object(bad_priority)["field"] == "priority"
    refusal = error_object(typo)
    assert refusal["error"] == "invalid_input" and "prority" in refusal["message"]
    assert "priority" in refusal["message"]  # the known ones are named
    assert error_object(unknown_kind)["field"] == "kind"
    assert board.list_items() == []  # nothing was posted


# --- refusals in the tools' words -------------------------------------------------------------


def test_refusals_name_the_tools_not_cli_commands(board: Board, board_dir: Path) -> None:
    board.add("held", created_by="h")
    board.claim(1, agent="other")
    held, missing, nothing, lost = calls(
        board,
        board_dir,
        "agent-a",
        ("claim", {"item": 1}),
        ("claim", {"item": 99}),
        ("claim", {}),
        ("heartbeat", {"item": 1, "token": 1}),
    )
    messages = [error_object(r)["message"] for r in (held, missing, nothing, lost)]
    assert [error_object(r)["error"] for r in (held, missing, nothing, lost)] == [
        "already_claimed",
        "not_found",
        "nothing_ready",
        "lease_lost",
    ]
    for message in messages:
        assert "coord " not in message.replace("coord board", ""), message
    assert "`claim` with no item" in messages[0]  # was: pick another (`coord next`)
    assert "`board`" in messages[1]  # was: `coord ls` lists them


def test_a_claim_to_take_again_names_the_claim_tool(board: Board, board_dir: Path) -> None:
    board.add("x", created_by="h")
    (won,) = calls(board, board_dir, "agent-a", ("claim", {"item": 1}))
    board.release(1, agent="agent-a", token=won.structured_content["token"])
    (lost,) = calls(
        board,
        board_dir,
        "agent-a",
        ("heartbeat", {"item": 1, "token": won.structured_content["token"]}),
    )
    assert "`claim` with item 1" in error_object(lost)["message"]


def _message_strings(path: Path) -> Iterator[str]:
    """The string constants of a module that are not docstrings: what its errors can say."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.value


def test_every_cli_command_a_refusal_can_name_has_its_mcp_words() -> None:
    """The board words its refusals for every face with CLI commands; the MCP face says each
    in tool words or, for a person's commands, leaves it. A new command in a message must be
    placed in one of the two, or a model would be told to type a shell command."""
    reaches_mcp = [
        *SRC.glob("core/*.py"),
        *SRC.glob("server/*.py"),
        *SRC.glob("spec/*.py"),
        *SRC.glob("storage/*.py"),
        *SRC.glob("client/*.py"),
        SRC / "model.py",
        SRC / "errors.py",
    ]
    named = {
        verb
        for path in reaches_mcp
        for text in _message_strings(path)
        for verb in re.findall(r"`coord ([a-z][a-z-]*)", text)
    }
    from coord.mcp import refusals

    assert named, "the scan found no command at all: it no longer reads the messages"
    placed = set(refusals.TOOL_WORDS) | refusals.PERSONS_COMMANDS
    assert named - placed == set()


def test_commands_are_said_as_tool_calls_with_their_item() -> None:
    from coord.mcp.refusals import in_tool_words

    said = in_tool_words(
        "claim it again (`coord claim R3`), pick another (`coord next`), ask (`coord reply`); "
        "check with `coord show` or `coord log`; start one with `coord serve`"
    )
    assert said == (
        "claim it again (`claim` with item R3), pick another (`claim` with no item), ask "
        "(`reply`); check with `thread` or `board`; start one with `coord serve`"
    )


def test_tool_words_name_tools_that_exist(board: Board, board_dir: Path) -> None:
    from coord.mcp import refusals

    names = {t.name for t in listed_tools(board, board_dir)}
    assert {tool for tool, _ in refusals.TOOL_WORDS.values()} <= names


# --- one item's thread ------------------------------------------------------------------------


def test_the_thread_tool_reads_one_item_with_its_replies_and_history(
    board: Board, board_dir: Path
) -> None:
    board.add("design question", created_by="h", body="which cache?")
    board.reply(1, agent="lead", body="use the LRU one, @agent-a")
    (thread, by_key_missing) = calls(
        board, board_dir, "agent-a", ("thread", {"item": 1}), ("thread", {"item": "R9"})
    )
    assert not thread.is_error
    item = thread.structured_content
    assert item["title"] == "design question" and item["body"] == "which cache?"
    assert [(r["author"], r["body"]) for r in item["replies"]] == [
        ("lead", "use the LRU one, @agent-a")
    ]
    assert [e["kind"] for e in item["history"]][:2] == ["created", "reply"]
    assert error_object(by_key_missing)["error"] == "not_found"


def test_claim_without_an_item_takes_the_best_ready_one(board: Board, board_dir: Path) -> None:
    board.add("low", created_by="h", priority=3)
    board.add("high", created_by="h", priority=0)
    won, both = calls(
        board, board_dir, "agent-a", ("claim", {}), ("claim", {"item": 1, "kind": "bug"})
    )
    assert won.structured_content["title"] == "high"
    refusal = error_object(both)
    assert refusal["error"] == "invalid_input" and refusal["field"] == "kind"


# --- over real HTTP to the daemon -------------------------------------------------------------


async def _daemon_calls(daemon: Daemon, agent: str, *steps: tuple[str, dict]) -> list[Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {daemon.token}", "X-Coord-Agent": agent}
    # a loaded machine can take longer than httpx's 5 s to answer one of several calls
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(daemon.url + "/mcp", http_client=http)
        async with Client(transport) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]


def test_over_the_daemon_ids_errors_and_threads_are_the_same(daemon: Daemon) -> None:
    board = Board.open(daemon.board_dir)
    board.add("held", created_by="h")
    board.claim(1, agent="other")
    board.reply(1, agent="other", body="halfway")
    board.add("free", created_by="h")
    board.add("checked", created_by="h")
    board.edit(3, agent="h", add_checks=["make test"])
    board.close()
    held, won, bad, thread, claimed, unchecked = asyncio.run(
        _daemon_calls(
            daemon,
            "http-agent",
            ("claim", {"item": 1}),
            ("claim", {"item": 2}),
            ("claim", {"item": {"id": 2}}),
            ("thread", {"item": "1"}),
            ("claim", {"item": "3"}),
            ("done", {"item": 3}),
        )
    )
    refusal = error_object(held)
    assert refusal["error"] == "already_claimed" and refusal["holder"] == "other"
    assert "`coord" not in refusal["message"]
    assert not won.is_error and won.structured_content["id"] == 2
    assert error_object(bad)["error"] == "invalid_input"
    assert [r["body"] for r in thread.structured_content["replies"]] == ["halfway"]
    # the daemon cannot run checks where the agent works: say what a tool call can do
    assert not claimed.is_error
    refusal = error_object(unchecked)
    assert refusal["error"] == "checks_required" and refusal["checks"] == ["make test"]
    assert "skip_checks_reason" in refusal["message"] and "`evidence`" not in refusal["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/mcp"),
        ("GET", "/v1/items"),  # a read through Starlette's routes
        ("POST", "/v1/claim-next"),  # the hot path, which writes its own answer
        ("GET", "/v1/events/stream"),  # the stream, refused before it starts
    ],
)
def test_every_401_says_how_to_authenticate(daemon: Daemon, method: str, path: str) -> None:
    """HTTP requires a challenge on 401 (RFC 9110), and without ``WWW-Authenticate`` the MCP
    Inspector takes a 401 for OAuth and starts a flow no coord daemon serves; a bearer
    challenge says what to send, on every route (only /mcp had it)."""
    request = urllib.request.Request(
        daemon.url + path,
        data=b"{}" if method == "POST" else None,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    assert (refused.value.headers.get("WWW-Authenticate") or "").startswith("Bearer")
    assert json.loads(refused.value.read())["error"] == "unauthorized"
