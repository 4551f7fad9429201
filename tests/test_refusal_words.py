"""Every argument a refusal suggests exists in the schema of the face that said it.

Real refusals, driven through each face: the HTTP API of a real daemon (judged against the
OpenAPI document it serves), the `coord` command as a subprocess (judged against its argparse
parser) and the MCP server through the official SDK client, over stdio and at the daemon's
/mcp (judged against ``tools/list``). Each refusal's suggestions are read off its words:

* a code span naming a command (`coord done 3 --skip-checks --reason TEXT`) must parse as that
  command line does (placeholders in capitals filled in), in every face that says one;
* any other code span that is a bare name (`evidence`) is an argument: over HTTP a field of the
  refused request's body, on the CLI nothing (the CLI takes flags, which are said with their
  dashes), over MCP a tool or an argument of the tool the span names or was called;
* a flag anywhere in a CLI refusal (--token T) must be one of the command's that was run, or
  of a command the refusal names;
* over MCP, "`tool` with NAME" names an argument of that tool.

Spans that are not suggestions: the item's own check commands and git's command lines.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon

FAILING_CHECK = "printf 'the-check-%s\\n' says-no; exit 1"  # its output is not its text
SPAN = re.compile(r"`([^`\n]+)`")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
FLAG = re.compile(r"(?<![\w`-])(--[a-z][a-z-]*)")
PLAN = """# Plan

**Reserved: P1 by @alice.**
- [ ] **P1 — parser.** Dependencies: none.
  - Files: `src/parser.py`
"""


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Daemon]:
    """A board with one of each refusal waiting: a's item whose check fails, b's claim, b's
    files (with an item and without), and nothing else ready but a package a design
    document reserves for alice."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs/plan.md").write_text(PLAN)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    board_dir = init_board_dir(repo)
    daemon = Daemon(board_dir).start()
    try:
        _ok(
            daemon,
            "POST",
            "/v1/items",
            {"agent": "h", "title": "checked", "checks": [FAILING_CHECK]},
        )
        _ok(daemon, "POST", "/v1/items/1/claim", {"agent": "a"})
        _ok(daemon, "POST", "/v1/items", {"agent": "h", "title": "b's", "files": ["src/y.py"]})
        _ok(daemon, "POST", "/v1/items/2/claim", {"agent": "b"})
        _ok(daemon, "POST", "/v1/reservations", {"agent": "b", "patterns": ["src/x.py"]})
        imported = run_cli(
            "spec", "import", "docs/plan.md", board_dir=board_dir, agent="lead", cwd=repo
        )
        assert imported.returncode == 0, imported.stderr
        yield daemon
    finally:
        daemon.stop()
        stop_leftover_daemon(board_dir)


def _ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def _spans(message: str) -> list[str]:
    return [s for s in SPAN.findall(message) if s != FAILING_CHECK and not s.startswith("git ")]


# --- the CLI's schema: its parser ------------------------------------------------------------


def _parses(line: str) -> str | None:
    """None if `line` (a coord command line) parses as the CLI does, else why not."""
    from coord.cli.main import build_parser

    words = shlex.split(line)[1:]
    words = [w if not re.fullmatch(r"[A-Z][A-Z_]*", w) else _placeholder(w) for w in words]
    try:
        build_parser().parse_args(words)
    except SystemExit:
        return f"`{line}` is not a command line coord takes"
    # argparse takes a prefix of a flag (--skip-check): a refusal must say the flag itself
    wrong = [w for w in words if w.startswith("--") and w not in _flags_of(words[0])]
    return f"`{line}`: no flag {', '.join(wrong)}" if wrong else None


def _placeholder(word: str) -> str:
    return {"ID": "3", "T": "4", "REF": "refs/coord/x"}.get(word, "x")


def _flags_of(command: str) -> set[str]:
    from coord.cli.main import build_parser

    parser = build_parser().command_parsers[command]
    return {flag for action in parser._actions for flag in action.option_strings}


def cli_problems(message: str, command: str) -> list[str]:
    problems = []
    named = {command}
    for span in _spans(message):
        if span.startswith("coord "):
            named.add(span.split()[1])
            if (why := _parses(span)) is not None:
                problems.append(why)
        elif NAME.match(span):
            problems.append(f"`{span}` is no flag of `coord {command}`")
    outside = SPAN.sub("", message)
    flags = set().union(*(_flags_of(c) for c in named if c in _commands()))
    problems += [
        f"{flag} is no flag of `coord {command}`"
        for flag in FLAG.findall(outside)
        if flag not in flags
    ]
    return problems


def _commands() -> set[str]:
    from coord.cli.main import COMMANDS

    return set(COMMANDS)


def test_every_cli_refusal_names_only_flags_and_commands_the_cli_takes(scene: Daemon) -> None:
    repo = scene.board_dir.parent
    said: list[tuple[str, str]] = []
    for agent, args in [
        ("a", ["done", "1", "--token", "1"]),
        ("a", ["claim", "2"]),
        ("a", ["claim", "P1"]),
        ("a", ["reserve", "src/x.py"]),
        ("a", ["reserve", "src/y.py"]),
        ("a", ["next"]),
        ("a", ["show", "99"]),
        ("c", ["heartbeat", "1", "--token", "9"]),
    ]:
        ran = run_cli(*args, board_dir=scene.board_dir, agent=agent, cwd=repo)
        assert ran.returncode != 0, (args, ran.stdout, ran.stderr)
        lines = [
            ln for ln in ran.stderr.splitlines() if ln.startswith("coord: ") and "$ " not in ln
        ]
        said.append((args[0], "\n".join(lines)))
    problems = [f"coord {c}: {p}\n    {m}" for c, m in said for p in cli_problems(m, c)]
    assert not problems, "\n".join(problems)
    # b's reservation with no item: asked in a direct message; b's item: on its thread
    assert "`coord send b TEXT`" in said[3][1]
    assert "`coord reply 2 TEXT`" in said[4][1]


# --- the HTTP API's schema: the OpenAPI document the daemon serves ---------------------------


def _body_fields(document: dict[str, Any], method: str, path: str) -> set[str]:
    operation = document["paths"][path][method.lower()]
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    fields = set(schema.get("properties", {}))
    return fields | {p["name"] for p in operation.get("parameters", [])}


def test_every_http_refusal_names_only_fields_of_the_request_it_refused(scene: Daemon) -> None:
    status, document = scene.request("GET", "/openapi.json")
    assert status == 200
    refused = [
        ("POST", "/v1/items/{id}/done", "/v1/items/1/done", {"agent": "a"}),
        (
            "POST",
            "/v1/items/{id}/done",
            "/v1/items/1/done",
            {"agent": "a", "evidence": [{"command": FAILING_CHECK, "exit_code": 1}]},
        ),
        ("POST", "/v1/items/{id}/claim", "/v1/items/2/claim", {"agent": "a"}),
        ("POST", "/v1/items/{id}/claim", "/v1/items/P1/claim", {"agent": "a"}),
        ("POST", "/v1/reservations", "/v1/reservations", {"agent": "a", "patterns": ["src/x.py"]}),
        ("POST", "/v1/reservations", "/v1/reservations", {"agent": "a", "patterns": ["src/y.py"]}),
        ("POST", "/v1/claim-next", "/v1/claim-next", {"agent": "a"}),
    ]
    problems = []
    for method, template, path, body in refused:
        status, answer = scene.request(method, path, body)
        assert status >= 400, (path, answer)
        fields = _body_fields(document, method, template)
        for span in _spans(answer["message"]):
            if span.startswith("coord "):
                why = _parses(span)
            elif NAME.match(span):
                why = None if span in fields else f"`{span}` is no field of {method} {template}"
            else:
                why = None
            if why:
                problems.append(f"{path}: {why}\n    {answer['message']}")
    assert not problems, "\n".join(problems)


# --- the MCP server's schema: tools/list -----------------------------------------------------

CALLS = [
    ("a", "done", {"item": 1, "token": 1}),
    ("a", "claim", {"item": 2}),
    ("a", "claim", {"item": "P1"}),
    ("a", "reserve_files", {"patterns": ["src/x.py"]}),
    ("a", "reserve_files", {"patterns": ["src/y.py"]}),
    ("a", "claim", {}),
    ("a", "thread", {"item": 99}),
    ("c", "heartbeat", {"item": 1, "token": 9}),
]


def mcp_problems(message: str, called: str, schemas: dict[str, set[str]]) -> list[str]:
    problems = []
    for span in _spans(message):
        if span.startswith("coord "):
            continue  # a person's command, left as it is (test_mcp_for_models holds them)
        if NAME.match(span) and span not in schemas and span not in schemas[called]:
            problems.append(f"`{span}` is neither a tool nor an argument of {called}")
    # "`post` with kind note, to b": each name before its value is an argument of the tool
    for tool, given in re.findall(
        r"`([a-z_]+)` with ((?:[a-z_]+(?: [^\s,;)]+)?(?:, )?)+)", message
    ):
        arguments = [pair.split()[0] for pair in given.split(", ")]
        if tool not in schemas:
            problems.append(f"`{tool}` is no tool")
        problems += [
            f"{name} is no argument of `{tool}`"
            for name in arguments
            if tool in schemas and name != "no" and name not in schemas[tool]
        ]
    return problems


async def _refusals(
    client: Client, as_agent: str
) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    tools = (await client.list_tools()).tools
    schemas = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
    said = []
    for agent, tool, arguments in CALLS:
        if agent != as_agent:
            continue
        result = await client.call_tool(tool, arguments)
        assert result.is_error, (tool, result)
        said.append((tool, result.structured_content["message"]))
    return schemas, said


def _stdio(scene: Daemon, agent: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "coord", "mcp"],
        env={**os.environ, "COORD_DIR": str(scene.board_dir), "COORD_AGENT": agent},
        cwd=str(scene.board_dir.parent),
    )


@pytest.mark.parametrize("face", ["stdio", "daemon /mcp"])
def test_every_mcp_refusal_names_only_tools_and_their_arguments(scene: Daemon, face: str) -> None:
    import httpx2 as httpx
    from mcp.client.streamable_http import streamable_http_client

    async def through(agent: str) -> Any:
        if face == "stdio":
            async with Client(_stdio(scene, agent)) as client:
                return await _refusals(client, agent)
        headers = {"Authorization": f"Bearer {scene.token}", "X-Coord-Agent": agent}
        async with httpx.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(scene.url + "/mcp", http_client=http)
            async with Client(transport) as client:
                return await _refusals(client, agent)

    problems = []
    for agent in ("a", "c"):
        schemas, said = asyncio.run(through(agent))
        problems += [f"{t}: {p}\n    {m}" for t, m in said for p in mcp_problems(m, t, schemas)]
        if agent == "a":
            assert "skip_checks_reason" in said[0][1]  # done's own argument, in both faces
            assert "`post` with kind note, to b" in said[3][1]
            assert "`reply` with item 2" in said[4][1]
    assert not problems, "\n".join(problems)


def test_the_readers_catch_a_wrong_name() -> None:
    """The test of the test: each face's reader refuses a suggestion its schema lacks."""
    assert cli_problems("pass `coord done 3 --skip-checks --reason TEXT`", "done") == []
    assert cli_problems("pass `coord done 3 --skip-check`", "done")
    assert cli_problems("pass it in `skip_checks`", "done")
    assert cli_problems("give it with --tokens T", "heartbeat")
    schemas = {"done": {"item", "skip_checks_reason"}, "claim": {"item"}}
    assert mcp_problems("call `done` with skip_checks_reason", "done", schemas) == []
    assert mcp_problems("pass `evidence` or `skip_checks`", "done", schemas)
    assert mcp_problems("call `done` with skip_checks", "claim", schemas)
    assert mcp_problems("call `claim` with item 3, kind task", "claim", schemas)


# --- nothing_ready says what holds the work back -----------------------------------------------


def test_nothing_ready_counts_what_holds_each_open_item_back(tmp_path: Path) -> None:
    """One of each reason, counted by the core once (the faces show its fields and words)."""
    from coord.core.board import Board
    from coord.errors import NothingReady

    board = Board.open(init_board_dir(tmp_path), create=True)
    try:
        with pytest.raises(NothingReady) as empty:
            board.claim_next(agent="a")
        assert "no open work is left" in empty.value.message
        assert empty.value.details["open"] == 0

        board.add("b's", created_by="h", files=["src/held.py"])  # 1
        board.claim(1, agent="b")
        board.add("waits on 1", created_by="h", deps=[1])  # 2
        board.add("same files", created_by="h", files=["src/held.py"])  # 3
        asked = board.add("asks", created_by="h")  # 4
        token = board.claim(asked.id, agent="c").token
        board.escalate(asked.id, agent="c", token=token, question="which?")
        board.add("a's own", created_by="h")  # 5
        board.claim(5, agent="a")
        board.add("done", created_by="h")  # 6
        board.done(board.claim(6, agent="a").item.id, agent="a", token=1)
        with pytest.raises(NothingReady) as held:
            board.claim_next(agent="a")
    finally:
        board.close()
    counts = held.value.details["held_back"]
    assert held.value.details["open"] == 5
    assert {k: v for k, v in counts.items() if v} == {
        "claimed": 1,
        "waiting_on_dependencies": 1,
        "files_held": 1,
        "needs_human": 1,
        "yours": 1,
    }
    said = held.value.message
    for words in (
        "5 open",
        "1 claimed by others",
        "1 waiting on dependencies",
        "1 needing files others hold",
        "1 waiting on a human's answer",
        "1 already yours",
        "wait for the others",
    ):
        assert words in said, said
    assert "every open item is claimed" not in said


def test_nothing_ready_names_a_document_reserved_package_in_every_face(scene: Daemon) -> None:
    """The issue's case: a's own claim, b's claim and a package a document reserves for alice
    hold everything back; each face says so with the counts."""
    expected = {"yours": 1, "claimed": 1, "reserved_in_document": 1}
    status, body = scene.request("POST", "/v1/claim-next", {"agent": "a"})
    assert status == 404 and body["error"] == "nothing_ready"
    assert {k: v for k, v in body["held_back"].items() if v} == expected
    assert body["open"] == 3
    from coord.core.rules import HELD_BACK_WORDS

    assert set(body["held_back"]) == set(HELD_BACK_WORDS)  # every reason has its words
    words = "1 reserved for someone else in a design document"
    assert words in body["message"]

    ran = run_cli("next", board_dir=scene.board_dir, agent="a", cwd=scene.board_dir.parent)
    assert ran.returncode == 4 and words in ran.stderr and "3 open" in ran.stderr

    async def claim() -> Any:
        async with Client(_stdio(scene, "alice")) as client:
            return await client.call_tool("claim", {"kind": "bug"})

    result = asyncio.run(claim())
    assert result.is_error and result.structured_content["error"] == "nothing_ready"
    said = result.structured_content["message"]
    assert "(kind=bug): no open item is of that kind" in said, said


# --- small ones: each said once, each client named ------------------------------------------


def test_done_shows_a_failed_checks_output_once(scene: Daemon) -> None:
    """It streams as the check runs; the refusal after it no longer repeats it."""
    ran = run_cli(
        "done",
        "1",
        "--token",
        "1",
        board_dir=scene.board_dir,
        agent="a",
        cwd=scene.board_dir.parent,
    )
    assert ran.returncode == 3
    assert ran.stderr.count("the-check-says-no") == 1, ran.stderr
    assert "exited 1" in ran.stderr and "--skip-checks --reason TEXT" in ran.stderr


def test_hook_help_names_every_client_it_answers(tmp_path: Path) -> None:
    from coord.fast.clients import HOOK_CLIENTS

    for args in (["hook", "--help"], ["--help"]):
        shown = run_cli(*args, board_dir=tmp_path / ".coord").stdout
        line = " ".join(shown.split())  # argparse wraps it
        assert f"answer a client's hook ({', '.join(HOOK_CLIENTS)})" in line, shown


def test_the_board_tool_lists_blocked_items_with_their_blockers(tmp_path: Path) -> None:
    from coord.core.board import Board
    from coord.fast import board_files
    from coord.mcp.backends import AsgiBackend
    from coord.mcp.tools import build_server
    from coord.server.app import create_app

    (tmp_path / "src").mkdir()
    board_dir = init_board_dir(tmp_path)
    board = Board.open(board_dir)
    try:
        board.add("b's", created_by="h", files=["src/held.py"])  # 1
        board.claim(1, agent="b")
        board.add("waits on 1", created_by="h", deps=[1])  # 2
        board.add("same files", created_by="h", files=["src/held.py"])  # 3
        board.add("free", created_by="h")  # 4
        token = board_files.read_token(board_dir)
        server = build_server(
            AsgiBackend(board_dir, create_app(board, token), token), lambda ctx: "a"
        )

        async def go() -> Any:
            async with Client(server) as client:
                return await client.call_tool("board", {})

        summary = asyncio.run(go()).structured_content
    finally:
        board.close()
    blocked = {i["id"]: i for i in summary["blocked"]}
    assert set(blocked) == {2, 3}
    assert blocked[2]["blocked_by"] == [1]
    assert blocked[3]["files_held_by"] == [{"agent": "b", "pattern": "src/held.py", "item": 1}]
    assert [i["id"] for i in summary["ready"]] == [4]
