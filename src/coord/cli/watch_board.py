"""What `coord watch` shows, read from the daemon and kept live by the event feed.

A frame needs only what fits a screen, so a board of any size costs the same few reads: the
counts from ``GET /v1/status`` (grouped queries), the first page of each state, the agents, the
live reservations, and the last events. A lease runs out without an event, so the view counts
it down itself, on the board's clock: the status answer's ``now``, carried forward by this
machine's monotonic clock. This machine's wall clock is never asked what time it is.

Two threads keep it live: one follows the event stream (``FEED``), the other reads a fresh
snapshot when an event says something changed (bursts coalesced, at most one read every
``MIN_REFRESH_SECONDS``) and every ``REFRESH_SECONDS`` regardless. Neither dies when the daemon
goes away: they say why (the view shows "reconnecting…") and go on once one answers again.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace

from coord.errors import CoordError
from coord.times import epoch_of_iso, iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any

    from coord.client.http import Client

    # (a client, the last event seen, told of trouble and of its end) -> every later event
    Feed = Callable[[Client, int, Callable[[str | None], None]], Iterator[dict[str, Any]]]

EVENTS_KEPT = 100  # the activity feed's memory: more than any screen shows
MIN_REFRESH_SECONDS = 1.0  # a claim storm is one read of the board a second, not one per event
# ... and never more than a tenth of the daemon's time: on a board of 200,000 items a reading
# takes ~0.2 s (the counts by state), so the next waits nine times that
REFRESH_COST_FACTOR = 9.0
REFRESH_SECONDS = 15.0  # reread anyway: agents' last-seen times move without an event
MAX_PAUSE_SECONDS = 2.0  # between tries while the daemon is away
PAGE_MIN, PAGE_MAX = 10, 200  # items read per state: what a screen can show, bounded


@dataclass
class Snapshot:
    """One reading of the board. ``server_now`` is the board's clock when it was read, at
    ``read_at`` on this machine's monotonic clock."""

    server_now: float
    read_at: float
    last_seq: int
    counts: dict[str, int]
    claimed: list[dict[str, Any]]
    needs_human: list[dict[str, Any]]
    ready: list[dict[str, Any]]  # claimable ones first, then the blocked
    ready_count: str  # "3", or "100+" when the first page was full
    reservations: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)
    # a worktree item's way to main: the queue in submit order, then those sent back
    landing: list[dict[str, Any]] = field(default_factory=list)

    def now(self) -> float:
        """The board's clock now."""
        return self.server_now + (time.monotonic() - self.read_at)

    def last_seen(self, agent: str | None) -> float | None:
        for entry in self.agents:
            if entry["name"] == agent:
                return epoch_of_iso(entry["last_seen"])
        return None

    def of(self, agent: str | None) -> Snapshot:
        """What ``--agent`` shows: that agent's claims, questions, held files and events; the
        counts, ready work and agents stay everyone's. ``None``: everyone's, unchanged."""
        if agent is None:
            return self
        return replace(
            self,
            claimed=[i for i in self.claimed if i["claimed_by"] == agent],
            needs_human=[i for i in self.needs_human if i["claimed_by"] == agent],
            landing=[i for i in self.landing if landing_holder(i) == agent],
            reservations=[r for r in self.reservations if r["agent"] == agent],
            events=[e for e in self.events if e.get("agent") == agent],
        )

    def ref_of(self, item_id: int) -> str:
        """An item as the rest of the view names it: its package id where an item this
        reading holds has one (a dependency, a reservation's item), else ``#12``."""
        for item in (*self.claimed, *self.needs_human, *self.ready, *self.landing):
            if item["id"] == item_id and item.get("key"):
                return str(item["key"])
        return f"#{item_id}"

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as `coord watch --json` prints it: what a frame shows, as data."""
        now = self.now()
        return {
            "server_now": iso(now),
            "last_seq": self.last_seq,
            "counts": self.counts,
            "claimed": [
                {
                    **_item_ref(item),
                    "holder": item["claimed_by"],
                    "lease_expires_at": item["lease_expires_at"],
                    "seconds_left": round(seconds_left(item["lease_expires_at"], now), 1),
                    "heartbeat_age_seconds": _age(self.last_seen(item["claimed_by"]), now),
                }
                for item in self.claimed
            ],
            "needs_human": [
                {
                    **_item_ref(item),
                    "holder": item["claimed_by"],
                    "question": item["question"],
                    "escalate_to": item["escalate_to"],
                }
                for item in self.needs_human
            ],
            "ready": [
                {
                    **_item_ref(item),
                    "priority": item["priority"],
                    "claimable": item["ready"],
                    "waits_on": waits_on(item, self.ref_of),
                }
                for item in self.ready
            ],
            "landing": [
                {
                    **_item_ref(item),
                    "state": item["state"],
                    "holder": landing_holder(item),
                    "branch": item.get("branch"),
                    "head": item.get("submitted_head"),
                    "submitted_at": item.get("submitted_at"),
                    "rework": item.get("rework"),
                }
                for item in self.landing
            ],
            "ready_count": self.ready_count,
            "reservations": [
                {**r, "seconds_left": round(seconds_left(r["expires_at"], now), 1)}
                for r in self.reservations
            ],
            "agents": self.agents,
            "events": self.events,
        }


def seconds_left(moment: str | None, now: float) -> float:
    """How long until ``moment`` (ISO, board time) on the board's clock; negative once past."""
    return epoch_of_iso(moment) - now if moment else 0.0


def waits_on(item: dict[str, Any], ref: Callable[[int], str] = "#{}".format) -> str:
    """Why a pending item cannot be claimed now ("" when it can); ``ref`` names a dependency."""
    if item.get("ready"):
        return ""
    if item.get("blocked_by"):
        return "waits on " + " ".join(ref(dep) for dep in item["blocked_by"])
    holders = sorted({r["agent"] for r in item.get("files_held_by") or []})
    if holders:
        return "files held by " + ", ".join(holders)
    if item.get("reserved_for"):
        return f"reserved for {item['reserved_for']}"
    return "not claimable now"


def landing_holder(item: dict[str, Any]) -> str | None:
    """Whose a queued item (its submitter) or one sent back (its last holder) is."""
    return item.get("rework_for") if item["state"] == "needs_rework" else item.get("claimed_by")


def _item_ref(item: dict[str, Any]) -> dict[str, Any]:
    return {"id": item["id"], "key": item.get("key"), "title": item["title"]}


def _age(moment: float | None, now: float) -> float | None:
    return None if moment is None else round(max(0.0, now - moment), 1)


def read_board(client: Client, rows: int, *, events: bool = False) -> Snapshot:
    """The board as a frame of ``rows`` lines can show it: a page of each state, not all."""
    page = max(PAGE_MIN, min(PAGE_MAX, rows))
    asked = time.monotonic()
    status = client.get("/v1/status")
    # the board's clock was read while the request was under way: its middle is the estimate
    read_at = (asked + time.monotonic()) / 2
    board = status["board"]

    def items(query: str) -> dict[str, Any]:
        answer: dict[str, Any] = client.get(f"/v1/items?{query}&limit={page}")
        return answer

    claimed = items("state=claimed")["items"]
    claimed.sort(key=lambda item: item["lease_expires_at"] or "")
    claimable = items("state=pending&ready=true")
    pending = items("state=pending")["items"]
    shown = {item["id"] for item in claimable["items"]}
    last_seq = int(status["last_seq"])
    snapshot = Snapshot(
        server_now=epoch_of_iso(board["now"]),
        read_at=read_at,
        last_seq=last_seq,
        counts=board["counts"],
        claimed=claimed,
        needs_human=items("state=needs_human")["items"],
        ready=claimable["items"] + [item for item in pending if item["id"] not in shown],
        ready_count=f"{len(shown)}+" if claimable["next"] is not None else str(len(shown)),
        reservations=client.get("/v1/reservations")["reservations"],
        agents=client.get("/v1/agents")["agents"],
        landing=client.get(f"/v1/queue?limit={page}")["items"]
        + items("state=needs_rework")["items"],
    )
    if events:
        after = max(0, last_seq - EVENTS_KEPT)
        snapshot.events = client.get(f"/v1/events?after={after}&limit={EVENTS_KEPT}")["events"]
    return snapshot


def stream(
    client: Client, after: int, trouble: Callable[[str | None], None]
) -> Iterator[dict[str, Any]]:
    """Every event after ``after``, in order, for ever: ``GET /v1/events/stream`` read by
    ``coord.client.stream``, which resumes across a daemon restart with nothing lost or
    doubled; ``trouble`` hears why it waits, then None when it is back. A view too far behind
    for the stream (told to reload) gets the last ``EVENTS_KEPT`` events and goes on from the
    newest: the board itself is read again anyway."""
    from coord.client import stream as sse

    while True:
        for said in sse.follow(client, after=after):
            if isinstance(said, sse.Interrupted):
                trouble(said.message)
            elif isinstance(said, sse.Resumed):
                trouble(None)
            elif isinstance(said, sse.Reload):
                # the newest events; from the start of a board whose log ends before the
                # cursor (replaced since): its numbers are not this cursor's
                kept = max(0, said.last_seq - EVENTS_KEPT)
                after = max(after, kept) if said.last_seq >= after else kept
                answer = client.get(f"/v1/events?after={after}&limit={EVENTS_KEPT}")
                yield from answer["events"]
                after = max([after, *(event["seq"] for event in answer["events"])])
                break
            else:
                after = said["seq"]
                yield said


# How the view hears of changes.
FEED: Feed = stream


class Watcher:
    """The live board: the latest snapshot and the recent events, kept fresh by two threads;
    the terminal reads them (``snapshot``, ``events``, ``trouble``) and draws."""

    def __init__(self, board_dir: Path, first: Snapshot, rows: int) -> None:
        from coord.client.http import Client

        # one client per thread; neither starts a daemon: stopping the daemon while this
        # watches must stop it (the view waits for the next one to start)
        self._reader = Client(board_dir, autostart=False, timeout=10.0)
        self._follower = Client(board_dir, autostart=False)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._snapshot = first
        self._events: deque[dict[str, Any]] = deque(first.events, maxlen=EVENTS_KEPT)
        self._last_seq = max([first.last_seq, *(e["seq"] for e in first.events)])
        self._rows = rows
        self._read_trouble: str | None = None
        self._feed_trouble: str | None = None

    def start(self) -> Watcher:
        for target in (self._follow, self._refresh):
            threading.Thread(
                target=_terminal_signals_elsewhere, args=(target,), daemon=True
            ).start()
        return self

    @property
    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot

    def events(self) -> list[dict[str, Any]]:
        """The recent events, newest first."""
        with self._lock:
            return list(reversed(self._events))

    def trouble(self) -> str | None:
        """Why the view may be out of date (the daemon is away), or None."""
        return self._read_trouble or self._feed_trouble

    def refresh(self, rows: int | None = None) -> None:
        """Read the board again now (a key, a resize: ``rows`` lines to fill)."""
        if rows is not None:
            self._rows = rows
        self._wake.set()

    def _follow(self) -> None:
        while True:
            try:
                for event in FEED(self._follower, self._last_seq, self._feed_said):
                    with self._lock:
                        if event["seq"] <= self._last_seq:
                            continue  # a feed that resends what it gave must not double it
                        self._last_seq = event["seq"]
                        self._events.append(event)
                    self._wake.set()
            except CoordError as err:  # the feed gave up: say why, start it again
                self._feed_said(err.message)
                time.sleep(MAX_PAUSE_SECONDS)

    def _feed_said(self, trouble: str | None) -> None:
        self._feed_trouble = trouble
        if trouble is None:
            self._wake.set()  # back: what changed while it was away?

    def _refresh(self) -> None:
        pause = 0.0
        while True:
            self._wake.wait(pause or REFRESH_SECONDS)
            self._wake.clear()
            started = time.monotonic()
            try:
                snapshot = read_board(self._reader, self._rows)
            except (CoordError, KeyError, TypeError, ValueError) as err:
                self._read_trouble = (
                    err.message
                    if isinstance(err, CoordError)
                    else f"an answer this coord cannot read ({err!r}): is the daemon another "
                    "version? `coord status` says"
                )
                pause = min(max(pause * 2, 0.2), MAX_PAUSE_SECONDS)
                continue
            with self._lock:
                self._snapshot = snapshot
            self._read_trouble, pause = None, 0.0
            # what arrives meanwhile is one more read, not many
            took = time.monotonic() - started
            time.sleep(max(MIN_REFRESH_SECONDS, REFRESH_COST_FACTOR * took))


def _terminal_signals_elsewhere(target: Callable[[], None]) -> None:
    """Run ``target`` with the terminal's signals blocked in this thread, so the kernel
    delivers them to the main one, where they end its wait for a key at once: a resize
    (SIGWINCH), Ctrl-C (SIGINT), a `kill` or a closed terminal (SIGTERM, SIGHUP)."""
    import signal

    signal.pthread_sigmask(
        signal.SIG_BLOCK, {signal.SIGWINCH, signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    )
    target()
