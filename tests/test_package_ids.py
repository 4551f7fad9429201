"""A package id works wherever the CLI takes an item (issue 15 item 7): `--dep A3`,
`edit --no-dep A3`, `reserve --item A3`, `log --item A3` were refused as "not an item id"."""

from __future__ import annotations

import json

from conftest import Daemon, run_cli


def test_package_ids_where_the_cli_takes_an_item(daemon: Daemon) -> None:
    board = daemon.board_dir

    def cli(*args: str) -> dict:
        done = run_cli(*args, "--json", board_dir=board, agent="ann")
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    a3 = cli("add", "the schema", "--key", "A3")
    b = cli("add", "the queries", "--dep", "A3")
    assert b["deps"] == [a3["id"]]
    assert cli("edit", str(b["id"]), "--no-dep", "A3")["deps"] == []
    assert cli("edit", str(b["id"]), "--dep", "A3")["deps"] == [a3["id"]]
    cli("claim", "A3")
    held = cli("reserve", "db/schema.sql", "--item", "A3")
    assert held["reservations"][0]["item"] == a3["id"]
    logged = cli("log", "--item", "A3")
    assert logged["events"] and {e["item_id"] for e in logged["events"]} == {a3["id"]}
    missing = run_cli("add", "x", "--dep", "Z9", board_dir=board, agent="ann")
    assert missing.returncode == 5 and "on this board" in missing.stderr
