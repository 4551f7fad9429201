"""Daemons on a team board: several checkouts (machines) serve one PostgreSQL database.

Real `coord` processes throughout: `coord init --database`, the daemon the CLI starts on
demand or `coord serve`, CLI commands through it, `coord status` and `coord stop`. Each test
gets a fresh database (``pg_support``); skipped without a server, failed under CI=true.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, run_cli, stop_leftover_daemon

pytestmark = pytest.mark.postgres


def url_of(dsn: str) -> str:
    """The postgresql:// URL of a pg_support connection string (config takes URLs)."""
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(dsn)
    user = parts.get("user") or "postgres"
    return (
        f"postgresql://{user}@{parts.get('host') or '127.0.0.1'}:{parts.get('port') or 5432}/"
        f"{parts['dbname']}"
    )


class Checkout:
    """One machine's checkout of the repository: its own .coord/, token and daemon."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        self.root = root
        self.board_dir = root / ".coord"

    def cli(self, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, board_dir=self.board_dir, agent=agent, cwd=self.root)

    def ok(self, *args: str, agent: str | None = None) -> Any:
        run = self.cli(*args, "--json", agent=agent)
        assert run.returncode == 0, (args, run.stdout, run.stderr)
        return json.loads(run.stdout)

    def config(self) -> dict[str, Any]:
        return json.loads((self.board_dir / "config.json").read_text())


@pytest.fixture
def team(tmp_path: Path, pg_dsn: str) -> Iterator[tuple[str, Checkout, Checkout]]:
    url = url_of(pg_dsn)
    one, two = Checkout(tmp_path / "laptop"), Checkout(tmp_path / "build-box")
    yield url, one, two
    for checkout in (one, two):
        if checkout.board_dir.is_dir():
            stop_leftover_daemon(checkout.board_dir)


def test_init_database_then_the_cli_works_through_an_on_demand_daemon(team) -> None:
    url, one, _ = team
    made = one.ok("init", "--database", url)
    assert made["database"] == url and made["schema_version"] >= 2
    assert one.config()["database"] == url
    assert not (one.board_dir / "board.db").exists()  # the board is the database
    item = one.ok("add", "write the parser")
    claim = one.ok("claim", str(item["id"]), agent="ada")
    assert claim["item"]["state"] == "claimed"
    done = one.ok("done", str(item["id"]), agent="ada")
    assert done["state"] == "done"
    listed = one.ok("ls", "--all")
    assert [(i["id"], i["state"]) for i in listed["items"]] == [(item["id"], "done")]


def test_two_checkouts_share_one_board_and_a_claim_blocks_across_daemons(team) -> None:
    url, one, two = team
    one.ok("init", "--database", url)
    two.ok("init", "--database", url)
    a = Daemon(one.board_dir).start()
    b = Daemon(two.board_dir).start()
    try:
        item = one.ok("add", "one task for the team")
        seen = two.ok("show", str(item["id"]))
        assert seen["title"] == "one task for the team"
        assert one.ok("claim", str(item["id"]), agent="ada")["item"]["claimed_by"] == "ada"
        refused = two.cli("claim", str(item["id"]), "--json", agent="bob")
        assert refused.returncode == 3, refused.stdout
        assert json.loads(refused.stdout)["error"] == "already_claimed"
        assert "ada" in json.loads(refused.stdout)["message"]
    finally:
        a.stop()
        b.stop()
