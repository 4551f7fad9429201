"""What you need in view (issue 15, items 2 and 13): `coord ls --mine` and `--holder NAME`,
`coord ls --state blocked`, `coord agents` that tells who is active and who is an agent, and
that can prune the ones long gone. Real daemon, real CLI processes."""

from __future__ import annotations

import json

from conftest import Daemon, run_cli


def _ids(result: object) -> list[int]:
    return [item["id"] for item in json.loads(result.stdout)["items"]]  # type: ignore[attr-defined]


def test_ls_mine_and_holder_list_what_an_agent_holds(daemon: Daemon) -> None:
    board = daemon.board_dir
    lines = "".join(json.dumps({"title": f"item {n}"}) + "\n" for n in range(1, 6))
    assert run_cli("import", "-", board_dir=board, agent="ann", input=lines).returncode == 0
    for item, agent in (("1", "claude-1"), ("2", "codex-1"), ("3", "claude-1")):
        assert run_cli("claim", item, board_dir=board, agent=agent).returncode == 0
    assert run_cli("done", "3", board_dir=board, agent="claude-1").returncode == 0

    assert _ids(run_cli("ls", "--mine", "--json", board_dir=board, agent="claude-1")) == [1]
    assert _ids(run_cli("ls", "--mine", "--json", board_dir=board, agent="codex-1")) == [2]
    holder = run_cli("ls", "--holder", "codex-1", "--json", board_dir=board)
    assert _ids(holder) == [2]
    finished = run_cli("ls", "--mine", "--state", "done", "--json", board_dir=board, agent="claude-1")
    assert _ids(finished) == [3]
    everything = run_cli("ls", "--mine", "--all", "--json", board_dir=board, agent="claude-1")
    assert _ids(everything) == [1, 3]
    table = run_cli("ls", "--holder", "claude-1", board_dir=board).stdout
    assert "item 1" in table and "item 2" not in table and "item 3" not in table

    # the same filter over HTTP, the one the CLI uses
    status, answer = daemon.request("GET", "/v1/items?holder=codex-1")
    assert status == 200 and [i["id"] for i in answer["items"]] == [2]
    status, answer = daemon.request("GET", "/v1/items?holder=not%20a%20name")
    assert status == 422 and answer["error"] == "invalid_input"

    # --mine needs a name, as every command that acts for one agent does
    nameless = run_cli("ls", "--mine", board_dir=board)
    assert nameless.returncode == 2 and "pass --as NAME or set COORD_AGENT" in nameless.stderr
    both = run_cli("ls", "--mine", "--holder", "x", board_dir=board, agent="claude-1")
    assert both.returncode == 2 and "not both" in both.stderr


def test_ls_state_blocked_lists_the_rows_ls_shows_as_blocked(daemon: Daemon) -> None:
    board = daemon.board_dir
    assert run_cli("add", "first", board_dir=board, agent="ann").returncode == 0
    assert run_cli("add", "second", "--dep", "1", board_dir=board, agent="ann").returncode == 0
    assert run_cli("add", "third", board_dir=board, agent="ann").returncode == 0
    shown = run_cli("ls", board_dir=board).stdout
    blocked_rows = [line for line in shown.splitlines() if " blocked " in line]
    assert len(blocked_rows) == 1 and "second" in blocked_rows[0]

    blocked = run_cli("ls", "--state", "blocked", "--json", board_dir=board)
    assert blocked.returncode == 0, blocked.stderr
    assert _ids(blocked) == [2]
    table = run_cli("ls", "--state", "blocked", board_dir=board).stdout
    assert "second" in table and "first" not in table
    # once its dependency is done it is no longer blocked
    assert run_cli("claim", "1", board_dir=board, agent="bob").returncode == 0
    assert run_cli("done", "1", board_dir=board, agent="bob").returncode == 0
    assert _ids(run_cli("ls", "--state", "blocked", "--json", board_dir=board)) == []


def test_every_listing_bounds_its_limit() -> None:
    """`/v1/inbox` took any `limit` (a page of a billion events); every listing states its
    largest page in the document, which the contract suite holds the server to."""
    from coord.server.openapi import OPENAPI

    found = []
    for path, operations in OPENAPI["paths"].items():
        for method, op in operations.items():
            params = {p["name"]: p["schema"] for p in op.get("parameters", [])}
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            fields = body.get("schema", {}).get("properties", {})
            for where in (params, fields):
                if "limit" in where:
                    found.append((method, path, where["limit"].get("maximum")))
    assert ("post", "/v1/inbox", 1000) in found
    assert all(maximum is not None and maximum <= 5000 for _, _, maximum in found), found
