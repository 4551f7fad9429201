"""A team board whose database stops answering, and one whose connection is ended while the
daemon starts. Real daemons on a private PostgreSQL server (``_pg_cluster``: never the shared
one), real OS processes over real HTTP.

SIGSTOP on every process of the server is what a hung host or a partition that drops packets
looks like to a client: the connections stay open, the kernel takes the bytes, and nothing
answers. Nothing on the socket ends such a wait (TCP keepalives are answered by the server's
kernel), so before this the daemon waited in the driver, on its event loop, for the whole
pause: /v1/health unanswered for 8 minutes, and `coord ls` blamed a stale record.

"Acknowledged" is as in ``test_pg_faults``: a 2xx a client wrote to disk before its next
request; every one must be in the database afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _pg_cluster import private_cluster
from _pg_team import checkout_on, team_on
from _workers import import_items
from test_pg_faults import (
    Storm,
    assert_every_ack_is_in_the_database,
    assert_refusals_tell_the_truth,
    wait_for,
)

from conftest import SOAK, Daemon, run_cli
from coord.fast import board_files

pytestmark = pytest.mark.postgres
# How long the server is stopped: the 30 s in the soak run (make test-long, and
# .ci/run), 8 s in make test: long enough that a request waiting for the server shows.
PAUSE_SECONDS = 30.0 if SOAK else 8.0
# What "answers within seconds" means here: a liveness bound, not a speed.
ANSWER_WITHIN = 5.0


def timed_request(daemon: Daemon, method: str, path: str, body: Any = None) -> tuple[Any, ...]:
    """(status, answer, seconds taken); status None when no answer came in 20 s."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(daemon.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {daemon.token}")
    request.add_header("Content-Type", "application/json")
    began = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            status, payload = answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        status, payload = error.code, json.loads(error.read() or b"null")
    except (TimeoutError, urllib.error.URLError) as error:
        status, payload = None, repr(error)
    return status, payload, time.monotonic() - began


def test_a_database_that_stops_answering_is_said_within_seconds_and_nothing_acked_is_lost(
    tmp_path: Path,
) -> None:
    with private_cluster() as cluster:
        dsn = cluster.create_database("board")
        with team_on(dsn, tmp_path / "team", 2) as team:
            import_items(team.daemons[0], 2_000)
            storm = Storm(team, tmp_path, per_daemon=3, lease=600)
            try:
                wait_for(lambda: len(storm.acks()) >= 60, "the storm to get going")
                cluster.pause()
                paused_at = time.monotonic()
                probes = []
                try:
                    # every kind of request answers within seconds, all through the pause
                    while time.monotonic() - paused_at < PAUSE_SECONDS:
                        for daemon in team.daemons:
                            for method, path, body in (
                                ("GET", "/v1/health", None),
                                ("GET", "/v1/items?limit=5", None),
                                ("POST", "/v1/claim-next", {"agent": "prober"}),
                            ):
                                probes.append((path, *timed_request(daemon, method, path, body)))
                        time.sleep(0.5)
                    # the CLI names the database, not a stale record
                    listed = run_cli("ls", board_dir=team.checkouts[0].board_dir)
                finally:
                    cluster.resume()
                resumed_at = time.monotonic()
                for n in range(len(team.daemons)):
                    wait_for(
                        lambda n=n: len(storm.acks(n, since=resumed_at)) >= 20,
                        f"daemon {n} to serve again",
                        timeout=60,
                    )
                for daemon in team.daemons:
                    assert timed_request(daemon, "GET", "/v1/health")[0] == 200
            finally:
                stopped = storm.finish()

            slow = [
                (path, status, took) for path, status, _, took in probes if took > ANSWER_WITHIN
            ]
            assert slow == [], slow
            said = Counter((path, status) for path, status, _, _ in probes)
            assert {status for _, status in said} <= {200, 503}, said
            for path, status, answer, _ in probes:
                if path == "/v1/health" and status == 503:
                    assert answer["error"] == "database_unreachable", answer
                    assert f"127.0.0.1:{cluster.port}" in answer["message"], answer
                    assert "not answering" in answer["message"], answer
            # once the daemons saw it (the first stall), health said so
            health = [status for path, status, _, _ in probes if path == "/v1/health"]
            assert 503 in health, said
            assert listed.returncode != 0, listed.stdout
            assert f"127.0.0.1:{cluster.port}" in listed.stderr, listed.stderr
            assert "not answering" in listed.stderr and "stale" not in listed.stderr, listed.stderr

            assert set(stopped.values()) == {"asked to stop"}, stopped  # no daemon went away
            records = storm.records()
            assert {r["status"] for r in records} <= {200, 503}, Counter(
                r["status"] for r in records
            )
            during = [r for r in records if paused_at <= r["at"] <= resumed_at]
            assert [r for r in during if r["took"] > ANSWER_WITHIN] == []
            assert [r for r in during if r["status"] == 503]
            assert_refusals_tell_the_truth(records)
            assert_every_ack_is_in_the_database(dsn, storm.acks(), nothing_else=records)


# --- the connection ended while the daemon starts ---------------------------------------------


def _hold_the_migration_lock(dsn: str) -> Any:
    """A session that holds the schema step's lock: a daemon starting waits in it."""
    import psycopg

    from coord.storage.postgres import MIGRATION_LOCK_KEY

    holder = psycopg.connect(dsn, autocommit=True)
    holder.execute(f"BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})".encode())
    return holder


def _end_sessions_waiting_for_the_lock(dsn: str) -> int:
    """pg_terminate_backend on this test's database's sessions waiting on an advisory lock."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return len(
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            ).fetchall()
        )


def test_a_connection_ended_during_the_schema_step_is_retried_and_the_daemon_serves(
    pg_dsn: str, tmp_path: Path
) -> None:
    from test_pg_daemon import url_of

    checkout = checkout_on(tmp_path / "machine", url_of(pg_dsn))
    holder = _hold_the_migration_lock(pg_dsn)
    log = checkout.board_dir / "daemon-test.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "coord", "serve", "--port", "0"],
            env={**os.environ, "COORD_DIR": str(checkout.board_dir)},
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
        )
    try:
        wait_for(lambda: _end_sessions_waiting_for_the_lock(pg_dsn), "the daemon to wait")
        holder.execute("COMMIT")
        record = wait_for(
            lambda: (
                process.poll() is not None
                or board_files.daemon_record_path(checkout.board_dir).exists()
            ),
            "the daemon to serve or exit",
            timeout=30,
        )
        assert record and process.poll() is None, log.read_text()
        assert "Traceback" not in log.read_text()
        listed = checkout.cli("ls")
        assert listed.returncode == 0, listed.stderr
    finally:
        holder.close()
        process.terminate()
        process.wait(10)


def test_started_on_demand_a_daemon_whose_connection_keeps_ending_says_why_in_one_line(
    pg_dsn: str, tmp_path: Path
) -> None:
    from test_pg_daemon import url_of

    checkout = checkout_on(tmp_path / "machine", url_of(pg_dsn))
    holder = _hold_the_migration_lock(pg_dsn)
    stop = threading.Event()

    def keep_ending() -> None:
        while not stop.is_set():
            _end_sessions_waiting_for_the_lock(pg_dsn)
            time.sleep(0.02)

    ender = threading.Thread(target=keep_ending, daemon=True)
    ender.start()
    try:
        listed = checkout.cli("ls")
    finally:
        stop.set()
        ender.join(10)
        holder.close()
    assert listed.returncode != 0, listed.stdout
    said = listed.stderr
    assert "could not start the coord daemon" in said, said
    assert "cannot be reached: terminating connection due to administrator command" in said, said
    assert "psycopg" not in said and "AdminShutdown" not in said, said
    log = (checkout.board_dir / "daemon.log").read_text()
    assert "Traceback" not in log, log
