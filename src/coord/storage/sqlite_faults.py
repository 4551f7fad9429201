"""What went wrong with the board's file, said as an error the user can act on.

SQLite reports a full disk, a lock held by another process, a file it may not open or a file
that is gone as ``sqlite3.OperationalError`` with a terse message ("database or disk is
full", "database is locked", "unable to open database file"). Left alone those became a 500
"internal error … report it" in the daemon and a traceback in the CLI; here each becomes the
``CoordError`` that names the file and what to do.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from coord.errors import (
    BoardBusy,
    BoardGone,
    BoardIOError,
    BoardUnreadable,
    CoordError,
    DiskFull,
)

# SQLite's primary result codes (the low byte of an extended code)
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14

FileIdentity = tuple[int, int]  # (st_dev, st_ino)


def identity(path: Path) -> FileIdentity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def board_gone(path: Path, opened: FileIdentity | None) -> BoardGone | None:
    """A ``BoardGone`` if the file at ``path`` is no longer the one opened as ``opened``.

    One ``stat``: about a microsecond, paid by every transaction so no write is acknowledged
    into a file nobody will open again (bench/run.py claim-next measured no difference)."""
    now = identity(path)
    if now is not None and now == opened:
        return None
    what = "deleted" if now is None else "replaced by another file"
    return BoardGone(
        f"the board file {path} was {what} while the daemon ran, so nothing it wrote now would "
        "be kept: stop this daemon (`coord stop`) and start it again (`coord serve`) once "
        "the board is back, or make a new one with `coord init`",
        path=str(path),
    )


def disk_full(path: Path) -> DiskFull:
    return DiskFull(
        f"the disk is full: the board {path} cannot be written and nothing was changed; free "
        "some space on that file system, then try again",
        path=str(path),
    )


def busy(path: Path) -> BoardBusy:
    return BoardBusy(
        f"the board {path} is busy: another process holds its write lock; nothing was "
        f"changed; try again in {BoardBusy.retry_after} s",
        path=str(path),
        retry_after=BoardBusy.retry_after,
    )


def out_of_space(path: Path) -> bool:
    """True if the file system holding ``path`` has no block left for this user."""
    try:
        fs = os.statvfs(path.parent)
    except OSError:
        return False
    return fs.f_bavail == 0


def unreadable(path: Path, err: Exception) -> BoardUnreadable:
    target = _first_refused(path) or path
    return BoardUnreadable(
        f"cannot open the board {target}: permission denied ({err}); give this user read and "
        f"write access to it (e.g. `chmod u+rw {target}`), or run coord as its owner",
        path=str(target),
    )


def _first_refused(path: Path) -> Path | None:
    """The board file, its directory or a companion (-wal, -shm) this process may not use."""
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return path.parent
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if candidate.exists() and not os.access(candidate, os.R_OK | os.W_OK):
            return candidate
    return None


def translate(path: Path, err: sqlite3.Error) -> CoordError | None:
    """The ``CoordError`` for a failure of the board's file, or None for anything else (a bug
    of ours, which stays a 500 with its details in the log)."""
    code = getattr(err, "sqlite_errorcode", 0) & 0xFF
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return busy(path)
    if code == SQLITE_FULL or (code == SQLITE_IOERR and out_of_space(path)):
        return disk_full(path)
    if code in (SQLITE_PERM, SQLITE_READONLY, SQLITE_CANTOPEN):
        if _first_refused(path) is not None:
            return unreadable(path, err)
        if code == SQLITE_CANTOPEN and out_of_space(path):
            return disk_full(path)
    if code == SQLITE_IOERR:  # the operating system's, not ours: a device, a limit, a quota
        return BoardIOError(
            f"the board {path} could not be read or written ({err}); nothing was changed; "
            "check that file system: a failing disk, a quota or a file-size limit",
            path=str(path),
        )
    return None
