"""The edit rule, and a fast read-only look at the board for hooks that run before every edit.

An agent may edit a path unless another agent holds a live *exclusive* reservation that
covers it (a shared reservation says "several of us edit this; nobody takes it alone").
The core's ``who`` and the ``coord guard`` command both ask ``blockers``: one rule.

Stdlib only and no daemon: it opens ``board.db`` read-only. When it cannot read the board it
says why, and the guard refuses (fail closed) unless told otherwise.
"""

from __future__ import annotations

import os
import sqlite3
import time

from coord.fast import patterns, worktree
from coord.times import clock, iso

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path
    from typing import Any, Protocol, TypeVar

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


class Row:
    """A live reservation as the guard reads it, without the core's dataclasses."""

    __slots__ = ("agent", "exclusive", "expires_at", "item_id", "pattern")

    def __init__(
        self, agent: str, pattern: str, exclusive: int, item_id: int | None, expires_at: float
    ) -> None:
        self.agent = agent
        self.pattern = pattern
        self.exclusive = bool(exclusive)
        self.item_id = item_id
        self.expires_at = expires_at


def blockers(path: str, held: Iterable[Held], agent: str | None) -> list[Held]:
    """The live reservations that forbid ``agent`` to edit canonical ``path``."""
    return [
        r for r in held if r.exclusive and r.agent != agent and patterns.covers(r.pattern, path)
    ]


class BoardUnreadable(Exception):
    pass


def read_live(db_path: Path, paths: Sequence[str], now: float | None = None) -> list[Row]:
    """Live exclusive reservations that might cover these canonical paths, read-only from
    the board file (no daemon needed). A pattern can cover a path only if its literal prefix
    is the path or one of its directories; the indexed prefix column finds just those."""
    if not os.path.exists(db_path):
        raise BoardUnreadable(f"no board at {db_path}")
    prefixes = {""}
    for path in paths:
        parts = path.split("/")
        prefixes.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=2)
        try:
            rows = conn.execute(
                "SELECT agent, pattern, exclusive, item_id, expires_at FROM reservations "
                "WHERE expires_at > ? AND exclusive = 1 "
                f"AND prefix IN ({','.join('?' * len(prefixes))})",
                (time.time() if now is None else now, *sorted(prefixes)),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise BoardUnreadable(f"cannot read {db_path}: {err}") from None
    return [Row(*row) for row in rows]


def check(
    board_dir: Path | None,
    given: Sequence[str],
    agent: str | None,
    *,
    cwd: str,
    fail_open: bool = False,
) -> tuple[int, list[str], dict[str, Any]]:
    """The guard's whole decision: (exit code, lines for stderr, the JSON verdict).

    ``board_dir`` None means no board was found. Exit 0 allows every path; 2 refuses.
    """
    from coord.errors import InvalidInput

    if not given:
        return 2, ["coord guard: name the paths to check, or --staged"], _verdict([], "no paths")
    refusals: list[dict[str, Any]] = []
    lines: list[str] = []
    checked: list[str] = []
    root = worktree.root_for(cwd, str(board_dir.parent)) if board_dir is not None else ""
    for raw in given if board_dir is not None else ():
        try:
            checked.append(patterns.normalize(raw, root, cwd=cwd, literal=True))
        except InvalidInput as err:
            refusals.append({"path": raw, "reason": err.message})
            lines.append(f"coord guard: {raw}: {err.message}; refusing the edit")
    try:
        if board_dir is None:
            raise BoardUnreadable("no coord board here or above; run `coord init`")
        live = read_live(board_dir / "board.db", checked)
    except BoardUnreadable as err:
        if fail_open and not refusals:  # --fail-open never lets a path outside through
            note = f"coord guard: cannot check ({err}); allowed by --fail-open"
            return 0, [note], _verdict([], str(err))
        line = f"coord guard: cannot check the board ({err}); refusing the edit"
        return 2, [line], _verdict([{"path": None, "reason": str(err)}], str(err))
    for path in checked:
        blocking = blockers(path, live, agent)
        refusals += [
            {
                "path": path,
                "holder": r.agent,
                "pattern": r.pattern,
                "item": r.item_id,
                "expires_at": iso(r.expires_at),
            }
            for r in blocking
        ]
        lines += refusal_lines(path, blocking)
    return (2 if refusals else 0), lines, _verdict(refusals, None)


def _verdict(refusals: list[dict[str, Any]], note: str | None) -> dict[str, Any]:
    return {"may_edit": not refusals, "refusals": refusals, "note": note}


def refusal_lines(path: str, blocking: Sequence[HeldFiles]) -> list[str]:
    lines = []
    for r in blocking:
        until = clock(r.expires_at)
        item = f" for item {r.item_id}" if r.item_id is not None else ""
        lines.append(
            f"coord guard: {path} is held by {r.agent} ({r.pattern}){item} until {until}; "
            f"do not edit it: pick other work or ask {r.agent} (`coord who {path}`)"
        )
    return lines
