"""The after-tool check's store: copies of held files, and small private files of the board.

``.coord/snapshots/`` holds one file per content, named by its SHA-256, and ``index``: the
stat each working-tree file had when its content was last copied (``Store``), so a file whose
stat still matches is not read again. What a restore overwrote is kept here too. The records
are marshal data (``dumps``, ``load``), a dozen times faster than JSON for 1,000 files.

Stdlib only: it runs in the guard, before every tool call (``coord.fast.tripwire``).
"""

from __future__ import annotations

import marshal
import os
import stat as stat_module
import sys
import time

from coord.fast import board_files

try:  # the bare SHA-256 module: hashlib loads OpenSSL first, a cost on every tool call
    from _sha256 import sha256
except ImportError:  # pragma: no cover - Python 3.12 renamed it; any build has hashlib
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every tool call
if TYPE_CHECKING:
    from typing import Any

SNAPSHOTS_DIRNAME = "snapshots"
INDEX_FILENAME = "index"
MAX_FILE_BYTES = 1 << 20  # a held file past 1 MiB is watched by its stat only
MAX_STORE_BYTES = 256 << 20  # kept contents in all, per board
KEEP_SECONDS = 3600.0  # an unreferenced kept version survives at least this long
# The index and the call snapshots are marshal data (a dozen times faster than JSON for 1,000
# files, and a builtin module): marked with this module's format and the Python version that
# wrote them, since marshal's own format may change between versions. The files are the
# board's own, 0600, in the .coord/ the guard keeps agents out of.
FORMAT = b"coord-tripwire 1 %d.%d\n" % sys.version_info[:2]

# one held file's state: size, mtime_ns, ctime_ns, inode, mode
Stat = tuple[int, int, int, int, int]


def stat_of(found: os.stat_result) -> Stat:
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino, found.st_mode)


class Store:
    """The board's kept contents (``.coord/snapshots/SHA256``) and the index of which stat
    each working-tree file had when last copied (``index``)."""

    def __init__(self, board_dir: str) -> None:
        self.folder = os.path.join(board_dir, SNAPSHOTS_DIRNAME)
        self.index_path = os.path.join(self.folder, INDEX_FILENAME)
        self.changed = False
        self._stored: int | None = None  # bytes of kept contents, counted once when needed
        self.index: dict[str, list[Any]] = load(self.index_path) or {}

    def content_of(self, path: str, state: Stat) -> str | None:
        """The SHA-256 of the file's content, kept in the store; None past the size cap or
        when it cannot be read whole. Read only when the stat differs from the index's."""
        entry = self.index.get(path)
        if entry is not None and tuple(entry[:5]) == state:
            return entry[5] if isinstance(entry[5], str) else None  # checked when restoring
        sha = self.keep(path, state)
        self.index[path] = [*state, sha]
        self.changed = True
        return sha

    def keep(self, path: str, state: Stat) -> str | None:
        """Copy the file's content into the store (if it fits): its SHA-256, or None."""
        if state[0] > MAX_FILE_BYTES:
            return None
        try:
            with open(path, "rb") as source:
                data = source.read(MAX_FILE_BYTES + 1)
                if stat_of(os.fstat(source.fileno())) != state or len(data) != state[0]:
                    return None  # written while read: no whole version to keep
        except OSError:
            return None
        sha = sha256(data).hexdigest()
        if not self.has(sha):
            if not os.path.isdir(self.folder):
                os.makedirs(self.folder, board_files.PRIVATE_DIR, exist_ok=True)
            if self._stored is None:
                self._stored = self._size()
            if self._stored + len(data) > MAX_STORE_BYTES:
                if not self._sweep(len(data)):
                    return None
                self._stored = self._size()
            write_atomic(self._blob(sha), data, board_files.PRIVATE_FILE)
            self._stored += len(data)
        return sha

    def hash_file(self, path: str) -> str | None:
        try:
            with open(path, "rb") as source:
                return sha256(source.read()).hexdigest()
        except OSError:
            return None

    def has(self, sha: Any) -> bool:
        return isinstance(sha, str) and os.path.exists(self._blob(sha))

    def write_back(self, sha: str, path: str, mode: int) -> None:
        """Put the kept version ``sha`` at ``path`` with ``mode``: a new file renamed over
        it, so nobody reads half of it."""
        with open(self._blob(sha), "rb") as source:
            data = source.read()
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        write_atomic(path, data, stat_module.S_IMODE(mode))
        self.index[path] = [*stat_of(os.lstat(path)), sha]
        self.changed = True

    def save(self) -> None:
        if self.changed:
            if not os.path.isdir(self.folder):
                os.makedirs(self.folder, board_files.PRIVATE_DIR, exist_ok=True)
            write_atomic(self.index_path, dumps(self.index), board_files.PRIVATE_FILE)
            self.changed = False

    def _blob(self, sha: str) -> str:
        return os.path.join(self.folder, sha)

    def _size(self) -> int:
        total = 0
        for entry in self._blobs():
            total += entry.stat().st_size
        return total

    def _blobs(self) -> list[os.DirEntry[str]]:
        try:
            return [e for e in os.scandir(self.folder) if len(e.name) == 64]
        except OSError:
            return []

    def _sweep(self, room: int) -> bool:
        """Remove kept versions the index no longer names and older than ``KEEP_SECONDS``,
        oldest first, until ``room`` bytes fit. True if they do."""
        named = {entry[5] for entry in self.index.values() if len(entry) > 5}
        cutoff = time.time() - KEEP_SECONDS
        blobs = sorted(self._blobs(), key=lambda e: e.stat().st_mtime)
        total = sum(e.stat().st_size for e in blobs)
        for entry in blobs:
            if total + room <= MAX_STORE_BYTES:
                break
            if entry.name in named or entry.stat().st_mtime >= cutoff:
                continue
            size = entry.stat().st_size
            try:
                os.unlink(entry.path)
            except OSError:
                continue
            total -= size
        return total + room <= MAX_STORE_BYTES


def dumps(value: dict[str, Any]) -> bytes:
    return FORMAT + marshal.dumps(value)


def load(path: str) -> dict[str, Any] | None:
    """A dict ``_dumps`` wrote, or None: missing, unreadable, or another format or Python's."""
    try:
        with open(path, "rb") as source:
            data = source.read()
    except OSError:
        return None
    if not data.startswith(FORMAT):
        return None
    try:
        value = marshal.loads(data[len(FORMAT) :])
    except (EOFError, ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def write_atomic(path: str, data: bytes, mode: int) -> None:
    """A new file beside ``path`` renamed over it: a reader sees the old bytes or the new
    (``coord.fast.files`` does the same with pathlib, which costs the guard ~3 ms to import)."""
    tmp = os.path.join(
        os.path.dirname(path), f".{os.path.basename(path)}.coord-{os.getpid()}-{time.time_ns()}"
    )
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise


def remove(path: str) -> bool:
    """Remove ``path`` if it is there (contextlib costs the guard an import)."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True
