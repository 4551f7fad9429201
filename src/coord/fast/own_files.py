"""coord's own files: no agent edits, overwrites or deletes the board directory.

``.coord/`` holds the board every agent of the repository shares (``board.db``), the HTTP
write token, the session records that name the agents, the daemon's address. An agent that
edits ``board.db`` or runs ``rm -rf .coord`` / ``git clean -fdx`` takes every other agent's
claims and holds with it, and the guard then has nothing left to refuse with. So an edit
tool's path, ``coord guard PATH`` and a file a shell command writes are refused when they
land inside a board directory, and a shell command that deletes a directory holding one
(``rm -rf .``) is refused too. coord itself writes there only through its own commands.

The path is read as the operating system will, and also as written: refused when either
lands in a board (``.coord/../.coord/token``, a symlink to ``.coord``, ``COORD_DIR`` named
outright). A board is the one found from where the agent stands (``home``, which may be a
``COORD_DIR`` outside the repository) or any directory named ``.coord`` that holds a
board, a ``board.db`` or a config naming a team database (another repository's board is as
much shared). The name is compared without
case: on the file systems that fold case (macOS, Windows) ``.COORD`` is the same directory.

Stdlib only: it runs before every edit.
"""

from __future__ import annotations

import os

from coord.fast import board_files

WHY = (
    "`.coord/` is coord's board: the shared database of every agent's claims and holds, its "
    "write token and session records; change it only through coord's commands (`coord init`, "
    "`coord claim`, `coord reserve`, ...), never by editing or deleting it"
)


def board_holding(raw: str, cwd: str, home: str | None) -> str | None:
    """The board directory the path ``raw`` (read from ``cwd``) is, or is inside; None when
    it is in none."""
    for path in _spellings(raw, cwd):
        found = _board_above(path, home)
        if found is not None:
            return found
    return None


def board_beneath(raw: str, cwd: str, home: str | None) -> str | None:
    """The board directory that deleting ``raw`` would delete: it is inside or beneath it
    (``rm -rf .coord``, ``rm -rf .``, ``rm -rf ..``); None when none. A symlink named last
    is deleted itself, not what it points to (unless written with a trailing ``/``)."""
    spellings = _spellings(raw, cwd, follow_last=raw.endswith("/"))
    for path in spellings:
        found = _board_above(path, home)
        if found is not None:
            return found
    if home is None:
        return None
    real_home = os.path.realpath(home)
    for path in spellings:
        if _within(real_home, path) or _within(home, path):
            return home
    return None


def _spellings(raw: str, cwd: str, *, follow_last: bool = True) -> set[str]:
    """The path as written (``..`` taken lexically) and as the file system resolves it."""
    joined = os.path.join(cwd, os.path.expanduser(raw))
    if follow_last:
        return {os.path.normpath(joined), os.path.realpath(joined)}
    parent, name = os.path.split(os.path.normpath(joined))
    real = os.path.join(os.path.realpath(parent), name) if name not in ("", "..") else joined
    return {os.path.normpath(joined), os.path.realpath(real) if name == ".." else real}


def _board_above(path: str, home: str | None) -> str | None:
    if home is not None:
        for board in (home, os.path.realpath(home)):
            if _within(path, board):
                return home
    directory = path
    while True:
        named = os.path.basename(directory).lower() == board_files.BOARD_DIRNAME
        if named and board_files.has_board(directory):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
