"""`coord migrate`: a SQLite board copied into PostgreSQL and back, table by table.

Real SQLite files, a fresh PostgreSQL database per test (``pg_support``), and the real
`coord` command as a subprocess for the command line. The seeded board has an item in every
state, dependencies, files, checks and their evidence, a question waiting on a human, work
packages of a design document (one reserved in it), replies, acknowledgements, inbox cursors,
live and deleted reservations, and the events of all of it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import Clock, Daemon, init_board_dir
from coord.core.board import Board
from coord.errors import CoordError
from coord.fast import board_files
from coord.model import WorktreeSpec
from coord.storage import transfer
from coord.storage.sqlite import SQLiteStorage
from pg_support import open_storage

pytestmark = pytest.mark.postgres
COORD = [sys.executable, "-m", "coord"]


def seed(board: Board) -> None:
    """A board with a row in every table and every state an item can be in."""
    board.access.issue("carol")
    board.access.revoke(board.access.issue("ci", machine=True)[0].id)
    first, second, claimed, closed, cancelled, waiting, checked = board.import_items(
        [
            {"ref": "a", "title": "pending", "labels": ["ui", "café"], "priority": 1},
            {"title": "after a", "deps": ["a"], "files": ["src/b.py"], "checks": ["make test"]},
            {"title": "claimed", "files": ["src/c/"], "body": "multi\nline"},
            {"title": "done"},
            {"title": "cancelled"},
            {"title": "waits on a human", "key": "Q1"},
            {"title": "done with evidence", "checks": ["true"]},
        ],
        created_by="lead",
    )
    board.add("for bob", kind="note", to="bob", created_by="lead")
    board.claim(claimed, agent="alice", lease_seconds=600)
    token = board.claim(closed, agent="bob").token
    board.done(closed, agent="bob", token=token, summary="ok", skip_checks="seeded board")
    board.cancel(cancelled, agent="lead", reason="a duplicate")
    token = board.claim(waiting, agent="carol").token
    board.escalate(waiting, agent="carol", token=token, question="which API?")
    token = board.claim(checked, agent="bob").token
    run = {"command": "true", "exit_code": 0, "output_tail": "ünïcode ✓"}
    board.done(checked, agent="bob", token=token, evidence=[run])
    board.reply(first, agent="bob", body="@alice have a look 🙂")
    board.ack(first, agent="alice")
    board.inbox("alice")  # her cursor moves
    board.reserve(["docs/"], agent="dave", lease_seconds=600, reason="rewriting")
    board.asks.ask(agent="bob", item=claimed, reason="may I have it? ✓")  # open
    deferred = board.asks.ask(agent="erin", paths=["docs/a.md"], reason="one line")
    board.asks.answer(deferred["id"], agent="dave", answer="defer", for_seconds=60, reason="soon")
    board.reserve(["tmp/scratch.txt"], agent="dave", shared=True)
    board.unreserve(["tmp/scratch.txt"], agent="dave")  # its id stays taken
    packages = [
        {"id": "P1", "title": "package one", "done": False, "line": 3, "files": ["src/p1.py"]},
        {"id": "P2", "title": "package two", "line": 7, "dependencies": ["P1"], "files": []},
        {"id": "P3", "title": "reserved", "line": 9, "files": [], "reserved_by": "erin"},
    ]
    board.import_packages("docs/plan.md", packages, created_by="lead", escalate_to="@lead")
    assert second  # dependencies and checks are on it
    # worktree items on their way to main: merged, queued (its files held by the queue), and
    # sent back for rework; the landing lease
    worktree = WorktreeSpec(base_commit="a" * 40, path_root="/repo/worktrees")
    merged, queued, rework = board.import_items(
        [{"title": "merged"}, {"title": "queued", "files": ["src/q.py"]}, {"title": "rework"}],
        created_by="lead",
    )
    for item in (merged, queued, rework):
        claim = board.landing.claim(item, agent="erin", worktree=worktree)
        board.landing.submit(item, agent="erin", token=claim.token, head="b" * 40)
    lease = board.landing.acquire(runner="runner", lease_seconds=600)
    board.landing.mark_merged(
        merged, runner="runner", landing_token=lease.token, item_token=1, commit="c" * 40
    )
    facts = {"reason": "conflict", "files": ["src/q.py"], "check_output": "CONFLICT ✗"}
    board.landing.needs_rework(
        rework, runner="runner", landing_token=lease.token, item_token=1, facts=facts
    )


def sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {
            t.name: conn.execute(
                f"SELECT {', '.join(t.columns)} FROM {t.name} ORDER BY {', '.join(t.key)}"
            ).fetchall()
            for t in transfer.TABLES
        }
    finally:
        conn.close()


def pg_rows(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every copied table, JSON decoded (PostgreSQL's driver decodes it) and keys in byte order."""

    def order(key: str) -> str:
        return f'{key} COLLATE "C"' if key in TEXT_KEYS else key

    with psycopg.connect(dsn) as conn:
        return {
            t.name: conn.execute(
                f"SELECT {', '.join(t.columns)} FROM {t.name} "
                f"ORDER BY {', '.join(map(order, t.key))}"
            ).fetchall()
            for t in transfer.TABLES
        }


TEXT_KEYS = {"pattern", "agent", "name"}
JSON_COLUMNS = {"labels", "checks", "evidence", "details", "rework", "provenance"}


def decoded(rows: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """SQLite's rows with their JSON text decoded, to compare with PostgreSQL's."""
    out = {}
    for table in transfer.TABLES:
        json_at = [i for i, c in enumerate(table.columns) if c in JSON_COLUMNS]
        out[table.name] = [
            tuple(
                json.loads(v) if i in json_at and isinstance(v, str) else v
                for i, v in enumerate(row)
            )
            for row in rows[table.name]
        ]
    return out


def sqlite_sequences(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {name: seq for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence")}
    finally:
        conn.close()


def pg_count(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        counts = {
            t.name: conn.execute(f"SELECT count(*) FROM {t.name}").fetchone()[0]  # type: ignore[index]
            for t in transfer.TABLES
        }
        counts["counters"] = conn.execute(
            "SELECT last_seq + last_item FROM board_counters"
        ).fetchone()[0]  # type: ignore[index]
    return counts


def migrate(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COORD, "migrate", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def pg_url(pg_dsn: str) -> str:
    """The fresh database as the URL a user types (``pg_dsn`` is libpq's key=value form)."""
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(pg_dsn)
    return (
        f"postgresql://{parts.get('user', 'postgres')}@{parts.get('host', '127.0.0.1')}:"
        f"{parts.get('port', 5432)}/{parts['dbname']}"
    )


@pytest.fixture
def seeded(tmp_path: Path, clock: Clock) -> Iterator[Path]:
    """The SQLite file of a seeded board (a board directory: ``tmp_path/.coord``)."""
    board_dir = init_board_dir(tmp_path)
    board = Board.open(board_dir, clock=clock)
    seed(board)
    board.close()
    yield board_dir / "board.db"


def test_every_table_of_both_schemas_is_copied_or_named_as_not_board_state(
    pg_url: str, tmp_path: Path
) -> None:
    """A table or column added to either schema without a place in the copy fails here."""
    SQLiteStorage(tmp_path / "b.db").close()
    conn = sqlite3.connect(tmp_path / "b.db")
    sqlite_tables = {
        name: [c[1] for c in conn.execute(f"PRAGMA table_info({name})")]
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    conn.close()
    with psycopg.connect(pg_url) as pg:
        pg_tables: dict[str, list[str]] = {}
        for table, column in pg.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema()"
        ):
            pg_tables.setdefault(table, []).append(column)
    for found in (sqlite_tables, pg_tables):
        assert set(found) - set(transfer.NOT_COPIED) == set(transfer.BY_NAME)
        for table in transfer.TABLES:
            assert sorted(found[table.name]) == sorted(table.columns), table.name


def test_a_seeded_board_copied_to_postgresql_reads_back_the_same(
    seeded: Path, pg_url: str, clock: Clock, tmp_path: Path
) -> None:
    before = sqlite_rows(seeded)
    report = transfer.copy_board(
        transfer.open_source(transfer.location(f"sqlite:{seeded}", "--from")),
        transfer.open_target(transfer.location(pg_url, "--to")),
    )
    assert all(before[t.name] for t in transfer.TABLES), "the seed leaves no table empty"
    assert {n: t["rows"] for n, t in report.tables.items()} == {
        n: len(r) for n, r in before.items()
    }
    # table by table, every column; JSON compared as what it means
    assert pg_rows(pg_url) == decoded(before)
    assert sqlite_rows(seeded) == before  # the source is untouched

    # through the backend, the board reads the same as its SQLite original
    original = Board.open(seeded.parent, clock=clock)
    moved = Board(open_storage(pg_url, clock=clock), clock=clock, repo_root=tmp_path)
    try:

        def view(board: Board) -> Any:
            items = [i.to_dict(clock()) for i in board.list_items(limit=1000)]
            return (
                items,
                [e.to_dict() for e in board.events(limit=1000)],
                board.reservations(),
                board.agents(),
                [board.show(i["id"]) for i in items],
                board.inbox("bob", peek=True),
            )

        assert view(moved) == view(original)

        # the counts `coord status` reads (kept by triggers, not copied) agree with the items
        def counts(board: Board) -> dict[str, int]:
            with board.storage.read() as tx:
                return tx.count_items_by_state()

        assert counts(moved) == counts(original)
        assert sum(counts(moved).values()) == len(before["items"])

        # new writes continue after the copied ones: item ids, events, replies, reservations
        sequences = sqlite_sequences(seeded)
        last_event = before["events"][-1][0]
        added = moved.add("after the move", created_by="lead")
        assert added.id == sequences["items"] + 1
        assert moved.last_seq() == last_event + 1
        reply = moved.reply(added.id, agent="bob", body="new")
        assert reply.id == sequences["replies"] + 1
        (held,) = moved.reserve(["new/file.py"], agent="frank")
        assert held.id == sequences["reservations"] + 1  # the deleted one's id is not reused
        token = moved.claim(added.id, agent="frank").token
        assert moved.done(added.id, agent="frank", token=token, skip_checks="t").state == "done"
        seqs = [e.seq for e in moved.events(limit=1000)]
        assert seqs == list(range(1, len(seqs) + 1))  # gapless across the move
    finally:
        original.close()
        moved.close()


def test_round_trip_sqlite_postgresql_sqlite_gives_the_same_rows(
    seeded: Path, pg_url: str, tmp_path: Path
) -> None:
    back = tmp_path / "back" / "board.db"
    back.parent.mkdir()
    there = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert there.returncode == 0, there.stderr
    again = migrate("--from", pg_url, "--to", f"sqlite:{back}", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["rows"] == sum(len(r) for r in sqlite_rows(seeded).values())
    # byte for byte, JSON text included (PostgreSQL normalises jsonb; the copy writes it back
    # as the SQLite backend does)
    assert sqlite_rows(back) == sqlite_rows(seeded)
    counters = ("items", "replies", "reservations")
    assert {n: sqlite_sequences(back)[n] for n in counters} == {
        n: sqlite_sequences(seeded)[n] for n in counters
    }
    # the exported file is a board: new ids go on after the copied ones
    board = Board(SQLiteStorage(back), repo_root=tmp_path)
    try:
        assert board.add("next", created_by="x").id == sqlite_sequences(seeded)["items"] + 1
        (held,) = board.reserve(["z.py"], agent="x")
        assert held.id == sqlite_sequences(seeded)["reservations"] + 1
    finally:
        board.close()


def test_the_command_reports_verified_counts_and_the_next_step(seeded: Path, pg_url: str) -> None:
    done = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert done.returncode == 0, done.stderr
    rows = sqlite_rows(seeded)
    for table in transfer.TABLES:
        assert f"  {table.name:<13} {len(rows[table.name]):>9} rows  sha256 " in done.stdout
    assert "verified" in done.stdout
    assert f"next: move {seeded} away" in done.stdout  # what to do next
    assert f"coord init --database {pg_url}" in done.stdout


def test_a_target_that_holds_a_board_is_refused_and_left_unchanged(
    seeded: Path, pg_url: str, tmp_path: Path
) -> None:
    assert migrate("--to", pg_url, cwd=seeded.parent.parent).returncode == 0
    before = pg_rows(pg_url)
    other = init_board_dir(tmp_path / "other")
    board = Board.open(other)
    board.add("another board's item", created_by="x")
    board.close()
    refused = migrate("--to", pg_url, cwd=other.parent)
    assert refused.returncode == 3, refused.stderr
    assert "already holds a board (items: " in refused.stderr
    assert "createdb" in refused.stderr and "Traceback" not in refused.stderr
    assert pg_rows(pg_url) == before


def test_a_database_of_something_else_is_refused_before_anything_is_created(
    seeded: Path, pg_url: str
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")  # the template's board, whatever its tables
        conn.execute("CREATE SCHEMA public")
        conn.execute("CREATE TABLE customers (id int)")
    refused = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert refused.returncode == 3, refused.stderr
    assert "not a coord board's (customers)" in refused.stderr
    with psycopg.connect(pg_url) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
    assert tables == ["customers"]


def test_an_exported_file_is_never_written_over(seeded: Path, pg_url: str, tmp_path: Path) -> None:
    assert migrate("--to", pg_url, cwd=seeded.parent.parent).returncode == 0
    refused = migrate("--from", pg_url, "--to", f"sqlite:{seeded}", cwd=tmp_path)
    assert refused.returncode == 3, refused.stderr
    assert "already holds a board" in refused.stderr
    stranger = tmp_path / "notes.txt"
    stranger.write_text("mine")
    refused = migrate("--from", pg_url, "--to", f"sqlite:{stranger}", cwd=tmp_path)
    assert refused.returncode == 3, refused.stderr
    assert stranger.read_text() == "mine"


def test_a_running_daemon_is_refused_with_coord_stop_named(seeded: Path, pg_url: str) -> None:
    repo = seeded.parent.parent
    daemon = Daemon(seeded.parent).start()
    try:
        refused = migrate("--to", pg_url, cwd=repo)
        assert refused.returncode == 1, refused.stderr
        assert f"a coord daemon serves the board {seeded.parent} at {daemon.url}" in refused.stderr
        assert "coord stop" in refused.stderr
        assert pg_count(pg_url) == dict.fromkeys([*transfer.BY_NAME, "counters"], 0)
    finally:
        daemon.stop()
    # stopped, the same command goes through
    assert migrate("--to", pg_url, cwd=repo).returncode == 0


def test_a_failure_halfway_leaves_the_target_empty(seeded: Path, pg_url: str) -> None:
    """A dependency on an item that is not there (a board damaged by hand): the items are
    copied, then the dependencies fail; the one transaction rolls everything back."""
    conn = sqlite3.connect(seeded)
    conn.execute("INSERT INTO deps (item_id, depends_on) VALUES (1, 999)")  # FKs off here
    conn.commit()
    conn.close()
    failed = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert failed.returncode == 1, failed.stderr
    assert "cannot copy table deps" in failed.stderr and "nothing was copied" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert pg_count(pg_url) == dict.fromkeys([*transfer.BY_NAME, "counters"], 0)


def test_a_failed_export_leaves_no_file(seeded: Path, pg_url: str, tmp_path: Path) -> None:
    assert migrate("--to", pg_url, cwd=seeded.parent.parent).returncode == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:  # a reservation of an item not there
        conn.execute("ALTER TABLE reservations DROP CONSTRAINT reservations_item_id_fkey")
        conn.execute(
            "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, created_at, "
            "expires_at) VALUES ('x', 'a', '', 1, 9999, 0, 1)"
        )
    target = tmp_path / "out.db"
    failed = migrate("--from", pg_url, "--to", f"sqlite:{target}", cwd=tmp_path)
    assert failed.returncode == 1, failed.stderr
    assert "cannot copy table reservations" in failed.stderr
    assert not target.exists() and not Path(f"{target}-wal").exists()


@pytest.mark.parametrize(
    ("to", "says"),
    [
        ("postgresql://u@host:port/db", "not a valid URL"),
        ("postgresql://u:secret@127.0.0.1/db", "holds a password"),
        ("postgresql://u@127.0.0.1:5432", "names no database"),
        ("mysql://u@h/db", "neither postgresql://"),
        ("board.db", "neither postgresql://"),
        ("sqlite:", "names no file"),
    ],
)
def test_a_target_that_does_not_parse_is_a_usage_error(seeded: Path, to: str, says: str) -> None:
    refused = migrate("--to", to, cwd=seeded.parent.parent)
    assert refused.returncode == 2, refused.stderr
    assert says in refused.stderr and "secret" not in refused.stderr


def test_an_unreachable_server_is_an_error_that_names_it(seeded: Path) -> None:
    refused = migrate("--to", "postgresql://postgres@127.0.0.1:1/coord", cwd=seeded.parent.parent)
    assert refused.returncode == 1, refused.stderr
    assert (
        "cannot reach the PostgreSQL database postgresql://postgres@127.0.0.1:1/coord"
        in refused.stderr
    )
    assert "Traceback" not in refused.stderr


def test_a_missing_driver_names_the_extra_to_install(seeded: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "no_driver"
    (blocker / "psycopg").mkdir(parents=True)
    (blocker / "psycopg" / "__init__.py").write_text(
        "raise ImportError('No module named psycopg')\n"
    )
    refused = migrate(
        "--to",
        "postgresql://postgres@127.0.0.1/x",
        cwd=seeded.parent.parent,
        env={"PYTHONPATH": str(blocker)},
    )
    assert refused.returncode == 1, refused.stderr
    assert "pip install 'coord[postgres]'" in refused.stderr and "Traceback" not in refused.stderr


def test_a_target_schema_newer_than_this_coord_is_refused(seeded: Path, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')"
        )
    refused = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert refused.returncode == 1, refused.stderr
    assert "newer coord (schema 999" in refused.stderr
    assert pg_count(pg_url) == dict.fromkeys([*transfer.BY_NAME, "counters"], 0)


def test_the_board_itself_is_not_a_target(seeded: Path) -> None:
    refused = migrate("--to", f"sqlite:{seeded}", cwd=seeded.parent.parent)
    assert refused.returncode == 2 and "names the board being copied" in refused.stderr


def test_a_copy_that_does_not_match_its_source_is_rolled_back(seeded: Path, tmp_path: Path) -> None:
    """The verification is not for show: a target that lost a row (here: a load that drops
    each table's last row) fails the comparison, and nothing is left."""
    from coord.storage.sqlite_copy import SQLiteTarget

    class Lossy(SQLiteTarget):
        def load(self, table: transfer.Table, rows: Any) -> None:
            super().load(table, list(rows)[:-1])

    target = tmp_path / "lossy.db"
    with pytest.raises(CoordError, match=r"the copy of table items does not match its source"):
        transfer.copy_board(
            transfer.open_source(transfer.location(f"sqlite:{seeded}", "--from")),
            Lossy(str(target)),
        )
    assert not target.exists()


def test_a_table_this_coord_does_not_know_is_refused_not_dropped(seeded: Path, pg_url: str) -> None:
    conn = sqlite3.connect(seeded)
    conn.execute("CREATE TABLE future_things (id INTEGER PRIMARY KEY)")
    conn.close()
    refused = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert refused.returncode == 1, refused.stderr
    assert "tables this coord does not copy (future_things)" in refused.stderr
    assert pg_count(pg_url) == dict.fromkeys([*transfer.BY_NAME, "counters"], 0)


@pytest.mark.skipif(
    "database" not in board_files.CONFIG_KEYS,
    reason="a board on PostgreSQL (config.json's database) arrives with branch pg-daemon",
)
def test_a_board_on_postgresql_exports_itself_by_default(
    seeded: Path, pg_url: str, tmp_path: Path
) -> None:
    assert migrate("--to", pg_url, cwd=seeded.parent.parent).returncode == 0
    team = tmp_path / "team"
    board_files.init_board_files(team / ".coord")
    board_files.write_config(
        team / ".coord", {**board_files.read_config(team / ".coord"), "database": pg_url}
    )
    exported = migrate("--to", f"sqlite:{tmp_path / 'out.db'}", cwd=team)
    assert exported.returncode == 0, exported.stderr
    assert sqlite_rows(tmp_path / "out.db") == sqlite_rows(seeded)


def test_an_empty_board_file_can_take_the_export(seeded: Path, pg_url: str, tmp_path: Path) -> None:
    """A checkout's fresh `coord init` board is empty: the way back may fill it."""
    assert migrate("--to", pg_url, cwd=seeded.parent.parent).returncode == 0
    fresh = init_board_dir(tmp_path / "fresh")
    back = migrate("--from", pg_url, "--to", f"sqlite:{fresh / 'board.db'}", cwd=fresh.parent)
    assert back.returncode == 0, back.stderr
    assert sqlite_rows(fresh / "board.db") == sqlite_rows(seeded)


def test_switch_moves_this_checkout_onto_the_database(seeded: Path, pg_url: str) -> None:
    """--switch: after the verified copy the checkout's commands run on PostgreSQL, and the
    old file is kept aside, whole."""
    repo = seeded.parent.parent
    before = sqlite_rows(seeded)
    done = migrate("--to", pg_url, "--switch", cwd=repo)
    assert done.returncode == 0, done.stderr
    kept = seeded.with_name("board.db.migrated")
    assert not seeded.exists() and kept.exists()
    assert sqlite_rows(kept) == before
    assert board_files.database_url(seeded.parent) == pg_url
    # a PostgreSQL board's settings keep no SQLite-only one (`synchronous` stayed behind)
    written = json.loads((seeded.parent / "config.json").read_text())
    assert written["database"] == pg_url and "synchronous" not in written, written
    assert "this checkout now uses the database" in done.stdout
    try:
        listed = subprocess.run(
            [*COORD, "ls", "--all", "--json"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert listed.returncode == 0, listed.stderr
        titles = {item["title"] for item in json.loads(listed.stdout)["items"]}
        assert {"pending", "claimed", "waits on a human"} <= titles
    finally:
        subprocess.run([*COORD, "stop"], cwd=repo, capture_output=True, timeout=60)


@pytest.mark.parametrize("extra", [["--from", "sqlite:{db}"], []])
def test_switch_is_refused_where_it_cannot_move_this_checkout(
    seeded: Path, pg_url: str, tmp_path: Path, extra: list[str]
) -> None:
    target = ["--to", f"sqlite:{tmp_path / 'out.db'}"] if not extra else ["--to", pg_url]
    args = [a.format(db=seeded) for a in extra]
    done = migrate(*target, *args, "--switch", cwd=seeded.parent.parent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--switch" in done.stderr and "nothing was copied" in done.stderr
    assert seeded.exists() and board_files.database_url(seeded.parent) is None
    assert not (tmp_path / "out.db").exists()


def test_a_sqlite_copy_of_a_sqlite_board_names_a_next_step_that_fits(
    seeded: Path, tmp_path: Path
) -> None:
    """`coord migrate --to sqlite:copy.db` on a SQLite board said to "take \"database\" out
    of .coord/config.json", a setting such a board has not: that step is an export's."""
    copy = tmp_path / "copy.db"
    done = migrate("--to", f"sqlite:{copy}", cwd=seeded.parent.parent)
    assert done.returncode == 0, done.stderr
    step = done.stdout.splitlines()[-1]
    assert '"database"' not in step, step
    assert step.startswith("next: a copy of the board as it stood") and f"{copy}" in step, step


def test_a_file_that_holds_a_board_is_refused_with_a_files_remedy(
    seeded: Path, tmp_path: Path
) -> None:
    """Refused for holding a board, a SQLite target was told `createdb NEWNAME`."""
    copy = tmp_path / "copy.db"
    assert migrate("--to", f"sqlite:{copy}", cwd=seeded.parent.parent).returncode == 0
    refused = migrate("--to", f"sqlite:{copy}", cwd=seeded.parent.parent)
    assert refused.returncode == 3, refused.stderr
    assert "createdb" not in refused.stderr and "a new file (another path)" in refused.stderr


# --- the verification reads every column, and no file is made through a link ----------------

TITLE_REWRITER = """
CREATE FUNCTION rewrite_title() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN NEW.title := upper(NEW.title); RETURN NEW; END $$;
CREATE TRIGGER rewrite_title BEFORE INSERT ON items
  FOR EACH ROW EXECUTE FUNCTION rewrite_title();
"""


def test_a_target_that_rewrites_what_it_is_given_fails_the_copy_and_keeps_nothing(
    seeded: Path, pg_url: str
) -> None:
    """Every key arrives, every count matches, but a trigger on the target changed every
    title: the copy is not the board. Found in a trial: migrate said "verified"."""
    from coord.storage.postgres import PostgresStorage

    PostgresStorage(pg_url).close()  # an empty board, as `coord init --database` leaves it
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(TITLE_REWRITER.encode())
    refused = migrate("--to", pg_url, cwd=seeded.parent.parent)
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    said = refused.stderr
    assert "the copy of table items does not match its source" in said, said
    assert "item 1" in said and "nothing was copied" in said, said
    assert "Traceback" not in said
    assert pg_count(pg_url) == dict.fromkeys([*transfer.BY_NAME, "counters"], 0)


def test_a_sqlite_target_that_rewrites_what_it_is_given_fails_too(
    seeded: Path, tmp_path: Path
) -> None:
    fresh = init_board_dir(tmp_path / "fresh")
    target = fresh / "board.db"
    conn = sqlite3.connect(target)
    conn.execute(
        "CREATE TRIGGER rewrite_title AFTER INSERT ON items BEGIN "
        "UPDATE items SET title = upper(title) WHERE id = NEW.id; END"
    )
    conn.close()
    refused = migrate("--to", f"sqlite:{target}", cwd=seeded.parent.parent)
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    assert "the copy of table items does not match its source" in refused.stderr
    conn = sqlite3.connect(target)
    assert conn.execute("SELECT count(*) FROM items").fetchone() == (0,)
    conn.close()


def test_the_report_digests_every_column_of_every_row(seeded: Path, pg_url: str) -> None:
    """The same digest on both sides whatever the backend's types (JSON, booleans, times):
    the PostgreSQL copy exported back reports what the SQLite board reported."""
    there = migrate("--to", pg_url, "--json", cwd=seeded.parent.parent)
    assert there.returncode == 0, there.stderr
    back = migrate(
        "--from",
        pg_url,
        "--to",
        f"sqlite:{seeded.parent / 'back.db'}",
        "--json",
        cwd=seeded.parent.parent,
    )
    assert back.returncode == 0, back.stderr
    one, two = json.loads(there.stdout)["tables"], json.loads(back.stdout)["tables"]
    assert {name: t["rows_sha256"] for name, t in one.items()} == {
        name: t["rows_sha256"] for name, t in two.items()
    }


def test_a_dangling_symlink_is_not_followed_to_make_the_file(seeded: Path, tmp_path: Path) -> None:
    """`--to sqlite:LINK` where LINK points at no file: the copy made the link's target,
    readable by everyone (0644). Refused, and nothing is created."""
    elsewhere = tmp_path / "elsewhere" / "planted.db"
    elsewhere.parent.mkdir()
    link = tmp_path / "copy.db"
    link.symlink_to(elsewhere)
    refused = migrate("--to", f"sqlite:{link}", cwd=seeded.parent.parent)
    assert refused.returncode != 0, refused.stdout
    assert "symbolic link" in refused.stderr and str(elsewhere) in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert not elsewhere.exists() and link.is_symlink()


def test_a_new_board_file_is_its_owners_alone(seeded: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    old = os.umask(0o022)
    try:
        done = migrate("--to", f"sqlite:{copy}", cwd=seeded.parent.parent)
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    assert copy.stat().st_mode & 0o777 == 0o600
