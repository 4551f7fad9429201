"""Notice what got past the guard: the held files of a working tree, before and after a call.

Reading shell is guessing, so the guard's verdict is checked against what happened. Just
before a tool call the guard allowed, ``before`` records every existing file that another
agent holds (exclusively) in the working tree the agent stands in: its stat (size,
``mtime_ns``, ``ctime_ns``, inode, mode) and, for restoring, its content. Right after the
call ``after`` stats them again; only a file whose stat moved is read, and it counts as
changed when its content or mode did (``touch`` is no change) or when it is gone.

Where and what it costs (the guard's budget is ~3x ``python -c pass`` for 1,000 held files):

- ``.coord/snapshots/`` (``coord.fast.snapshots``): the content store, one file per content
  named by its SHA-256, and ``index``, the stat each working-tree file had when its content
  was last copied. A file whose stat still matches its index entry is not read again, so in
  the steady state ``before`` costs one ``lstat`` a held file (the holder's edits re-copy only
  what changed). A file over ``MAX_FILE_BYTES`` is watched by its stat alone (a change is
  reported, and cannot be put back); past ``MAX_STORE_BYTES`` of kept contents no new one is
  copied until old unreferenced ones are swept. The store keeps a version for at least
  ``KEEP_SECONDS`` after the index stops naming it, so a call in flight can still restore it.
- ``.coord/tripwire/AGENT.CALL``: one call's snapshot (0600, like the whole board, which
  the guard keeps every agent out of). Written by ``before``, read and removed by ``after``.
  Its presence also says "this agent has a call in flight": a held file that changed while
  its holder had a call of its own running may be the holder's write, so it is not put back.

- ``.coord/tripwire/watch/``: which files are watched (``coord.fast.watchlist``): held
  patterns expanded against the tree (a literal file, a held directory's files, a glob's
  matches), kept with what the answer rests on, so a call walks the tree only when the holds
  or a walked directory changed, and re-encodes the record only when a watched file did.

Stdlib only: it runs in the guard, before every tool call.
"""

from __future__ import annotations

import os
import time

from coord.fast import board_files, watchlist, worktree
from coord.fast.snapshots import (
    MAX_FILE_BYTES,
    Stat,
    Store,
    dumps,
    remove,
    sha256,
    stat_of,
    write_atomic,
)
from coord.fast.snapshots import load as load_record

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every tool call
if TYPE_CHECKING:
    from typing import Any


CALLS_DIRNAME = "tripwire"
ENDED_DIRNAME = "ended"  # beside the call snapshots: when each agent's last call ended
CALL_SECONDS = 3600.0  # a call snapshot older than this is a call whose after hook never ran
# a call of the holder's own started less than this long ago may be what wrote its file (a
# client's shell tool runs a command for 10 minutes at most by default)
IN_FLIGHT_SECONDS = 600.0


class Place:
    """Where one call's check lives: the board, the working tree, this call's file."""

    __slots__ = ("agent", "board_dir", "call_path", "root")

    def __init__(self, board_dir: str, root: str, agent: str | None, call: str) -> None:
        self.board_dir = board_dir
        self.root = root
        self.agent = agent
        folder = os.path.join(board_dir, CALLS_DIRNAME)
        self.call_path = os.path.join(folder, f"{_key(agent or '')}.{_key(call)}")

    @classmethod
    def at(cls, where: Place, call_path: str) -> Place:
        """``where`` with another call's file."""
        other = cls.__new__(cls)
        other.board_dir, other.root, other.agent = where.board_dir, where.root, where.agent
        other.call_path = call_path
        return other


def place(board_dir: str, cwd: str, agent: str | None, call: str) -> Place:
    """The check of the call ``call`` (any text naming it uniquely in the session) made by
    ``agent`` standing in ``cwd``: the working tree is the linked worktree of the board's
    repository holding ``cwd``, else the board's own root."""
    home_root = os.path.dirname(os.path.realpath(board_dir))
    return Place(board_dir, worktree.root_for(os.path.realpath(cwd), home_root), agent, call)


def _key(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def before(where: Place, what: dict[str, Any]) -> int:
    """Snapshot the held files of ``where`` before the call (``what``: the tool and its
    command or path, kept for the report). Returns how many files are watched.
    ``holds.BoardUnreadable`` when the board cannot be read."""
    from coord.fast import fsfold, holds, mirror  # the guard's own: loaded already

    db, now = mirror.source(where.board_dir)
    if os.path.exists(db):
        held = holds.read_watch_key(db, now)
        files, count = watchlist.files_record(
            where.board_dir,
            where.root,
            held,
            lambda: holds.read_live(db, [""], now),
            where.agent,
            fsfold.board_fold(where.board_dir),
        )
    else:
        files, count = watchlist.files_record(
            where.board_dir, where.root, [], list, where.agent, fsfold.board_fold(where.board_dir)
        )
    record = {
        "agent": where.agent,
        "root": where.root,
        "at": time.time(),
        "what": what,
        "watched": files,  # marshal data, kept as it came: decoded by ``after`` alone
    }
    folder = os.path.dirname(where.call_path)
    if not os.path.isdir(folder):
        os.makedirs(folder, board_files.PRIVATE_DIR, exist_ok=True)
    write_atomic(where.call_path, dumps(record), board_files.PRIVATE_FILE)
    return count


def load(where: Place) -> dict[str, Any] | None:
    """The call's snapshot, taken out of the board (None: no snapshot of it was taken). The
    agent's call has ended: ``ended_since`` tells another agent's after hook so."""
    record = load_record(where.call_path)
    remove(where.call_path)
    if record is not None and where.agent:
        _mark_ended(where.board_dir, where.agent)
    return record


def _mark_ended(board_dir: str, agent: str) -> None:
    """Stamp the end of one of ``agent``'s calls (the marker's mtime): a call of the holder's
    that began and ended while another agent's call ran is in flight no longer, but may be
    what changed its file all the same."""
    folder = os.path.join(board_dir, CALLS_DIRNAME, ENDED_DIRNAME)
    try:
        os.makedirs(folder, board_files.PRIVATE_DIR, exist_ok=True)
        fd = os.open(
            os.path.join(folder, _key(agent)), os.O_WRONLY | os.O_CREAT, board_files.PRIVATE_FILE
        )
        os.close(fd)
        os.utime(os.path.join(folder, _key(agent)))
    except OSError:
        pass  # at worst a holder's own change is put back: what it overwrote is kept


def ended_since(board_dir: str, agent: str, since: float) -> bool:
    """Did a call of ``agent``'s end after ``since`` (a wall-clock time)?"""
    try:
        return (
            os.stat(os.path.join(board_dir, CALLS_DIRNAME, ENDED_DIRNAME, _key(agent))).st_mtime
            >= since
        )
    except OSError:
        return False


def load_latest(where: Place) -> dict[str, Any] | None:
    """The agent's newest call snapshot, taken out of the board: for an after hook whose
    input names no call (Cursor's ``afterFileEdit``)."""
    folder = os.path.dirname(where.call_path)
    mine = os.path.basename(where.call_path).split(".", 1)[0] + "."
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(mine)]
    except OSError:
        return None
    if not entries:
        return None
    newest = max(entries, key=lambda e: e.stat().st_mtime_ns)
    return load(Place.at(where, newest.path))


class Change:
    """A held file the call changed: what happened, and what coord did about it."""

    __slots__ = ("change", "holder", "kept", "path", "restored", "why")

    def __init__(self, path: str, holder: str, change: str) -> None:
        self.path = path
        self.holder = holder
        self.change = change  # "modified" or "deleted"
        self.restored = False
        self.kept: str | None = None  # SHA-256 of the overwritten version, in the store
        self.why: str | None = None  # why it was not put back

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "holder": self.holder,
            "change": self.change,
            "restored": self.restored,
        }
        if self.kept is not None:
            out["kept"] = self.kept
        if self.why is not None:
            out["why"] = self.why
        return out


def after(where: Place, record: dict[str, Any], *, restore: bool = True) -> list[Change]:
    """The held files the call changed since ``record`` (``before``'s), each put back from
    its snapshot where that is safe (``restore``): the file is as the call left it (not
    written again since it was looked at), its holder has no call of its own in flight nor
    ended one since this call began, and the snapshot has its content. What a restore
    overwrites is kept in the store first."""
    watched = _watched(record)
    if not watched:
        return []
    recorded_root = record.get("root")
    root = recorded_root if isinstance(recorded_root, str) else where.root
    store: Store | None = None  # read only once something changed
    changes: list[Change] = []
    for name, entry in watched.items():
        holder, old, sha = entry[0], tuple(entry[1:6]), entry[6]
        path = f"{root}/{name}"
        try:
            now: Stat | None = stat_of(os.lstat(path))
        except FileNotFoundError:
            now = None
        except OSError:
            continue
        if now == old:
            continue
        store = store or Store(where.board_dir)
        if (
            now is not None
            and now[4] == old[4]
            and sha is not None
            and store.hash_file(path) == sha
        ):
            continue  # touched, or written back as it was: the same file
        change = Change(name, holder, "modified" if now is not None else "deleted")
        started = record.get("at")
        began = started if isinstance(started, float) else 0.0
        changes.append(_restore(store, where, path, change, now, old, sha, restore, began))
    if store is not None:
        store.save()
    return changes


def _watched(record: dict[str, Any]) -> dict[str, list[Any]]:
    """The files ``before`` recorded, each ``[holder, size, mtime_ns, ctime_ns, inode, mode,
    sha256 or None]``; nothing from a record that is not ``before``'s."""
    import marshal

    try:
        watched = marshal.loads(record["watched"])
    except (KeyError, TypeError, ValueError, EOFError):
        return {}
    return watched if isinstance(watched, dict) else {}


def _restore(
    store: Store,
    where: Place,
    path: str,
    change: Change,
    now: Stat | None,
    old: tuple[Any, ...],
    sha: str | None,
    restore: bool,
    began: float,
) -> Change:
    if now is not None:  # keep what the call wrote: it may be the holder's own work
        change.kept = store.keep(path, now)
    if not restore:
        change.why = "restoring is off"
        return change
    if sha is None or not store.has(sha):
        change.why = f"no snapshot of its content (over {MAX_FILE_BYTES >> 20} MiB, or unreadable)"
        return change
    if in_flight(where.board_dir, change.holder, where):
        change.why = f"{change.holder} has a tool call running too: the change may be theirs"
        return change
    if ended_since(where.board_dir, change.holder, began):
        change.why = (
            f"{change.holder} ran a tool call of its own meanwhile: the change may be theirs"
        )
        return change
    try:
        current = stat_of(os.lstat(path))
    except FileNotFoundError:
        current = None
    if current != now:
        change.why = "it changed again while coord looked at it"
        return change
    try:
        store.write_back(sha, path, old[4])
    except OSError as err:
        change.why = f"cannot write it ({err.strerror or err})"
        return change
    change.restored = True
    return change


def in_flight(board_dir: str, agent: str, besides: Place) -> bool:
    """Has ``agent`` a tool call in flight (a fresh call snapshot of its own)?"""
    folder = os.path.join(board_dir, CALLS_DIRNAME)
    mine = _key(agent) + "."
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    cutoff = time.time() - IN_FLIGHT_SECONDS
    for name in names:
        full = os.path.join(folder, name)
        if not name.startswith(mine) or full == besides.call_path:
            continue
        try:
            if os.stat(full).st_mtime >= cutoff:
                return True
        except OSError:
            continue
    return False


def leave_notice(board_dir: str, agent: str | None, text: str) -> None:
    """Keep a message for ``agent``'s next stop hook (a client that reads no after answer)."""
    folder = os.path.join(board_dir, CALLS_DIRNAME, "notices")
    os.makedirs(folder, board_files.PRIVATE_DIR, exist_ok=True)
    path = os.path.join(folder, _key(agent or ""))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, board_files.PRIVATE_FILE)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(text.rstrip("\n") + "\n\n")


def take_notice(board_dir: str, agent: str | None) -> str | None:
    """The messages kept for ``agent``, removed from the board; None when there are none."""
    path = os.path.join(board_dir, CALLS_DIRNAME, "notices", _key(agent or ""))
    taken = f"{path}.{os.getpid()}"
    try:
        os.rename(path, taken)  # one stop hook takes them, never two
    except OSError:
        return None
    try:
        with open(taken, encoding="utf-8", errors="replace") as source:
            return source.read().strip() or None
    finally:
        os.unlink(taken)


def sweep_calls(board_dir: str) -> None:
    """Remove call snapshots older than ``CALL_SECONDS``: calls whose after hook never ran
    (a tool that failed, a client killed), which would otherwise read as calls in flight."""
    folder = os.path.join(board_dir, CALLS_DIRNAME)
    cutoff = time.time() - CALL_SECONDS
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
        except OSError:
            continue
