"""Work packages from a design document, kept in step with the board.

``coord spec import`` parses the document where it lives (the caller's working tree) and
sends the packages here; this module applies them in one write transaction, so a refused
import changes nothing. Each package becomes an item keyed by its id (``coord claim R3``).
Importing again is idempotent: changed titles, descriptions, dependencies, files and checks
are updated in place, claims, replies and history stay, and a package that left the document
is reported, never deleted. A ticked box closes a package that nobody holds; progress
otherwise lives on the board (``coord spec sync`` ticks the boxes back).

A package the document reserves (its ``**Reserved:**`` line or its track's marker, as
``coord.spec.protocol.Rules.reserved_by`` reads them; the caller sends it as ``reserved_by``)
keeps that user as the item's ``reserved_for``: not ready, and claimable by that user alone,
until an import whose document no longer reserves it. ``adopt`` turns the line into a claim.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from coord import limits, model
from coord.core import adoption, reservations, rules
from coord.core.changes import compare_and_set, old_and_new
from coord.core.claims import Claims
from coord.core.context import BoardContext
from coord.core.items import link
from coord.errors import Conflict, DependencyCycle, InvalidInput, TooLarge
from coord.model import Item
from coord.spec import graph
from coord.storage.base import ItemQuery, WriteTx

MAX_PACKAGES = limits.MAX_SPEC_PACKAGES
PACKAGE_FIELDS = {
    "id",
    "title",
    "done",
    "line",
    "dependencies",
    "files",
    "checks",
    "description",
    "acceptance",
    "track",
    "reserved_by",
}


class _Rehearsed(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


def check_package(entry: Any, index: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput(f"package {index}: expected an object", index=index)
    rules.refuse_unknown_fields(entry, PACKAGE_FIELDS, f"package {index}", index)
    line = entry.get("line")
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise InvalidInput(f"package {index}: line must be a positive integer", index=index)
    deps = entry.get("dependencies") or []
    if not isinstance(deps, list):
        raise InvalidInput(f"package {index}: dependencies must be a list of ids", index=index)
    text = [entry.get("description") or "", entry.get("acceptance") or ""]
    if not all(isinstance(t, str) for t in text):
        raise InvalidInput(f"package {index}: description must be text", index=index)
    body = text[0] + (f"\n\nAcceptance: {text[1]}" if text[1] else "")
    track = entry.get("track")
    reserved_by = entry.get("reserved_by")
    return {
        "id": model.check_key(entry.get("id")),
        "title": model.check_title(entry.get("title")),
        "done": entry.get("done") is True,
        "line": line,
        "dependencies": [model.check_key(d) for d in deps],
        "files": model.check_files(entry.get("files")),
        "checks": model.check_commands(entry.get("checks")),
        "body": model.check_body(body.strip()),
        "labels": model.check_labels([f"track:{track}"] if isinstance(track, str) else []),
        "reserved_for": None if reserved_by is None else model.check_agent(reserved_by),
    }


class WorkPackages:
    """The board's verbs for design documents. Claims of adopted packages are won through
    ``claims``, the board's own claim path."""

    def __init__(self, ctx: BoardContext, claims: Claims) -> None:
        self.ctx = ctx
        self.claims = claims

    def import_packages(
        self,
        spec: Any,
        packages: Any,
        created_by: str,
        escalate_to: str | None,
        prefix: str,
        adopt: Any,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """``dry_run``: the same answer, from the same transaction rolled back: what an
        import would create, update, close and adopt, with nothing changed."""
        try:
            return self._import(spec, packages, created_by, escalate_to, prefix, adopt, dry_run)
        except _Rehearsed as rehearsal:
            result = rehearsal.result
            for adopted in result["adopted"]:
                adopted.pop("token", None)  # a claim that was never made has no token
            return {**result, "dry_run": True}

    def _import(
        self,
        spec: Any,
        packages: Any,
        created_by: str,
        escalate_to: str | None,
        prefix: str,
        adopt: Any,
        dry_run: bool,
    ) -> dict[str, Any]:
        spec = _check_spec(spec)
        if prefix:
            model.check_key(prefix + "X")
        if not isinstance(packages, list):
            raise InvalidInput("packages must be a list", field="packages")
        if len(packages) > MAX_PACKAGES:
            raise TooLarge(f"{len(packages)} packages; the limit is {MAX_PACKAGES}")
        wanted = [check_package(p, i) for i, p in enumerate(packages)]
        adoptions = adoption.check_adoptions(adopt)
        counted = Counter(p["id"] for p in wanted)
        twice = sorted(i for i, n in counted.items() if n > 1)
        if twice:
            raise InvalidInput(f"package id {', '.join(twice)} appears twice in {spec}")
        for package in wanted:
            package["key"] = prefix + package["id"]
            package["deps"] = [prefix + d for d in package["dependencies"]]
            package["files"] = reservations.canonical(package["files"], self.ctx.repo_root)
            package["escalate_to"] = escalate_to
        _refuse_cycles(spec, wanted)
        result: dict[str, Any] = {
            "spec": spec,
            "created": [],
            "updated": [],
            "unchanged": [],
            "removed": [],
            "closed": [],
            "conflicts": [],
            "adopted": [],
            "not_adopted": [],
        }
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            mine = {
                i.key: i
                for i in tx.list_items(ItemQuery(spec=spec, limit=MAX_PACKAGES * 2))
                if i.key is not None
            }
            known = self._resolve_keys(tx, spec, wanted, mine)
            keys = {p["key"] for p in wanted}
            created = set()
            for package in wanted:
                if package["key"] not in known:
                    known[package["key"]] = self._create(tx, spec, package, created_by, now)
                    result["created"].append(package["id"])
                    created.add(package["key"])
            for package in wanted:
                item = known[package["key"]]
                if package["key"] in created:
                    self._add_deps(tx, item.id, package, keys, known)
                    continue
                changed = self._update(tx, item, package, keys, known, created_by, now)
                result["updated" if changed else "unchanged"].append(package["id"])
            for package in wanted:
                if package["done"]:
                    self._close_ticked(tx, spec, package, created_by, now, result)
            gone = sorted(set(mine) - keys, key=lambda k: mine[k].id)
            result["removed"] = [k.removeprefix(prefix) for k in gone]
            result["adopted"], result["not_adopted"] = adoption.adopt(
                tx, self.ctx, self.claims, spec, adoptions, prefix, now
            )
            self.ctx.changes.touch(tx, created_by, now)
            if dry_run:
                raise _Rehearsed(result)  # rolls the transaction back
        return result

    def _resolve_keys(
        self, tx: WriteTx, spec: str, wanted: list[dict[str, Any]], mine: dict[str, Item]
    ) -> dict[str, Item]:
        """The items already on the board for these keys; refuses keys another document owns
        and dependencies that name nothing."""
        known: dict[str, Item] = {}
        for package in wanted:
            item = mine.get(package["key"]) or tx.get_item_by_key(package["key"])
            if item is None:
                continue
            if item.spec != spec:
                origin = f"from {item.spec}:{item.spec_line}" if item.spec else "added by hand"
                raise Conflict(
                    f"package id {package['key']} already belongs to item {item.id} {origin}; "
                    f"import {spec} with a `prefix` to keep its ids apart",
                    key=package["key"],
                    field="prefix",
                )
            known[package["key"]] = item
        keys = {p["key"] for p in wanted}
        for package in wanted:
            for dep in package["deps"]:
                if dep not in keys and dep not in known:
                    found = tx.get_item_by_key(dep)
                    if found is None:
                        raise InvalidInput(
                            f"{spec}:{package['line']}: {package['id']} depends on {dep}, "
                            "which is neither in the document nor on the board",
                            package=package["id"],
                            line=package["line"],
                        )
                    known[dep] = found
        return known

    def _add_deps(
        self,
        tx: WriteTx,
        item_id: int,
        package: dict[str, Any],
        keys: set[str],
        known: dict[str, Item],
    ) -> None:
        """Edges within the document were checked for cycles all at once; an edge to an
        item outside it is checked against the board, one by one."""
        inside = [known[d].id for d in package["deps"] if d in keys]
        tx.add_deps(item_id, inside)
        outside = [known[d].id for d in package["deps"] if d not in keys]
        if outside:
            link(tx, item_id, outside)

    def _create(
        self, tx: WriteTx, spec: str, package: dict[str, Any], created_by: str, now: float
    ) -> Item:
        item_id = tx.insert_item(
            kind="task",
            title=package["title"],
            body=package["body"],
            priority=model.PRIORITY_DEFAULT,
            labels=package["labels"],
            created_by=created_by,
            recipient=None,
            now=now,
            key=package["key"],
            spec=spec,
            spec_line=package["line"],
            checks=package["checks"],
            escalate_to=package["escalate_to"],
        )
        tx.set_item_files(item_id, package["files"])
        if package["reserved_for"] is not None:  # a new item's token is 0
            tx.update_item(item_id, 0, {"reserved_for": package["reserved_for"]})
        details = {
            "title": package["title"],
            "key": package["key"],
            "spec": f"{spec}:{package['line']}",
            "deps": package["deps"],
            "files": list(package["files"]),
            "checks": list(package["checks"]),
        }
        if package["reserved_for"] is not None:
            details["reserved_for"] = package["reserved_for"]
        self.ctx.changes.record(tx, created_by, item_id, "created", now, details)
        return rules.require_item(tx, item_id)

    def _update(
        self,
        tx: WriteTx,
        item: Item,
        package: dict[str, Any],
        keys: set[str],
        known: dict[str, Item],
        agent: str,
        now: float,
    ) -> bool:
        """Apply what changed in the document; True if anything people see did."""
        changes: dict[str, Any] = {}
        for name in ("title", "body", "checks", "labels", "reserved_for"):
            if getattr(item, name) != (
                tuple(package[name]) if name in ("checks", "labels") else package[name]
            ):
                changes[name] = package[name]
        deps = [known[d].id for d in package["deps"]]
        adding_keys = [d for d in package["deps"] if known[d].id not in item.deps]
        adding = [known[d].id for d in adding_keys]
        removing = [d for d in item.deps if d not in deps]
        # the board keeps an item's files as a set, sorted (``item_files``'s primary key):
        # compare in that one form, or the document's order reads as an edit every time
        files_changed = item.files != _as_stored(package["files"])
        # bookkeeping, not news: where the text is now, and whom to ask
        bookkeeping: dict[str, Any] = {}
        if item.spec_line != package["line"]:
            bookkeeping["spec_line"] = package["line"]
        if package["escalate_to"] is not None and item.escalate_to != package["escalate_to"]:
            bookkeeping["escalate_to"] = package["escalate_to"]
        if bookkeeping:
            compare_and_set(tx, item, bookkeeping)
        if not changes and not adding and not removing and not files_changed:
            return False
        if adding:
            self._add_deps(tx, item.id, {"deps": adding_keys}, keys, known)
        tx.remove_deps(item.id, removing)
        if files_changed:
            tx.set_item_files(item.id, package["files"])
        # what the import overwrote stays in the log, as an edit's does
        details = old_and_new(item, changes)
        if changes:
            compare_and_set(tx, item, {**changes, "updated_at": now})
        if adding:
            details["added_deps"] = adding
        if removing:
            details["removed_deps"] = removing
        if files_changed:
            details["files"] = {"old": list(item.files), "new": list(package["files"])}
        details["spec"] = f"{item.spec}:{package['line']}"
        self.ctx.changes.record(tx, agent, item.id, "edited", now, details)
        return True

    def _close_ticked(
        self,
        tx: WriteTx,
        spec: str,
        package: dict[str, Any],
        agent: str,
        now: float,
        result: dict[str, Any],
    ) -> None:
        """A ticked box closes the package, unless someone holds it: then it is a conflict
        for people to settle, not something to take from under an agent."""
        item = rules.require_item(tx, package["key"])
        if item.state in ("done", "cancelled"):
            return
        if item.lease_live(now) or item.state == "queued":  # a submitted one waits to land
            how = (
                "submitted it to land; it stays queued"
                if item.state == "queued"
                else ("holds it on the board; it stays claimed")
            )
            result["conflicts"].append(
                {
                    "package": package["id"],
                    "holder": item.claimed_by,
                    "message": f"{package['id']} is ticked in {spec}:{package['line']} but "
                    f"{item.claimed_by} {how}",
                }
            )
            return
        tx.delete_item_reservations(item.id, None)
        changes = {
            "state": "done",
            "claimed_by": None,
            "lease_expires_at": None,
            "question": None,
            "closed_at": now,
        }
        details = {"ticked_in": f"{spec}:{package['line']}"}
        self.ctx.changes.apply(tx, item, changes, agent, "done", now, details)
        result["closed"].append(package["id"])


def _as_stored(files: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """An item's files as the board stores and returns them: each once, sorted."""
    return tuple(sorted(set(files)))


def _refuse_cycles(spec: str, wanted: list[dict[str, Any]]) -> None:
    """The document's own dependency graph, before anything is written: a cycle is refused
    with its path (the shortest through the first package of the first knot)."""
    lines = {p["key"]: p["line"] for p in wanted}
    found = graph.knots({p["key"]: list(p["deps"]) for p in wanted})
    if found:
        cycle = found[0].closed
        raise DependencyCycle(
            f"{spec}:{lines[cycle[0]]}: {' → '.join(cycle)} is a dependency cycle; "
            "nothing was imported",
            cycle=cycle,
        )


def _check_spec(spec: Any) -> str:
    if not isinstance(spec, str) or not spec or spec.startswith("/") or ".." in spec.split("/"):
        raise InvalidInput(
            "spec must be the document's path relative to the repository root", field="spec"
        )
    return spec
