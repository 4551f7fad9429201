"""Linked git worktrees share their repository's board, and name files the same way.

Agents often work in separate worktrees (``git worktree add ../feature``, or one nested under
the repository like ``.claude/worktrees/x``). The board lives at the main working tree's
root; a path typed in a linked worktree means the same repository path as in the main one
(``src/a.py`` is ``src/a.py`` in every worktree). Without this, a worktree outside the main
tree found no board, and a worktree nested inside it named its files
``.claude/worktrees/x/src/a.py``, which no reservation covers: both let edits through.

Only file reads (``.git`` files and ``commondir``), no ``git`` process and no pathlib: the
guard and the hooks use this before every edit.
"""

from __future__ import annotations

import os


def toplevel(start: str) -> str | None:
    """The root of the working tree holding ``start``: the nearest directory with a ``.git``
    (a directory in the main working tree, a file in a linked one)."""
    here = os.path.realpath(start)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def main_toplevel(top: str) -> str:
    """The main working tree's root for a linked worktree's root ``top``; ``top`` itself
    otherwise (or when the ``.git`` file cannot be read)."""
    dot_git = os.path.join(top, ".git")
    if not os.path.isfile(dot_git):
        return top
    try:
        with open(dot_git, encoding="utf-8") as f:
            line = f.readline().strip()
        if not line.startswith("gitdir:"):
            return top
        gitdir = os.path.join(top, line[len("gitdir:") :].strip())  # absolute stays absolute
        try:
            with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as f:
                common = os.path.join(gitdir, f.readline().strip())
        except OSError:
            return top  # a submodule's .git file: no commondir, its own repository
    except OSError:
        return top
    common = os.path.realpath(common)
    return os.path.dirname(common) if os.path.basename(common) == ".git" else top


def board_root_for(start: str) -> str | None:
    """The main working tree's root when ``start`` is inside a linked worktree, else None."""
    top = toplevel(start)
    if top is None:
        return None
    main = main_toplevel(top)
    return main if main != top else None


def root_for(cwd: str, board_root: str) -> str:
    """Where paths typed in ``cwd`` are relative to: the linked worktree of the board's
    repository that holds ``cwd``, else the board's own root."""
    top = toplevel(cwd)
    board_root = os.path.realpath(board_root)
    if top is None or top == board_root:
        return board_root
    return top if main_toplevel(top) == board_root else board_root


# A coord worktree is locked (``git worktree add --lock --reason``) so that ``git worktree
# prune`` never drops it, and the reason says whose it is: one line of ``key=value`` words after
# the prefix, e.g. ``coord item=3 token=7 branch=coord/3-t7 pid=4242 host=box started=123456``
# (a branch name holds no space). ``branch`` because HEAD may be detached (a rebase stopped
# half-way) when the worktree is judged; ``host`` because a pid means something only on the
# machine that made it; ``started`` (the process's start time in clock ticks since boot, from
# /proc, where there is one) because pids are reused.
REASON_PREFIX = "coord"


def lock_reason(
    item: int, token: int, branch: str, pid: int, host: str, started: int | None
) -> str:
    words = [REASON_PREFIX, f"item={item}", f"token={token}", f"branch={branch}"]
    words += [f"pid={pid}", f"host={host}"]
    if started is not None:
        words.append(f"started={started}")
    return " ".join(words)


def parse_reason(reason: str) -> dict[str, str] | None:
    """The words of a coord lock reason; None for any other reason (a person's, another
    tool's), or one without an item, a token and a pid."""
    words = reason.strip().split()
    if not words or words[0] != REASON_PREFIX:
        return None
    fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    needed = ("item", "token", "pid")
    if not all(fields.get(k, "").isdigit() for k in needed):
        return None
    return fields


def process_started(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux /proc); None elsewhere
    or when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: count after its end
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of stat(5)
    except (IndexError, ValueError):
        return None


def lock_of(top: str) -> str | None:
    """The lock reason of the linked worktree whose root is ``top`` (its ``locked`` file in
    the repository's ``worktrees/<name>/``); None when it is not locked or not a worktree."""
    dot_git = os.path.join(top, ".git")
    try:
        with open(dot_git, encoding="utf-8") as f:
            line = f.readline().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = os.path.join(top, line[len("gitdir:") :].strip())
    try:
        with open(os.path.join(gitdir, "locked"), encoding="utf-8") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


def claim_of(path: str, board_root: str) -> tuple[str, dict[str, str]] | None:
    """Which coord worktree of the board's repository holds ``path`` (a file or directory,
    existing or about to be made), however spelled (symlinks and ``..`` resolved the way the
    file system does): its root and the words of its lock reason (``item``, ``token``, …).
    None when ``path`` is in the main working tree, in a worktree coord did not make, or in
    another repository."""
    top = toplevel(path)
    if top is None or top == os.path.realpath(board_root):
        return None
    if main_toplevel(top) != os.path.realpath(board_root):
        return None
    fields = parse_reason(lock_of(top) or "")
    return (top, fields) if fields is not None else None
