"""Where a path an agent is about to write belongs: which board judges it, under which name.

One answer for every way of editing (an edit tool's file, an ``apply_patch`` patch, a file a
shell command writes, ``coord guard PATH``), so that they cannot disagree:

- The path is read as the operating system will: relative to the directory the write runs
  in, each symlink followed before the ``..`` after it (``deep/../a.py``, with
  ``deep -> src/sub``, is ``src/a.py``).
- A path that resolves into the repository of the board found from where the agent stands
  (``COORD_DIR`` or the nearest ``.coord/``) is judged by that board, under its repository
  path, however it was spelled: through a symlink, ``..``, or another worktree of the same
  repository (``../feature/src/a.py`` is ``src/a.py``).
- A path that resolves into another repository that has a coord board (a ``.coord/`` with
  its ``board.db``) is judged by that board: the file is as much held there as when an
  agent of that repository writes it.
- Any other path (``/tmp/notes.md``, ``~/.cache/x``, a repository without coord) is in no
  board's repository: nobody can hold it, so coord allows it. coord protects the files a
  board can hold; refusing the rest protected nothing and stopped normal work.
- Inside a repository, what coord refuses to name (``.git/...``, the repository root as a
  file) is ``InvalidInput``: the guard refuses it.

Stdlib only, no pathlib, no ``git`` process: the guard and the hooks run before every edit.
"""

from __future__ import annotations

import os

from coord.fast import board_files, patterns, worktree


class Target:
    """A path to be written, placed: ``board_dir`` judges it as the canonical ``name`` (a
    repository path, or for a shell glob a pattern); ``root`` is the working tree it is in.
    ``one_file``: it names one file (an edit tool's), not what a shell word may reach (a
    directory ``rm -rf`` removes, a glob)."""

    __slots__ = ("board_dir", "name", "one_file", "raw", "root")

    def __init__(self, raw: str, board_dir: str, root: str, name: str, one_file: bool) -> None:
        self.raw = raw
        self.board_dir = board_dir
        self.root = root
        self.name = name
        self.one_file = one_file

    def is_file(self, name: str) -> bool:
        """Is the repository path ``name`` a plain file in this target's working tree?"""
        return os.path.isfile(os.path.join(self.root, name))


def place(raw: str, cwd: str, home: str | None, *, shell: bool = False) -> Target | None:
    """Which board judges ``raw`` written from ``cwd``; None when no board's repository holds it.

    ``home`` is the board found from where the agent stands (None: none). ``raw`` names one
    file (an edit tool's path), or with ``shell`` it is a shell command's word: its glob
    characters match as the shell's do, and it may name a directory. ``InvalidInput`` for a
    path coord refuses inside a repository.
    """
    joined = os.path.join(cwd, raw)  # an absolute raw stays as it is
    glob = shell and not patterns.is_literal(joined)
    # No normpath before realpath: the OS follows a symlink before the '..' after it
    # (with deep -> src/sub, deep/../a.py is src/a.py), and realpath walks the same way.
    # Only the glob's own part, which names no one directory yet, is tidied lexically.
    cut = joined.rfind("/", 0, _first_glob(joined)) if glob else len(joined)
    real = os.path.realpath(joined[:cut] or "/")
    board_dir, root = _board_of(real, home)
    if board_dir is None:
        return None
    if shell and not glob and real == root:
        return Target(raw, board_dir, root, patterns.WHOLE_REPOSITORY, False)  # rm -rf . at root
    path = os.path.normpath(os.path.join(real, joined[cut + 1 :])) if glob else real
    # absolute, so never gitignore's root anchor nor a floating glob: a shell's globs match
    # where the command runs
    name = patterns.normalize(path, root, literal=not glob)
    return Target(raw, board_dir, root, name, not shell)


def _board_of(real: str, home: str | None) -> tuple[str | None, str]:
    """(the board whose repository holds the real path ``real``, the working tree it is in)."""
    if home is not None:
        home_root = os.path.realpath(os.path.dirname(home))
        if _within(real, home_root):
            return home, worktree.root_for(real, home_root)
        top = worktree.toplevel(real)
        if top is not None and worktree.main_toplevel(top) == home_root:
            return home, top  # a linked worktree of the home repository, outside its tree
    other = board_files.locate(real, env=False)
    if other is None or (home is not None and os.path.realpath(other) == os.path.realpath(home)):
        return None, ""
    if not board_files.has_board(other):
        return None, ""  # a .coord/ that holds no board (another tool's, a half-done init)
    return other, worktree.root_for(real, os.path.dirname(other))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _first_glob(path: str) -> int:
    return min((i for i, c in enumerate(path) if c in "*?["), default=len(path))
