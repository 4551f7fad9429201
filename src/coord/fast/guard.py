"""The edit rule, and the guard's verdict: may this agent write these paths?

An agent may write a path unless another agent holds a live *exclusive* reservation that
covers it (a shared reservation says "several of us edit this; nobody takes it alone"). One
rule for every face: the core's ``who``, ``coord guard``, and every client's edit and shell
hooks ask ``blockers``; the paths are placed by ``coord.fast.targets`` (which board, which
repository path) and the reservations read by ``coord.fast.holds`` (read-only, no daemon;
on a PostgreSQL board from the daemon's local mirror, ``coord.fast.mirror``).
Paths are compared as the board's file system compares names (``coord.fast.fsfold``: NFC,
and case where the probe recorded that it folds case), so ``SRC/A.py`` is ``src/a.py`` there.
When a board cannot be read the guard says why and refuses (fail closed) unless told
otherwise.

Stdlib only: it runs before every edit.
"""

from __future__ import annotations

import os

from coord.errors import InvalidInput
from coord.fast import fsfold, hardlinks, holds, mirror, own_files, patterns, targets
from coord.times import clock, iso

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Sequence
    from typing import Any, Protocol, TypeGuard, TypeVar

    from coord.fast.worktree_owner import Refusal

    class HeldFiles(Protocol):
        @property
        def agent(self) -> str: ...
        @property
        def pattern(self) -> str: ...
        @property
        def exclusive(self) -> bool: ...
        @property
        def item_id(self) -> int | None: ...
        @property
        def expires_at(self) -> float: ...

    Held = TypeVar("Held", bound=HeldFiles)


def blockers(
    target: str,
    held: Iterable[Held],
    agent: str | None,
    *,
    is_file: Callable[[str], bool] | None = None,
    is_dir: Callable[[str], bool] | None = None,
    fold: fsfold.Fold = fsfold.nfc,
) -> list[Held]:
    """The live reservations that forbid ``agent`` to write canonical ``target``.

    Without ``is_file``, ``target`` is one file (an edit tool's): a hold blocks it when it
    covers it; a held literal covers what is written beneath it (that makes it a directory
    now, whatever it was when reserved). With ``is_file`` (a shell command's target) it may
    be a directory or a glob that writes everything beneath what it names: a hold blocks it
    when they could overlap, judged against the tree (``is_file``, ``is_dir``). Each hold is
    read by the rule it was granted under (``rule``: 1 before issue 12, never narrowed).
    Names are compared by ``fold``, the board's (``coord.fast.fsfold.board_fold``).
    """
    others = [r for r in held if r.exclusive and r.agent != agent]
    if is_file is None:
        return [r for r in others if _covers(r, target, fold)]
    # a glob reaches the paths it matches and all beneath those it matches as directories
    reach = [target] if patterns.is_literal(target) else [target, patterns.beneath(target)]
    return [
        r
        for r in others
        if (
            patterns.overlaps_rule1(target, r.pattern, is_file=is_file, fold=fold)
            if getattr(r, "rule", 1) == 1
            else any(patterns.overlaps(p, r.pattern, is_dir=is_dir, fold=fold) for p in reach)
        )
    ]


def _covers(held: HeldFiles, path: str, fold: fsfold.Fold) -> bool:
    if getattr(held, "rule", 1) == 1:
        return patterns.covers_rule1(held.pattern, path, fold=fold)
    return patterns.covers(held.pattern, path, fold=fold)


def judge(
    placed: Sequence[targets.Target],
    agent: str | None,
    *,
    beneath: Collection[targets.Target] = (),
) -> list[tuple[targets.Target, list[Any]]]:
    """Each target with what forbids ``agent`` to write it, each board read once: the live
    holds, or the worktree it is in when that is another agent's, the landing worktree or one
    no claim holds (``coord.fast.worktree_owner.Refusal``). A target in ``beneath`` (a shell
    command's directory or glob that writes what is under it) is refused too for each such
    worktree nested beneath it in the main working tree. ``holds.BoardUnreadable`` when a
    board, or a worktree's lock, that must be read cannot be."""
    reach_beneath = {id(t) for t in beneath}
    boards: dict[str, list[targets.Target]] = {}
    for target in placed:
        boards.setdefault(target.board_dir, []).append(target)
    found = []
    for board_dir, mine in boards.items():
        # board.db, or on a PostgreSQL board the daemon's mirror at the database's clock
        db, now = mirror.source(board_dir)
        live = holds.read_live(db, [t.name for t in mine], now)
        fold = fsfold.board_fold(board_dir)  # recorded at init and daemon start, never probed here
        held_files = hardlinks.HeldLiterals(db, agent, now)  # read once, if a link needs it
        near = _near(live, len(mine))
        board_root = os.path.realpath(os.path.dirname(board_dir))
        owners = None
        for target in mine:
            # a path in the main working tree pays nothing (not even this import) unless a
            # shell command writes beneath a directory of it, where worktrees may be nested
            nested: list[Any] = []
            deep = (
                target.root == board_root
                and id(target) in reach_beneath
                and _may_hold_directories(target)
            )
            if target.root != board_root or deep:
                if owners is None:
                    from coord.fast import worktree_owner

                    owners = worktree_owner.Owners(board_dir, db, now, agent)
                if deep:
                    nested = owners.beneath(target.name, fold)
                else:
                    refused = owners.inside(target.root)
                    if refused is not None:
                        found.append((target, [refused]))
                        continue
            if target.one_file:
                blocking = blockers(target.name, near(target.name), agent, fold=fold)
            else:
                root = target.root
                is_dir = lambda name, root=root: os.path.isdir(os.path.join(root, name))  # noqa: E731
                blocking = blockers(
                    target.name,
                    near(target.name),
                    agent,
                    is_file=target.is_file,
                    is_dir=is_dir,
                    fold=fold,
                )
            # the file's other names; where case folds, its own name in another case is one
            # of them, already among the blockers
            named = {held.id for held in blocking}
            aliases = hardlinks.held_aliases(target, db, agent, now, held_files)
            found.append((target, nested + blocking + [a for a in aliases if a.id not in named]))
    return found


def _may_hold_directories(target: targets.Target) -> bool:
    """Could writing this shell target reach directories beneath it (a glob, the whole tree,
    an existing directory), where linked worktrees may be nested? One ``stat`` for a literal."""
    name = target.name
    if name == patterns.WHOLE_REPOSITORY or not patterns.is_literal(name):
        return True
    return os.path.isdir(os.path.join(target.root, name))


# past this many (target x hold) comparisons, each target is compared with the holds near it
_INDEX_FROM = 20_000


def _near(live: list[holds.Held], targets_count: int) -> Callable[[str], list[holds.Held]]:
    """The holds a target could overlap: all of them, or for a batch of many targets against
    many holds (``git rm -r .``, a glob) those whose literal prefix is on the target's path or
    beneath it, the necessary condition for an overlap (``coord.fast.prefix_index``), in the
    board's order."""
    if targets_count * len(live) <= _INDEX_FROM:
        return lambda name: live
    from coord.fast.prefix_index import PrefixIndex  # typing: only for big batches

    index = PrefixIndex((r.pattern, r) for r in live)
    return lambda name: sorted(index.near(name), key=lambda r: r.id)


def check(
    board_dir: str | os.PathLike[str] | None,
    given: Sequence[str],
    agent: str | None,
    *,
    cwd: str,
    fail_open: bool = False,
    home_required: bool = True,
) -> tuple[int, list[str], dict[str, Any]]:
    """The guard's whole decision: (exit code, lines for stderr, the JSON verdict).

    ``board_dir``: the board found from where the agent stands; None means none was found,
    which ``coord guard`` refuses (it was asked to check) and a hook (``home_required``
    False) does not: coord is not in use there. Exit 0 allows every path; 2 refuses. A path
    in no board's repository is allowed (``coord.fast.targets``); a path inside a board
    directory is refused, whoever holds what (``coord.fast.own_files``).
    """
    if not given:
        return 2, ["coord guard: name the paths to check, or --staged"], _verdict([], "no paths")
    refusals: list[dict[str, Any]] = []
    lines: list[str] = []
    placed: list[targets.Target] = []
    home = os.fspath(board_dir) if board_dir is not None else None
    for raw in given if home is not None or not home_required else ():
        if own_files.board_holding(raw, cwd, home) is not None:
            refusals.append({"path": raw, "reason": own_files.WHY})
            lines.append(f"coord guard: {raw}: {own_files.WHY}; refusing the edit")
            continue
        try:
            target = targets.place(raw, cwd, home)
        except InvalidInput as err:
            refusals.append({"path": raw, "reason": err.message})
            lines.append(f"coord guard: {raw}: {err.message}; refusing the edit")
            continue
        if target is not None:
            placed.append(target)
    try:
        if home is None and home_required:
            raise holds.BoardUnreadable("no coord board here or above; run `coord init`")
        judged = judge(placed, agent)
    except holds.BoardUnreadable as err:
        if fail_open and not refusals:  # --fail-open never lets a refused path through
            note = f"coord guard: cannot check ({err}); allowed by --fail-open"
            return 0, [note], _verdict([], str(err))
        line = f"coord guard: cannot check the board ({err}); refusing the edit"
        return 2, [line], _verdict([{"path": None, "reason": str(err)}], str(err))
    for target, blocking in judged:
        refusals += [
            {
                "path": target.name,
                "holder": r.agent,
                "pattern": r.pattern,
                "item": r.item_id,
                "expires_at": iso(r.expires_at),
            }
            if not is_worktree(r)
            else {
                "path": target.raw,
                "holder": r.agent,
                "worktree": r.root,
                "item": r.item_id,
                "state": r.state,
                "reason": r.why,
            }
            for r in blocking
        ]
        lines += refusal_lines(target.name, blocking, raw=target.raw)
    return (2 if refusals else 0), lines, _verdict(refusals, None)


def _verdict(refusals: list[dict[str, Any]], note: str | None) -> dict[str, Any]:
    return {"may_edit": not refusals, "refusals": refusals, "note": note}


def is_worktree(blocker: object) -> TypeGuard[Refusal]:
    """Is this blocker a worktree the agent may not write into
    (``coord.fast.worktree_owner.Refusal``), not a hold? Asked without importing it."""
    return getattr(blocker, "why", None) is not None


# 9999-12-31T23:59:59Z: a hold that ends with its item's way to main, not with a lease
# (coord.core.worktree_holds.HOLD_UNTIL; the guard imports nothing of the core)
HELD_UNTIL_LANDED = 253402300799.0


def refusal_lines(path: str, blocking: Sequence[Any], *, raw: str | None = None) -> list[str]:
    lines = []
    for r in blocking:
        if is_worktree(r):  # the path as written: the worktree's own
            lines.append(f"coord guard: {raw or path}: {r.why}; refusing the edit")
            continue
        item = f" for item {r.item_id}" if r.item_id is not None else ""
        ask = f"ask {r.agent}"
        if r.item_id is not None and r.expires_at >= HELD_UNTIL_LANDED:
            # a worktree item's, or the queue's: held past any lease (core.worktree_holds)
            until = f"until item {r.item_id} is merged or abandoned"
            if r.agent != "coord/queue":
                ask += f", or take it over if its claim lapsed (`coord start {r.item_id}`)"
        else:
            until = f"until {clock(r.expires_at)}"
        lines.append(
            f"coord guard: {path} is held by {r.agent} ({r.pattern}){item} {until}; "
            f"do not edit it: pick other work or {ask} (`coord who {path}`)"
        )
    return lines
