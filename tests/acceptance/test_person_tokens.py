"""People's and machines' tokens (issue 27): a token acts as its one name, on every face.

Real processes: a `coord serve` daemon, the `coord` command, and (a team board) two daemons
on one PostgreSQL database. Alice holds a token the owner issued; Bob's claim and files are
on the board. Every write Alice tries as Bob is refused 403 before it changes anything; her
own writes work; the owner's routes stay the owner's; a revoked token is refused at once,
on the other daemon too; the secret never appears in a read, the database or the log.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _pg_team import Team, team_on

from conftest import Daemon, run_cli


def _issue(board_dir: Path, name: str) -> str:
    made = run_cli("--json", "token", "create", "--for", name, board_dir=board_dir)
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["secret"])


def _state(daemon: Daemon) -> Any:
    """What a refused request must leave as it was: the log's end, items, files."""
    _, events = daemon.request("GET", "/v1/events?limit=1000")
    _, items = daemon.request("GET", "/v1/items?state=all&agent=bob")
    _, held = daemon.request("GET", "/v1/reservations")
    return events["last_seq"], items, held


def test_a_persons_token_acts_as_its_name_alone(daemon: Daemon) -> None:
    secret = _issue(daemon.board_dir, "alice")
    for title in ("bob's", "free"):
        daemon.request("POST", "/v1/items", {"agent": "h", "title": title, "files": []})
    _, won = daemon.request("POST", "/v1/items/1/claim", {"agent": "bob"})
    bobs = won["token"]  # the worst case: Alice learned Bob's token some other way
    status, _ = daemon.request("POST", "/v1/reservations", {"agent": "bob", "patterns": ["a/"]})
    assert status == 201
    before = _state(daemon)

    as_bob: list[tuple[str, Any, dict[str, str]]] = [
        ("/v1/items/1/heartbeat", {"agent": "bob", "token": bobs}, {}),
        ("/v1/items/1/release", {"agent": "bob", "token": bobs}, {}),
        ("/v1/items/1/done", {"agent": "bob", "token": bobs}, {}),
        ("/v1/items/1/cancel", {"agent": "bob", "token": bobs, "reason": "mine now"}, {}),
        ("/v1/items/1/escalate", {"agent": "bob", "token": bobs, "question": "?"}, {}),
        ("/v1/items/1/replies", {"agent": "bob", "body": "I quit"}, {}),
        ("/v1/reservations:release", {"agent": "bob", "all": True}, {}),
        ("/v1/items/2/claim", {"agent": "bob"}, {}),
        ("/v1/items", {"agent": "bob", "title": "as bob"}, {}),
        ("/v1/landing/acquire", {"runner": "bob"}, {}),
        ("/v1/items/1/wait", {"agent": "bob"}, {}),  # the fair wait (issue 26), merged later
        ("/v1/items/1/ask", {"agent": "bob", "reason": "let go"}, {}),
        ("/v1/items:import?agent=bob", [{"title": "x"}], {}),  # a bare array
        ("/v1/items/1/replies", {"agent": "alice", "body": "hi"}, {"X-Coord-Agent": "bob"}),
    ]
    for path, body, headers in as_bob:
        status, refused = daemon.request("POST", path, body, token=secret, headers=headers)
        assert (status, refused["error"]) == (403, "forbidden"), (path, refused)
        assert "alice" in refused["message"] and "bob" in refused["message"]
    for method, path, body in (
        ("POST", "/v1/tokens", {"name": "alice2"}),
        ("GET", "/v1/tokens", None),
        ("POST", "/v1/tokens:revoke", {"which": "alice"}),
        ("POST", "/v1/web/codes", {"agent": "alice"}),
        ("POST", "/v1/shutdown", {}),
    ):
        status, refused = daemon.request(method, path, body, token=secret)
        assert (status, refused["error"]) == (403, "not_permitted"), (path, refused)
    assert _state(daemon) == before

    # her own name works; her reads show her token, never Bob's, whatever name they give
    # (a read's ?agent= may filter, as whose files; it never makes her the reader)
    status, mine = daemon.request("POST", "/v1/items/2/claim", {"agent": "alice"}, token=secret)
    assert status == 200, mine
    _, theirs = daemon.request("GET", "/v1/items/1?agent=bob", token=secret)
    assert theirs["claimed_by"] == "bob" and theirs["fencing_token"] is None
    _, hers = daemon.request("GET", "/v1/items/2", token=secret)
    assert hers["fencing_token"] == mine["token"]

    # the secret is shown once: no read, no file of the board holds it
    _, listed = daemon.request("GET", "/v1/tokens")
    assert [(t["name"], t["kind"]) for t in listed["tokens"]] == [("alice", "person")]
    assert listed["tokens"][0]["last_used_at"] is not None
    _, log = daemon.request("GET", "/v1/events?limit=1000")
    for name in os.listdir(daemon.board_dir):
        path = daemon.board_dir / name
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), name
    assert secret not in json.dumps(listed) + json.dumps(log)

    status, _ = daemon.request("POST", "/v1/tokens:revoke", {"which": "alice"})
    assert status == 200
    status, refused = daemon.request("GET", "/v1/items/2", token=secret)
    assert (status, refused["error"]) == (401, "unauthorized")


def test_the_cli_presents_a_persons_token_from_a_private_file(daemon: Daemon) -> None:
    secret = _issue(daemon.board_dir, "alice")
    daemon.request("POST", "/v1/items", {"agent": "h", "title": "one"})
    token_file = daemon.board_dir.parent / "alice.token"
    token_file.write_text(secret + "\n")
    token_file.chmod(0o644)
    env = {"COORD_TOKEN_FILE": str(token_file)}
    open_to_all = run_cli("claim", "1", board_dir=daemon.board_dir, agent="alice", env=env)
    assert open_to_all.returncode != 0 and "chmod 600" in open_to_all.stderr
    token_file.chmod(0o600)
    as_bob = run_cli("claim", "1", board_dir=daemon.board_dir, agent="bob", env=env)
    assert as_bob.returncode != 0 and "acts as alice, not 'bob'" in as_bob.stderr
    assert "Traceback" not in as_bob.stderr
    mine = run_cli("--json", "claim", "1", board_dir=daemon.board_dir, agent="alice", env=env)
    assert mine.returncode == 0, mine.stderr
    done = run_cli("done", "1", board_dir=daemon.board_dir, agent="alice", env=env)
    assert done.returncode == 0, done.stderr  # the token remembered from the claim's answer
    listed = run_cli("token", "list", board_dir=daemon.board_dir, env=env)
    assert listed.returncode != 0 and "board's own token" in listed.stderr


@pytest.fixture
def team(pg_dsn: str, tmp_path: Path) -> Any:
    with team_on(pg_dsn, tmp_path, machines=2) as made:
        yield made


def test_a_revoked_token_is_refused_by_every_daemon_of_a_team_board(team: Team) -> None:
    one, two = team.daemons
    secret = _issue(one.board_dir, "alice")
    status, _ = two.request("POST", "/v1/items", {"agent": "alice", "title": "t"}, token=secret)
    assert status == 201  # issued through one daemon, honoured by the other
    status, _ = one.request("POST", "/v1/tokens:revoke", {"which": "alice"})
    assert status == 200
    # the next request: no cache on the other daemon outlives the revocation
    status, refused = two.request("GET", "/v1/items", token=secret)
    assert (status, refused["error"]) == (401, "unauthorized")
