"""A listing that was cut says so and how to see the rest (issue 15 item 2): `coord ls`
showed 100 items of 5,013 and `coord log` 500 events, with no word of the rest."""

from __future__ import annotations

import json

from conftest import Daemon, run_cli


def test_ls_and_log_say_when_they_are_cut_and_all_lists_everything(daemon: Daemon) -> None:
    board = daemon.board_dir
    lines = "".join(json.dumps({"title": f"item {n}"}) + "\n" for n in range(1, 8))
    assert run_cli("import", "-", board_dir=board, agent="ann", input=lines).returncode == 0
    page = json.loads(run_cli("ls", "--limit", "3", "--json", board_dir=board).stdout)
    assert [i["id"] for i in page["items"]] == [1, 2, 3] and page["next"] == 3
    last = json.loads(run_cli("ls", "--after", "6", "--json", board_dir=board).stdout)
    assert [i["id"] for i in last["items"]] == [7] and last["next"] is None
    shown = run_cli("ls", "--limit", "3", board_dir=board).stdout
    assert "showing 3 items; more after 3: `coord ls --after 3`" in shown
    whole = run_cli("ls", "--limit", "1000", board_dir=board).stdout
    assert "showing" not in whole  # nothing was cut
    everything = json.loads(run_cli("ls", "--all", "--json", board_dir=board).stdout)
    assert len(everything["items"]) == 7 and everything["next"] is None
    status, answer = daemon.request("GET", "/v1/items?limit=1000")
    assert status == 200 and answer["next"] is None  # the largest page still works
    log = run_cli("log", "--limit", "2", board_dir=board).stdout
    assert "showing 2 events, 1 to 2; more after 2: `coord log --after 2`" in log
    assert "showing" not in run_cli("log", "--limit", "7", board_dir=board).stdout
