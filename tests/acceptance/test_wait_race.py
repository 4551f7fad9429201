"""The fair wait (issue 26) with real processes over real HTTP: the daemon, `coord wait`
waiters, holders that die.

Each grant is judged on the board right after the write that frees the target: the release's
own answer has come back, so the claim (or the hold) must be the next waiter's already (the
grant is in the release's transaction), and only that waiter's process may end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon

WAITERS = 32 if os.environ.get("COORD_SOAK") == "1" else 16


def _post(daemon: Daemon, path: str, body: dict[str, Any], status: int = 200) -> Any:
    got, answer = daemon.request("POST", path, body)
    assert got == status, answer
    return answer


def _waiter(board_dir: Path, agent: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COORD_DIR": str(board_dir), "COORD_AGENT": agent}
    return subprocess.Popen(
        [sys.executable, "-m", "coord", "wait", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _events(daemon: Daemon, kind: str) -> list[dict[str, Any]]:
    _, page = daemon.request("GET", "/v1/events?limit=5000")
    return [e for e in page["events"] if e["kind"] == kind]


def _until(what: Any, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("the board never got there")


def _queue_in_order(daemon: Daemon, agents: list[str], *args: str, before: int = 0) -> list[Any]:
    """One waiter process per agent, each started once the one before has its place (after
    ``before`` earlier ones): their arrival order is the list's."""
    waiters = []
    for n, agent in enumerate(agents):
        waiters.append(_waiter(daemon.board_dir, agent, *args))
        _until(lambda n=n: len(_events(daemon, "waiting")) == before + n + 1)
    return waiters


def _granted_line(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("granted: "), out  # one line to wake on
    return lines[0]


def _stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def test_waiters_on_a_held_item_are_granted_one_at_a_time_in_arrival_order(
    daemon: Daemon,
) -> None:
    item = _post(daemon, "/v1/items", {"agent": "lead", "title": "contended"}, 201)["id"]
    token = _post(daemon, f"/v1/items/{item}/claim", {"agent": "holder"})["token"]
    agents = [f"w{n:02}" for n in range(WAITERS)]
    waiters = _queue_in_order(daemon, agents, str(item), "--timeout", "120")
    try:
        holder = "holder"
        tokens = [token]
        for n, agent in enumerate(agents):
            _post(daemon, f"/v1/items/{item}/release", {"agent": holder, "token": tokens[-1]})
            # read as the one granted: a claim's token shows to its holder alone (issue 27)
            _, shown = daemon.request("GET", f"/v1/items/{item}?agent={agent}")
            assert shown["claimed_by"] == agent  # granted by the release itself
            line = _granted_line(waiters[n])
            assert f"item {item} is yours (token {shown['fencing_token']})" in line
            assert all(w.poll() is None for w in waiters[n + 1 :])  # the others wait on
            holder = agent
            tokens.append(shown["fencing_token"])
        assert tokens == sorted(set(tokens))  # strictly increasing
        granted = _events(daemon, "wait_granted")
        assert [e["agent"] for e in granted] == agents  # each once, in arrival order
    finally:
        _stop(waiters)


def test_waiters_on_a_held_file_are_granted_one_at_a_time_in_arrival_order(
    daemon: Daemon,
) -> None:
    _post(daemon, "/v1/reservations", {"agent": "holder", "patterns": ["src/a.py"]}, 201)
    agents = [f"f{n:02}" for n in range(WAITERS)]
    waiters = _queue_in_order(daemon, agents, "src/a.py", "--timeout", "120")
    try:
        holder = "holder"
        for n, agent in enumerate(agents):
            _post(daemon, "/v1/reservations:release", {"agent": holder, "all": True})
            _, who = daemon.request("GET", "/v1/who?path=src/a.py")
            assert [h["agent"] for h in who["holders"]] == [agent]
            assert "src/a.py reserved for you" in _granted_line(waiters[n])
            assert all(w.poll() is None for w in waiters[n + 1 :])
            holder = agent
        granted = _events(daemon, "wait_granted")
        assert [e["agent"] for e in granted] == agents
    finally:
        _stop(waiters)


_HOLDER = """
import json, sys, time, urllib.request
url, token, item = sys.argv[1:4]
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), method="POST")
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", "application/json")
    return json.loads(urllib.request.urlopen(req, timeout=10).read())
claim = post(f"/v1/items/{item}/claim", {"agent": "mortal", "lease_seconds": 2})
print(claim["token"], flush=True)
while True:  # a live holder: its lease never lapses while it beats
    time.sleep(0.3)
    post(f"/v1/items/{item}/heartbeat",
         {"agent": "mortal", "token": claim["token"], "lease_seconds": 2})
"""


def test_a_holder_killed_outright_still_grants_the_first_live_waiter(daemon: Daemon) -> None:
    item = _post(daemon, "/v1/items", {"agent": "lead", "title": "held by a mortal"}, 201)["id"]
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, daemon.url, daemon.token, str(item)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    holder.stdout.readline()  # it holds the claim
    # the first in line dies while queued; the second is the first live one
    dead, live = _queue_in_order(
        daemon, ["dies", "lives"], str(item), "--timeout", "60", "--place", "2"
    )
    try:
        waits = [e["details"]["wait"] for e in _events(daemon, "waiting")]
        time.sleep(1.0)  # beats outlive a lease of 2 s: still held
        assert holder.poll() is None and live.poll() is None
        dead.send_signal(signal.SIGKILL)
        dead.wait(10)
        _until(lambda: daemon.request("GET", f"/v1/waits/{waits[0]}")[1]["state"] == "gone")
        holder.send_signal(signal.SIGKILL)  # its lease lapses: nobody releases anything
        holder.wait(10)
        assert "item" in _granted_line(live)  # the daemon's clock granted it
        _, shown = daemon.request("GET", f"/v1/items/{item}")
        assert shown["claimed_by"] == "lives"
        assert [e["agent"] for e in _events(daemon, "wait_granted")] == ["lives"]
    finally:
        _stop([holder, dead, live])


def test_a_waiter_killed_while_queued_loses_its_place_and_blocks_nobody(
    daemon: Daemon,
) -> None:
    item = _post(daemon, "/v1/items", {"agent": "lead", "title": "contended"}, 201)["id"]
    token = _post(daemon, f"/v1/items/{item}/claim", {"agent": "holder"})["token"]
    dead, live = _queue_in_order(
        daemon, ["dies", "lives"], str(item), "--timeout", "60", "--place", "2"
    )
    try:
        first = _events(daemon, "waiting")[0]["details"]["wait"]
        _, place = daemon.request("GET", f"/v1/waits/{first}")
        assert place["state"] == "waiting" and place["place"] == 1
        dead.send_signal(signal.SIGKILL)
        dead.wait(10)
        # the board's clock ends its place (no heartbeat), not anyone's polling
        _until(lambda: daemon.request("GET", f"/v1/waits/{first}")[1]["state"] == "gone")
        _post(daemon, f"/v1/items/{item}/release", {"agent": "holder", "token": token})
        _, shown = daemon.request("GET", f"/v1/items/{item}")
        assert shown["claimed_by"] == "lives"
        _granted_line(live)
    finally:
        _stop([dead, live])


_LONG_POLL = """
import json, sys, urllib.request
url, token, wait = sys.argv[1:4]
req = urllib.request.Request(
    url + f"/v1/waits/{wait}/heartbeat",
    json.dumps({"agent": "late", "place_seconds": 60, "wait_seconds": 20}).encode(),
    method="POST",
)
req.add_header("Authorization", "Bearer " + token)
req.add_header("Content-Type", "application/json")
print(urllib.request.urlopen(req, timeout=60).read().decode(), flush=True)
"""


@pytest.fixture
def paused_daemon(board_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv("COORD_TEST_WAIT_PAUSE", str(gate))
    daemon = Daemon(board_dir).start()
    yield daemon, gate
    daemon.stop()


def test_a_release_between_the_check_and_the_subscription_still_wakes_the_waiter(
    paused_daemon: Any,
) -> None:
    """The daemon holds the waiter's long poll after its look at the board and before it
    waits for a change (the test-only gate); the release lands right there. With the timed
    re-reads off, only the change notice taken before the look can wake it: a notice taken
    after would be a fresh one, and the poll would sleep its whole 20 s and say waiting."""
    daemon, gate = paused_daemon
    item = _post(daemon, "/v1/items", {"agent": "lead", "title": "contended"}, 201)["id"]
    token = _post(daemon, f"/v1/items/{item}/claim", {"agent": "holder"})["token"]
    wait = _post(daemon, f"/v1/items/{item}/wait", {"agent": "late", "place_seconds": 60}, 201)
    assert wait["state"] == "waiting"
    poll = subprocess.Popen(
        [sys.executable, "-c", _LONG_POLL, daemon.url, daemon.token, str(wait["wait"])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _until(lambda: (gate / f"paused-{wait['wait']}").exists())  # it looked: still waiting
        _post(daemon, f"/v1/items/{item}/release", {"agent": "holder", "token": token})
        (gate / "go").touch()  # now it subscribes
        out, _ = poll.communicate(timeout=60)
        answer = json.loads(out)
        assert answer["state"] == "granted"
        assert answer["token"] == token + 1
    finally:
        _stop([poll])
