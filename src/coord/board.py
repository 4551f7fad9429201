"""The core: every rule of the board, and no HTTP, CLI or MCP.

A ``Board`` wraps a storage backend. Each public method is one transaction: it reads the
clock *after* taking the write lock (so the lease decision is made at the moment the write is
serialised), applies the rule, writes, and appends exactly one event per change.

    >>> from coord import Board
    >>> board = Board.open("/path/to/repo/.coord")          # doctest: +SKIP
    >>> claim = board.claim_next(agent="orchestrator-1")    # doctest: +SKIP
    >>> board.done(claim.item.id, agent="orchestrator-1", token=claim.token)  # doctest: +SKIP
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from coord import model
from coord.errors import (
    AlreadyClaimed,
    CoordError,
    DependencyCycle,
    InvalidInput,
    LeaseLost,
    NotClaimable,
    NotFound,
    NothingReady,
    NotReady,
    TooLarge,
)
from coord.model import Agent, Claim, Event, Item, Reply, iso
from coord.storage.base import ItemQuery, ReadTx, Storage, WriteTx

DEFAULT_LEASE_SECONDS = 15 * 60
ACTIVE_WINDOW_SECONDS = 15 * 60
_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9._:+-]{0,63})")
_IMPORT_FIELDS = {"title", "kind", "priority", "labels", "deps", "body", "to", "ref"}


class Board:
    def __init__(
        self,
        storage: Storage,
        *,
        clock: Callable[[], float] = time.time,
        default_lease_seconds: float = DEFAULT_LEASE_SECONDS,
        active_window_seconds: float = ACTIVE_WINDOW_SECONDS,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.default_lease_seconds = model.check_lease(default_lease_seconds, 0)
        self.active_window_seconds = active_window_seconds

    @classmethod
    def open(
        cls, coord_dir: str | Path | None = None, *, create: bool = False, **options: Any
    ) -> Board:
        """Open the board in ``coord_dir`` (default: the ``.coord`` found from the cwd).

        ``create=True`` makes the database in an existing ``.coord`` directory if missing
        (``coord init`` does that, with the token and config beside it).
        """
        from coord import paths
        from coord.storage.sqlite import SQLiteStorage

        board_dir = paths.require_board_dir(coord_dir, must_exist=not create)
        settings = paths.read_config(board_dir)
        storage = SQLiteStorage(
            paths.db_path(board_dir), synchronous=str(settings.get("synchronous", "NORMAL"))
        )
        options.setdefault(
            "default_lease_seconds", settings.get("default_lease_seconds", DEFAULT_LEASE_SECONDS)
        )
        return cls(storage, **options)

    def close(self) -> None:
        self.storage.close()

    def now(self) -> float:
        return self.clock()

    # --- creating --------------------------------------------------------------------------

    def add(
        self,
        title: str,
        *,
        created_by: str,
        kind: str = "task",
        priority: int = model.PRIORITY_DEFAULT,
        labels: Sequence[str] = (),
        deps: Sequence[int] = (),
        body: str = "",
        to: str | None = None,
    ) -> Item:
        ids = self.import_items(
            [
                {
                    "title": title,
                    "kind": kind,
                    "priority": priority,
                    "labels": list(labels),
                    "deps": list(deps),
                    "body": body,
                    "to": to,
                }
            ],
            created_by=created_by,
        )
        return self.get(ids[0])

    def import_items(self, entries: Any, *, created_by: str) -> list[int]:
        """Create many items in one transaction: all of them, or none.

        An entry's ``deps`` may name existing ids or the ``ref`` of another entry in the same
        batch, so a whole dependency graph can be loaded at once.
        """
        created_by = model.check_agent(created_by)
        if not isinstance(entries, list):
            raise InvalidInput("expected a JSON array of items")
        if not entries:
            raise InvalidInput("nothing to import: the list is empty")
        if len(entries) > model.MAX_IMPORT:
            raise TooLarge(f"{len(entries)} items in one import; the limit is {model.MAX_IMPORT}")
        checked = [_check_entry(entry, index, len(entries)) for index, entry in enumerate(entries)]
        refs: dict[str, int] = {}
        for index, entry in enumerate(checked):
            ref = entry["ref"]
            if ref is not None:
                if ref in refs:
                    raise InvalidInput(f"item {index}: ref {ref!r} is used twice", index=index)
                refs[ref] = index
        for index, entry in enumerate(checked):
            for dep in entry["deps"]:
                if isinstance(dep, str) and dep not in refs:
                    raise InvalidInput(
                        f"item {index}: dependency {dep!r} is neither an item id nor the ref "
                        "of an item in this import",
                        index=index,
                    )
        with self.storage.write() as tx:
            now = self.now()
            wanted = {d for e in checked for d in e["deps"] if isinstance(d, int)}
            missing = sorted(wanted - tx.existing_ids(wanted))
            if missing:
                raise NotFound(f"unknown dependency {_ids(missing)}: no such item", missing=missing)
            ids = [
                tx.insert_item(
                    kind=e["kind"],
                    title=e["title"],
                    body=e["body"],
                    priority=e["priority"],
                    labels=e["labels"],
                    created_by=created_by,
                    recipient=e["to"],
                    now=now,
                )
                for e in checked
            ]
            for item_id, entry in zip(ids, checked, strict=True):
                deps = [d if isinstance(d, int) else ids[refs[d]] for d in entry["deps"]]
                self._link(tx, item_id, deps)
                tx.append_event(
                    at=now,
                    agent=created_by,
                    item_id=item_id,
                    kind="created",
                    details={
                        "title": entry["title"],
                        "kind": entry["kind"],
                        "priority": entry["priority"],
                        "deps": deps,
                        "to": entry["to"],
                    },
                )
            tx.touch_agent(created_by, now)
        return ids

    # --- reading ---------------------------------------------------------------------------

    def get(self, item_id: Any) -> Item:
        item_id = model.check_item_id(item_id)
        with self.storage.read() as tx:
            return _require(tx, item_id)

    def show(self, item_id: Any) -> dict[str, Any]:
        """An item with its thread, acknowledgements and history."""
        item_id = model.check_item_id(item_id)
        with self.storage.read() as tx:
            item = _require(tx, item_id)
            replies = tx.replies(item_id)
            acks = tx.acks(item_id)
            history = tx.events_after(0, 200, item_id=item_id)
        now = self.now()
        return {
            **item.to_dict(now),
            "replies": [r.to_dict() for r in replies],
            "acks": [{"agent": a, "at": iso(at)} for a, at in acks],
            "history": [e.to_dict() for e in history],
        }

    def list_items(
        self,
        *,
        state: str | None = None,
        ready: bool = False,
        kind: str | None = None,
        label: str | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[Item]:
        if state not in (None, "open"):
            model.check_state(state)
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000", field="limit")
        query = ItemQuery(
            state=state,
            kinds=(model.check_kind(kind),) if kind else None,
            label=label,
            claimable_at=self.now() if ready else None,
            after_id=after_id,
            limit=limit,
        )
        with self.storage.read() as tx:
            return tx.list_items(query)

    def events(self, after: int = 0, limit: int = 500, item_id: int | None = None) -> list[Event]:
        if not 1 <= limit <= 5000:
            raise InvalidInput("limit must be between 1 and 5000", field="limit")
        with self.storage.read() as tx:
            return tx.events_after(after, limit, item_id=item_id)

    def last_seq(self) -> int:
        with self.storage.read() as tx:
            return tx.last_seq()

    def agents(self) -> list[Agent]:
        with self.storage.read() as tx:
            return tx.agents()

    def held_by(self, agent: str) -> list[Item]:
        agent = model.check_agent(agent)
        with self.storage.read() as tx:
            return tx.held_by(agent)

    # --- claiming --------------------------------------------------------------------------

    def claim(self, item_id: Any, *, agent: str, lease_seconds: float | None = None) -> Claim:
        """Claim one item. Exactly one of any number of concurrent callers wins."""
        agent = model.check_agent(agent)
        item_id = model.check_item_id(item_id)
        lease = model.check_lease(lease_seconds, self.default_lease_seconds)
        with self.storage.write() as tx:
            now = self.now()
            item = _require(tx, item_id)
            _ensure_claimable(item, now)
            return self._take(tx, item, agent, lease, now)

    def claim_next(
        self,
        *,
        agent: str,
        kind: str | None = None,
        label: str | None = None,
        lease_seconds: float | None = None,
    ) -> Claim:
        """Claim the best ready item: priority 0 first, then the oldest."""
        agent = model.check_agent(agent)
        kinds = (model.check_kind(kind),) if kind else model.WORK_KINDS
        lease = model.check_lease(lease_seconds, self.default_lease_seconds)
        with self.storage.write() as tx:
            now = self.now()
            item_id = tx.next_claimable(now, kinds, label)
            if item_id is None:
                raise NothingReady(
                    "nothing is ready to claim" + _filters_text(kind, label),
                    kind=kind,
                    label=label,
                )
            return self._take(tx, _require(tx, item_id), agent, lease, now)

    def heartbeat(
        self, item_id: Any, *, agent: str, token: Any, lease_seconds: float | None = None
    ) -> Claim:
        """Extend a live claim. A stale token changes nothing."""
        agent, item_id, token = _claim_args(agent, item_id, token)
        lease = model.check_lease(lease_seconds, self.default_lease_seconds)
        with self.storage.write() as tx:
            now = self.now()
            item = _require(tx, item_id)
            _ensure_holder(item, agent, token, now)
            expires = now + lease
            self._change(
                tx,
                item,
                {"lease_expires_at": expires},
                agent,
                "heartbeat",
                now,
                {"token": token, "lease_expires_at": iso(expires)},
            )
            return Claim(_require(tx, item_id), agent, token, expires)

    def release(self, item_id: Any, *, agent: str, token: Any, reason: str = "") -> Item:
        """Give the item back to pending for someone else."""
        changes = {"state": "pending", "claimed_by": None}
        return self._end_claim(
            item_id, agent, token, "released", changes, {"reason": model.check_body(reason)}
        )

    def done(self, item_id: Any, *, agent: str, token: Any, summary: str = "") -> Item:
        """Close a claimed item. Only the live holder can."""
        return self._end_claim(
            item_id,
            agent,
            token,
            "done",
            {"state": "done"},
            {"summary": model.check_body(summary)},
            closes=True,
        )

    # --- editing ---------------------------------------------------------------------------

    def edit(
        self,
        item_id: Any,
        *,
        agent: str,
        token: Any = None,
        title: str | None = None,
        body: str | None = None,
        priority: int | None = None,
        labels: Sequence[str] | None = None,
        add_deps: Sequence[int] = (),
        remove_deps: Sequence[int] = (),
    ) -> Item:
        """Change an open item. While it is claimed, only its holder (with the token) can."""
        agent = model.check_agent(agent)
        item_id = model.check_item_id(item_id)
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = model.check_title(title)
        if body is not None:
            changes["body"] = model.check_body(body)
        if priority is not None:
            changes["priority"] = model.check_priority(priority)
        if labels is not None:
            changes["labels"] = model.check_labels(labels)
        adding, removing = model.check_deps(add_deps), model.check_deps(remove_deps)
        if not changes and not adding and not removing:
            raise InvalidInput(
                "nothing to change: give a new title, body, priority, labels or deps"
            )
        with self.storage.write() as tx:
            now = self.now()
            item = _require(tx, item_id)
            _ensure_editable(item, agent, token, now)
            missing = sorted(set(adding) - tx.existing_ids(adding))
            if missing:
                raise NotFound(f"unknown dependency {_ids(missing)}: no such item", missing=missing)
            self._link(tx, item_id, adding)
            tx.remove_deps(item_id, removing)
            details: dict[str, Any] = {
                k: list(v) if k == "labels" else v for k, v in changes.items()
            }
            if adding:
                details["added_deps"] = list(adding)
            if removing:
                details["removed_deps"] = list(removing)
            self._change(tx, item, changes, agent, "edited", now, details)
            return _require(tx, item_id)

    def cancel(self, item_id: Any, *, agent: str, token: Any = None, reason: str = "") -> Item:
        agent = model.check_agent(agent)
        item_id = model.check_item_id(item_id)
        with self.storage.write() as tx:
            now = self.now()
            item = _require(tx, item_id)
            _ensure_editable(item, agent, token, now)
            changes = {
                "state": "cancelled",
                "claimed_by": None,
                "lease_expires_at": None,
                "closed_at": now,
            }
            self._change(
                tx, item, changes, agent, "cancelled", now, {"reason": model.check_body(reason)}
            )
            return _require(tx, item_id)

    # --- talking ---------------------------------------------------------------------------

    def reply(self, item_id: Any, *, agent: str, body: Any) -> Reply:
        agent = model.check_agent(agent)
        item_id = model.check_item_id(item_id)
        body = model.check_body(body)
        if not body.strip():
            raise InvalidInput("a reply needs some text", field="body")
        with self.storage.write() as tx:
            now = self.now()
            _require(tx, item_id)
            reply_id = tx.add_reply(item_id, agent, body, now)
            mentions = sorted(set(_MENTION.findall(body)) - {agent})
            tx.append_event(
                at=now,
                agent=agent,
                item_id=item_id,
                kind="reply",
                details={"reply_id": reply_id, "mentions": mentions, "excerpt": body[:200]},
            )
            tx.touch_agent(agent, now)
            return Reply(reply_id, item_id, agent, body, now)

    def ack(self, item_id: Any, *, agent: str) -> bool:
        """Acknowledge an item (seen it, agree). Returns False if already acknowledged."""
        agent = model.check_agent(agent)
        item_id = model.check_item_id(item_id)
        with self.storage.write() as tx:
            now = self.now()
            _require(tx, item_id)
            added = tx.add_ack(item_id, agent, now)
            if added:
                tx.append_event(at=now, agent=agent, item_id=item_id, kind="ack", details={})
            tx.touch_agent(agent, now)
            return added

    def inbox(self, agent: str, *, peek: bool = False, limit: int = 200) -> list[Event]:
        """What others said to ``agent`` or did to its items since it last looked."""
        agent = model.check_agent(agent)
        with self.storage.write() as tx:
            now = self.now()
            cursor = tx.inbox_cursor(agent)
            found = tx.inbox_events(agent, cursor, limit)
            if not peek:
                # Past a full page, resume after what we showed; otherwise all is seen.
                seen = found[-1].seq if len(found) == limit else tx.last_seq()
                tx.set_inbox_cursor(agent, seen, now)
            return found

    # --- internals -------------------------------------------------------------------------

    def _end_claim(
        self,
        item_id: Any,
        agent: str,
        token: Any,
        kind: str,
        changes: dict[str, Any],
        details: dict[str, Any],
        *,
        closes: bool = False,
    ) -> Item:
        agent, item_id, token = _claim_args(agent, item_id, token)
        with self.storage.write() as tx:
            now = self.now()
            item = _require(tx, item_id)
            _ensure_holder(item, agent, token, now)
            changes = {**changes, "lease_expires_at": None}
            if closes:
                changes["closed_at"] = now
            self._change(tx, item, changes, agent, kind, now, {"token": token, **details})
            return _require(tx, item_id)

    def _take(self, tx: WriteTx, item: Item, agent: str, lease: float, now: float) -> Claim:
        token = item.fencing_token + 1
        expires = now + lease
        takeover_from = item.claimed_by if item.state == "claimed" else None
        changes = {
            "state": "claimed",
            "claimed_by": agent,
            "fencing_token": token,
            "lease_expires_at": expires,
        }
        details: dict[str, Any] = {"token": token, "lease_expires_at": iso(expires)}
        if takeover_from is not None:
            details["takeover_from"] = takeover_from
            details["expired_at"] = iso(item.lease_expires_at)
        kind = "takeover" if takeover_from is not None else "claimed"
        self._change(tx, item, changes, agent, kind, now, details)
        return Claim(_require(tx, item.id), agent, token, expires, takeover_from)

    @staticmethod
    def _change(
        tx: WriteTx,
        item: Item,
        changes: dict[str, Any],
        agent: str,
        kind: str,
        now: float,
        details: dict[str, Any],
    ) -> None:
        # Compare-and-set on the token we read: under the write lock it cannot fail, and if
        # a backend ever let two writers interleave, this is where the loser would stop.
        if not tx.update_item(item.id, item.fencing_token, {**changes, "updated_at": now}):
            raise CoordError(f"item {item.id} changed under us; nothing was written")
        tx.append_event(at=now, agent=agent, item_id=item.id, kind=kind, details=details)
        tx.touch_agent(agent, now)

    @staticmethod
    def _link(tx: WriteTx, item_id: int, deps: Iterable[int]) -> None:
        for dep in deps:
            cycle = _path(tx, dep, item_id)
            if cycle is not None:
                named = " → ".join(str(n) for n in [item_id, *cycle])
                raise DependencyCycle(
                    f"item {item_id} cannot depend on {dep}: that closes the cycle {named}",
                    cycle=[item_id, *cycle],
                )
            tx.add_deps(item_id, [dep])


# --- rules ---------------------------------------------------------------------------------


def _require(tx: ReadTx, item_id: int) -> Item:
    item = tx.get_item(item_id)
    if item is None:
        raise NotFound(f"no item {item_id} on this board; `coord ls` lists them", id=item_id)
    return item


def _ensure_claimable(item: Item, now: float) -> None:
    if item.state in ("done", "cancelled"):
        raise NotClaimable(
            f"item {item.id} is {item.state}; pick another (`coord ls --ready`)",
            id=item.id,
            state=item.state,
        )
    if item.lease_live(now):
        raise AlreadyClaimed(
            f"item {item.id} is claimed by {item.claimed_by} until "
            f"{iso(item.lease_expires_at)}; pick another (`coord next`)",
            id=item.id,
            holder=item.claimed_by,
            lease_expires_at=iso(item.lease_expires_at),
        )
    if item.blocked_by:
        raise NotReady(
            f"item {item.id} waits on {_ids(item.blocked_by)}, not done yet; pick another",
            id=item.id,
            blocked_by=list(item.blocked_by),
        )


def _ensure_holder(item: Item, agent: str, token: int, now: float) -> None:
    """The zombie check: only the live claim's holder, with its current token, may write."""
    facts = {
        "id": item.id,
        "holder": item.claimed_by if item.state == "claimed" else None,
        "lease_expires_at": iso(item.lease_expires_at),
        "state": item.state,
        "current_token": item.fencing_token,
    }
    if item.state == "claimed" and item.claimed_by == agent and item.fencing_token == token:
        if item.lease_live(now):
            return
        raise LeaseLost(
            f"your lease on item {item.id} expired at {iso(item.lease_expires_at)}; "
            f"claim it again to go on (`coord claim {item.id}`)",
            **facts,
        )
    if item.state == "claimed" and item.fencing_token != token:
        raise LeaseLost(
            f"item {item.id} is now held by {item.claimed_by} (token {item.fencing_token}) "
            f"until {iso(item.lease_expires_at)}; your token {token} is stale: stop work on it",
            **facts,
        )
    if item.state == "claimed":
        raise LeaseLost(f"item {item.id} is held by {item.claimed_by}, not {agent}", **facts)
    raise LeaseLost(
        f"item {item.id} is {item.state}; claim {token} is no longer live"
        + (f" (claim it again: `coord claim {item.id}`)" if item.state == "pending" else ""),
        **facts,
    )


def _ensure_editable(item: Item, agent: str, token: Any, now: float) -> None:
    if item.state in ("done", "cancelled"):
        raise NotClaimable(
            f"item {item.id} is {item.state}; it can no longer change", id=item.id, state=item.state
        )
    if item.lease_live(now):
        if token is None:
            raise LeaseLost(
                f"item {item.id} is claimed by {item.claimed_by}; only the holder can change "
                "it, with its token",
                id=item.id,
                holder=item.claimed_by,
                lease_expires_at=iso(item.lease_expires_at),
            )
        _ensure_holder(item, agent, model.check_token(token), now)


def _path(tx: ReadTx, start: int, goal: int) -> list[int] | None:
    """A dependency path start → … → goal, if one exists (breadth-first, so the shortest)."""
    parent: dict[int, int | None] = {start: None}
    frontier = [start]
    while frontier:
        if goal in parent:
            break
        edges = tx.deps_of(frontier)
        frontier = []
        for node, deps in edges.items():
            for dep in deps:
                if dep not in parent:
                    parent[dep] = node
                    frontier.append(dep)
    if goal not in parent:
        return None
    path: list[int] = []
    step: int | None = goal
    while step is not None:
        path.append(step)
        step = parent[step]
    return path[::-1]


def _claim_args(agent: Any, item_id: Any, token: Any) -> tuple[str, int, int]:
    return model.check_agent(agent), model.check_item_id(item_id), model.check_token(token)


def _check_entry(entry: Any, index: int, count: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput(f"item {index}: expected an object with at least a title", index=index)
    unknown = sorted(set(entry) - _IMPORT_FIELDS)
    if unknown:
        raise InvalidInput(
            f"item {index}: unknown field {', '.join(unknown)}; known fields are "
            f"{', '.join(sorted(_IMPORT_FIELDS))}",
            index=index,
        )
    try:
        deps = entry.get("deps") or []
        if not isinstance(deps, list):
            raise InvalidInput("deps must be a list of item ids or refs", field="deps")
        ref = entry.get("ref")
        if ref is not None and (not isinstance(ref, str) or not ref):
            raise InvalidInput("ref must be a non-empty string", field="ref")
        to = entry.get("to")
        return {
            "title": model.check_title(entry.get("title")),
            "kind": model.check_kind(entry.get("kind", "task")),
            "priority": model.check_priority(entry.get("priority", model.PRIORITY_DEFAULT)),
            "labels": model.check_labels(entry.get("labels")),
            "body": model.check_body(entry.get("body")),
            "to": model.check_agent(to) if to is not None else None,
            "ref": ref,
            "deps": [
                d if isinstance(d, str) and not d.isdigit() else model.check_item_id(d)
                for d in deps
            ],
        }
    except InvalidInput as err:
        if count > 1:
            err.message = f"item {index}: {err.message}"
            err.args = (err.message,)
            err.details.setdefault("index", index)
        raise


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _filters_text(kind: str | None, label: str | None) -> str:
    parts = [f"kind={kind}" if kind else "", f"label={label}" if label else ""]
    shown = " ".join(p for p in parts if p)
    return f" ({shown})" if shown else ""
