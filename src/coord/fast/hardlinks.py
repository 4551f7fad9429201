"""A hard link is the held file under another name: the guard judges both names.

``ln src/a.py b.py`` makes ``b.py`` the same file (the same inode) as ``src/a.py``; an edit
of ``b.py`` edits ``src/a.py`` while no hold names ``b.py``. The shell hook refuses making
such a link to a held file (``coord.hooks.shell`` reads ``ln``'s sources as written); this
finds the links that already exist.

Bounded, never a walk of the repository: only a regular file with more than one link
(``st_nlink > 1``, rare in a working tree) is looked at, and only against the live held
literal paths of other agents (at most ``MAX_CANDIDATES``), each one ``stat``. A held
directory is not searched for the file: a link into a held directory is found only when
the hook saw the ``ln`` that made it.

Stdlib only: it runs before every edit.
"""

from __future__ import annotations

import os
import stat
import time

from coord.fast import holds, patterns
from coord.fast.db import sqlite3

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from collections.abc import Callable

    from coord.fast.targets import Target

# held literal paths compared per linked file: beyond this a board holds thousands of single
# files, and one edit must not stat them all
MAX_CANDIDATES = 500


def held_aliases(
    target: Target,
    db: str,
    agent: str | None,
    now: float | None = None,
    held_files: Callable[[], list[holds.Held]] | None = None,
) -> list[holds.Held]:
    """Live exclusive holds (at ``now`` on the board's clock, default this one's) of agents
    other than ``agent`` on another name of the file ``target`` names (a hard link to it).
    Empty unless it is an existing linked file. ``held_files`` gives the candidates when
    the caller reads them once for many targets (``coord.fast.guard.judge``)."""
    if not patterns.is_literal(target.name):
        return []
    try:
        mine = os.stat(os.path.join(target.root, target.name))
    except OSError:
        return []  # not there yet: nothing is linked to it
    if mine.st_nlink < 2 or not stat.S_ISREG(mine.st_mode):
        return []
    roots = {target.root, os.path.realpath(os.path.dirname(target.board_dir))}
    found = []
    candidates = held_files() if held_files is not None else None
    if candidates is None:
        candidates = held_literals(db, agent, time.time() if now is None else now)
    for held in candidates:
        if held.pattern == target.name or not patterns.is_literal(held.pattern):
            continue
        for root in roots:
            try:
                other = os.stat(os.path.join(root, held.pattern))
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (mine.st_dev, mine.st_ino):
                found.append(held)
                break
    return found


class HeldLiterals:
    """``held_literals`` of one board, read at the first call and kept: a batch of targets
    (a shell command's) costs one read of the board however many are linked files."""

    def __init__(self, db: str, agent: str | None, now: float | None) -> None:
        self.db, self.agent = db, agent
        self.now = time.time() if now is None else now
        self.read: list[holds.Held] | None = None

    def __call__(self) -> list[holds.Held]:
        if self.read is None:
            self.read = held_literals(self.db, self.agent, self.now)
        return self.read


def held_literals(db: str, agent: str | None, now: float) -> list[holds.Held]:
    """Other agents' live exclusive holds whose pattern is a literal path (no glob
    character: ``patterns.is_literal``; the stored prefix is a folded key, not the pattern),
    newest first, at most ``MAX_CANDIDATES``."""
    sql = (
        f"SELECT {holds.COLUMNS} FROM reservations WHERE expires_at > ? AND exclusive = 1 "
        "AND agent IS NOT ? AND pattern NOT GLOB '*[*?[\\]*' ORDER BY id DESC LIMIT ?"
    )
    try:
        conn = sqlite3.connect(f"file:{holds._uri_path(db)}?mode=ro", uri=True, timeout=2)
        try:
            rows = conn.execute(sql, (now, agent, MAX_CANDIDATES)).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise holds.BoardUnreadable(f"cannot read {db}: {err}") from None
    return [holds.Held(*row) for row in rows]
