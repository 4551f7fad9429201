"""Items and their dependencies: creating, reading, editing and cancelling them.

An item's dependency graph stays acyclic (an edge that would close a cycle is refused), and an
item read from the board says which other agents' live reservations hold its files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from coord import model
from coord.core import landings, permissions, reservations, rules, worktree_holds
from coord.core.changes import old_and_new
from coord.core.context import BoardContext
from coord.errors import (
    AlreadyExists,
    Conflict,
    DependencyCycle,
    InvalidInput,
    NotFound,
    TooLarge,
)
from coord.limits import MAX_ANSWER_BYTES
from coord.model import Item, Reply
from coord.storage.base import ItemQuery, ReadTx, WriteTx
from coord.times import iso


class Items:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    # --- creating --------------------------------------------------------------------------

    def import_items(self, entries: Any, created_by: str) -> list[int]:
        checked, refs = self._checked_entries(entries)
        keys = [e["key"] for e in checked if e["key"] is not None]
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
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
                link(tx, item_id, deps)
                tx.set_item_files(item_id, entry["files"])
                details = {
                    "title": entry["title"],
                    "kind": entry["kind"],
                    "priority": entry["priority"],
                    "deps": deps,
                    "to": entry["to"],
                    "files": list(entry["files"]),
                }
                if entry["key"]:
                    details["key"] = entry["key"]
                if entry["checks"]:
                    details["checks"] = list(entry["checks"])
                self.ctx.changes.record(tx, created_by, item_id, "created", now, details)
        return ids

    def _checked_entries(self, entries: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The entries checked, their files made canonical, and each ``ref``'s index."""
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
            entry["files"] = reservations.canonical(entry["files"], self.ctx.repo_root)
        keys = [e["key"] for e in checked if e["key"] is not None]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise InvalidInput(f"package id {', '.join(twice)} is used twice in this import")
        return checked, refs

    # --- reading ---------------------------------------------------------------------------

    def get(self, ref: int | str) -> Item:
        with self.ctx.storage.read() as tx:
            return self.with_holds(tx, [rules.require_item(tx, ref)], self.ctx.now(tx))[0]

    def show(self, ref: int | str, replies_after: int, replies_limit: int) -> dict[str, Any]:
        with self.ctx.storage.read() as tx:
            now = self.ctx.now(tx)
            item = self.with_holds(tx, [rules.require_item(tx, ref)], now)[0]
            # one more than the page, to know whether there is more
            replies = tx.replies(item.id, replies_after, replies_limit + 1)
            acks = tx.acks(item.id)
            history = tx.events_after(0, 200, item_id=item.id)
        page = _replies_page(replies, replies_limit)
        return {
            **item.to_dict(now),
            "replies": [r.to_dict() for r in page],
            # where the next page starts (?replies_after=), or null: the thread is all here
            "replies_next": page[-1].id if len(page) < len(replies) else None,
            "acks": [{"agent": a, "at": iso(at)} for a, at in acks],
            "history": [e.to_dict() for e in history],
        }

    def find(self, query: ItemQuery, *, ready: bool) -> list[Item]:
        """The items the query finds; ``ready`` keeps those claimable now, files included."""
        with self.ctx.storage.read() as tx:
            now = self.ctx.now(tx)
            if ready:
                query = replace(query, claimable_at=now)
            items = self.with_holds(tx, tx.list_items(query), now)
        # ready also means no file of the item is held by someone else
        return [i for i in items if i.claimable(now)] if ready else items

    def with_holds(self, tx: ReadTx, items: list[Item], now: float) -> list[Item]:
        """Fill in which other agents' live reservations block each open item's files."""
        files = {f for i in items if i.state in ("pending", "claimed") for f in i.files}
        if not files:
            return items
        live = worktree_holds.live_holds(tx, now, near=sorted(files))
        return [
            replace(
                i,
                files_held_by=reservations.holds_on(
                    i.files,
                    landings.others_holds(i, live),
                    except_agent=i.claimed_by if i.lease_live(now) else None,
                    is_file=self.ctx.is_file,
                ),
            )
            if i.files and i.state in ("pending", "claimed")
            else i
            for i in items
        ]

    # --- editing ---------------------------------------------------------------------------

    def edit(
        self,
        ref: int | str,
        agent: str,
        token: Any,
        changes: dict[str, Any],
        *,
        adding: Sequence[int],
        removing: Sequence[int],
        add_checks: Sequence[str],
        remove_checks: Sequence[str],
    ) -> Item:
        """Apply the checked field ``changes`` and the dependencies and checks added and
        removed. While the item is claimed, only its holder (with the token) can."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            rules.ensure_editable(item, agent, token, now)
            missing = sorted(set(adding) - tx.existing_ids(adding))
            if missing:
                raise NotFound(
                    f"unknown dependency {rules.ids_text(missing)}: no such item", missing=missing
                )
            link(tx, item.id, adding)
            tx.remove_deps(item.id, removing)
            if add_checks or remove_checks:
                permissions.ensure_may_set_checks(item, agent, self.ctx.humans)
                kept = [c for c in item.checks if c not in remove_checks]
                merged = kept + [c for c in add_checks if c not in kept]
                if len(merged) > model.MAX_CHECKS:
                    # each list is within the limit; the item's own checks make it too many
                    raise Conflict(
                        f"item {item.ref} would have {len(merged)} checks; the limit is "
                        f"{model.MAX_CHECKS}: remove some with remove_checks",
                        field="add_checks",
                    )
                changes["checks"] = model.check_commands(merged)
            details = old_and_new(item, changes)
            if adding:
                details["added_deps"] = list(adding)
            if removing:
                details["removed_deps"] = list(removing)
            item_id = item.id
            self.ctx.changes.apply(tx, item, changes, agent, "edited", now, details)
            return rules.require_item(tx, item_id)

    def cancel(self, ref: int | str, agent: str, token: Any, reason: str) -> Item:
        """By its creator, its live claim's holder (with the token) or a human, with a reason
        (``coord.core.permissions``)."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            item_id = item.id
            permissions.ensure_may_cancel(item, agent, token, now, self.ctx.humans)
            tx.delete_item_reservations(item_id, None)
            changes = {
                "state": "cancelled",
                "claimed_by": None,
                "lease_expires_at": None,
                "question": None,
                "closed_at": now,
            }
            details: dict[str, Any] = {"reason": reason}
            if item.lease_live(now) and item.claimed_by != agent:
                details["holder"] = item.claimed_by  # a human took it from under its holder
            self.ctx.changes.apply(tx, item, changes, agent, "cancelled", now, details)
            return rules.require_item(tx, item_id)

    def reopen(self, ref: int | str, agent: str, reason: str) -> Item:
        """A cancelled item back to pending, by its creator or a human, with a reason. Its
        claim, files and checks are as they were before the cancel: it waits to be claimed."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item = rules.require_item(tx, ref)
            item_id = item.id
            permissions.ensure_may_reopen(item, agent, self.ctx.humans)
            changes = {"state": "pending", "closed_at": None}
            self.ctx.changes.apply(tx, item, changes, agent, "reopened", now, {"reason": reason})
            return rules.require_item(tx, item_id)


def link(tx: WriteTx, item_id: int, deps: Iterable[int]) -> None:
    """Add dependency edges one by one, refusing the first that would close a cycle."""
    for dep in deps:
        cycle = rules.dependency_path(tx, dep, item_id)
        if cycle is not None:
            named = " → ".join(str(n) for n in [item_id, *cycle])
            raise DependencyCycle(
                f"item {item_id} cannot depend on {dep}: that closes the cycle {named}",
                cycle=[item_id, *cycle],
            )
        tx.add_deps(item_id, [dep])


def _replies_page(replies: list[Reply], limit: int) -> list[Reply]:
    """At most ``limit`` replies and ``MAX_ANSWER_BYTES`` of their text (at least one reply,
    which is at most ``MAX_BODY``): one answer's size is bounded however long the thread."""
    page: list[Reply] = []
    size = 0
    for reply in replies[:limit]:
        size += len(reply.body.encode())
        if page and size > MAX_ANSWER_BYTES:
            break
        page.append(reply)
    return page
