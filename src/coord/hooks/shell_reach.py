"""What a shell word written as a target could reach, placed on the board that judges it.

``coord.hooks.shell`` hands the guard words as the command wrote them; this turns each into
the ``coord.fast.targets.Target``s to judge:

- a plain path: itself (a directory: all beneath it, as ``rm -rf`` reaches);
- a glob, by what it could match: each path it matches in the tree now, expanded as bash
  would from the command's directory (a leading dot only when the glob has one), and the
  glob itself as a pattern against the held patterns (``coord.fast.guard.blockers``), for
  the files it would create or match later;
- a word the shell fills in when it runs (``$OUT``, ``src/$(name)``): everything beneath the
  directory written before the ``$``, or the whole working tree when no directory is written
  or the directory holds the tree (``/$X``);
- ``WHOLE_TREE`` (a script, a runner), and any path after a ``cd`` the guard cannot follow:
  the whole working tree of the directory the command runs in.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import os

from coord.errors import InvalidInput
from coord.fast import patterns, targets
from coord.hooks.shell_programs import UNKNOWN_DIR, WHOLE_TREE

# paths of the tree one glob is expanded to: past this its pattern alone judges the rest
MAX_MATCHES = 2_000


class Directories:
    """The directories placed so far in one judgement: a command's many files in one
    directory cost one resolution of it and one ``lstat`` each (``cp`` ×1,000 into one
    directory resolved its every component 9,000 times)."""

    def __init__(self, home: str | None) -> None:
        self.home = home
        self.placed: dict[str, targets.Target | None] = {}

    def child(self, raw: str, where: str) -> targets.Target | None:
        """``raw`` placed from its directory's placement; None when it must be placed on
        its own (a link, a name the rules read specially, a directory in no repository)."""
        joined = os.path.join(where, raw)
        head, name = os.path.split(joined)
        if (
            not name
            or name in (".", "..")
            or name != name.strip()
            or name.casefold() == ".git"
            or len(joined) > 512
            or os.path.islink(joined)
        ):
            return None
        if head not in self.placed:
            self.placed[head] = targets.place(head, "/", self.home, shell=True)
        parent = self.placed[head]
        if parent is None or parent.name.casefold().split("/")[0] == ".git":
            return None  # a repository could still begin at the name itself
        inside = name if parent.name == patterns.WHOLE_REPOSITORY else f"{parent.name}/{name}"
        return targets.Target(raw, parent.board_dir, parent.root, inside, False)


def placed(
    raw: str,
    where: str,
    cwd: str,
    home: str | None,
    why: str | None,
    *,
    follow: bool = True,
    directories: Directories | None = None,
) -> list[tuple[targets.Target, str | None]]:
    """The targets ``raw``, written in a command run in ``where`` (the agent is in ``cwd``),
    could reach, each with why the guard cannot read it (None: it is a write the guard read).
    ``InvalidInput`` for a path coord refuses inside a repository (``.git/...``)."""
    if where == UNKNOWN_DIR:
        if not raw.startswith("/"):
            return _whole(cwd, home, why or "it runs after a `cd` the guard cannot follow")
        where = "/"
    if raw == WHOLE_TREE:
        return _whole(where, home, why)
    if not raw:
        return []
    if "$" in raw or "`" in raw:
        why = why or f"`{raw}` is filled in by the shell when it runs"
        cut = min(i for i in (raw.find("$"), raw.find("`")) if i >= 0)
        directory = os.path.expanduser(raw[:cut]).rpartition("/")[0]
        if not raw[:cut].count("/"):
            return _whole(where, home, why)
        absolute = os.path.normpath(os.path.join(where, directory or "/"))
        if home is not None and _holds(absolute, os.path.dirname(home)):
            return _whole(where, home, why)
        target = _place(absolute.rstrip("/") + "/**", where, home, why)
        return [] if target is None else [(target, why)]  # a pattern: links are not followed
    raw = os.path.expanduser(raw)
    found: list[tuple[targets.Target, str | None]] = []
    if not patterns.is_literal(raw):
        for match in _matches(raw, where):
            target = _place(match, where, home, why, follow)
            if target is not None:
                found.append((target, why))
    elif directories is not None and "$" not in where:
        try:
            child = directories.child(raw, where)
        except InvalidInput:
            child = None  # placed on its own below, which says why
        if child is not None:
            return [(child, why)]
    target = _place(raw, where, home, why, follow)
    if target is not None:
        found.append((target, why))
    return found


def _place(
    raw: str, where: str, home: str | None, why: str | None, follow: bool = True
) -> targets.Target | None:
    """``raw`` placed; with ``follow`` False a symbolic link is placed as itself (its
    directory followed, its own name kept): a rename over it replaces the link."""
    try:
        if not follow and os.path.islink(os.path.join(where, raw)):
            head, name = os.path.split(raw.rstrip("/"))
            parent = targets.place(head or ".", where, home, shell=True)
            if parent is None:
                return None
            whole = parent.name == patterns.WHOLE_REPOSITORY
            inside = name if whole else f"{parent.name}/{name}"
            return targets.Target(raw, parent.board_dir, parent.root, inside, False)
        return targets.place(raw, where, home, shell=True)
    except InvalidInput:
        if why is not None:
            return None  # a program's operand the guard cannot read: no path coord guards
        raise


def _whole(
    where: str, home: str | None, why: str | None
) -> list[tuple[targets.Target, str | None]]:
    """The whole working tree the directory ``where`` is in."""
    try:
        target = targets.place(".", where, home, shell=True)
    except InvalidInput:
        return []
    if target is None:
        return []
    whole = targets.Target(
        WHOLE_TREE, target.board_dir, target.root, patterns.WHOLE_REPOSITORY, False
    )
    return [(whole, why or "it runs code the guard does not read")]


def _holds(directory: str, root: str) -> bool:
    """Is ``root`` (a working tree) ``directory`` or beneath it?"""
    directory, root = os.path.realpath(directory), os.path.realpath(root)
    return root == directory or root.startswith(directory.rstrip("/") + "/")


def _matches(pattern: str, where: str) -> list[str]:
    """The paths bash expands ``pattern`` to from ``where``."""
    import glob

    out: list[str] = []
    try:
        for match in glob.iglob(pattern, root_dir=where if os.path.isdir(where) else None):
            out.append(match)
            if len(out) >= MAX_MATCHES:
                break
    except (OSError, ValueError, RecursionError):
        return out
    return out
