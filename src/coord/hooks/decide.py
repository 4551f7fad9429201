"""The hooks' shared decision: may this agent make this edit, or run this shell command?

Every client's hook comes here with the same question once its JSON is read: file edits go
through the edit guard (``coord.fast.guard.check``: the same rule, the same read-only look at the
board, the same refusals as ``coord guard``); shell commands go through
``coord.hooks.shell``, which finds the files a command would write, and then through the
same board read. A refusal is the reason to show the agent; ``None`` allows.

Stdlib only and no daemon: it runs before every edit.
"""

from __future__ import annotations

import os
import sqlite3
import time

from coord.errors import InvalidInput
from coord.fast import guard, patterns
from coord.times import clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path
    from pathlib import Path as BoardDir
else:

    class BoardDir(str):
        """A board directory as the guard uses one (``.parent``, ``/ name``), kept a str:
        pathlib costs ~4 ms to import (it brings urllib.parse and ipaddress), a tenth of the
        hook's whole budget. Type checkers see a Path."""

        __slots__ = ()

        @property
        def parent(self) -> str:
            return os.path.dirname(self)

        def __truediv__(self, name: str) -> str:
            return os.path.join(self, name)


def find_board_dir(cwd: str) -> BoardDir | None:
    """``coord.fast.board_files.find_board_dir`` without pathlib: ``COORD_DIR``, else the nearest
    ``.coord/`` from ``cwd`` up, like git."""
    env = os.environ.get("COORD_DIR")
    if env:
        return BoardDir(os.path.realpath(os.path.expanduser(env)))
    here = os.path.realpath(cwd)
    while True:
        candidate = os.path.join(here, ".coord")
        if os.path.isdir(candidate):
            return BoardDir(candidate)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    from coord.fast import worktree  # a linked worktree outside the main one shares its board

    main = worktree.board_root_for(cwd)
    if main is not None and os.path.isdir(os.path.join(main, ".coord")):
        return BoardDir(os.path.join(main, ".coord"))
    return None


def edit_refusal(board_dir: Path, given: Sequence[str], agent: str | None, cwd: str) -> str | None:
    """Why ``agent`` may not edit these paths (one line per problem), or None."""
    code, lines, _ = guard.check(board_dir, given, agent, cwd=cwd, fail_open=False)
    if code == 0:
        return None
    return "\n".join(lines) or "coord guard: refusing the edit"


def shell_refusal(board_dir: Path, command: str, agent: str | None, cwd: str) -> str | None:
    """Why ``agent`` may not run ``command``: it skips the pre-commit guard, or it writes a
    file another agent holds. None allows (commands that write nothing never read the board)."""
    from coord.hooks import shell

    found = shell.analyse(command, cwd)
    if found.bypass:
        return (
            f"coord: `{found.bypass[0]}` would skip coord's pre-commit guard (`coord guard "
            "--staged`), which refuses commits of files another agent holds; commit without it"
        )
    from coord.fast import worktree

    root = worktree.root_for(cwd, str(board_dir.parent))
    wanted: dict[str, str] = {}  # canonical pattern -> the target as the command wrote it
    for raw, where in found.targets:
        try:
            canonical = shell_target(raw, where, root)
        except InvalidInput as err:
            return f"coord: this command writes {raw}: {err.message}; refusing it"
        if canonical is not None:
            wanted.setdefault(canonical, raw)
    if not wanted:
        return None
    try:
        live = read_near(board_dir / "board.db", wanted)
    except guard.BoardUnreadable as err:
        return f"coord: cannot check the board ({err}); refusing the command"

    def is_file(path: str) -> bool:
        return os.path.isfile(os.path.join(root, path))

    lines: list[str] = []
    for canonical, raw in wanted.items():
        for r in live:
            if r.agent != agent and patterns.overlaps(canonical, r.pattern, is_file=is_file):
                line = _shell_line(raw, r)
                if line not in lines:
                    lines.append(line)
    return "\n".join(lines) or None


def shell_target(raw: str, cwd: str, root: str) -> str | None:
    """The canonical pattern of a path a shell command writes; None when it is not the
    board's business (outside the repository, a device) or cannot be known (``$VAR``).
    ``InvalidInput`` for a path inside the repository coord refuses (``.git/...``)."""
    if not raw or "$" in raw or "`" in raw:
        return None
    if raw.startswith("~"):
        raw = os.path.expanduser(raw)
    path = raw if raw.startswith("/") else os.path.join(cwd, raw)
    literal = patterns.is_literal(path)
    known = path if literal else os.path.dirname(path[: _first_glob(path)])
    real = os.path.realpath(known)
    if real != root and not real.startswith(root + "/"):
        return None
    if literal and real == root:
        return patterns.WHOLE_REPOSITORY  # rm -rf . at the root
    # shell globs are relative to where the command runs: an absolute pattern never floats
    return patterns.normalize(path, root, literal=literal)


def _first_glob(path: str) -> int:
    return min((i for i, c in enumerate(path) if c in "*?["), default=len(path))


def read_near(db_path: Path, wanted: Iterable[str], now: float | None = None) -> list[guard.Row]:
    """Live exclusive reservations that might overlap these canonical patterns: their literal
    prefix is an ancestor of, equal to, or beneath one of the patterns' (read-only)."""
    if not os.path.exists(db_path):
        raise guard.BoardUnreadable(f"no board at {db_path}")
    ancestors = {""}
    ranges: list[str] = []
    everything = False
    for pattern in wanted:
        prefix = patterns.literal_prefix(pattern)
        if not prefix:
            everything = True
            continue
        parts = prefix.split("/")
        ancestors.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        ranges += [prefix + "/", prefix + "0"]  # '0' is the character after '/'
    where = ""
    params: list[object] = [time.time() if now is None else now]
    if not everything:  # a pattern starting with a glob may meet anything: read them all
        marks = ",".join("?" * len(ancestors))
        beneath = " OR (prefix >= ? AND prefix < ?)" * (len(ranges) // 2)
        where = f" AND (prefix IN ({marks}){beneath})"
        params += [*sorted(ancestors), *ranges]
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=2)
        try:
            rows = conn.execute(
                "SELECT agent, pattern, exclusive, item_id, expires_at FROM reservations "
                f"WHERE expires_at > ? AND exclusive = 1{where}",
                params,
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise guard.BoardUnreadable(f"cannot read {db_path}: {err}") from None
    return [guard.Row(*row) for row in rows]


def _shell_line(raw: str, r: guard.Row) -> str:
    until = clock(r.expires_at)
    item = f" for item {r.item_id}" if r.item_id is not None else ""
    return (
        f"coord: this command writes {raw}, and {r.agent} holds {r.pattern}{item} until {until}; "
        f"do not change it: pick other work or ask {r.agent}"
    )
