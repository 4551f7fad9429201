"""The storage seam: what the core needs from a backend, and nothing more.

The core (``coord.core``) holds every rule: who may claim, what a stale token means, how a
cycle is found. A backend supplies transactions and small data verbs, and returns the nouns
(``coord.model``). Atomicity comes from the backend's write transaction (SQLite: ``BEGIN
IMMEDIATE``; PostgreSQL: row locks) and, as a second line of defence, from ``update_item``'s
compare-and-set on the fencing token: the core refuses a miss as ``StaleSnapshot`` and the
transaction rolls back.

Every backend runs the same contract suite (``tests/test_storage_contract.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from coord.errors import CoordError
from coord.model import (
    AccessToken,
    Agent,
    Ask,
    Event,
    Item,
    LandingLease,
    Reply,
    Reservation,
    Wait,
)


@dataclass(frozen=True)
class ItemQuery:
    """Filters for listing items. ``claimable_at`` keeps only items claimable at that time.

    ``state`` is one of ``model.LISTED_STATES``; ``holder`` keeps the items whose
    ``claimed_by`` is that agent: those it holds and (a done item keeps its last holder)
    those it finished."""

    state: str | None = None
    holder: str | None = None
    kinds: Sequence[str] | None = None
    label: str | None = None
    claimable_at: float | None = None
    spec: str | None = None  # items imported from this design document
    after_id: int = 0
    limit: int = 100


# The shown states a stored one splits into (``Item.shown_state`` says the same of one item).
_DERIVED = {
    "pending": "state = 'pending' AND rework IS NULL",
    "needs_rework": "state = 'pending' AND rework IS NOT NULL",
    "done": "state = 'done' AND merged_commit IS NULL",
    "merged": "state = 'done' AND merged_commit IS NOT NULL",
}


def listing_where(
    query: ItemQuery, mark: str, *, unmet_deps: str, has_label: str, claimable: str
) -> tuple[list[str], list[Any]]:
    """What a listing's filters mean, in SQL, for every backend: the conditions and their
    parameters, all but ``kinds`` (its clause is each dialect's own). ``mark`` is the driver's
    placeholder; the fragments are the backend's SQL for a dependency not done, for a label,
    and for an item claimable at a time (one parameter)."""
    where: list[str] = [f"id > {mark}"]
    params: list[Any] = [query.after_id]
    state = query.state
    if state == "open" and query.holder is not None:
        where.append("state IN ('claimed', 'queued')")  # a pending item has no holder
    elif state == "open":
        where.append("state IN ('pending', 'claimed', 'queued')")
    elif state in _DERIVED:
        where.append(_DERIVED[state])
    elif state == "needs_human":
        where.append("state = 'claimed' AND question IS NOT NULL")
    elif state == "claimed":
        where.append("state = 'claimed' AND question IS NULL")
    elif state == "blocked":  # Item.blocked_by is not empty: the same predicate
        where.append(f"state = 'pending' AND {unmet_deps}")
    elif state is not None:
        where.append(f"state = {mark}")
        params.append(state)
    for condition, value in (
        (f"claimed_by = {mark}", query.holder),
        (has_label, query.label),
        (f"spec = {mark}", query.spec),
        (claimable, query.claimable_at),
    ):
        if value is not None:
            where.append(condition)
            params.append(value)
    return where, params


# What holds an open item back, in the order ``ReadTx.count_held_back`` judges them.
HELD_BACK_REASONS = (
    "landing",
    "needs_human",
    "yours",
    "claimed",
    "waiting_on_dependencies",
    "reserved_for_you",
    "reserved_in_document",
    "open",
)


class ReadTx(ABC):
    """A consistent snapshot of the board."""

    def clock(self) -> float | None:
        """The board's time on the backend's own clock, or None when it has none and the
        board's clock applies (SQLite: the daemon's). PostgreSQL: the database server's, read
        in a write transaction right after its lock is granted, so every daemon judges leases
        on one clock at the moment the write is serialised."""
        return None

    @abstractmethod
    def get_item(self, item_id: int) -> Item | None: ...

    @abstractmethod
    def get_item_by_key(self, key: str) -> Item | None:
        """The item imported as work package ``key`` (``R3``), if any."""

    @abstractmethod
    def list_items(self, query: ItemQuery) -> list[Item]: ...

    @abstractmethod
    def claimable_items(
        self,
        now: float,
        kinds: Sequence[str],
        label: str | None,
        after: tuple[int, int] | None = None,
        limit: int = 1,
    ) -> list[Item]:
        """Up to ``limit`` claimable items in claim order (priority, then id), after the
        (priority, id) ``after`` (keyset paging).

        Claimable here means state and dependencies only; the core checks files. Must not
        scan done or live-claimed rows: this is the hot path of claim-next.
        """

    @abstractmethod
    def count_items_by_state(self) -> dict[str, int]:
        """How many items are in each state people see (``model.SHOWN_STATES``, every one
        present, 0 when none): a claimed item with an open question counts as
        ``needs_human``, not ``claimed``. One grouped count, never a read of the items."""

    @abstractmethod
    def count_held_back(
        self, now: float, kinds: Sequence[str], label: str | None, agent: str
    ) -> dict[str, int]:
        """The open items of these kinds (with this label) by what holds each back from
        ``agent``'s claim-next, first reason first (``HELD_BACK_REASONS``): ``landing``
        (submitted), ``needs_human``, ``yours`` and ``claimed`` (a live claim: the agent's own,
        or another's), ``waiting_on_dependencies``, ``reserved_for_you`` and
        ``reserved_in_document`` (a design document's reservation line), else ``open`` (nothing
        here holds it back: only files others hold or a first refusal can, which the core
        judges). Every reason present, 0 when none. For a refusal of claim-next: one grouped
        count, not a read of the items."""

    @abstractmethod
    def reserved_pending(self, kinds: Sequence[str], label: str | None, limit: int) -> list[Item]:
        """Up to ``limit`` pending items of these kinds (with this label) that a design
        document's reservation holds back and nothing before it (``count_held_back``'s
        ``reserved_*``: no dependency open), in claim order: for a refusal to name them. Walks
        the pending rows only, never the done ones."""

    @abstractmethod
    def queued_items(self, limit: int) -> list[Item]:
        """Up to ``limit`` queued items (submitted, waiting to land), in submit order."""

    @abstractmethod
    def access_token(self, secret_sha256: str) -> AccessToken | None:
        """The person's or machine's token whose secret hashes to this (revoked ones too)."""

    @abstractmethod
    def access_token_hash(self, ref: str) -> str | None:
        """The hash of the live token whose hash begins with ``ref`` (``access_rows.REF_DIGITS``
        hex digits): the key of the daemon's identity proof to its holder."""

    @abstractmethod
    def access_tokens(self) -> list[AccessToken]:
        """Every token issued, oldest first, revoked ones too; never a secret or its hash."""

    @abstractmethod
    def landing_lease(self) -> LandingLease | None:
        """The board's landing lease as last written, or None before the first acquisition."""

    @abstractmethod
    def claims_ending_between(self, start: float, end: float, limit: int) -> list[Item]:
        """Up to ``limit`` claimed items not waiting on a human whose lease ends after
        ``start`` and at or before ``end``, soonest first."""

    @abstractmethod
    def live_reservations(
        self, now: float, *, near: Sequence[str] | None = None, agent: str | None = None
    ) -> list[Reservation]:
        """Reservations with ``expires_at > now``, oldest first: all of them, or only
        ``agent``'s, or (``near``) at least every one that could overlap those patterns."""

    @abstractmethod
    def deps_of(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        """Direct dependencies of each given item (missing ids map to nothing)."""

    @abstractmethod
    def existing_ids(self, item_ids: Iterable[int]) -> set[int]: ...

    @abstractmethod
    def replies(self, item_id: int, after: int = 0, limit: int = -1) -> list[Reply]:
        """The item's replies with ids above ``after``, oldest first; ``limit`` -1: all."""

    @abstractmethod
    def acks(self, item_id: int) -> list[tuple[str, float]]: ...

    @abstractmethod
    def agents(self) -> list[Agent]: ...

    @abstractmethod
    def events_after(
        self, seq: int, limit: int, item_id: int | None = None, max_bytes: int | None = None
    ) -> list[Event]:
        """Up to ``limit`` events after ``seq``, oldest first. ``max_bytes``: the page ends
        with the event whose details bring the page's total (as stored, JSON) to it, and the
        events after it are not read at all: a page of 200 edits of a 64 KB body is 13 MB.
        The first event always comes, however big."""

    @abstractmethod
    def last_seq(self) -> int: ...

    @abstractmethod
    def inbox_cursor(self, agent: str) -> int: ...

    @abstractmethod
    def inbox_events(self, agent: str, after_seq: int, limit: int) -> list[Event]:
        """Events by others after ``after_seq`` addressed to ``agent`` or about its items:
        items it created, holds, was sent, or replied on, replies that mention it, and the
        takeover or cancel that ended its claim (``takeover_from``, ``holder``)."""

    # --- waits and asks (issue 26; ``coord.storage.waits_tx``) ---------------------------

    @abstractmethod
    def get_wait(self, wait_id: int) -> Wait | None: ...

    @abstractmethod
    def waiting(self, now: float, limit: int) -> list[Wait]:
        """Up to ``limit`` places still waiting whose lease runs past ``now``, in arrival
        order (the queue)."""

    @abstractmethod
    def get_ask(self, ask_id: int) -> Ask | None: ...

    @abstractmethod
    def open_asks(self, holder: str, now: float, limit: int) -> list[Ask]:
        """Up to ``limit`` asks addressed to ``holder``, unanswered and not timed out at
        ``now``, oldest first."""


class WriteTx(ReadTx):
    """An exclusive write transaction: all or nothing, serialised with every other writer."""

    @abstractmethod
    def insert_item(
        self,
        *,
        kind: str,
        title: str,
        body: str,
        priority: int,
        labels: Sequence[str],
        created_by: str,
        recipient: str | None,
        now: float,
        key: str | None = None,
        spec: str | None = None,
        spec_line: int | None = None,
        checks: Sequence[str] = (),
        escalate_to: str | None = None,
    ) -> int:
        """A new pending item; ``key`` must be unused (callers check first)."""

    @abstractmethod
    def update_item(self, item_id: int, expected_token: int, changes: dict[str, Any]) -> bool:
        """Apply ``changes`` only if the item's fencing token is still ``expected_token``.

        Returns whether the row changed. Allowed keys: title, body, priority, labels, state,
        claimed_by, fencing_token, lease_expires_at, updated_at, closed_at, spec, spec_line,
        checks, evidence, question, escalate_to, reserved_for, and a worktree item's branch,
        base_commit, worktree, submitted_head, submitted_at, merged_commit, rework (a JSON
        object), rework_for, rework_until.
        """

    def take_first_pending(
        self, agent: str, kinds: Sequence[str], label: str | None, now: float, expires_at: float
    ) -> Item | None:
        """Claim-next's usual case in one conditional write, or None with nothing written.

        Claims the first item of ``claimable_items(now, kinds, label)`` for ``agent`` until
        ``expires_at`` (token + 1, ``updated_at = now``) only when that item is pending and
        declares no files, and no lapsed lease is claimable under the same filters (a
        takeover, or files to check, is the core's job). Returns the item as written. A
        backend without such a statement keeps this default, and the core does the rest.
        """
        return None

    @abstractmethod
    def insert_access_token(self, name: str, machine: bool, secret_sha256: str, now: float) -> int:
        """A new token for ``name``; its id."""

    @abstractmethod
    def revoke_access_token(self, token_id: int, now: float) -> bool:
        """Revoke it; False when there is no such token or it was revoked already."""

    @abstractmethod
    def touch_access_token(self, token_id: int, now: float) -> None:
        """Record its use now, at most once a minute (``access_rows.TOUCH_SECONDS``)."""

    @abstractmethod
    def set_landing_lease(self, holder: str | None, token: int, expires_at: float | None) -> None:
        """Write the board's landing lease (its one row, made on the first write); ``holder``
        and ``expires_at`` None: free. The core decides who may."""

    @abstractmethod
    def add_deps(self, item_id: int, deps: Iterable[int]) -> None: ...

    @abstractmethod
    def remove_deps(self, item_id: int, deps: Iterable[int]) -> None: ...

    @abstractmethod
    def append_event(
        self,
        *,
        at: float,
        agent: str | None,
        item_id: int | None,
        kind: str,
        details: dict[str, Any],
        provenance: dict[str, Any] | None = None,
    ) -> int:
        """Append to the log; returns the new sequence number (gapless, increasing).
        ``provenance``: who made it, as the board knew it (``coord.core.provenance``)."""

    @abstractmethod
    def touch_agent(self, name: str, now: float, *, worked: bool = False) -> None:
        """Note the agent as seen at ``now`` (first seen too, when new); ``worked``: also mark
        it as acting as an agent (``Agent.worked``), a mark never taken back."""

    @abstractmethod
    def delete_agents(self, names: Sequence[str]) -> None:
        """Forget these agents (their last seen, mark and inbox cursor); the log keeps
        everything they did. Names not on the board are ignored."""

    @abstractmethod
    def set_item_files(self, item_id: int, patterns: Sequence[str]) -> None: ...

    @abstractmethod
    def insert_reservation(
        self,
        *,
        agent: str,
        pattern: str,
        exclusive: bool,
        item_id: int | None,
        reason: str,
        now: float,
        expires_at: float,
    ) -> int: ...

    @abstractmethod
    def delete_reservations(self, ids: Iterable[int]) -> None: ...

    @abstractmethod
    def extend_item_reservations(self, item_id: int, agent: str, expires_at: float) -> None:
        """Move the expiry of ``agent``'s reservations that belong to the item."""

    @abstractmethod
    def delete_item_reservations(self, item_id: int, agent: str | None) -> None:
        """Free the item's reservations (``agent``'s only, or everyone's when None)."""

    @abstractmethod
    def purge_expired_reservations(self, now: float) -> None:
        """Housekeeping only: expired rows already stopped counting."""

    @abstractmethod
    def add_reply(self, item_id: int, author: str, body: str, now: float) -> int: ...

    @abstractmethod
    def add_ack(self, item_id: int, agent: str, now: float) -> bool:
        """Record an acknowledgement; False when this agent had already acknowledged."""

    @abstractmethod
    def set_inbox_cursor(self, agent: str, seq: int, now: float) -> None: ...

    @abstractmethod
    def insert_wait(
        self,
        *,
        agent: str,
        item_id: int | None,
        patterns: Sequence[str],
        lease_seconds: float,
        now: float,
        expires_at: float,
    ) -> int: ...

    @abstractmethod
    def renew_wait(self, wait_id: int, expires_at: float) -> None:
        """Move a waiting place's lease (one that ended stays ended)."""

    @abstractmethod
    def end_wait(
        self, wait_id: int, state: str, now: float, *, token: int | None = None, outcome: str = ""
    ) -> None:
        """End a waiting place: granted, cancelled or gone (one that ended stays as it was)."""

    @abstractmethod
    def insert_ask(
        self,
        *,
        asker: str,
        holder: str,
        item_id: int | None,
        token: int | None,
        patterns: Sequence[str],
        reason: str,
        now: float,
        expires_at: float,
    ) -> int: ...

    @abstractmethod
    def answer_ask(
        self, ask_id: int, answer: str, reason: str, deferred_until: float | None, now: float
    ) -> None: ...


class Storage(ABC):
    @abstractmethod
    def read(self) -> AbstractContextManager[ReadTx]: ...

    @abstractmethod
    def write(self) -> AbstractContextManager[WriteTx]: ...

    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def close(self) -> None: ...

    def now(self) -> float | None:
        """The board's time when the backend keeps its own clock (PostgreSQL: the server's);
        None: the board's clock decides (SQLite)."""
        return None

    def location(self) -> dict[str, str]:
        """Which backend holds the board, and where, with no secret in it (``coord status``
        shows it): ``{"backend": "sqlite", "path": ...}`` or ``{"backend": "postgresql",
        "database": "postgresql://user@host:port/name"}``."""
        return {"backend": type(self).__name__}

    def problem(self) -> CoordError | None:
        """What keeps the board from taking writes now (health reports it), found without
        waiting for any lock; None when nothing does."""
        return None

    # --- the daemons serving the board ------------------------------------------------------
    # A board one daemon serves (SQLite: its flock on .coord/daemon.lock makes it the only
    # one) keeps its record in memory: its registry is itself. A shared backend (PostgreSQL)
    # keeps every daemon's row in the database, with heartbeats on the database's clock.

    def daemon_heartbeat(self, record: dict[str, Any]) -> None:
        """The serving daemon is live now. ``record``: instance, machine, pid, url,
        board_dir, version, started_at."""
        self._own_daemon = dict(record)

    def daemon_gone(self, instance: str) -> None:
        """The daemon ``instance`` stops serving the board."""
        if getattr(self, "_own_daemon", {}).get("instance") == instance:
            del self._own_daemon

    def live_daemons(self) -> list[dict[str, Any]]:
        """The daemons serving the board now, each a ``daemon_heartbeat`` record with
        ``heartbeat_age_seconds``, oldest first."""
        own = getattr(self, "_own_daemon", None)
        return [{**own, "heartbeat_age_seconds": 0.0}] if own else []


def chunks(values: Sequence[int], size: int = 500) -> Iterator[Sequence[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
