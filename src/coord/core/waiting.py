"""A fair wait: waiters queue first come, first served, for an item's claim or for paths,
and whatever frees the target grants the first live waiter in that same transaction.

Why in the same transaction: a release that only *woke* the waiters would start a herd (all
of them race for the claim) and could be lost (a waiter that checked before the release and
subscribed after it). Here nobody races: the release's write grants, and a waiter only has
to read its own row to learn it won, whenever it looks.

What frees a target: a release, done, cancel, unreserve, submit, merge or abandon (the kinds
in ``FREEING``: ``GrantingStorage`` runs ``grant_due`` at the end of any write that recorded
one), and a lease that lapsed. A lapse is no write (coord judges leases when they are read),
so it is acted on wherever the board next looks: a waiter's heartbeat, and the daemon's own
clock (``sweep``, every ``SWEEP_SECONDS`` while anyone waits).

A place is itself leased (``Wait.expires_at``): a waiter that stops heartbeating loses it
and blocks nobody; the queue reads only live places.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from coord import model
from coord.core import reservations, rules, worktree_holds
from coord.core.claims import Claims
from coord.core.context import BoardContext
from coord.errors import Conflict, CoordError, InvalidInput, NotClaimable, NotFound, NotPermitted
from coord.model import Wait
from coord.storage.base import ReadTx, Storage, WriteTx
from coord.times import iso

# How long a place lasts without a heartbeat, unless the waiter asks for another.
DEFAULT_PLACE_SECONDS = 30.0
MAX_PLACE_SECONDS = 3600.0
# The daemon grants on lapsed leases this often while anyone waits.
SWEEP_SECONDS = 0.5
# The queue is read whole on every grant; past this many live places new waiters are refused.
MAX_WAITERS = 500


class GrantingStorage(Storage):
    """The storage the board's parts write through: a write that recorded a freeing change
    (``Changes.freed_note``) grants the waiters before it commits. Everything else is the
    backend's own."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.waiting: Waiting | None = None  # set once the board's parts are made

    @contextmanager
    def read(self) -> Iterator[ReadTx]:
        with self.inner.read() as tx:
            yield tx

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        waiting = self.waiting
        if waiting is None:
            with self.inner.write() as tx:
                yield tx
            return
        changes = waiting.ctx.changes
        with self.inner.write() as tx:
            outer = changes.freed_begin()
            try:
                yield tx
                if changes.freed_now():
                    waiting.grant_due(tx, waiting.ctx.now(tx))
            finally:
                changes.freed_end(outer)

    def schema_version(self) -> int:
        return self.inner.schema_version()

    def close(self) -> None:
        self.inner.close()

    # the base class's defaults would answer for the backend: each one is the backend's
    def now(self) -> float | None:
        return self.inner.now()

    def location(self) -> dict[str, str]:
        return self.inner.location()

    def problem(self) -> CoordError | None:
        return self.inner.problem()

    def daemon_heartbeat(self, record: dict[str, Any]) -> None:
        self.inner.daemon_heartbeat(record)

    def daemon_gone(self, instance: str) -> None:
        self.inner.daemon_gone(instance)

    def live_daemons(self) -> list[dict[str, Any]]:
        return self.inner.live_daemons()

    def __getattr__(self, name: str) -> Any:  # a backend's own (SQLite's rewind_soon)
        return getattr(self.inner, name)


def check_place_seconds(value: Any) -> float:
    if value is None:
        return DEFAULT_PLACE_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("place_seconds must be a number of seconds", field="place_seconds")
    if not 1 <= value <= MAX_PLACE_SECONDS:
        raise InvalidInput(
            f"place_seconds {value} is out of range: use 1 to {MAX_PLACE_SECONDS:g} (the "
            "waiter heartbeats well within it)",
            field="place_seconds",
        )
    return float(value)


def _wait_id(value: Any) -> int:
    value = model.digits(value)
    if not model.is_stored_integer(value) or value < 1:
        raise InvalidInput(f"a wait id is a positive integer, not {value!r}", field="wait")
    return int(value)


def waiters(
    tx: ReadTx,
    now: float,
    *,
    item: int | None = None,
    paths: Sequence[str] = (),
    is_file: Any = None,
) -> list[Wait]:
    """The live queue for an item's claim or for paths, first in line first: what a
    refusal's ``wait`` option tells (its length, and so the next waiter's place)."""
    return [w for w in tx.waiting(now, MAX_WAITERS) if _same_target(w, item, paths, is_file)]


def queue_facts(
    tx: ReadTx,
    now: float,
    *,
    item: int | None = None,
    paths: Sequence[str] = (),
    is_file: Any = None,
) -> dict[str, Any]:
    """What a refusal's ``wait`` option says of the line (``coord.core.next_steps``): how
    many wait, who is first, and the place a newcomer would take."""
    line = waiters(tx, now, item=item, paths=paths, is_file=is_file)
    return {
        "waiting": len(line),
        "first": line[0].agent if line else None,
        "your_place": len(line) + 1,
    }


def _same_target(wait: Wait, item: int | None, paths: Sequence[str], is_file: Any) -> bool:
    if item is not None:
        return wait.item_id == item
    if not paths or not wait.patterns:
        return False
    return not reservations.pairwise_disjoint([wait.patterns], list(paths), is_file)


class Waiting:
    """The board's verbs for waiting: queue, keep the place, give it up, and the grant."""

    def __init__(self, ctx: BoardContext, claims: Claims) -> None:
        self.ctx = ctx
        self.claims = claims

    def wait(
        self,
        *,
        agent: Any,
        item: Any = None,
        paths: Any = None,
        lease_seconds: Any = None,
        place_seconds: Any = None,
    ) -> dict[str, Any]:
        """Take a place in the queue for an item's claim or for paths (granted at once when
        the target is free and nobody waits ahead). ``lease_seconds``: the lease of what is
        granted; ``place_seconds``: the place's own lease, kept by ``heartbeat``."""
        agent = model.check_agent(agent)
        item_ref = model.check_item_ref(item) if item is not None else None
        given = model.check_files(paths)
        lease = model.check_lease(lease_seconds, self.ctx.default_lease_seconds)
        return self.enqueue(agent, item_ref, given, lease, check_place_seconds(place_seconds))

    def enqueue(
        self,
        agent: str,
        item_ref: int | str | None,
        paths: Sequence[str],
        lease: float,
        place_seconds: float,
    ) -> dict[str, Any]:
        wanted = reservations.canonical(paths, self.ctx.repo_root)
        if (item_ref is None) == (not wanted):
            raise InvalidInput(
                "wait for one item, or for paths: name exactly one of them", field="item"
            )
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item_id = None
            if item_ref is not None:
                item = rules.require_item(tx, item_ref)
                if item.state in ("done", "cancelled"):
                    raise NotClaimable(
                        f"item {item.ref} is {item.state}: nobody will release it; pick "
                        "another (`coord next`)",
                        id=item.id,
                        state=item.state,
                    )
                if item.claimed_by == agent and item.lease_live(now):
                    raise Conflict(f"you already hold item {item.ref}", id=item.id)
                item_id = item.id
            queue = tx.waiting(now, MAX_WAITERS)
            for kept in queue:  # asking again keeps the place in line
                if kept.agent == agent and kept.item_id == item_id and kept.patterns == wanted:
                    tx.renew_wait(kept.id, now + place_seconds)
                    self.grant_due(tx, now)
                    return self._status(tx, kept.id, now)
            if len(queue) >= MAX_WAITERS:
                raise Conflict(  # the board's state, not the request's shape
                    f"{MAX_WAITERS} waiters already queue on this board; pick other work"
                )
            wait_id = tx.insert_wait(
                agent=agent,
                item_id=item_id,
                patterns=wanted,
                lease_seconds=lease,
                now=now,
                expires_at=now + place_seconds,
            )
            target = {"item": item_id} if item_id is not None else {"paths": list(wanted)}
            details = {"wait": wait_id, **target, "place_expires_at": iso(now + place_seconds)}
            self.ctx.changes.record(tx, agent, item_id, "waiting", now, details, worked=True)
            self.grant_due(tx, now)
            return self._status(tx, wait_id, now)

    def heartbeat(self, wait_id: Any, *, agent: Any, place_seconds: Any = None) -> dict[str, Any]:
        """Keep the place (and grant, should the target have come free by a lapse)."""
        wait_id, agent = _wait_id(wait_id), model.check_agent(agent)
        place = check_place_seconds(place_seconds)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            wait = self._own(tx, wait_id, agent)
            if wait.live(now):
                tx.renew_wait(wait_id, now + place)
                self.grant_due(tx, now)
            return self._status(tx, wait_id, now)

    def cancel(self, wait_id: Any, *, agent: Any) -> dict[str, Any]:
        wait_id, agent = _wait_id(wait_id), model.check_agent(agent)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            wait = self._own(tx, wait_id, agent)
            if wait.state == "waiting":
                tx.end_wait(wait_id, "cancelled", now, outcome="given up by the waiter")
                self.ctx.changes.record(
                    tx, agent, wait.item_id, "wait_cancelled", now, {"wait": wait_id}
                )
                self.grant_due(tx, now)  # the next in line may be free to go now
            return self._status(tx, wait_id, now)

    def status(self, wait_id: Any) -> dict[str, Any]:
        wait_id = _wait_id(wait_id)
        with self.ctx.storage.read() as tx:
            return self._status(tx, wait_id, self.ctx.now(tx))

    def sweep(self) -> int:
        """Grant what a lapsed lease freed: the daemon's clock calls it. Reads first, and
        writes only when someone waits. Returns how many were granted."""
        with self.ctx.storage.read() as tx:
            if not tx.waiting(self.ctx.now(tx), 1):
                return 0
        with self.ctx.storage.write() as tx:
            return len(self.grant_due(tx, self.ctx.now(tx)))

    def grant_due(self, tx: WriteTx, now: float) -> list[Wait]:
        """Grant every live waiter whose target is free and whom no earlier live waiter on
        the same target precedes, in arrival order, in the caller's transaction."""
        granted: list[Wait] = []
        ahead: list[Wait] = []  # live waiters not granted: nobody passes them
        for wait in tx.waiting(now, MAX_WAITERS):
            if any(_same_target(w, wait.item_id, wait.patterns, self.ctx.is_file) for w in ahead):
                ahead.append(wait)
                continue
            if self._grant(tx, wait, now):
                granted.append(wait)
            else:
                ahead.append(wait)
        return granted

    def _grant(self, tx: WriteTx, wait: Wait, now: float) -> bool:
        """Give ``wait`` its claim or its paths if they are free now; end it if they never
        will be (the item done or cancelled). False: it waits on."""
        if wait.item_id is not None:
            item = tx.get_item(wait.item_id)
            if item is None or item.state in ("done", "cancelled"):
                state = "gone" if item is None else item.state
                tx.end_wait(wait.id, "gone", now, outcome=f"the item is {state}")
                self.ctx.changes.record(
                    tx, wait.agent, wait.item_id, "wait_ended", now, {"wait": wait.id}
                )
                return False
            try:
                rules.ensure_claimable(item, now, wait.agent)
                live = worktree_holds.live_holds(tx, now, near=item.files) if item.files else []
                claim = self.claims.take(tx, item, wait.agent, wait.lease_seconds, now, live)
            except CoordError:
                return False
            tx.end_wait(wait.id, "granted", now, token=claim.token)
            details: dict[str, Any] = {"wait": wait.id, "item": item.id, "token": claim.token}
            self.ctx.changes.record(tx, wait.agent, item.id, "wait_granted", now, details)
            return True
        live = worktree_holds.live_holds(tx, now, near=wait.patterns)
        if reservations.find_conflicts(wait.agent, wait.patterns, True, live, self.ctx.is_file):
            return False
        expires = now + wait.lease_seconds
        for pattern in wait.patterns:
            tx.insert_reservation(
                agent=wait.agent,
                pattern=pattern,
                exclusive=True,
                item_id=None,
                reason=f"waited (wait {wait.id})",
                now=now,
                expires_at=expires,
            )
        tx.end_wait(wait.id, "granted", now)
        details = {
            "wait": wait.id,
            "patterns": list(wait.patterns),
            "exclusive": True,
            "expires_at": iso(expires),
        }
        self.ctx.changes.record(tx, wait.agent, None, "wait_granted", now, details)
        return True

    def _own(self, tx: ReadTx, wait_id: int, agent: str) -> Wait:
        wait = tx.get_wait(wait_id)
        if wait is None:
            raise NotFound(f"no wait {wait_id} on this board", id=wait_id)
        if wait.agent != agent:
            raise NotPermitted(
                f"wait {wait_id} is {wait.agent}'s place, not {agent}'s: only the waiter "
                "keeps or gives up its place",
                id=wait_id,
                agent=wait.agent,
            )
        return wait

    def _status(self, tx: ReadTx, wait_id: int, now: float) -> dict[str, Any]:
        """The place as its waiter sees it: granted (with what), waiting (its place, who is
        ahead, what holds the target) or ended."""
        wait = tx.get_wait(wait_id)
        if wait is None:
            raise NotFound(f"no wait {wait_id} on this board", id=wait_id)
        state = wait.shown_state(now)
        answer: dict[str, Any] = {
            "wait": wait.id,
            "agent": wait.agent,
            **wait.target(),
            "state": state,
            "created_at": iso(wait.created_at),
            "place_expires_at": iso(wait.expires_at),
            "outcome": wait.outcome
            or ("the place lapsed: no heartbeat" if state == "gone" else ""),
        }
        if state == "granted":
            answer["token"] = wait.token
            if wait.item_id is not None:
                item = tx.get_item(wait.item_id)
                if item is not None:
                    answer["lease_expires_at"] = iso(item.lease_expires_at)
            else:
                held = [
                    r
                    for r in worktree_holds.live_holds(tx, now, agent=wait.agent)
                    if r.pattern in wait.patterns
                ]
                answer["lease_expires_at"] = iso(max((r.expires_at for r in held), default=None))
        if state == "waiting":
            queue = waiters(
                tx, now, item=wait.item_id, paths=wait.patterns, is_file=self.ctx.is_file
            )
            ahead = [w for w in queue if w.id < wait.id]
            answer["place"] = len(ahead) + 1
            answer["queue_length"] = len(queue)
            answer["ahead"] = [w.agent for w in ahead]
        return answer
