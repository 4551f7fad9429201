"""The daemon's identity proof (``coord.fast.daemon_proof``) and which routes need the token."""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import socket
import time
from pathlib import Path

import pytest

from conftest import init_board_dir, run_cli
from coord.fast import board_files, daemon_proof
from coord.server.openapi import OPENAPI
from coord.server.routes import PUBLIC_PATHS, ROUTES


@pytest.mark.parametrize("key", [b"", b"k", b"x" * 64, b"y" * 65, b"z" * 200])
@pytest.mark.parametrize("message", [b"", b"nonce", bytes(range(256)) * 5])
def test_the_hmac_is_the_standard_one(key: bytes, message: bytes) -> None:
    assert daemon_proof.hmac_sha256(key, message) == hmac.digest(key, message, "sha256")


def test_rfc_4231_case_2() -> None:
    mac = daemon_proof.hmac_sha256(b"Jefe", b"what do ya want for nothing?")
    assert mac.hex() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def test_a_proof_holds_only_for_its_token_nonce_instance_and_port() -> None:
    nonce = daemon_proof.new_nonce()
    answer = {"instance": "i1", "proof": daemon_proof.proof("tok", nonce, "i1", 4000)}
    assert daemon_proof.proves(answer, "tok", nonce, "i1", 4000)
    assert not daemon_proof.proves(answer, "other-token", nonce, "i1", 4000)
    assert not daemon_proof.proves(answer, "tok", daemon_proof.new_nonce(), "i1", 4000)
    assert not daemon_proof.proves(answer, "tok", nonce, "i2", 4000)
    assert not daemon_proof.proves(answer, "tok", nonce, "i1", 4001)  # relayed from elsewhere
    assert not daemon_proof.proves({"instance": "i1", "proof": 7}, "tok", nonce, "i1", 4000)
    assert not daemon_proof.proves("not an object", "tok", nonce, "i1", 4000)


def test_nonces_are_fresh() -> None:
    assert len({daemon_proof.new_nonce() for _ in range(100)}) == 100


def test_only_liveness_the_document_and_the_proofs_are_open() -> None:
    # /v1/identity: the daemon's proof to the CLI; /v1/web/proof: its proof to the page
    assert set(PUBLIC_PATHS) == {"/v1/health", "/openapi.json", "/v1/identity", "/v1/web/proof"}
    assert all(route.method == "GET" for route in ROUTES if route.public)


def test_the_document_marks_every_other_route_as_needing_the_token() -> None:
    for path, operations in OPENAPI["paths"].items():
        for method, op in operations.items():
            if path in PUBLIC_PATHS:
                assert "security" not in op and "401" not in op["responses"], (method, path)
            else:
                assert op["security"] == [{"bearer": []}], (method, path)
                assert ".coord/token" in op["responses"]["401"]["description"], (method, path)


def test_a_running_daemon_that_does_not_answer_is_said_so_not_called_a_stale_record(
    tmp_path: Path,
) -> None:
    """The daemon's process runs and holds the board's lock, its port takes the connection,
    and nothing answers (its loop was stuck on a silent database): the CLI said "the record
    is stale", then tried to start a second daemon, which the lock refused."""
    board_dir = init_board_dir(tmp_path)
    lock = os.open(board_dir / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # as a running daemon holds it
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # takes connections, never answers
    port = silent.getsockname()[1]
    record = {
        "pid": os.getpid(),
        "host": "127.0.0.1",
        "port": port,
        "url": f"http://127.0.0.1:{port}",
        "started_at": time.time(),
        "instance": "0" * 32,
    }
    board_files.write_json_atomic(board_files.daemon_record_path(board_dir), record)
    try:
        listed = run_cli("ls", board_dir=board_dir)
    finally:
        silent.close()
        os.close(lock)
    assert listed.returncode != 0, listed.stdout
    said = listed.stderr
    assert f"the coord daemon at http://127.0.0.1:{port} (pid {os.getpid()}) is running" in said
    assert "did not answer within 10 s" in said and "coord stop" in said, said
    assert "stale" not in said and "could not start" not in said, said
    assert json.loads(board_files.daemon_record_path(board_dir).read_text()) == record
