"""Issue 16 items 2 and 3 across real daemons: LISTEN/NOTIFY between them, and the guard of a
checkout whose daemon keeps its mirror (or is gone).

Two checkouts (machines) of one repository on one PostgreSQL database, each with its own
``coord serve``; real HTTP on 127.0.0.1, real ``coord guard`` and hook processes. Each test
gets a fresh database; only that database's backends are ever terminated.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import psycopg.conninfo
import pytest

from conftest import Daemon
from pg_support import ADMIN_DSN
from test_guard_cli import guard
from test_hooks import NOT_ON_THE_EDIT_PATH, denied, fixture, refused_importing
from test_path_spellings import allowed_by_every_face, edit, refused_by_every_face
from test_pg_daemon import Checkout, url_of
from test_pg_mirror import eventually, mirrored

pytestmark = pytest.mark.postgres
NOT_ON_THE_TEAM_EDIT_PATH = (
    *NOT_ON_THE_EDIT_PATH,
    "psycopg",
    "psycopg_binary",
    "http",
    "coord.server",
    "coord.fast.daemon_proof",
)
READER_WAIT = 20.0  # below the poll of a listening daemon (follower.LISTENING_POLL_SECONDS)
# A reader not woken by the write would answer when its wait runs out (READER_WAIT); one woken
# answers at once. This bound only tells the two apart, far from either.
WOKEN_WITHIN = READER_WAIT / 2


@pytest.fixture
def pair(tmp_path: Path, pg_dsn: str) -> Iterator[tuple[Checkout, Daemon, Checkout, Daemon]]:
    """Two checkouts on one database, each with its daemon listening."""
    url = url_of(pg_dsn)
    one, two = Checkout(tmp_path / "laptop"), Checkout(tmp_path / "build-box")
    one.ok("init", "--database", url)
    two.ok("init", "--database", url)
    a, b = Daemon(one.board_dir).start(), Daemon(two.board_dir).start()
    try:
        for checkout in (one, two):  # the mirror is first written once the listener is up
            eventually(lambda c=checkout: (c.board_dir / "mirror.db").exists(), "mirror")
        yield one, a, two, b
    finally:
        a.stop()
        b.stop()


def listening_backends(dsn: str) -> list[int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND query = 'LISTEN coord_events' ORDER BY pid"
        ).fetchall()
    return [pid for (pid,) in rows]


def woken_by_a_write_through_the_other(reader: Daemon, writer: Daemon) -> None:
    """A long poll of ``reader`` already waiting returns the event of a write through
    ``writer`` when it is made, not when its wait runs out (a listening daemon does not poll
    in that time: only the NOTIFY can wake it)."""
    status, answer = reader.request("GET", "/v1/events?after=0&limit=1000")
    assert status == 200
    after = answer["last_seq"]
    got: dict[str, Any] = {}

    def read() -> None:
        got["answer"] = reader.request("GET", f"/v1/events?after={after}&wait={READER_WAIT}")

    thread = threading.Thread(target=read)
    thread.start()
    time.sleep(0.5)  # let the reader's request reach its wait: not a measurement
    assert thread.is_alive(), "the reader returned before anything was written"
    status, item = writer.request("POST", "/v1/items", {"agent": "ada", "title": "news"})
    assert status == 201, item
    thread.join(WOKEN_WITHIN)
    assert not thread.is_alive(), f"the reader was not woken: it waits out its {READER_WAIT:g} s"
    status, answer = got["answer"]
    assert status == 200
    assert [(e["kind"], e["item_id"]) for e in answer["events"]] == [("created", item["id"])]


def test_readers_of_one_daemon_are_woken_by_writes_through_another(pair) -> None:
    _one, a, _two, b = pair
    woken_by_a_write_through_the_other(b, a)
    woken_by_a_write_through_the_other(a, b)


def test_a_stream_of_one_daemon_gets_writes_through_another_as_they_happen(pair) -> None:
    """``GET /v1/events/stream`` on daemon B: a write through daemon A arrives as its frame.
    (The stream still looks at the board every 0.25 s on its own; that only the NOTIFY wakes
    a listening daemon's readers is the long poll's test above.)"""
    _one, a, _two, b = pair
    status, answer = b.request("GET", "/v1/events?after=0&limit=1000")
    stream = http.client.HTTPConnection("127.0.0.1", int(b.url.rsplit(":", 1)[1]), timeout=30)
    stream.request(
        "GET",
        f"/v1/events/stream?after={answer['last_seq']}&keepalive=60",
        headers={"Authorization": f"Bearer {b.token}"},
    )
    response = stream.getresponse()
    assert response.status == 200
    got: list[str] = []

    def read() -> None:
        while not any(line.startswith("data: ") for line in got):
            got.append(response.readline().decode().rstrip("\n"))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    time.sleep(0.5)  # the stream is open and waiting: not a measurement
    status, item = a.request("POST", "/v1/items", {"agent": "ada", "title": "news"})
    assert status == 201, item
    thread.join(WOKEN_WITHIN)
    assert not thread.is_alive(), f"the stream heard nothing: {got}"
    frame = json.loads(next(line for line in got if line.startswith("data: "))[6:])
    assert (frame["kind"], frame["item_id"]) == ("created", item["id"])
    stream.close()


def test_the_listener_reconnects_after_its_connection_is_terminated(pair, pg_dsn: str) -> None:
    one, a, two, b = pair
    before = eventually(lambda: listening_backends(pg_dsn), "listeners", within=20)
    assert len(before) == 2  # one per daemon
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for pid in before:  # this test's own database's backends only
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    after = eventually(
        lambda: (found := listening_backends(pg_dsn)) and len(found) == 2 and found,
        "both daemons listen again",
    )
    assert not set(after) & set(before)
    woken_by_a_write_through_the_other(b, a)
    # and the mirror follows the database again
    one.ok("reserve", "src/a.py", agent="alice")
    eventually(lambda: mirrored(two.board_dir) == [("alice", "src/a.py")], "mirrored")


def test_the_guard_on_a_team_board_refuses_a_path_held_through_the_other_daemon(pair) -> None:
    one, _a, two, _b = pair
    (two.root / "src").mkdir()
    one.ok("reserve", "src/a.py", agent="alice")
    eventually(lambda: mirrored(two.board_dir) == [("alice", "src/a.py")], "mirrored")
    refused = guard(two.board_dir, "src/a.py", agent="bob", cwd=two.root)
    assert refused.returncode == 2, refused.stderr
    assert "held by alice" in refused.stderr
    assert guard(two.board_dir, "src/b.py", agent="bob", cwd=two.root).returncode == 0


def test_a_stale_mirror_is_refreshed_by_the_daemon_when_the_guard_asks(pair) -> None:
    one, _a, two, b = pair
    one.ok("reserve", "src/a.py", agent="alice")
    eventually(lambda: mirrored(two.board_dir) == [("alice", "src/a.py")], "mirrored")
    status, answer = b.request("POST", "/v1/mirror:refresh", {})
    assert (status, answer["reservations"]) == (200, 1), answer
    age(two.board_dir, 60)  # as if the follower had lost the database for a minute
    refused = guard(two.board_dir, "src/a.py", agent="bob", cwd=two.root)
    assert refused.returncode == 2, refused.stderr
    assert "held by alice" in refused.stderr


def test_a_stale_mirror_with_no_daemon_refuses_every_edit_and_says_why(pair) -> None:
    _one, _a, two, b = pair
    (two.root / "src").mkdir()
    b.stop()
    age(two.board_dir, 60)
    refused = guard(two.board_dir, "src/free.py", agent="bob", cwd=two.root)
    assert refused.returncode == 2, refused.stderr
    assert "mirror" in refused.stderr and "60 s old" in refused.stderr
    assert "no coord daemon runs here" in refused.stderr and "coord serve" in refused.stderr
    # `coord serve` alone would hold an agent's shell; `coord status` starts no daemon and,
    # with none running, says nothing of the database: the way out is a command that starts
    # one, and doctor for the database
    assert "(`coord ls`)" in refused.stderr and "`coord doctor`" in refused.stderr
    assert "Traceback" not in refused.stderr
    client, result = edit("claude-edit", two.root, two.board_dir, "src/free.py")
    reason = denied(result, client)
    assert "mirror" in reason and "coord serve" in reason
    (two.board_dir / "mirror.db").unlink()
    missing = guard(two.board_dir, "src/free.py", agent="bob", cwd=two.root)
    assert missing.returncode == 2 and "missing" in missing.stderr, missing.stderr


def test_with_the_database_gone_the_guard_refuses_and_names_it(pair, pg_dsn: str) -> None:
    """The daemon runs but cannot read the database (here: this test's database dropped,
    its connections ended): once the mirror is stale, the guard's request to refresh it
    fails with the reason, and the edit is refused."""
    _one, _a, two, b = pair
    (two.root / "src").mkdir()
    name = psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())
    age(two.board_dir, 60)
    refused = guard(two.board_dir, "src/free.py", agent="bob", cwd=two.root)
    assert refused.returncode == 2, refused.stderr
    assert "60 s old" in refused.stderr and "could not refresh it" in refused.stderr
    assert name in refused.stderr and "cannot be reached" in refused.stderr
    status, answer = b.request("POST", "/v1/mirror:refresh", {})
    assert (status, answer["error"]) == (503, "database_unreachable"), answer


def test_a_held_path_is_refused_however_it_is_spelled_on_a_team_board(pair) -> None:
    """As tests/test_path_spellings.py on a SQLite board: ``..`` after a symlink is taken
    where the OS resolves it, a hard link is the held file, and every face refuses."""
    one, _a, two, _b = pair
    repo = two.root
    (repo / "src" / "sub").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("held\n")
    (repo / "deep").symlink_to("src/sub")
    (repo / "alias").symlink_to("src")
    one.ok("reserve", "src/a.py", agent="alice")
    eventually(lambda: mirrored(two.board_dir) == [("alice", "src/a.py")], "mirrored")
    refused_by_every_face(repo, two.board_dir, "deep/../a.py", "alice")
    refused_by_every_face(repo, two.board_dir, str(repo / "deep" / ".." / "a.py"), "alice")
    refused_by_every_face(repo, two.board_dir, "alias/a.py", "alice")
    refused_by_every_face(repo, two.board_dir, "src/sub/../a.py", "alice")
    os.link(repo / "src" / "a.py", repo / "b.py")  # a hard link: the held file by another name
    refused_by_every_face(repo, two.board_dir, "b.py", "alice")
    allowed_by_every_face(repo, two.board_dir, "deep/../b.py")


def test_the_guard_on_a_team_board_imports_no_driver_and_nothing_heavy(pair) -> None:
    """The guard and the edit hook read the mirror with the standard library: not the
    driver, not the server, not even an HTTP client while the mirror is fresh."""
    one, _a, two, _b = pair
    one.ok("reserve", "src/auth", agent="alice")
    eventually(lambda: mirrored(two.board_dir) == [("alice", "src/auth")], "mirrored")
    edit_input = json.dumps(fixture("claude/pre_tool_use_edit.json", two.root))
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    for argv, stdin in (
        (["hook", "claude", "PreToolUse"], edit_input),
        (["guard", "--as", "bob", "src/auth/session.py"], None),
    ):
        imported = refused_importing(argv, stdin, env, two.root)
        assert "coord.fast.mirror" in imported  # the listing is what it claims to be
        heavy = {
            m
            for m in imported
            if any(m == n or m.startswith(n + ".") for n in NOT_ON_THE_TEAM_EDIT_PATH)
        }
        assert not heavy, (argv[0], sorted(heavy))


def age(board_dir: Path, seconds: float) -> None:
    """Make the mirror's stamp ``seconds`` old (the daemon that would refresh it is gone)."""
    with contextlib.closing(sqlite3.connect(board_dir / "mirror.db")) as conn, conn:
        conn.execute("UPDATE stamp SET taken_at = ?", (time.time() - seconds,))
