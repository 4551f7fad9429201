"""Daemons on a team board: several checkouts (machines) serve one PostgreSQL database.

Real `coord` processes throughout: `coord init --database`, the daemon the CLI starts on
demand or `coord serve`, CLI commands through it, `coord status` and `coord stop`. Each test
gets a fresh database (``pg_support``); skipped without a server, failed under CI=true.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


@pytest.fixture
def served(team) -> Iterator[tuple[str, Checkout, Checkout, Daemon, Daemon]]:
    """Two checkouts on one team board, each served by its own `coord serve`."""
    url, one, two = team
    one.ok("init", "--database", url)
    two.ok("init", "--database", url)
    a = Daemon(one.board_dir).start()
    try:
        b = Daemon(two.board_dir).start()
    except BaseException:
        a.stop()
        raise
    yield url, one, two, a, b
    a.stop()
    b.stop()


def _serve(checkout: Checkout, *args: str, stderr: Any = subprocess.DEVNULL) -> Any:
    """`coord serve ARGS` for the checkout, once it has written daemon.json."""
    process = subprocess.Popen(
        [sys.executable, "-m", "coord", "serve", *args],
        env={**os.environ, "COORD_DIR": str(checkout.board_dir)},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    deadline = time.monotonic() + 20
    while not (checkout.board_dir / "daemon.json").exists() and time.monotonic() < deadline:
        assert process.poll() is None, "coord serve exited"
        time.sleep(0.05)
    return process


def test_init_database_then_the_cli_works_through_an_on_demand_daemon(team) -> None:
    url, one, _ = team
    made = one.ok("init", "--database", url)
    assert made["database"] == url and made["schema_version"] >= 2
    assert one.config()["database"] == url
    assert not (one.board_dir / "board.db").exists()  # the board is the database
    for again in (("init", "--database", url), ("init",)):  # init again: the same team board
        made = one.ok(*again)
        assert (made["created"], made["database"]) == (False, url)
        assert not (one.board_dir / "board.db").exists()
    item = one.ok("add", "write the parser")
    claim = one.ok("claim", str(item["id"]), agent="ada")
    assert claim["item"]["state"] == "claimed"
    done = one.ok("done", str(item["id"]), agent="ada")
    assert done["state"] == "done"
    listed = one.ok("ls", "--all")
    assert [(i["id"], i["state"]) for i in listed["items"]] == [(item["id"], "done")]


def test_two_checkouts_share_one_board_and_a_claim_blocks_across_daemons(served) -> None:
    _, one, two, _, _ = served
    item = one.ok("add", "one task for the team")
    seen = two.ok("show", str(item["id"]))
    assert seen["title"] == "one task for the team"
    assert one.ok("claim", str(item["id"]), agent="ada")["item"]["claimed_by"] == "ada"
    refused = two.cli("claim", str(item["id"]), "--json", agent="bob")
    assert refused.returncode == 3, refused.stdout
    assert json.loads(refused.stdout)["error"] == "already_claimed"
    assert "ada" in json.loads(refused.stdout)["message"]


def test_each_daemon_sees_the_other_and_stop_stops_only_this_machines(served) -> None:
    url, one, two, a, b = served
    seen = one.ok("status")
    assert seen["daemon"]["storage"] == {"backend": "postgresql", "database": url}
    others = seen["daemon"]["others"]
    assert [(o["pid"], o["board_dir"]) for o in others] == [
        (b.process.pid, str(two.board_dir.resolve()))
    ]
    text = one.cli("status").stdout
    assert f"PostgreSQL {url}" in text and f"pid {b.process.pid}" in text
    assert "others:  1 more daemon serves this board:" in text, text

    stopped = one.cli("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped this machine's daemon" in stopped.stdout
    assert "1 other daemon goes on serving it" in stopped.stdout
    assert a.process.wait(10) == 0
    assert b.process.poll() is None  # the other machine's daemon serves on
    assert two.ok("add", "still served")["title"] == "still served"
    # the stopped daemon left the registry at once, not after its heartbeats lapsed
    assert two.ok("status")["daemon"]["others"] == []


def test_a_daemon_on_a_team_board_never_idles_out(team) -> None:
    url, one, _ = team
    one.ok("init", "--database", url)
    process = _serve(one, "--idle-exit", "1")
    try:
        # a SQLite board's daemon started this way exits after 1 s idle (test_idle_exit.py)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(4)
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("postgresql://postgres:s3cret-pw@127.0.0.1:5432/x", "holds a password"),
        ("postgresql://postgres@127.0.0.1/x?password=s3cret-pw", "holds a password"),
        ("mysql://root@127.0.0.1/x", "postgresql://"),
        ("postgresql://postgres@127.0.0.1:notaport/x", "not a valid URL"),
        ("postgresql://postgres@127.0.0.1:5432/", "names no database"),
    ],
)
def test_a_bad_database_url_is_refused_and_changes_nothing(team, given, said) -> None:
    _, one, _ = team
    one.ok("init")  # a SQLite board already there
    before = (one.board_dir / "config.json").read_bytes()
    for command in (["init", "--database", given], ["serve", "--database", given]):
        refused = one.cli(*command)
        assert refused.returncode == 2, refused.stderr
        assert said in refused.stderr and "Traceback" not in refused.stderr
        assert "s3cret-pw" not in refused.stdout + refused.stderr
    assert (one.board_dir / "config.json").read_bytes() == before


def test_a_password_written_into_config_by_hand_is_refused_without_repeating_it(team) -> None:
    url, one, _ = team
    one.ok("init", "--database", url)
    config = one.config()
    config["database"] = url.replace("postgres@", "postgres:s3cret-pw@")
    (one.board_dir / "config.json").write_text(json.dumps(config))
    refused = one.cli("ls", "--json")
    assert refused.returncode == 2
    answer = json.loads(refused.stdout)
    assert answer["field"] == "database" and "PGPASSWORD" in answer["message"]
    assert "s3cret-pw" not in refused.stdout + refused.stderr


def test_one_checkout_serves_one_board(team, tmp_path: Path) -> None:
    url, one, two = team
    one.ok("init", "--database", url)
    before = (one.board_dir / "config.json").read_bytes()
    other = url.rsplit("/", 1)[0] + "/some_other_board"
    for command in (["init", "--database", other], ["serve", "--database", other]):
        refused = one.cli(*command)
        assert refused.returncode == 2, refused.stderr
        assert "names another database" in refused.stderr
    assert (one.board_dir / "config.json").read_bytes() == before
    # a SQLite board is not silently replaced by a team board
    two.ok("init")
    refused = two.cli("init", "--database", url, "--json")
    assert refused.returncode == 2
    assert "SQLite file" in json.loads(refused.stdout)["message"]
    assert "database" not in two.config()


def test_serve_database_records_the_board_where_config_names_none(team) -> None:
    url, one, _ = team
    one.board_dir.mkdir()
    (one.board_dir / "token").write_text("t0ken\n")
    (one.board_dir / "config.json").write_text("{}")
    # a database that cannot be reached is not recorded
    refused = one.cli("serve", "--database", "postgresql://postgres@127.0.0.1:1/nothing")
    assert refused.returncode == 1 and "cannot be reached" in refused.stderr
    assert one.config() == {}
    process = _serve(one, "--database", url, stderr=subprocess.PIPE)
    try:
        assert one.config()["database"] == url
        assert one.ok("add", "through serve --database")["id"] == 1
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert "recorded database" in err.decode()


def test_the_library_opens_a_team_board(team) -> None:
    from coord.core.board import Board
    from coord.storage.postgres import PostgresStorage

    url, one, two = team
    one.ok("init", "--database", url)
    two.ok("init", "--database", url)
    board = Board.open(two.board_dir)
    try:
        assert isinstance(board.storage, PostgresStorage)
        item = board.add("from the library", created_by="script")
    finally:
        board.close()
    # the other checkout's CLI, through its own daemon, sees it
    assert one.ok("show", str(item.id))["title"] == "from the library"


def _admin(sql: str, *params: Any) -> None:
    import psycopg

    from pg_support import ADMIN_DSN

    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(sql.encode(), params)


def _database_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def _cut_off(name: str) -> None:
    """The database refuses new connections and its open ones are ended, as in an outage."""
    import psycopg

    from pg_support import ADMIN_DSN

    _admin(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchall()
            if not left:
                return
            time.sleep(0.05)


def _raw(daemon: Daemon, path: str) -> tuple[int, Any, Any]:
    request = urllib.request.Request(daemon.url + path)
    request.add_header("Authorization", f"Bearer {daemon.token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers, json.loads(err.read())


@pytest.fixture
def alone(team) -> Iterator[tuple[str, Checkout, Daemon]]:
    """One checkout on a team board, served, with one item; the database (its name) may be
    cut off by the test: it is let in again after."""
    url, one, _ = team
    one.ok("init", "--database", url)
    daemon = Daemon(one.board_dir).start()
    name = _database_of(url)
    try:
        assert one.ok("add", "before")["id"] == 1
        yield name, one, daemon
    finally:
        _admin(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        daemon.stop()


def test_an_unreachable_database_is_a_503_and_the_daemon_reconnects_by_itself(alone) -> None:
    name, one, daemon = alone
    _cut_off(name)
    for path in ("/v1/items", "/v1/items/1", "/v1/status", "/v1/health"):
        status, headers, body = _raw(daemon, path)
        assert status == 503, (path, status, body)
        assert body["error"] == "database_unreachable", body
        assert headers.get("Retry-After") == "2"
        assert name in body["message"] and "try again" in body["message"]
    assert _raw(daemon, "/v1/health")[2]["ok"] is False
    failed = one.cli("add", "during the outage", "--json")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert json.loads(failed.stdout)["error"] == "database_unreachable"

    _admin(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    # the same daemon, never restarted, answers again
    assert _raw(daemon, "/v1/health")[0] == 200
    assert one.ok("add", "after the outage")["id"] == 2
    assert daemon.process.poll() is None


def test_a_terminated_connection_is_replaced_without_failing_a_request(alone) -> None:
    name, one, daemon = alone
    _cut_off(name)  # every connection of the daemon ended (pg_terminate_backend) ...
    _admin(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")  # ... the server answers
    # the daemon's kept connection is dead; the request runs on a new one, not a 503
    assert _raw(daemon, "/v1/items/1")[0] == 200
    assert one.ok("add", "after")["id"] == 2


def test_session_start_and_stop_hooks_work_on_a_team_board(team) -> None:
    from test_hooks import fixture, hook, name_of

    url, one, two = team
    one.ok("init", "--database", url)
    two.ok("init", "--database", url)
    start = fixture("claude/session_start.json", one.root)
    me = name_of("claude", start)
    item = two.ok("add", "rework the session store")  # posted on the other machine
    one.ok("claim", str(item["id"]), agent=me)
    started = hook("claude", "SessionStart", start, board_dir=one.board_dir, cwd=one.root)
    assert started.returncode == 0, started.stderr
    context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"You are coord agent `{me}`" in context
    assert f'#{item["id"]} "rework the session store"' in context
    stop = fixture("claude/stop.json", one.root)
    stopped = hook("claude", "Stop", stop, board_dir=one.board_dir, cwd=one.root)
    assert stopped.returncode == 0 and "Traceback" not in stopped.stderr, stopped.stderr


def test_a_killed_daemon_drops_out_of_the_others_status(served) -> None:
    _, one, _, _, b = served
    assert [o["pid"] for o in one.ok("status")["daemon"]["others"]] == [b.process.pid]
    b.kill9()  # no goodbye: its row stays until its heartbeats lapse
    deadline = time.monotonic() + 60
    while one.ok("status")["daemon"]["others"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert one.ok("status")["daemon"]["others"] == []


def test_a_daemon_started_after_a_killed_one_is_its_checkouts_only_row(served) -> None:
    """The checkout's lock allows one daemon: the next one's first beat drops the row of the
    one killed before it, which status and stop had counted as another live daemon."""
    _, one, two, _, b = served
    b.kill9()
    assert two.ok("ls") is not None  # starts this checkout's next daemon on demand
    try:
        others = one.ok("status")["daemon"]["others"]
        assert [o["pid"] for o in others] != [b.process.pid] and len(others) == 1, others
        mine = two.ok("status")["daemon"]
        assert [o["pid"] for o in mine["others"]] == [one.ok("status")["daemon"]["pid"]]
    finally:
        two.cli("stop")


def test_doctor_checks_the_team_boards_database(team) -> None:
    url, one, _ = team
    one.ok("init", "--database", url)
    name = _database_of(url)

    def board_finding() -> dict[str, Any]:
        run = one.cli("doctor", "--json")
        found = json.loads(run.stdout)["findings"]
        return next(f for f in found if f["check"] == "board")

    assert board_finding()["status"] == "ok"
    _admin(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
    try:
        finding = board_finding()
        assert finding["status"] == "fix" and "cannot be reached" in finding["message"]
    finally:
        _admin(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:  # as if made by an older coord
        conn.execute("DELETE FROM schema_migrations WHERE version > 1")
    finding = board_finding()
    assert finding["status"] == "fix" and "has schema 1" in finding["message"]


def test_without_the_driver_a_team_board_says_what_to_install(team, tmp_path: Path) -> None:
    url, one, two = team
    one.ok("init", "--database", url)
    blocked = tmp_path / "no-driver"
    blocked.mkdir()
    (blocked / "psycopg.py").write_text(
        "raise ImportError(\"No module named 'psycopg'\", name='psycopg')\n"
    )
    env = {"PYTHONPATH": str(blocked)}
    for checkout, args in ((one, ("ls",)), (two, ("init", "--database", url))):
        run = run_cli(*args, board_dir=checkout.board_dir, cwd=checkout.root, env=env)
        assert run.returncode == 1, run.stderr
        assert "pip install 'coord[postgres]'" in run.stderr and "Traceback" not in run.stderr
    assert not two.board_dir.exists()  # refused before anything was written


def _terminate(pid: int) -> None:
    """End one server process (``pg_terminate_backend``) and wait until it is gone."""
    import psycopg

    from pg_support import ADMIN_DSN

    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                return
            time.sleep(0.02)


def test_a_connection_lost_at_commit_says_the_outcome_is_unknown(pg_dsn: str) -> None:
    from coord.errors import DatabaseUnreachable
    from coord.storage.postgres import PostgresStorage

    storage = PostgresStorage(pg_dsn)
    try:
        with pytest.raises(DatabaseUnreachable) as refused, storage.write() as tx:
            tx.touch_agent("ada", 1.0)
            _terminate(tx.conn.info.backend_pid)  # type: ignore[attr-defined]
        assert refused.value.details["outcome_unknown"] is True
        assert "may or may not have been made" in refused.value.message
        # a fault before the commit: nothing was changed, and it says so
        with pytest.raises(DatabaseUnreachable) as refused, storage.write() as tx:
            _terminate(tx.conn.info.backend_pid)  # type: ignore[attr-defined]
            tx.touch_agent("bob", 1.0)
        assert refused.value.details["outcome_unknown"] is False
        assert "nothing was changed" in refused.value.message
        with storage.read() as tx:  # and the storage works on, on a new connection
            assert [a.name for a in tx.agents()] == []
    finally:
        storage.close()


def test_a_database_that_does_not_exist_says_to_create_it(team) -> None:
    """`coord init --database` naming a database the server lacks said "try again in 2 s"
    and "check that the server runs", and doctor's fix was "start the PostgreSQL server":
    the server runs; the database is what is missing."""
    url, one, _ = team
    missing = url.rsplit("/", 1)[0] + "/coord_no_such_db"
    host_port = url.split("@", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    createdb = f"createdb -h {host} -p {port} -U postgres coord_no_such_db"
    refused = one.cli("init", "--database", missing)
    assert refused.returncode == 1, refused.stderr
    assert "cannot be reached" in refused.stderr and createdb in refused.stderr
    assert "try again" not in refused.stderr and "Traceback" not in refused.stderr
    assert not one.board_dir.exists()
    one.ok("init", "--database", url)
    config = json.loads((one.board_dir / "config.json").read_text())
    (one.board_dir / "config.json").write_text(json.dumps({**config, "database": missing}))
    run = one.cli("doctor", "--json")
    assert run.returncode == 1
    finding = next(f for f in json.loads(run.stdout)["findings"] if f["check"] == "board")
    assert finding["status"] == "fix" and createdb in finding["fix"], finding


def test_the_second_checkout_is_told_it_joined_the_board_already_there(team) -> None:
    """The second machine's `coord init --database` said "created board …", as if it had
    made a board of its own."""
    url, one, two = team
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:  # as `createdb` leaves it: empty
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    first = one.cli("init", "--database", url)
    assert first.returncode == 0 and "joining" not in first.stdout, first.stdout
    assert one.ok("add", "posted from the first machine")["id"] == 1
    second = two.cli("init", "--database", url)
    assert second.returncode == 0, second.stderr
    assert "joining the team board already there" in second.stdout, second.stdout
    again = two.cli("init", "--database", url)  # this checkout is on it already
    assert again.returncode == 0 and "already there:" in again.stdout, again.stderr
    assert "joining" not in again.stdout, again.stdout
    assert two.ok("init", "--database", url)["joined"] is False


def test_a_daemon_started_on_demand_logs_no_idle_exit_it_was_not_given(team) -> None:
    """Every on-demand start of a team board's daemon wrote "--idle-exit ignored" to
    daemon.log: the CLI passed the SQLite board's idle setting, which the daemon then refused."""
    url, one, _ = team
    one.ok("init", "--database", url)
    assert one.ok("add", "starts the daemon")["id"] == 1
    log = (one.board_dir / "daemon.log").read_text()
    assert "coord daemon serving" in log and "--idle-exit ignored" not in log, log
