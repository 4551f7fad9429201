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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from coord import model
from coord.core import reservations, rules
from coord.core.evidence import check_runs, judge
from coord.core.packages import WorkPackages
from coord.errors import (
    AlreadyExists,
    CoordError,
    DependencyCycle,
    InvalidInput,
    NotFound,
    NotWaiting,
    TooLarge,
)
from coord.model import Agent, Claim, Event, Item, Reply, Reservation
from coord.storage.base import ItemQuery, ReadTx, Storage, WriteTx
from coord.times import iso

DEFAULT_LEASE_SECONDS = 15 * 60
ACTIVE_WINDOW_SECONDS = 15 * 60
_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9._:+-]{0,63})")


class Board(reservations.FileReservations, WorkPackages):
    def __init__(
        self,
        storage: Storage,
        *,
        clock: Callable[[], float] = time.time,
        default_lease_seconds: float = DEFAULT_LEASE_SECONDS,
        active_window_seconds: float = ACTIVE_WINDOW_SECONDS,
        repo_root: str | Path | None = None,
        escalate_to: str | None = None,
    ) -> None:
        self.storage = storage
        # file patterns are repository-relative; without a root the board holds no files
        self.repo_root = Path(repo_root).resolve() if repo_root is not None else None
        self.is_file = reservations.working_tree_files(self.repo_root)
        self._touched: dict[str, float] = {}
        self.clock = clock
        self.default_lease_seconds = model.check_lease(default_lease_seconds, 0)
        self.active_window_seconds = active_window_seconds
        # who answers needs_human questions when the item's document names nobody
        self.escalate_to = escalate_to

    @classmethod
    def open(
        cls,
        coord_dir: str | Path | None = None,
        *,
        create: bool = False,
        storage_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> Board:
        """Open the board in ``coord_dir`` (default: the ``.coord`` found from the cwd).

        ``create=True`` makes the database in an existing ``.coord`` directory if missing
        (``coord init`` does that, with the token and config beside it).
        """
        from coord.fast import board_files
        from coord.storage.sqlite import SQLiteStorage

        board_dir = board_files.require_board_dir(coord_dir, must_exist=not create)
        settings = board_files.read_config(board_dir)
        storage = SQLiteStorage(
            board_files.db_path(board_dir),
            synchronous=str(settings.get("synchronous", "NORMAL")),
            **(storage_options or {}),
        )
        options.setdefault(
            "default_lease_seconds", settings.get("default_lease_seconds", DEFAULT_LEASE_SECONDS)
        )
        options.setdefault("repo_root", board_files.repo_root(board_dir))
        options.setdefault("escalate_to", settings.get("escalate_to"))
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
        files: Sequence[str] = (),
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
                    "files": list(files),
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
        checked = [
            rules.check_entry(entry, index, len(entries)) for index, entry in enumerate(entries)
        ]
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
        for entry in checked:
            entry["files"] = reservations.canonical(entry["files"], self.repo_root)
        keys = [e["key"] for e in checked if e["key"] is not None]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise InvalidInput(f"package id {', '.join(twice)} is used twice in this import")
        with self.storage.write() as tx:
            now = self.now()
            taken = [k for k in keys if tx.get_item_by_key(k) is not None]
            if taken:
                raise AlreadyExists(
                    f"package id {', '.join(taken)} is already on this board (`coord show "
                    f"{taken[0]}`); use another id",
                    keys=taken,
                )
            wanted = {d for e in checked for d in e["deps"] if isinstance(d, int)}
            missing = sorted(wanted - tx.existing_ids(wanted))
            if missing:
                raise NotFound(
                    f"unknown dependency {rules.ids_text(missing)}: no such item", missing=missing
                )
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
                    key=e["key"],
                    checks=e["checks"],
                )
                for e in checked
            ]
            for item_id, entry in zip(ids, checked, strict=True):
                deps = [d if isinstance(d, int) else ids[refs[d]] for d in entry["deps"]]
                self._link(tx, item_id, deps)
                tx.set_item_files(item_id, entry["files"])
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
                        "files": list(entry["files"]),
                        **({"key": entry["key"]} if entry["key"] else {}),
                        **({"checks": list(entry["checks"])} if entry["checks"] else {}),
                    },
                )
            self._touch(tx, created_by, now)
        return ids

    # --- reading ---------------------------------------------------------------------------

    def get(self, item_id: Any) -> Item:
        """An item by id, or by the package key it was imported as."""
        ref = model.check_item_ref(item_id)
        with self.storage.read() as tx:
            return self._with_holds(tx, [rules.require_item(tx, ref)], self.now())[0]

    def show(self, item_id: Any) -> dict[str, Any]:
        """An item with its thread, acknowledgements and history."""
        ref = model.check_item_ref(item_id)
        with self.storage.read() as tx:
            item = self._with_holds(tx, [rules.require_item(tx, ref)], self.now())[0]
            replies = tx.replies(item.id)
            acks = tx.acks(item.id)
            history = tx.events_after(0, 200, item_id=item.id)
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
        spec: str | None = None,
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
            spec=spec,
            after_id=after_id,
            limit=limit,
        )
        with self.storage.read() as tx:
            items = self._with_holds(tx, tx.list_items(query), self.now())
        # ready also means no file of the item is held by someone else
        return [i for i in items if i.claimable(self.now())] if ready else items

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

    # --- claiming --------------------------------------------------------------------------

    def claim(self, item_id: Any, *, agent: str, lease_seconds: float | None = None) -> Claim:
        """Claim one item. Exactly one of any number of concurrent callers wins."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        lease = model.check_lease(lease_seconds, self.default_lease_seconds)
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, ref)
            rules.ensure_claimable(item, now)
            live = tx.live_reservations(now, near=item.files) if item.files else []
            return self._take(tx, item, agent, lease, now, live)

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
            expires = now + lease
            # The usual case, a pending item without files, is one statement; takeovers and
            # items with files come here only when they are first in line.
            item = tx.take_first_pending(agent, kinds, label, now, expires)
            if item is not None:
                token = item.fencing_token
                details = {"token": token, "lease_expires_at": iso(expires)}
                self._record(tx, agent, item.id, "claimed", now, details)
                return Claim(item, agent, token, expires)
            for item, live in self._ready_for(tx, agent, kinds, label, now):
                return self._take(tx, item, agent, lease, now, live)
        raise rules.nothing_ready(kind, label)

    def claim_batch(
        self,
        count: int,
        *,
        agent: str,
        kind: str | None = None,
        label: str | None = None,
        lease_seconds: float | None = None,
    ) -> list[Claim]:
        """Claim up to ``count`` ready items whose files overlap neither each other nor
        anything held: work for ``count`` agents started at once."""
        agent = model.check_agent(agent)
        kinds = (model.check_kind(kind),) if kind else model.WORK_KINDS
        lease = model.check_lease(lease_seconds, self.default_lease_seconds)
        if (
            isinstance(count, bool)
            or not isinstance(count, int)
            or not 1 <= count <= model.MAX_BATCH
        ):
            raise InvalidInput(f"count must be 1 to {model.MAX_BATCH}", field="count")
        claims: list[Claim] = []
        with self.storage.write() as tx:
            now = self.now()
            for item, live in self._ready_for(tx, agent, kinds, label, now):
                chosen = [c.item.files for c in claims]
                if reservations.pairwise_disjoint(chosen, item.files, self.is_file):
                    claims.append(self._take(tx, item, agent, lease, now, live))
                    if len(claims) == count:
                        break
        if not claims:
            raise rules.nothing_ready(kind, label)
        return claims

    def heartbeat(
        self, item_id: Any, *, agent: str, token: Any, lease_seconds: float | None = None
    ) -> Claim:
        """Extend a live claim. A stale token changes nothing."""
        agent, item_id, token = rules.claim_args(agent, item_id, token)
        lease = model.check_lease(lease_seconds, self.default_lease_seconds)
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, item_id)
            rules.ensure_holder(item, agent, token, now)
            expires = now + lease
            if item.question is None:  # while a human is asked, the files stay held anyway
                tx.extend_item_reservations(item.id, agent, expires)
            extended = self._change(
                tx,
                item,
                {"lease_expires_at": expires},
                agent,
                "heartbeat",
                now,
                {"token": token, "lease_expires_at": iso(expires)},
            )
            return Claim(extended, agent, token, expires)

    def release(self, item_id: Any, *, agent: str, token: Any, reason: str = "") -> Item:
        """Give the item back to pending for someone else."""
        changes = {"state": "pending", "claimed_by": None}
        return self._end_claim(
            item_id, agent, token, "released", changes, {"reason": model.check_body(reason)}
        )

    def done(
        self,
        item_id: Any,
        *,
        agent: str,
        token: Any,
        summary: str = "",
        evidence: Any = None,
        skip_checks: str | None = None,
    ) -> Item:
        """Close a claimed item. Only the live holder can.

        An item with checks closes only with ``evidence`` that each passed (``coord done``
        runs them), or with ``skip_checks``: the reason, recorded for everyone to see. A
        failed run is recorded too, and the item stays claimed.
        """
        agent, ref, token = rules.claim_args(agent, item_id, token)
        summary = model.check_body(summary)
        runs = check_runs(evidence)
        if skip_checks is not None:
            skip_checks = model.check_reason(skip_checks, "skip_checks")
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            record, refusal = judge(item, runs, skip_checks, agent, now)
            if refusal is None:
                tx.delete_item_reservations(item.id, agent)
                changes: dict[str, Any] = {
                    "state": "done",
                    "lease_expires_at": None,
                    "question": None,
                    "closed_at": now,
                }
                details: dict[str, Any] = {"token": token, "summary": summary}
                if record is not None:
                    changes["evidence"] = record
                    details["checks_passed"] = record.get("passed")
                if skip_checks is not None:
                    details["checks_skipped"] = skip_checks
                return self._change(tx, item, changes, agent, "done", now, details)
            if record is not None:  # the failed run is news: keep it, keep the claim
                failed = refusal.details.get("failed", [])
                self._change(
                    tx,
                    item,
                    {"evidence": record},
                    agent,
                    "checks_failed",
                    now,
                    {"token": token, "failed": failed},
                )
        raise refusal

    def escalate(self, item_id: Any, *, agent: str, token: Any, question: Any) -> Item:
        """Ask a human: the item becomes needs_human. The holder keeps the claim and its
        files, and the lease stops running out until someone answers."""
        agent, ref, token = rules.claim_args(agent, item_id, token)
        question = model.check_reason(question, "question")
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, ref)
            rules.ensure_holder(item, agent, token, now)
            tx.extend_item_reservations(item.id, agent, model.HELD_UNTIL_ANSWERED)
            contact = item.escalate_to or self.escalate_to
            return self._change(
                tx,
                item,
                {"question": question, "escalate_to": contact},
                agent,
                "escalated",
                now,
                {"token": token, "question": question, "escalate_to": contact},
            )

    def answer(self, item_id: Any, *, agent: str, text: Any) -> Item:
        """Answer a needs_human item: back to its holder with a fresh lease; the answer is a
        reply on the item and shows in the holder's inbox."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        text = model.check_reason(text, "answer")
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, ref)
            if item.state != "claimed" or item.question is None:
                raise NotWaiting(
                    f"item {item.ref} is not waiting for an answer (it is {item.shown_state}); "
                    "reply instead: `coord reply`",
                    id=item.id,
                    state=item.shown_state,
                )
            holder = item.claimed_by or ""
            expires = now + self.default_lease_seconds
            tx.extend_item_reservations(item.id, holder, expires)
            reply_id = tx.add_reply(item.id, agent, text, now)
            return self._change(
                tx,
                item,
                {"question": None, "lease_expires_at": expires},
                agent,
                "answered",
                now,
                {
                    "question": item.question,
                    "answer": text[:2000],
                    "reply_id": reply_id,
                    "holder": holder,
                    "lease_expires_at": iso(expires),
                },
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
        add_checks: Sequence[str] = (),
        remove_checks: Sequence[str] = (),
    ) -> Item:
        """Change an open item. While it is claimed, only its holder (with the token) can."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
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
        add_checks = model.check_commands(list(add_checks))
        remove_checks = model.check_commands(list(remove_checks), "remove_checks")
        if not changes and not adding and not removing and not add_checks and not remove_checks:
            raise InvalidInput(
                "nothing to change: give a new title, body, priority, labels, deps or checks"
            )
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, ref)
            rules.ensure_editable(item, agent, token, now)
            missing = sorted(set(adding) - tx.existing_ids(adding))
            if missing:
                raise NotFound(
                    f"unknown dependency {rules.ids_text(missing)}: no such item", missing=missing
                )
            self._link(tx, item.id, adding)
            tx.remove_deps(item.id, removing)
            if add_checks or remove_checks:
                kept = [c for c in item.checks if c not in remove_checks]
                changes["checks"] = model.check_commands(
                    kept + [c for c in add_checks if c not in kept]
                )
            details: dict[str, Any] = {
                k: list(v) if k in ("labels", "checks") else v for k, v in changes.items()
            }
            if adding:
                details["added_deps"] = list(adding)
            if removing:
                details["removed_deps"] = list(removing)
            item_id = item.id
            self._change(tx, item, changes, agent, "edited", now, details)
            return rules.require_item(tx, item_id)

    def cancel(self, item_id: Any, *, agent: str, token: Any = None, reason: str = "") -> Item:
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, ref)
            item_id = item.id
            rules.ensure_editable(item, agent, token, now)
            tx.delete_item_reservations(item_id, None)
            changes = {
                "state": "cancelled",
                "claimed_by": None,
                "lease_expires_at": None,
                "question": None,
                "closed_at": now,
            }
            self._change(
                tx, item, changes, agent, "cancelled", now, {"reason": model.check_body(reason)}
            )
            return rules.require_item(tx, item_id)

    # --- talking ---------------------------------------------------------------------------

    def reply(self, item_id: Any, *, agent: str, body: Any) -> Reply:
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        body = model.check_body(body)
        if not body.strip():
            raise InvalidInput("a reply needs some text", field="body")
        with self.storage.write() as tx:
            now = self.now()
            item_id = rules.require_item(tx, ref).id
            reply_id = tx.add_reply(item_id, agent, body, now)
            mentions = sorted(set(_MENTION.findall(body)) - {agent})
            tx.append_event(
                at=now,
                agent=agent,
                item_id=item_id,
                kind="reply",
                details={"reply_id": reply_id, "mentions": mentions, "excerpt": body[:200]},
            )
            self._touch(tx, agent, now)
            return Reply(reply_id, item_id, agent, body, now)

    def ack(self, item_id: Any, *, agent: str) -> bool:
        """Acknowledge an item (seen it, agree). Returns False if already acknowledged."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        with self.storage.write() as tx:
            now = self.now()
            item_id = rules.require_item(tx, ref).id
            added = tx.add_ack(item_id, agent, now)
            if added:
                tx.append_event(at=now, agent=agent, item_id=item_id, kind="ack", details={})
            self._touch(tx, agent, now)
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
        agent, item_id, token = rules.claim_args(agent, item_id, token)
        with self.storage.write() as tx:
            now = self.now()
            item = rules.require_item(tx, item_id)
            rules.ensure_holder(item, agent, token, now)
            changes = {**changes, "lease_expires_at": None, "question": None}
            if closes:
                changes["closed_at"] = now
            tx.delete_item_reservations(item.id, agent)
            return self._change(tx, item, changes, agent, kind, now, {"token": token, **details})

    def _take(
        self,
        tx: WriteTx,
        item: Item,
        agent: str,
        lease: float,
        now: float,
        live: list[Reservation],
    ) -> Claim:
        """The claim itself, with the item's files, in the caller's write transaction."""
        if item.files:
            conflicts = reservations.find_conflicts(agent, item.files, True, live, self.is_file)
            if conflicts:
                raise reservations.refusal(conflicts, f"claim of item {item.id}")
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
            tx.delete_item_reservations(item.id, takeover_from)  # expired with its lease
        for pattern in item.files:
            tx.insert_reservation(
                agent=agent,
                pattern=pattern,
                exclusive=True,
                item_id=item.id,
                reason=f"claim of item {item.id}",
                now=now,
                expires_at=expires,
            )
            live.append(Reservation(0, agent, pattern, True, item.id, "", now, expires))
        if item.files:
            details["files"] = list(item.files)
        kind = "takeover" if takeover_from is not None else "claimed"
        claimed = self._change(tx, item, changes, agent, kind, now, details, files_held_by=())
        return Claim(claimed, agent, token, expires, takeover_from)

    def _ready_for(
        self, tx: WriteTx, agent: str, kinds: Sequence[str], label: str | None, now: float
    ) -> Iterator[tuple[Item, list[Reservation]]]:
        """Claimable items in claim order, skipping those whose files others hold."""
        after: tuple[int, int] | None = None
        limit = 1  # the first candidate usually wins; fetch more only while skipping
        while batch := tx.claimable_items(now, kinds, label, after, limit=limit):
            limit = min(limit * 4, 64)
            for item in batch:
                live = tx.live_reservations(now, near=item.files) if item.files else []
                if item.files and reservations.find_conflicts(
                    agent, item.files, True, live, self.is_file
                ):
                    continue
                yield item, live
            after = (batch[-1].priority, batch[-1].id)

    def _with_holds(self, tx: ReadTx, items: list[Item], now: float) -> list[Item]:
        """Fill in which other agents' live reservations block each open item's files."""
        files = {f for i in items if i.state in ("pending", "claimed") for f in i.files}
        if not files:
            return items
        live = tx.live_reservations(now, near=sorted(files))
        return [
            replace(
                i,
                files_held_by=reservations.holds_on(
                    i.files,
                    live,
                    except_agent=i.claimed_by if i.lease_live(now) else None,
                    is_file=self.is_file,
                ),
            )
            if i.files and i.state in ("pending", "claimed")
            else i
            for i in items
        ]

    def _change(
        self,
        tx: WriteTx,
        item: Item,
        changes: dict[str, Any],
        agent: str,
        kind: str,
        now: float,
        details: dict[str, Any],
        **also: Any,
    ) -> Item:
        """Write the changes, log them, and return the item as it now is (no second read).

        ``item`` is this transaction's own snapshot and is updated in place (cheaper than a
        copy on every claim); ``also`` sets derived fields that are not stored."""
        changes = {**changes, "updated_at": now}
        # Compare-and-set on the token we read: under the write lock it cannot fail, and if
        # a backend ever let two writers interleave, this is where the loser would stop.
        if not tx.update_item(item.id, item.fencing_token, changes):
            raise CoordError(f"item {item.id} changed under us; nothing was written")
        self._record(tx, agent, item.id, kind, now, details)
        for name, value in (changes | also).items():
            setattr(item, name, value)
        return item

    def _record(
        self,
        tx: WriteTx,
        agent: str,
        item_id: int,
        kind: str,
        now: float,
        details: dict[str, Any],
    ) -> None:
        """Log a change of the item and note that the agent was seen."""
        tx.append_event(at=now, agent=agent, item_id=item_id, kind=kind, details=details)
        self._touch(tx, agent, now)

    def _touch(self, tx: WriteTx, agent: str, now: float) -> None:
        # last_seen to the second is plenty; skipping the upsert keeps hot writes lean.
        if now - self._touched.get(agent, float("-inf")) >= 1.0:
            tx.touch_agent(agent, now)
            self._touched[agent] = now

    @staticmethod
    def _link(tx: WriteTx, item_id: int, deps: Iterable[int]) -> None:
        for dep in deps:
            cycle = rules.dependency_path(tx, dep, item_id)
            if cycle is not None:
                named = " → ".join(str(n) for n in [item_id, *cycle])
                raise DependencyCycle(
                    f"item {item_id} cannot depend on {dep}: that closes the cycle {named}",
                    cycle=[item_id, *cycle],
                )
            tx.add_deps(item_id, [dep])
