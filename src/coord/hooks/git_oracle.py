"""Asking git which files of the working tree a command would change: the guard's oracles.

Each runs git as the command itself would (its ``-C``, ``--git-dir``, ``--work-tree`` and the
settings that are safe to repeat: ``coord.hooks.git_options``), read-only
(``GIT_OPTIONAL_LOCKS=0``: not even the index is refreshed), with no prompt and a timeout.
Paths come back NUL-separated (``-z``), so any file name reads as it is. When git fails,
``Unsure``: the guard then cannot tell. Stdlib only.
"""

from __future__ import annotations

import os
import re

from coord.fast import worktree
from coord.hooks.git_options import Call, Unsure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Found = list[tuple[str, bool]]  # (absolute path, names a directory)

ORACLE_TIMEOUT = 10.0  # seconds for one git run of the guard's; past it, cannot tell
ASK = "or ask"  # every refusal ends "..., or ask HOLDER"
# what bash's brace expansion expands: a list or a range (stash@{1} it leaves alone)
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


class Reach:
    """What a command could change: ``find()`` lists it (absolute paths, and whether each
    names a directory whose whole content goes), ``verb`` says it in a refusal ("would put
    away"), ``instead`` what to do instead."""

    __slots__ = ("find", "instead", "stashes", "verb")

    def __init__(
        self, verb: str, instead: str, find: Callable[[], Found], *, stashes: bool = False
    ) -> None:
        self.verb = verb
        self.instead = instead
        self.find = find
        self.stashes = stashes  # a `git stash push`: what it finds is the stash it makes


def git(call: Call, *args: str, where: str | None = None) -> bytes:
    """``git ARGS`` as the command would run it (its -C, --git-dir, safe settings); its
    output, or ``Unsure`` when git fails."""
    from pathlib import Path

    from coord.errors import GitError
    from coord.fast.git import Git, stderr

    command = [*call.oracle, "-c", "core.fsmonitor=false", *args]
    try:
        done = Git(Path(where or call.where)).run(*command, check=False, timeout=ORACLE_TIMEOUT)
    except GitError as err:
        raise Unsure(err.message) from None
    except (OSError, ValueError) as err:  # a directory that is none (a NUL in it)
        raise Unsure(f"git could not be run there ({err})") from None
    if done.returncode != 0:
        said = stderr(done) or f"exit {done.returncode}"
        raise Unsure(f"`git {' '.join(args[:2])}` could not say: {said}")
    return done.stdout


def top(call: Call) -> str:
    """The working tree the command works in: what ``--work-tree`` says, the current
    directory under a bare ``--git-dir`` (git's rule), else the one around its directory."""
    if call.work_tree is not None:
        return call.work_tree
    if call.git_dir is not None:
        return call.cwd
    return worktree.toplevel(call.cwd) or call.cwd


def names(out: bytes, root: str) -> Found:
    """Paths git printed NUL-separated, relative to ``root``; a directory (``dir/``, or a
    submodule's, which a checkout may recurse into) is judged with all beneath it."""
    found = []
    for name in out.split(b"\0"):
        if name:
            path = os.path.join(root, os.fsdecode(name))
            found.append((path, name.endswith(b"/") or os.path.isdir(path)))
    return found


def diff(call: Call, *revs: str, cached: bool = False, paths: list[str] | None = None) -> Found:
    """The files ``git diff`` names between these revisions (one: it and the working tree;
    none: the index and the working tree), within ``paths``."""
    args = ["diff", "--name-only", "-z", "--no-renames", "--no-relative", "--no-ext-diff"]
    out = git(
        call, *args, *(["--cached"] if cached else []), *revisions(revs), "--", *(paths or [])
    )
    return names(out, top(call))


def revisions(given: tuple[str, ...] | list[str]) -> list[str]:
    """Revisions to hand git after its options: one that starts with ``-`` would be read as
    an option (``--source=--output=FILE`` would make the guard's own diff write FILE)."""
    for rev in given:
        if rev.startswith("-"):
            raise Unsure(f"`{rev}` is no revision coord will pass to git")
    return list(given)


def status(
    call: Call, paths: list[str], *, staged: bool = False, untracked: bool, ignored: bool
) -> Found:
    """What ``git status`` lists: changed tracked files (staged ones only, with ``staged``),
    and the untracked and ignored files and directories when asked."""
    args = ["status", "--porcelain=v1", "-z", "--no-renames"]
    args.append("--untracked-files=normal" if untracked or ignored else "--untracked-files=no")
    if ignored:
        args.append("--ignored")
    found = []
    root = top(call)
    for entry in git(call, *args, "--", *paths).split(b"\0"):
        if len(entry) < 4:
            continue
        state, name = entry[:2], os.fsdecode(entry[3:])
        if state == b"??":
            keep = untracked
        elif state == b"!!":
            keep = ignored
        else:
            keep = not staged or state[:1] not in b" ?!"
        if keep:
            found.append((os.path.join(root, name), name.endswith("/")))
    return found


def tracked(call: Call, paths: list[str]) -> Found:
    return names(git(call, "ls-files", "-z", "--full-name", "--", *paths), top(call))


def revision(call: Call, name: str) -> str | None:
    """The commit ``name`` names, as ``checkout`` and ``switch`` find it: a revision, else the
    one remote-tracking branch of that name (``--guess``); None when there is neither."""
    return rev_or_none(call, name) or remote_branch(call, name)


def rev_or_none(call: Call, name: str) -> str | None:
    try:
        out = git(
            call, "rev-parse", "-q", "--verify", "--end-of-options", previous(name) + "^{commit}"
        )
    except Unsure:
        return None
    return out.decode().strip()


def remote_branch(call: Call, name: str) -> str | None:
    if name.startswith("-") or set(name) & set("*?["):
        return None
    out = git(call, "for-each-ref", "--format=%(objectname)", f"refs/remotes/*/{name}")
    found = out.decode().split()
    if len(found) > 1:
        raise Unsure(f"`{name}` is a branch of several remotes")
    return found[0] if found else None


def previous(name: str) -> str:
    return "@{-1}" if name == "-" else name


def here(raw: str, call: Call, is_dir: bool | None = None) -> Found:
    """A path as the command's operand names it from its directory, each one a glob expands
    to as the shell does before git sees it (``git mv src/*.py lib/``), or itself."""
    path = os.path.join(call.cwd, os.path.expanduser(raw))
    paths = [path]
    if set(raw) & set("*?["):
        import glob

        paths = sorted(glob.glob(path)) or paths  # no match: bash passes the word as it is
    return [(p, os.path.isdir(p) if is_dir is None else is_dir) for p in paths]


def union(*finds: Callable[[], Found]) -> Callable[[], Found]:
    return lambda: [entry for find in finds for entry in find()]


def unread(words: list[str]) -> None:
    """``Unsure`` for a word the shell fills in (``$f``, `` `cmd` ``) or expands
    (``{a,b}``, ``{1..3}``; not ``stash@{1}``, which it leaves as it is)."""
    for word in words:
        if "$" in word or "`" in word or _BRACES.search(word):
            raise Unsure(f"the shell fills in `{word}` when it runs")
