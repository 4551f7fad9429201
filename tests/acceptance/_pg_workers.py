"""Worker processes for the team-board tests (stdlib only, as ``_workers``): each talks real
HTTP to the daemons it is given and records what it saw, with times on the one monotonic
clock every process of this machine shares (CLOCK_MONOTONIC is system-wide on Linux).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Sequence
from typing import Any

from _workers import BARRIER_TIMEOUT, CONNECTION_LOST, Api

# What the history checker reads of an answer (``history_check.op_from_answer``).
_KEPT = ("token", "lease_expires_at", "takeover_from", "updated_at", "error", "holder")
_KEPT_REFUSAL = ("current_token", "state")


def _trim(body: Any) -> Any:
    if not isinstance(body, dict):
        return body
    kept = {key: body[key] for key in (*_KEPT, *_KEPT_REFUSAL) if key in body}
    if isinstance(body.get("item"), dict):
        kept["item"] = {"updated_at": body["item"].get("updated_at")}
    return kept


def history_worker(
    out: Any,
    endpoints: Sequence[tuple[str, str]],
    agent: str,
    barrier: Any,
    item_ids: Sequence[int],
    seconds: float,
    seed: int,
) -> None:
    """A random mix of claim / heartbeat / release / done on ``item_ids`` for ``seconds``,
    each request to a daemon picked at random, with 1-2 s leases. The agent forgets nothing
    on its own: it keeps a token until an answer says the claim is over, so it goes on
    heartbeating claims others took over (a zombie) and sends done with stale tokens.
    Puts ``(agent, records)`` on ``out``: one record per operation, answered or not."""
    rng = random.Random(seed)
    barrier.wait(BARRIER_TIMEOUT)
    apis = [Api(url, token) for url, token in endpoints]
    held: dict[int, int] = {}  # item -> the token of a claim this agent believes it has
    records: list[dict[str, Any]] = []
    for api in apis:
        api.call("GET", "/v1/health")
    barrier.wait(BARRIER_TIMEOUT)
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        record: dict[str, Any] = {"agent": agent}
        if held and rng.random() < 0.5:
            item = rng.choice(sorted(held))
            roll = rng.random()
            kind = "heartbeat" if roll < 0.75 else "release" if roll < 0.985 else "done"
            record.update(kind=kind, item=item, token=held[item])
            body: dict[str, Any] = {"agent": agent, "token": held[item]}
            if kind == "heartbeat":
                record["lease"] = body["lease_seconds"] = round(rng.uniform(1, 2), 3)
        else:
            item = rng.choice(item_ids)
            record.update(kind="claim", item=item, token=None)
            record["lease"] = round(rng.uniform(1, 2), 3)
            body = {"agent": agent, "lease_seconds": record["lease"]}
        api = rng.choice(apis)
        record["start"] = time.monotonic()
        try:
            status, answer = api.call("POST", f"/v1/items/{item}/{record['kind']}", body)
        except CONNECTION_LOST as err:
            status, answer = None, {"error": f"connection lost: {err!r}"}
        record["end"] = time.monotonic()
        record.update(status=status, answer=_trim(answer))
        records.append(record)
        if status == 200 and record["kind"] == "claim":
            held[item] = answer["token"]
        elif record["kind"] in ("release", "done") and status == 200:
            held.pop(item, None)
        elif isinstance(answer, dict) and answer.get("error") == "lease_lost":
            held.pop(item, None)  # the claim is over: a zombie learns it here
        if status is None:
            break
        # now and then a pause longer than a lease (a stalled agent): its claims run out,
        # others take them over, and it comes back as a zombie with the old tokens
        time.sleep(rng.uniform(1.0, 2.5) if rng.random() < 0.01 else rng.uniform(0, 0.02))
    for api in apis:
        api.close()
    out.put((agent, records))


def ack_worker(
    out: Any,
    endpoints: Sequence[tuple[str, str]],
    agent: str,
    barrier: Any,
    record_path: str,
    stop_path: str,
    lease: float,
) -> None:
    """claim-next, then done on every other claim, until ``stop_path`` exists; the daemon is
    ``endpoints[0]`` (one machine's agent talks to its own daemon). Every answer goes to
    ``record_path`` (one JSON line, flushed and fsynced before the next request: a 2xx
    written there was acknowledged), with its status and how long it took. Ends early if the
    daemon goes away."""
    url, token = endpoints[0]
    barrier.wait(BARRIER_TIMEOUT)
    api = Api(url, token, timeout=60)
    stopped_by = "asked to stop"
    claims = 0
    with open(record_path, "a", encoding="utf-8") as record:

        def note(entry: dict[str, Any]) -> None:
            record.write(json.dumps(entry) + "\n")
            record.flush()
            os.fsync(record.fileno())

        while not os.path.exists(stop_path):
            began = time.monotonic()
            try:
                status, body = api.call(
                    "POST", "/v1/claim-next", {"agent": agent, "lease_seconds": lease}
                )
            except CONNECTION_LOST as err:
                stopped_by = f"connection lost: {type(err).__name__}"
                break
            took = time.monotonic() - began
            entry = {"agent": agent, "op": "claim", "status": status, "took": took, "at": began}
            if status == 200:
                entry.update(id=body["id"], token=body["token"])
                claims += 1
            else:
                entry["answer"] = body
            note(entry)
            if status != 200:
                time.sleep(0.05)
                continue
            if claims % 2:
                continue  # left to run out
            began = time.monotonic()
            try:
                status, done = api.call(
                    "POST",
                    f"/v1/items/{body['id']}/done",
                    {"agent": agent, "token": body["token"]},
                )
            except CONNECTION_LOST as err:
                stopped_by = f"connection lost: {type(err).__name__}"
                break
            entry = {
                "agent": agent,
                "op": "done",
                "status": status,
                "took": time.monotonic() - began,
                "at": began,
                "id": body["id"],
                "token": body["token"],
            }
            if status != 200:
                entry["answer"] = done
            note(entry)
    api.close()
    out.put((agent, stopped_by))


def read_records(paths: Sequence[Any]) -> list[dict[str, Any]]:
    """Every whole line the ``ack_worker``s wrote (a worker may be writing the next one)."""
    found: list[dict[str, Any]] = []
    for path in paths:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                *lines, _partial = file.read().split("\n")
            found.extend(json.loads(line) for line in lines)
    return found
