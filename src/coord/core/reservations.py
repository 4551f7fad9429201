"""Who may hold which files: the reservation rules as pure functions, and the board's verbs
for files (``Reservations``: reserve, free, list, who holds a path).

Exclusive conflicts with any overlapping reservation of another agent; shared conflicts only
with another agent's exclusive one. An agent never conflicts with itself. Whether two
patterns overlap is ``coord.fast.patterns.overlaps``, judged against the working tree (a
literal is one file unless it is a directory there), exact except where two globs could
match one path the tree lacks. A reservation granted before issue 12 (``rule`` 1) keeps its
wider meaning until it ends (``overlaps_rule1``): a live hold is never narrowed. Paths are
compared the way the repository's file system compares names (``coord.fast.fsfold``: NFC,
and case where it folds case), by the working tree's ``fold``; stored and shown as spelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from coord.core import rules, worktree_holds
from coord.core.context import BoardContext, IsFile
from coord.errors import FilesReserved, InvalidInput
from coord.fast import board_files, fsfold, globmeet, patterns
from coord.fast.tree import WorkingTree
from coord.model import LAPSED_HOLDER, QUEUE_HOLDER, Reservation
from coord.times import iso


def covers_by_rule(held: Reservation, path: str, fold: fsfold.Fold = fsfold.nfc) -> bool:
    """Does ``held`` cover the file ``path``, read by the rule it was granted under?"""
    if held.rule == 1:
        return patterns.covers_rule1(held.pattern, path, fold=fold)
    return patterns.covers(held.pattern, path, fold=fold)


def fold_of(tree: IsFile | None) -> fsfold.Fold:
    """The key the board compares paths by: its working tree's (NFC alone without one)."""
    return getattr(tree, "fold", fsfold.nfc)


def canonical(raw: Iterable[str], repo_root: Path | None) -> tuple[str, ...]:
    """Normalise user patterns to their canonical repository-relative form, deduplicated."""
    raw = list(raw)
    if not raw:
        return ()
    if repo_root is None:
        raise InvalidInput("this board has no repository root, so it cannot hold files")
    return tuple(dict.fromkeys(patterns.normalize(p, repo_root) for p in raw))


def find_conflicts(
    agent: str,
    requested: Sequence[str],
    exclusive: bool,
    held: Iterable[Reservation],
    is_file: IsFile | None = None,
) -> list[dict[str, Any]]:
    """Every (requested pattern, held reservation) pair that refuses the request."""
    found = []
    with globmeet.one_request():  # all of them within one bound of work
        for reservation in held:
            if reservation.agent == agent:
                continue
            if not (exclusive or reservation.exclusive):
                continue
            for pattern in requested:
                if meets_hold(pattern, reservation, is_file):
                    found.append(conflict_facts(pattern, reservation))
    return found


def conflict_facts(requested: str, reservation: Reservation) -> dict[str, Any]:
    return {
        "requested": requested,
        "holder": reservation.agent,
        "pattern": reservation.pattern,
        "exclusive": reservation.exclusive,
        "item": reservation.item_id,
        "expires_at": iso(reservation.expires_at),
    }


def refusal(
    conflicts: list[dict[str, Any]], what: str, *, claim_of: int | None = None
) -> FilesReserved:
    """One error naming every conflicting holder, pattern, item and expiry. ``claim_of``: the
    item whose claim was refused (its ``next`` waits for the item, not for the paths)."""
    lines = [
        f"{c['requested']} overlaps {c['pattern']} held by {c['holder']}"
        + (f" for item {c['item']}" if c["item"] is not None else "")
        + f" until {c['expires_at']}"
        for c in conflicts
    ]
    holders = sorted({c["holder"] for c in conflicts})
    agents = [h for h in holders if h not in (QUEUE_HOLDER, LAPSED_HOLDER)]
    advice = ". Pick other work"
    if agents:
        advice += ", or ask " + ", ".join(_ask(agent, conflicts) for agent in agents)
    if QUEUE_HOLDER in holders:  # nobody to ask: the files wait for their landing
        advice += "; files held by coord/queue are a submitted item's, held until it is "
        advice += "merged or abandoned (`coord queue` shows what waits to land)"
    lapsed = sorted({c["item"] for c in conflicts if c["holder"] == LAPSED_HOLDER})
    for item in lapsed:  # nobody to ask: the work waits in the item's worktree
        advice += (
            f"; item {item}'s worktree claim lapsed and the item keeps its files until it is "
            f"taken over or abandoned: go on with its work (`coord start {item}`), or have "
            f"its last holder or a human give it up, saying why (`coord abandon {item}`)"
        )
    facts: dict[str, Any] = {"conflicts": conflicts, "holders": holders}
    if claim_of is not None:
        facts["claim_of"] = claim_of
    return FilesReserved(f"{what} refused: " + "; ".join(lines) + advice, **facts)


def _ask(agent: str, conflicts: list[dict[str, Any]]) -> str:
    """Where to ask a holder: on its item's thread, or (a reservation with no item: no thread
    to reply on) in a direct message, which reaches its inbox."""
    items = sorted({c["item"] for c in conflicts if c["holder"] == agent and c["item"]})
    if items:
        return f"{agent} on item {items[0]}'s thread (`coord reply {items[0]} TEXT`)"
    return f"{agent} directly (`coord send {agent} TEXT`)"


def holds_on(
    files: Sequence[str],
    held: Iterable[Reservation],
    *,
    except_agent: str | None,
    is_file: IsFile | None = None,
) -> tuple[Reservation, ...]:
    """Live reservations of others that would stop a claim of ``files`` (exclusive request)."""
    with globmeet.one_request():
        return tuple(
            r
            for r in held
            if r.agent != except_agent and any(meets_hold(f, r, is_file) for f in files)
        )


def pairwise_disjoint(
    chosen: Sequence[Sequence[str]], candidate: Sequence[str], is_file: IsFile | None = None
) -> bool:
    is_dir = getattr(is_file, "is_dir", None)
    fold = fold_of(is_file)
    with globmeet.one_request():
        return not any(
            patterns.overlaps(a, b, is_dir=is_dir, fold=fold)
            for files in chosen
            for a in files
            for b in candidate
        )


def meets_hold(requested: str, held: Reservation, tree: IsFile | None) -> bool:
    """Could a path be covered both by ``requested`` (a new pattern) and by ``held``, read by
    the rule it was granted under? ``tree`` is the board's ``WorkingTree`` (or None)."""
    fold = fold_of(tree)
    if held.rule == 1:
        return patterns.overlaps_rule1(requested, held.pattern, is_file=tree, fold=fold)
    is_dir = getattr(tree, "is_dir", None)
    return patterns.overlaps(requested, held.pattern, is_dir=is_dir, fold=fold)


def working_tree_files(repo_root: Path | None) -> WorkingTree | None:
    """The board's view of its repository's working tree (None without a repository: then
    any literal might be a directory, the safe reading), comparing names as the probe at
    ``coord init`` and daemon start recorded its file system does."""
    if repo_root is None:
        return None
    fold = fsfold.board_fold(repo_root / board_files.BOARD_DIRNAME)
    return WorkingTree(str(repo_root), fold)


class Reservations:
    """The board's verbs for files: reserve, free, list, and ask who holds a path."""

    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def reserve(
        self,
        given: Sequence[str],
        agent: str,
        exclusive: bool,
        lease: float,
        item_ref: int | str | None,
        reason: str,
    ) -> list[Reservation]:
        """Reserve every pattern, or none: refused whole if any overlaps another agent's."""
        wanted = canonical(given, self.ctx.repo_root)
        if not wanted:
            raise InvalidInput("name at least one path or pattern to reserve", field="patterns")
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            item_id = rules.require_item(tx, item_ref).id if item_ref is not None else None
            tx.purge_expired_reservations(now)
            live = worktree_holds.live_holds(tx, now, near=wanted)
            conflicts = find_conflicts(agent, wanted, exclusive, live, self.ctx.is_file)
            if conflicts:
                raise refusal(conflicts, "reservation")
            # Reserving what you already hold renews it (new lease, new mode) in place,
            # under whichever spelling the file system takes for it.
            fold = fold_of(self.ctx.is_file)
            keys = {fold(p) for p in wanted}
            tx.delete_reservations(
                r.id
                for r in live
                if r.agent == agent and fold(r.pattern) in keys and r.item_id == item_id
            )
            expires = now + lease
            made = [
                Reservation(
                    tx.insert_reservation(
                        agent=agent,
                        pattern=p,
                        exclusive=exclusive,
                        item_id=item_id,
                        reason=reason,
                        now=now,
                        expires_at=expires,
                    ),
                    agent,
                    p,
                    exclusive,
                    item_id,
                    reason,
                    now,
                    expires,
                )
                for p in wanted
            ]
            details = {
                "patterns": list(wanted),
                "exclusive": exclusive,
                "expires_at": iso(expires),
                "reason": reason,
            }
            self.ctx.changes.record(tx, agent, item_id, "reserved", now, details, worked=True)
        return made

    def unreserve(self, given: Sequence[str], agent: str, everything: bool) -> list[str]:
        """Free the agent's reservations of these patterns (or all of them). Returns what
        was freed; freeing what you do not hold is not an error."""
        fold = fold_of(self.ctx.is_file)
        wanted = {fold(p) for p in canonical(given, self.ctx.repo_root)}
        if not wanted and not everything:
            raise InvalidInput(
                "name the patterns to free, or ask to free everything you hold", field="patterns"
            )
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            mine = [
                r
                for r in worktree_holds.live_holds(tx, now, agent=agent)
                if everything or fold(r.pattern) in wanted
            ]
            if not mine:
                return []
            tx.delete_reservations(r.id for r in mine)
            freed = sorted({r.pattern for r in mine})
            self.ctx.changes.record(tx, agent, None, "unreserved", now, {"patterns": freed})
        return freed

    def live(self, agent: str | None) -> list[Reservation]:
        """Live reservations, oldest first (of one agent, or everyone's)."""
        with self.ctx.storage.read() as tx:
            return worktree_holds.live_holds(tx, self.ctx.now(tx), agent=agent)

    def who(self, path: str, agent: str | None) -> dict[str, Any]:
        """Who holds ``path``, and may ``agent`` edit it?"""
        from coord.fast.guard import blockers

        if self.ctx.repo_root is None:
            raise InvalidInput("this board has no repository root, so it holds no files")
        canonical_path = patterns.normalize(path, self.ctx.repo_root, literal=True)
        with self.ctx.storage.read() as tx:
            live = worktree_holds.live_holds(tx, self.ctx.now(tx), near=[canonical_path])
        fold = fold_of(self.ctx.is_file)
        holders = [r for r in live if covers_by_rule(r, canonical_path, fold)]
        blocking = blockers(canonical_path, live, agent, fold=fold)
        return {
            "path": canonical_path,
            "holders": [r.to_dict() for r in holders],
            "may_edit": not blocking,
            "blocked_by": [r.to_dict() for r in blocking],
        }
