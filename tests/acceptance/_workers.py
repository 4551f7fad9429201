"""Worker processes for the acceptance tests: stdlib only, so 'spawn' children start fast.

Each worker is a separate OS process with its own HTTP connection to the daemon. Workers
that race wait on a shared barrier first, so their requests reach the daemon together.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import queue
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

CTX = multiprocessing.get_context("spawn")
BARRIER_TIMEOUT = 60.0
CONNECTION_LOST = (OSError, http.client.HTTPException)
KEEP_ALIVE_SAFE_SECONDS = 3.0  # below the daemon's 5 s keep-alive timeout, with room for load


class Api:
    """A minimal JSON client on one keep-alive ``http.client`` connection."""

    def __init__(self, url: str, token: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        self.host = parts.netloc
        self.token = token
        self.hostname, self.port, self.timeout = parts.hostname, parts.port, timeout
        self._connect()

    def _connect(self) -> None:
        self.conn = http.client.HTTPConnection(self.hostname, self.port, timeout=self.timeout)
        self.conn.connect()
        # http.client writes a POST's headers and body separately: without NODELAY, Nagle
        # holds the body until the daemon's delayed ACK, ~40 ms per request on keep-alive.
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.used = time.monotonic()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        # The daemon closes a keep-alive connection idle for 5 s (uvicorn's
        # timeout_keep_alive): a POST sent on it then is lost as a broken pipe, an outcome a
        # race test would count as unknown. A connection nearly that idle is made anew first,
        # as HTTP clients do, rather than risk a request the daemon never reads.
        if time.monotonic() - self.used > KEEP_ALIVE_SAFE_SECONDS:
            self.conn.close()
            self._connect()
        self.used = time.monotonic()
        data = None if body is None else json.dumps(body).encode()
        headers = {"Host": self.host, "Authorization": f"Bearer {self.token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None

    def close(self) -> None:
        self.conn.close()


class Workers:
    """One spawned process per argument tuple, each running ``target(queue, *args)``.

    Every worker must put exactly one result on the queue. A worker that dies or hangs
    fails the test instead of hanging it.
    """

    def __init__(self, target: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> None:
        self.queue = CTX.Queue()
        self.procs = [CTX.Process(target=target, args=(self.queue, *a), daemon=True) for a in args]
        for p in self.procs:
            p.start()

    def results(self, timeout: float = 120.0) -> list[Any]:
        results: list[Any] = []
        deadline = time.monotonic() + timeout
        try:
            while len(results) < len(self.procs):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{len(results)} of {len(self.procs)} workers reported")
                try:
                    results.append(self.queue.get(timeout=1.0))
                except queue.Empty:
                    died = [p.exitcode for p in self.procs if p.exitcode not in (None, 0)]
                    if died:
                        raise AssertionError(f"workers died: exit codes {died}") from None
        except BaseException:
            self.kill()
            raise
        for p in self.procs:
            p.join(10)
        self.kill()
        return results

    def kill(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.kill()
            p.join(5)
        self.queue.close()
        self.queue.join_thread()


def run_processes(
    target: Callable[..., Any], args: Sequence[tuple[Any, ...]], timeout: float = 120.0
) -> list[Any]:
    return Workers(target, args).results(timeout)


# --- the workers ---------------------------------------------------------------------------


def race_worker(
    out: Any, url: str, token: str, agent: str, barrier: Any, rounds: Sequence[int | None]
) -> None:
    """Each round: wait for everyone, then claim that item (or claim-next for None)."""
    barrier.wait(BARRIER_TIMEOUT)  # everyone is up: connections will not idle out
    api = Api(url, token)
    answers = []
    for item_id in rounds:
        api.call("GET", "/v1/health")  # connected and warm: the race is between requests
        barrier.wait(BARRIER_TIMEOUT)
        path = "/v1/claim-next" if item_id is None else f"/v1/items/{item_id}/claim"
        answers.append(api.call("POST", path, {"agent": agent}))
    api.close()
    out.put((agent, answers))


def drain_worker(out: Any, url: str, token: str, agent: str, barrier: Any, max_claims: int) -> None:
    """claim-next and done until nothing is ready; report the ids claimed and any surprise."""
    barrier.wait(BARRIER_TIMEOUT)
    api = Api(url, token)
    claimed: list[int] = []
    surprises: list[Any] = []
    for _ in range(max_claims + 1):
        status, body = api.call("POST", "/v1/claim-next", {"agent": agent})
        if status == 404 and body.get("error") == "nothing_ready":
            break
        if status != 200:
            surprises.append((status, body))
            break
        claimed.append(body["id"])
        status, body = api.call(
            "POST", f"/v1/items/{body['id']}/done", {"agent": agent, "token": body["token"]}
        )
        if status != 200:
            surprises.append((status, body))
            break
    else:
        surprises.append("claimed more items than the board holds")
    api.close()
    out.put((agent, claimed, surprises))


def storm_worker(
    out: Any, url: str, token: str, agent: str, barrier: Any, record_path: str, max_claims: int
) -> None:
    """claim-next until the daemon goes away; each won claim is on disk before the next try."""
    barrier.wait(BARRIER_TIMEOUT)
    api = Api(url, token, timeout=10)
    stopped_by = "loop bound"
    with open(record_path, "a", encoding="utf-8") as record:
        for _ in range(max_claims):
            try:
                status, body = api.call("POST", "/v1/claim-next", {"agent": agent})
            except CONNECTION_LOST as err:
                stopped_by = f"connection lost: {type(err).__name__}"
                break
            if status != 200:
                stopped_by = f"status {status}: {body}"
                break
            won = {"agent": agent, "id": body["id"], "token": body["token"]}
            record.write(json.dumps(won) + "\n")
            record.flush()
            os.fsync(record.fileno())
    api.close()
    out.put((agent, stopped_by))


# --- reading the board back (in the test process) ------------------------------------------


def fetch_events(daemon: Any) -> list[dict[str, Any]]:
    """The whole event log, page by page."""
    events: list[dict[str, Any]] = []
    while True:
        after = events[-1]["seq"] if events else 0
        status, body = daemon.request("GET", f"/v1/events?after={after}&limit=5000")
        assert status == 200, body
        if not body["events"]:
            return events
        events.extend(body["events"])


def import_items(daemon: Any, count: int, chunk: int = 5000) -> list[int]:
    ids: list[int] = []
    for start in range(0, count, chunk):
        items = [{"title": f"task {n}"} for n in range(start, min(count, start + chunk))]
        status, body = daemon.request("POST", "/v1/items:import", {"agent": "lead", "items": items})
        assert status == 201, body
        ids.extend(body["ids"])
    return ids


def reserve_worker(
    out: Any, url: str, token: str, agent: str, barrier: Any, rounds: Sequence[Sequence[str]]
) -> None:
    """Each round: wait for everyone, reserve these patterns; the winner frees them after."""
    barrier.wait(BARRIER_TIMEOUT)
    api = Api(url, token)
    answers = []
    for patterns in rounds:
        api.call("GET", "/v1/health")
        barrier.wait(BARRIER_TIMEOUT)
        status, body = api.call("POST", "/v1/reservations", {"agent": agent, "patterns": patterns})
        answers.append((status, body))
        barrier.wait(BARRIER_TIMEOUT)  # every answer is in before anyone frees anything
        if status == 201:
            api.call("POST", "/v1/reservations:release", {"agent": agent, "all": True})
        barrier.wait(BARRIER_TIMEOUT)
    api.close()
    out.put((agent, answers))
