"""``.worktreeinclude``: the ignored files a new worktree needs, copied from the checkout.

A fresh worktree has every tracked file and none of the ignored ones: no ``.env``, no
``config/local.json``, so the project does not even start there. ``.worktreeinclude`` at the
repository root lists gitignore-style patterns (``#`` comments, ``!`` negations, a trailing
``/`` for a directory), the convention Claude Code's worktrees, Codex, Conductor and
ccmanager share: a file is copied only when it matches a pattern AND git ignores it, so a
tracked file is never duplicated, whatever the patterns say.

Copied as they are in the checkout (content, mode, times), to the same path in the worktree.
Never copied: anything under ``.git`` or ``.coord`` (the board, its snapshots and tokens), the
worktrees' own root, a file the worktree already has (a tracked one, or one a re-claimed
worktree kept), a symlink that leads out of the repository or is absolute (it would point at
the checkout's file, shared), anything that is not a regular file or a symlink, a file the
worktree's own ``.gitignore`` would not ignore (it would be committed there); and nothing is
ever written through a symlink of the worktree out of it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coord.fast.board_files import BOARD_DIRNAME
from coord.fast.git import Git

FILE = ".worktreeinclude"
NEVER = (".git", BOARD_DIRNAME)


@dataclass(slots=True)
class Copied:
    copied: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why


def matched(repo: Path, leave_out: Sequence[Path] = ()) -> list[str]:
    """Repository-relative paths (``/``) of the files ``.worktreeinclude`` names that git
    ignores in ``repo``, without those under ``.git``, ``.coord`` or ``leave_out``."""
    patterns = repo / FILE
    if not patterns.is_file():
        return []
    git = Git(repo)
    # untracked files matching the patterns alone (nested repositories, such as the linked
    # worktrees themselves, come as "dir/" and are not entered) ...
    listed = git.run("ls-files", "-z", "--others", "--ignored", f"--exclude-from={patterns}")
    names = [n for n in _split(listed.stdout) if n and not n.endswith(b"/")]
    if not names:
        return []
    # ... of which only those that the repository's own rules ignore
    ignored = git.run("check-ignore", "-z", "--stdin", input=b"\0".join(names) + b"\0", check=False)
    kept = set(_split(ignored.stdout))
    skip = [p.relative_to(repo).as_posix() for p in leave_out if p.is_relative_to(repo)]
    return sorted(
        n
        for n in (name.decode("utf-8", "surrogateescape") for name in names if name in kept)
        if n.split("/", 1)[0] not in NEVER and not any(n.startswith(s + "/") for s in skip)
    )


def copy(repo: Path, worktree: Path, leave_out: Sequence[Path] = ()) -> Copied:
    """Copy the files ``matched`` names from ``repo`` into ``worktree``; both real paths."""
    done = Copied()
    names = matched(repo, leave_out)
    if not names:
        return done
    # the worktree's own rules (its branch's .gitignore) must ignore a copy too, or the next
    # `git add -A` there commits the secret
    there = Git(worktree).run(
        "check-ignore", "-z", "--stdin", input="\0".join(names).encode() + b"\0", check=False
    )
    ignored_there = {n.decode("utf-8", "surrogateescape") for n in _split(there.stdout)}
    for name in names:
        if name not in ignored_there:
            done.skipped[name] = "not ignored in the worktree (its .gitignore differs)"
            continue
        why = _copy_one(repo, worktree, name)
        if why:
            done.skipped[name] = why
        else:
            done.copied.append(name)
    return done


def _copy_one(repo: Path, worktree: Path, name: str) -> str:
    """'' when copied, else why not."""
    source = repo / name
    target = worktree / name
    try:
        st = os.lstat(source)
    except OSError:
        return "gone from the checkout"
    if os.path.realpath(source.parent) != str(source.parent):
        return "under a symlink"  # git does not enter one: it was made meanwhile
    if stat.S_ISLNK(st.st_mode):
        link = os.readlink(source)
        if os.path.isabs(link):
            return "an absolute symlink: it would point at the checkout's file"
        pointed = os.path.realpath(source)
        if not _inside(pointed, str(repo)):
            return "a symlink out of the repository"
        if any(_inside(pointed, str(repo / n)) for n in NEVER):
            return f"a symlink into {' or '.join(NEVER)}"
    elif not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if os.path.lexists(target):
        return "already in the worktree"
    if not _inside(os.path.realpath(_nearest_existing(target.parent)), str(worktree)):
        return "its directory in the worktree leads out of it (a symlink)"
    target.parent.mkdir(parents=True, exist_ok=True)
    if os.path.realpath(target.parent) != str(target.parent):
        return "its directory in the worktree leads out of it (a symlink)"
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
    else:
        shutil.copy2(source, target, follow_symlinks=False)
    return ""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def _split(out: bytes) -> list[bytes]:
    return [n for n in out.split(b"\0") if n]
