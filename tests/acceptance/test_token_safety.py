"""The board's token goes only to this board's daemon, and every read of the board needs it.

Real processes throughout: a `coord serve` daemon, the `coord` command, and a stranger: a
plain HTTP server (a separate Python process, not coord) listening on the port a stale
``.coord/daemon.json`` names, with the record's pid being the stranger's own, as when a daemon
died without cleaning up and both its pid and port were taken.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, run_cli
from coord.fast import board_files

# A server that is not coord: it answers every request with 200 and JSON shaped like the
# daemon's, including a made-up identity, and writes each request's line and headers to a
# file, one JSON object per line.
STRANGER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

seen = open(sys.argv[1], "a", buffering=1)

class Answer(BaseHTTPRequestHandler):
    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace") if length else ""
        seen.write(json.dumps({"method": self.command, "path": self.path,
                               "headers": {k.lower(): v for k, v in self.headers.items()},
                               "body": body}) + "\n")
        payload = json.dumps({"instance": sys.argv[2], "proof": "0" * 64, "items": [],
                              "events": [], "last_seq": 0, "id": 1, "title": "x"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), Answer)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

INSTANCE = "5ca1ab1e" * 4


@pytest.fixture
def stranger(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, Path]]:
    seen = tmp_path / "stranger-requests.jsonl"
    seen.touch()
    process = subprocess.Popen(
        [sys.executable, "-c", STRANGER, str(seen), INSTANCE],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield process, port, seen
    process.kill()
    process.wait(5)
    process.stdout.close()


def plant_stale_record(board_dir: Path, pid: int, port: int, *, instance: bool) -> None:
    """What a daemon killed with -9 leaves behind, its pid and port now someone else's."""
    record: dict[str, Any] = {
        "pid": pid,
        "host": "127.0.0.1",
        "port": port,
        "url": f"http://127.0.0.1:{port}",
        "started_at": time.time() - 3600,
    }
    if instance:
        record["instance"] = INSTANCE
    board_files.write_json_atomic(board_files.daemon_record_path(board_dir), record)


def requests_seen(seen: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in seen.read_text().splitlines()]


def stop_our_daemon(board_dir: Path, stranger_pid: int) -> None:
    """The daemon a CLI started on its own (start_new_session: it outlives the command)."""
    record = json.loads(board_files.daemon_record_path(board_dir).read_text())
    if record["pid"] != stranger_pid:
        os.kill(record["pid"], signal.SIGTERM)


@pytest.mark.parametrize("instance", [True, False], ids=["record", "older-record"])
def test_a_stale_record_never_gets_the_token(
    board_dir: Path, stranger: tuple[subprocess.Popen[str], int, Path], instance: bool
) -> None:
    process, port, seen = stranger
    plant_stale_record(board_dir, process.pid, port, instance=instance)
    token = board_files.read_token(board_dir)
    try:
        added = run_cli("add", "kept on the board", "--json", board_dir=board_dir, agent="a")
        listed = run_cli("ls", "--json", board_dir=board_dir, agent="a")
    finally:
        stop_our_daemon(board_dir, process.pid)

    everything = requests_seen(seen)
    assert all("authorization" not in r["headers"] for r in everything), everything
    assert all(token not in json.dumps(r) for r in everything)
    # the stranger was asked to prove itself, and nothing else
    assert {r["path"].split("?")[0] for r in everything} <= {"/v1/identity"}
    # the CLI started a daemon of its own and the commands did what they said
    assert added.returncode == 0, added.stderr
    assert listed.returncode == 0, listed.stderr
    assert [i["title"] for i in json.loads(listed.stdout)["items"]] == ["kept on the board"]
    record = json.loads(board_files.daemon_record_path(board_dir).read_text())
    assert record["pid"] != process.pid and record["port"] != port


def test_stop_with_a_stale_record_says_why_and_keeps_the_token(
    board_dir: Path, stranger: tuple[subprocess.Popen[str], int, Path]
) -> None:
    process, port, seen = stranger
    plant_stale_record(board_dir, process.pid, port, instance=True)

    stopped = run_cli("stop", board_dir=board_dir)

    assert all("authorization" not in r["headers"] for r in requests_seen(seen))
    assert stopped.returncode != 0
    assert "did not prove it is this board's coord daemon" in stopped.stderr, stopped.stderr
    assert str(process.pid) in stopped.stderr and f":{port}" in stopped.stderr
    assert process.poll() is None  # nobody was told to shut down


def test_the_daemon_proves_itself_to_the_cli(daemon: Daemon) -> None:
    """A genuine record passes: the CLI talks to the running daemon, starts no other."""
    record = json.loads(board_files.daemon_record_path(daemon.board_dir).read_text())
    assert len(record["instance"]) == 32

    listed = run_cli("ls", "--json", board_dir=daemon.board_dir)

    assert listed.returncode == 0, listed.stderr
    assert json.loads(board_files.daemon_record_path(daemon.board_dir).read_text()) == record


READS = [
    "/v1/items",
    "/v1/items?state=done",
    "/v1/items/1",
    "/v1/events",
    "/v1/events?item=1",
    "/v1/agents",
    "/v1/reservations",
    "/v1/who?path=src/a.py",
]


@pytest.mark.parametrize("path", READS)
@pytest.mark.parametrize("token", [None, "wrong"], ids=["no-token", "wrong-token"])
def test_every_read_of_the_board_needs_the_token(
    daemon: Daemon, path: str, token: str | None
) -> None:
    status, _ = daemon.request("POST", "/v1/items", {"agent": "a", "title": "secret plan"})
    assert status == 201

    status, answer = daemon.request("GET", path, token=token)

    assert status == 401, answer
    assert answer["error"] == "unauthorized"
    assert ".coord/token" in answer["message"]
    assert "secret plan" not in json.dumps(answer)
    assert daemon.request("GET", path)[0] == 200  # with the token, as before


def test_the_open_endpoints_tell_nothing_of_the_board(daemon: Daemon) -> None:
    daemon.request("POST", "/v1/items", {"agent": "a", "title": "secret plan"})

    health = daemon.request("GET", "/v1/health", token=None)
    document = daemon.request("GET", "/openapi.json", token=None)
    identity = daemon.request("GET", "/v1/identity?nonce=" + "ab" * 16, token=None)

    assert health[0] == document[0] == identity[0] == 200
    assert health[1]["ok"] is True and "last_seq" not in health[1]
    assert set(identity[1]) == {"instance", "proof"}
    for _, answer in (health, identity):
        assert "secret plan" not in json.dumps(answer)


def test_a_bad_nonce_is_refused_with_what_to_send(daemon: Daemon) -> None:
    status, answer = daemon.request("GET", "/v1/identity?nonce=xyz", token=None)
    assert status == 422
    assert "hex" in answer["message"]


# Run as an item's check by `coord done`: while it runs, the CLI that runs it and the daemon
# the CLI started are alive too. Every process's command line and (as root: all of them)
# environment it can read, written down.
SCAN_PROC = r"""
import json, os, sys
seen = {}
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for what in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{what}", "rb") as f:
                seen[f"{pid}/{what}"] = f.read().decode("latin-1")
        except OSError:
            pass
seen["self"] = str(os.getpid())
with open(sys.argv[1], "w") as f:
    json.dump(seen, f)
"""


def test_no_process_coord_starts_has_the_token_in_its_arguments_or_environment(
    board_dir: Path, tmp_path: Path
) -> None:
    """The daemon the CLI starts on demand, the CLI itself and a check it runs: the token
    is read from .coord/token where needed, never handed on in argv or the environment."""
    scan, out = tmp_path / "scan.py", tmp_path / "seen.json"
    scan.write_text(SCAN_PROC)
    check = f"{sys.executable} {scan} {out}"
    item = json.loads(
        run_cli("add", "checked", "--check", check, "--json", board_dir=board_dir, agent="a").stdout
    )["id"]
    assert run_cli("claim", str(item), board_dir=board_dir, agent="a").returncode == 0
    done = run_cli("done", str(item), board_dir=board_dir, agent="a")
    assert done.returncode == 0, done.stderr
    seen = json.loads(out.read_text())
    token = board_files.read_token(board_dir)
    record = json.loads(board_files.daemon_record_path(board_dir).read_text())
    # the scan saw the daemon and the check, environments included (run as root here; as
    # another user the environments are not even readable)
    assert f"{record['pid']}/environ" in seen and f"{seen['self']}/environ" in seen
    assert "COORD_CHECK=1" in seen[f"{seen['self']}/environ"]
    assert [where for where, text in seen.items() if token in text] == []
