"""Which held files one call watches, and their state just before it: kept between calls.

Before every call the guard allowed, the after-tool check needs every existing file another
agent holds (exclusively) in the agent's working tree, with its stat and the SHA-256 of a
kept copy of its content (``coord.fast.tripwire.before``). Expanding the held patterns
against the tree (``covered_files``: a literal file, a held directory's files, a glob's
matches) walks every held directory: on 1,000 held files it was two thirds of the snapshot.
Its answer changes only when the holds change or a walked directory gains or loses an entry,
which moves that directory's mtime. So the answer is kept in ``.coord/tripwire/watch/KEY``
(one per working tree and agent, 0600 like the whole board) with what it was made from: the
holds, the mtime and inode of every directory walked, and what was found at each held path
that was no regular file. The next call walks again only when one of those differs; else it
``lstat``s the watched files and compares them with the kept states. When nothing moved, the
kept record of the files is the call's record as it stands: no index read, no re-encoding.

A directory whose mtime is within ``RACY_NS`` of the walk could gain an entry within the same
timestamp tick without its mtime moving (git's "racily clean" entries): a walk that saw one
is not kept, so the next call walks again.

Stdlib only: it runs in the guard, before every tool call.
"""

from __future__ import annotations

import marshal
import os
import re  # the guard has loaded it (coord.fast.patterns)
import stat as stat_module
import time

from coord.fast import board_files
from coord.fast.snapshots import FORMAT, MAX_FILE_BYTES, Store, sha256, write_atomic
from coord.fast.snapshots import load as load_record

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every tool call
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from coord.fast import fsfold, holds

WATCH_DIRNAME = "watch"  # in .coord/tripwire/
MAX_WATCHED = 10_000  # held files watched in one call; past it the rest are not
# One call copies held files' contents for at most this long (the first call on a big tree
# copies them all): the rest are watched by their stat this time and copied by the next
# calls, so the guard stays well inside its deadline (coord.hooks.GUARD_DEADLINE_SECONDS).
COPY_SECONDS = 2.0
# Timestamps move in ticks (a few ms on ext4 and xfs, 2 s on FAT): a directory changed this
# recently may change again unseen, so a walk that met one is done again by the next call.
RACY_NS = 3_000_000_000
_GLOB_OR_ESCAPE = re.compile(r"[*?\[\\]")
_SKIPPED_DIRS = frozenset({".git", board_files.BOARD_DIRNAME})


class Seen:
    """What a walk of the held patterns depended on: each directory it listed (path, mtime,
    inode) and each held path it found no regular file or directory at (path, file type)."""

    __slots__ = ("dirs", "probes", "racy_after")

    def __init__(self) -> None:
        self.dirs: list[tuple[str, int, int]] = []
        self.probes: list[tuple[str, int]] = []
        self.racy_after = time.time_ns() - RACY_NS

    def listed(self, path: str, found: os.stat_result) -> None:
        self.dirs.append((path, found.st_mtime_ns, found.st_ino))

    def probed(self, path: str, kind: int) -> None:
        self.probes.append((path, kind))

    def trusted(self) -> bool:
        """Can the walk's answer be kept? Not when a directory it listed is racily new."""
        return all(mtime < self.racy_after for _, mtime, _ in self.dirs)


def covered_files(
    root: str,
    held: Iterable[holds.Held],
    agent: str | None,
    fold: fsfold.Fold,
    seen: Seen | None = None,
) -> dict[str, tuple[holds.Held, os.stat_result]]:
    """Every existing regular file under ``root`` that a live exclusive hold of another agent
    covers, as a repository path, with one hold that covers it and its ``lstat`` (at most
    ``MAX_WATCHED``). What the answer depended on goes into ``seen``."""
    from coord.fast import guard, patterns  # the guard's own: loaded already

    seen = seen or Seen()
    found: dict[str, tuple[holds.Held, os.stat_result]] = {}
    for hold in held:
        if not hold.exclusive or hold.agent == agent:
            continue
        pattern = hold.pattern
        # a held literal, or DIR/**, covers everything beneath it: no match to make. Most
        # holds are plain paths: told apart by one search, not the pattern parser
        plain = pattern[:-3] if pattern.endswith("/**") else pattern
        if not _GLOB_OR_ESCAPE.search(plain) and pattern != patterns.WHOLE_REPOSITORY:
            literal, prefix = True, plain.strip("/")
        else:
            literal = patterns.is_literal(pattern) or (
                pattern.endswith("/**") and patterns.is_literal(pattern[:-3])
            )
            prefix = patterns.literal_prefix(pattern)  # the matches all lie in it
            prefix = "" if prefix == patterns.WHOLE_REPOSITORY else prefix.strip("/")
        start = f"{root}/{prefix}" if prefix else root
        try:
            top = os.lstat(start)
        except OSError:
            seen.probed(start, 0)
            continue
        if stat_module.S_ISREG(top.st_mode):
            if prefix not in found and (
                literal or guard.blockers(prefix, [hold], agent, fold=fold)
            ):
                found[prefix] = (hold, top)
            else:
                seen.probed(start, stat_module.S_IFREG)
            continue
        if not stat_module.S_ISDIR(top.st_mode):
            seen.probed(start, stat_module.S_IFMT(top.st_mode))
            continue
        seen.listed(start, top)
        for name, found_stat in _walk(start, prefix, seen):
            if len(found) >= MAX_WATCHED:
                return found
            if name not in found and (literal or guard.blockers(name, [hold], agent, fold=fold)):
                found[name] = (hold, found_stat)
    return found


def _walk(start: str, prefix: str, seen: Seen) -> Iterable[tuple[str, os.stat_result]]:
    """Repository paths and ``lstat`` of the regular files beneath ``start`` (no symlinks
    followed; ``.git`` and ``.coord`` skipped). Each directory is stat'ed before it is
    listed: a change made meanwhile leaves an older mtime in ``seen``, seen by the next call."""
    stack = [(start, prefix)]
    count = 0
    while stack and count < MAX_WATCHED * 4:
        directory, rel = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            count += 1
            name = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIPPED_DIRS:
                        seen.listed(entry.path, entry.stat(follow_symlinks=False))
                        stack.append((entry.path, name))
                elif entry.is_file(follow_symlinks=False):
                    yield name, entry.stat(follow_symlinks=False)
            except OSError:
                continue


def files_record(
    board_dir: str,
    root: str,
    held: list[Any],
    read_holds: Callable[[], list[holds.Held]],
    agent: str | None,
    fold: fsfold.Fold,
) -> tuple[bytes, int]:
    """The watched files as the call's record keeps them (marshal of ``{path: [holder, size,
    mtime_ns, ctime_ns, inode, mode, sha256 or None]}``), each held file's content copied
    into the store when its stat is new, and how many they are. From the kept answer when
    nothing it rests on moved. ``held``: the live exclusive holds as ``holds.WATCH_COLUMNS``;
    ``read_holds`` reads them whole, for a walk."""
    key = _key_of(root, held, agent, fold)
    kept_path = os.path.join(board_dir, "tripwire", WATCH_DIRNAME, _file_key(key))
    kept = load_record(kept_path)
    if kept is not None and kept.get("key") == key and _still(kept):
        paths, states = kept["paths"], kept["states"]
        lstat = os.lstat
        for path, state in zip(paths, states, strict=True):
            try:
                now = lstat(path)
            except OSError:
                break
            if (
                now.st_size,
                now.st_mtime_ns,
                now.st_ctime_ns,
                now.st_ino,
                now.st_mode,
            ) != state:
                break
        else:
            return kept["record"], len(paths)
        watched = marshal.loads(kept["record"])
        names = kept["names"]
        covered = None
        seen = None
    else:
        live = read_holds()  # the key is the walk's own: holds may change meanwhile
        key = _key_of(root, [(h.id, h.agent, h.pattern, h.rule) for h in live], agent, fold)
        seen = Seen()
        covered = covered_files(root, live, agent, fold, seen)
        watched, names = {}, list(covered)
    watched = _states(board_dir, root, watched, names, covered)
    blob = marshal.dumps(watched)
    _keep(kept_path, key, root, watched, blob, seen, kept)
    return blob, len(watched)


def _still(kept: dict[str, Any]) -> bool:
    """Do the directories and paths the kept answer rests on look as they did?"""
    try:
        if len(kept["paths"]) != len(kept["states"]) or not isinstance(kept["record"], bytes):
            return False
        for path, mtime, inode in kept["dirs"]:
            found = os.lstat(path)
            if found.st_mtime_ns != mtime or found.st_ino != inode:
                return False
        for path, kind in kept["probes"]:
            try:
                found_kind = stat_module.S_IFMT(os.lstat(path).st_mode)
            except FileNotFoundError:
                found_kind = 0
            if found_kind != kind:
                return False
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return True


def _states(
    board_dir: str,
    root: str,
    watched: dict[str, list[Any]],
    names: list[str],
    covered: dict[str, tuple[holds.Held, os.stat_result]] | None,
) -> dict[str, list[Any]]:
    """Each watched file's holder, stat and kept content as of now: read from the store's
    index while the stat matches it, copied into the store (for ``COPY_SECONDS`` at most)
    when it does not. ``covered`` is a fresh walk's; without it the names are re-``lstat``ed
    and their holders kept from ``watched``."""
    if not names:
        return {}
    store = Store(board_dir)
    index = store.index
    copy_until = time.monotonic() + COPY_SECONDS
    out: dict[str, list[Any]] = {}
    for name in names:
        path = f"{root}/{name}"
        if covered is not None:
            hold, found = covered[name]
            holder = hold.agent
        else:
            holder = watched[name][0]
            try:
                found = os.lstat(path)
            except OSError:
                continue  # gone since: a walk of the next call's will not find it either
            if not stat_module.S_ISREG(found.st_mode):
                continue
        state = [found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino]
        state.append(found.st_mode)
        entry = index.get(path)
        # in the steady state the index knows this stat: no read of the file
        if entry is not None and entry[:5] == state:
            content = entry[5]
        elif time.monotonic() < copy_until:
            content = store.content_of(path, tuple(state))  # type: ignore[arg-type]
        else:  # this call copied enough: watched by its stat, copied by a later call
            content = None
        out[name] = [holder, *state, content]
    store.save()
    return out


def _keep(
    kept_path: str,
    key: tuple[Any, ...],
    root: str,
    watched: dict[str, list[Any]],
    blob: bytes,
    seen: Seen | None,
    kept: dict[str, Any] | None,
) -> None:
    """Keep the answer for the next call: from a fresh walk only if it can be trusted; a
    file never copied (``COPY_SECONDS`` ran out) leaves it unkept, so the next call copies."""
    if seen is not None and not seen.trusted():
        return
    if any(entry[6] is None and entry[1] <= MAX_FILE_BYTES for entry in watched.values()):
        return
    dirs = seen.dirs if seen is not None else (kept or {}).get("dirs", [])
    probes = seen.probes if seen is not None else (kept or {}).get("probes", [])
    names = list(watched)
    value = {
        "key": key,
        "dirs": dirs,
        "probes": probes,
        "names": names,
        "paths": [f"{root}/{name}" for name in names],
        "states": [tuple(watched[name][1:6]) for name in names],
        "record": blob,
    }
    folder = os.path.dirname(kept_path)
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, board_files.PRIVATE_DIR, exist_ok=True)
        write_atomic(kept_path, FORMAT + marshal.dumps(value), board_files.PRIVATE_FILE)
    except OSError:
        pass  # not kept: the next call walks again


def _key_of(
    root: str, held: Iterable[Any], agent: str | None, fold: fsfold.Fold
) -> tuple[Any, ...]:
    """What the walk's answer depends on besides the tree: the working tree, the agent it
    is for, the board's fold, and each live exclusive hold of another agent (id, holder,
    pattern, rule)."""
    others = tuple(tuple(row) for row in held if row[1] != agent)
    return (root, agent or "", fold.__name__, MAX_WATCHED, others)


def _file_key(key: tuple[Any, ...]) -> str:
    text = f"{key[0]}\0{key[1]}"
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
