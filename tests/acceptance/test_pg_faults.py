"""Faults on a team board: a daemon killed, the database restarted, a connection terminated,
a daemon whose clock is ten minutes off. Real daemons on real PostgreSQL, real OS processes.

"Acknowledged" below means a 2xx answer a client wrote to disk (flushed and fsynced) before
sending its next request: every one of them must be in the database afterwards.
Skipped without a PostgreSQL server; under CI=true a skip is a failure (``pg_support``).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _pg_cluster import private_cluster
from _pg_team import Team, checkout_on, item_of, skewed_clock, team_on
from _pg_workers import ack_worker, read_records
from _workers import CTX, Workers, import_items

from conftest import Daemon
from coord.fast import board_files
from history_check import seconds

pytestmark = pytest.mark.postgres
# A generous bound on any one answer while the database is away: "no hang", not a speed.
ANSWER_BOUND = 30.0


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)
    return found


class Storm:
    """``per_daemon`` ack_workers on each daemon of ``team``: claim-next, done on every other
    claim; each answer recorded to its own file."""

    def __init__(self, team: Team, root: Path, per_daemon: int, lease: float) -> None:
        count = per_daemon * len(team.daemons)
        self.files = [root / f"acks-{n}.jsonl" for n in range(count)]
        self.stop_file = root / "stop"
        self.daemon_of = {f"stormer-{n}": n % len(team.daemons) for n in range(count)}
        # kept: the children find the semaphore by name while they start
        self.barrier = barrier = CTX.Barrier(count)
        self.workers = Workers(
            ack_worker,
            [
                ([endpoint], agent, barrier, str(path), str(self.stop_file), lease)
                for (agent, _), endpoint, path in zip(
                    self.daemon_of.items(), team.endpoints(count), self.files, strict=True
                )
            ],
        )

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.files)

    def acks(self, daemon: int | None = None, since: float = 0.0) -> list[dict[str, Any]]:
        return [
            r
            for r in self.records()
            if r["status"] == 200
            and r["at"] >= since
            and (daemon is None or self.daemon_of[r["agent"]] == daemon)
        ]

    def finish(self) -> dict[str, str]:
        self.stop_file.touch()
        try:
            return dict(self.workers.results(timeout=120))
        finally:
            self.workers.kill()


def assert_every_ack_is_in_the_database(
    dsn: str, acks: list[dict[str, Any]], *, nothing_else: list[dict[str, Any]] | None = None
) -> None:
    """Each acknowledged claim is logged with its agent and token; each acknowledged done
    left the item done by that agent with that token. ``nothing_else`` (every answer the
    stormers had): and no claim was made that its client was not told of, but for answers
    saying the outcome is unknown (a 503 that says "nothing was changed" must be true)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        logged = set(
            conn.execute(
                "SELECT item_id, agent, (details ->> 'token')::int FROM events "
                "WHERE kind IN ('claimed', 'takeover')"
            ).fetchall()
        )
        items = {
            row[0]: row[1:]
            for row in conn.execute("SELECT id, state, claimed_by, fencing_token FROM items")
        }
        seqs = [row[0] for row in conn.execute("SELECT seq FROM events ORDER BY seq")]
    assert seqs == list(range(1, len(seqs) + 1))
    claims = [a for a in acks if a["op"] == "claim"]
    assert [a for a in claims if (a["id"], a["agent"], a["token"]) not in logged] == []
    for done in (a for a in acks if a["op"] == "done"):
        assert items[done["id"]] == ("done", done["agent"], done["token"]), done
    # nothing was claimed twice by two agents told they had it
    assert [k for k, n in Counter((a["id"], a["token"]) for a in claims).items() if n > 1] == []
    if nothing_else is not None:
        told = {(a["id"], a["agent"], a["token"]) for a in claims}
        made = {claim for claim in logged if claim[1].startswith("stormer-")}
        untold = Counter(agent for _, agent, _ in made - told)
        unsure = Counter(r["agent"] for r in nothing_else if _unknown(r) and r["op"] == "claim")
        assert untold <= unsure, (made - told, nothing_else)
        finished = {
            item_id
            for item_id, (state, agent, _) in items.items()
            if state == "done" and agent.startswith("stormer-")
        }
        told_done = {a["id"] for a in acks if a["op"] == "done"}
        unsure_done = {r["id"] for r in nothing_else if _unknown(r) and r["op"] == "done"}
        assert finished - told_done <= unsure_done, (finished - told_done, nothing_else)


def _unknown(record: dict[str, Any]) -> bool:
    return record.get("answer", {}).get("outcome_unknown") is True


def assert_refusals_tell_the_truth(records: list[dict[str, Any]]) -> None:
    """Every 503 is database_unreachable and says what became of the request: nothing was
    changed, or (the connection lost while committing) that it may have been made."""
    refused = [r for r in records if r["status"] == 503]
    assert {r["answer"]["error"] for r in refused} <= {"database_unreachable"}
    for record in refused:
        message, unknown = record["answer"]["message"], record["answer"].get("outcome_unknown")
        assert ("may or may not have been made" if unknown else "nothing was changed") in message


def claim_when_lapsed(daemon: Daemon, item_id: int, agent: str) -> dict[str, Any]:
    """Claim ``item_id`` through ``daemon`` as soon as the database says its lease ran out."""

    def attempt() -> dict[str, Any] | None:
        status, body = daemon.request("POST", f"/v1/items/{item_id}/claim", {"agent": agent})
        if status == 200:
            return body
        assert (status, body["error"]) == (409, "already_claimed"), body
        return None

    return wait_for(attempt, f"the lease on item {item_id} to run out")


# --- kill -9 --------------------------------------------------------------------------------


def test_kill_9_of_one_daemon_mid_storm_the_others_go_on_and_nothing_acknowledged_is_lost(
    pg_dsn: str, tmp_path: Path
) -> None:
    with team_on(pg_dsn, tmp_path / "team", 3) as team:
        victim = team.daemons[0]
        import_items(victim, 3_000)
        # last in line (lowest priority): the storm's claim-next never reaches them, even
        # once their short leases have run out
        status, made = victim.request(
            "POST",
            "/v1/items:import",
            {"agent": "lead", "items": [{"title": f"doomed {n}", "priority": 4} for n in range(3)]},
        )
        assert status == 201, made
        storm = Storm(team, tmp_path, per_daemon=4, lease=600)
        try:
            wait_for(lambda: len(storm.acks()) >= 150, "the storm to get going")
            # leases taken through the daemon about to die, short ones
            held = []
            for n, item_id in enumerate(made["ids"]):
                status, claim = victim.request(
                    "POST",
                    f"/v1/items/{item_id}/claim",
                    {"agent": f"doomed-{n}", "lease_seconds": 2},
                )
                assert status == 200, claim
                held.append(claim)
            victim.kill9()
            killed_at = time.monotonic()
            for survivor in (1, 2):  # the others go on
                wait_for(
                    lambda survivor=survivor: len(storm.acks(survivor, since=killed_at)) >= 30,
                    f"daemon {survivor} to go on after the kill",
                )
        finally:
            stopped = storm.finish()
        for agent, why in stopped.items():
            if storm.daemon_of[agent] == 0:
                assert why.startswith("connection lost"), (agent, why)
            else:
                assert why == "asked to stop", (agent, why)
        records = storm.records()
        assert {r["status"] for r in records} == {200}, Counter(r["status"] for r in records)
        assert_every_ack_is_in_the_database(pg_dsn, storm.acks())

        # The dead daemon's leases are rows in the database: they run out on its clock and
        # another machine's daemon hands the items on.
        for n, claim in enumerate(held):
            heir = claim_when_lapsed(team.daemons[1 + n % 2], claim["id"], f"heir-{n}")
            assert (heir["takeover_from"], heir["token"]) == (f"doomed-{n}", claim["token"] + 1)


# --- the database restarted ------------------------------------------------------------------


def test_postgresql_restarted_mid_storm_daemons_say_503_then_serve_again_unrestarted(
    tmp_path: Path,
) -> None:
    with private_cluster() as cluster:
        dsn = cluster.create_database("board")
        with team_on(dsn, tmp_path / "team", 2) as team:
            import_items(team.daemons[0], 4_000)
            pids = [d.process.pid for d in team.daemons if d.process]
            storm = Storm(team, tmp_path, per_daemon=3, lease=600)
            try:
                wait_for(lambda: len(storm.acks()) >= 100, "the storm to get going")
                cluster.stop("fast")
                down_at = time.monotonic()
                # every daemon says so, with the reason, while the server is away
                for daemon in team.daemons:
                    status, health = daemon.request("GET", "/v1/health")
                    assert status == 503, health
                    assert health["error"] == "database_unreachable", health
                    assert f":{cluster.port}/board" in health["message"], health
                wait_for(
                    lambda: [r for r in storm.records() if r["status"] == 503],
                    "the stormers to be told the database is away",
                )
                cluster.start()
                up_at = time.monotonic()
                for n in range(len(team.daemons)):
                    wait_for(
                        lambda n=n: len(storm.acks(n, since=up_at)) >= 20,
                        f"daemon {n} to serve again",
                    )
                for daemon in team.daemons:
                    assert daemon.request("GET", "/v1/health")[0] == 200
            finally:
                stopped = storm.finish()
            assert set(stopped.values()) == {"asked to stop"}, stopped  # no daemon went away
            assert [d.process.pid for d in team.daemons if d.process] == pids
            assert all(d.process and d.process.poll() is None for d in team.daemons)

            records = storm.records()
            assert {r["status"] for r in records} <= {200, 503}, Counter(
                r["status"] for r in records
            )
            refused = [r for r in records if r["status"] == 503]
            assert refused
            assert_refusals_tell_the_truth(records)
            assert max(r["took"] for r in records) < ANSWER_BOUND
            assert [r for r in refused if r["at"] < down_at - ANSWER_BOUND] == []
            assert_every_ack_is_in_the_database(dsn, storm.acks(), nothing_else=records)


# --- a connection terminated -----------------------------------------------------------------


def _terminate_daemon_connections(dsn: str) -> int:
    """End every other session on this test's own database (never anyone else's)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


def test_a_terminated_connection_is_replaced_and_the_next_requests_succeed(
    pg_dsn: str, tmp_path: Path
) -> None:
    with team_on(pg_dsn, tmp_path / "team", 2) as team:
        one, two = team.daemons
        ids = import_items(one, 2_000)
        status, claim = one.request("POST", f"/v1/items/{ids[0]}/claim", {"agent": "ada"})
        assert status == 200, claim
        assert two.request("GET", f"/v1/items/{ids[0]}")[0] == 200  # both connected
        assert _terminate_daemon_connections(pg_dsn) >= 2

        # the very next requests succeed: reads and writes, through both daemons
        token = {"agent": "ada", "token": claim["token"]}
        assert item_of(two, ids[0])["claimed_by"] == "ada"
        status, beat = one.request("POST", f"/v1/items/{ids[0]}/heartbeat", token)
        assert status == 200, beat
        _terminate_daemon_connections(pg_dsn)
        status, done = two.request("POST", f"/v1/items/{ids[0]}/done", token)
        assert (status, done.get("state")) == (200, "done"), done

        # and terminated again and again under load: answered, never a 500, nothing lost
        storm = Storm(team, tmp_path, per_daemon=3, lease=600)
        try:
            for _ in range(6):
                wait_for(lambda: len(storm.acks()) >= 10, "the storm to get going")
                _terminate_daemon_connections(pg_dsn)
                time.sleep(0.3)
            since = time.monotonic()
            for n in range(2):
                wait_for(lambda n=n: len(storm.acks(n, since=since)) >= 10, f"daemon {n}")
        finally:
            stopped = storm.finish()
        assert set(stopped.values()) == {"asked to stop"}, stopped
        records = storm.records()
        assert {r["status"] for r in records} <= {200, 503}, Counter(r["status"] for r in records)
        assert_refusals_tell_the_truth(records)
        assert_every_ack_is_in_the_database(pg_dsn, storm.acks(), nothing_else=records)


# --- a daemon whose clock is ten minutes off -------------------------------------------------


@pytest.mark.parametrize("offset", ["+10m", "-10m"])
def test_a_daemon_ten_minutes_off_neither_ends_others_leases_early_nor_stretches_its_own(
    pg_dsn: str, tmp_path: Path, offset: str
) -> None:
    shift = 600 if offset == "+10m" else -600
    with team_on(pg_dsn, tmp_path / "team", 1) as team:
        (honest,) = team.daemons
        skewed_checkout = checkout_on(tmp_path / "skewed", team.url)
        team.checkouts.append(skewed_checkout)
        with skewed_clock(offset):
            skewed = Daemon(skewed_checkout.board_dir).start()
        team.daemons.append(skewed)
        record = json.loads(board_files.daemon_record_path(skewed.board_dir).read_text())
        assert abs(record["started_at"] - time.time() - shift) < 60, "faketime did not apply"

        ids = import_items(honest, 4)
        # 1. a live lease taken through the honest daemon holds through the skewed one
        status, held = honest.request(
            "POST", f"/v1/items/{ids[0]}/claim", {"agent": "steady", "lease_seconds": 60}
        )
        assert status == 200, held
        status, refused = skewed.request("POST", f"/v1/items/{ids[0]}/claim", {"agent": "eager"})
        assert (status, refused["error"], refused["holder"]) == (409, "already_claimed", "steady")
        status, beat = skewed.request(
            "POST",
            f"/v1/items/{ids[0]}/heartbeat",
            {"agent": "steady", "token": held["token"], "lease_seconds": 60},
        )
        assert status == 200, beat
        assert_ends_in(beat["lease_expires_at"], 60)
        # and what it shows agents says so too: live, not ready, not lapsed
        assert beat["item"]["lease_expired"] is False
        status, listing = skewed.request("GET", "/v1/items?state=open")
        shown = {item["id"]: item for item in listing["items"]}[ids[0]]
        assert (shown["lease_expired"], shown["ready"]) == (False, False), shown
        status, overview = skewed.request("GET", "/v1/status")
        assert status == 200, overview
        board = overview["board"]
        assert [c["id"] for c in board["near_expiry"]] == [ids[0]], board
        assert board["lapsed"] == [], board
        assert_ends_in(board["now"], 0)

        # 2. a lease taken through the skewed daemon ends on the database's clock
        before = time.time()
        status, own = skewed.request(
            "POST", f"/v1/items/{ids[1]}/claim", {"agent": "drifter", "lease_seconds": 2}
        )
        assert status == 200, own
        assert_ends_in(own["lease_expires_at"], 2, since=before)
        heir = claim_when_lapsed(honest, ids[1], "heir")  # in seconds, not ten minutes
        assert (heir["takeover_from"], heir["token"]) == ("drifter", own["token"] + 1)
        assert seconds(heir["item"]["updated_at"]) >= seconds(own["lease_expires_at"])

        # 3. and a lapsed lease taken through the honest daemon is handed on by the skewed
        # one when the database's clock says so, not before and not ten minutes later
        status, short = honest.request(
            "POST", f"/v1/items/{ids[2]}/claim", {"agent": "brief", "lease_seconds": 2}
        )
        assert status == 200, short
        taken = claim_when_lapsed(skewed, ids[2], "next")
        assert taken["takeover_from"] == "brief"
        assert seconds(taken["item"]["updated_at"]) >= seconds(short["lease_expires_at"])


def assert_ends_in(iso: str, lease: float, since: float | None = None) -> None:
    """A lease end ``lease`` seconds after now on the database's clock: the server runs on
    this machine, so it agrees with this process's clock to well within a few seconds
    (a daemon's clock ten minutes off would be 600 s out)."""
    now = time.time()
    end = seconds(iso)
    assert end is not None
    assert (since or now) + lease - 5 < end < now + lease + 5, (iso, now)
