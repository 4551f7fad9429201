"""The repository's lock for changing its worktrees.

`git worktree add` reads every other worktree's record and fails on one another process is
writing at that moment ("failed to read .git/worktrees/X/commondir"), seen with four agents
starting claims at once. So coord's own changes to the worktree list (an agent's worktree
made or removed, the landing worktree made) take turns: an advisory lock (``flock``) on a
file in the git directory, released by the kernel if the process dies.

A fetch meets the same moment from the other side: its connectivity check reads every
worktree's HEAD, and `git worktree add` first writes a placeholder HEAD (the null object id)
that it replaces a moment later, so a fetch in that moment fails with "bad object
worktrees/X/HEAD" (seen in CI: four agents starting claims while the runner fetched); one
being removed (a merged item's, tidied in the background) is the same moment backwards. Such
a fetch is run again under the lock, where no worktree is half made or half removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from coord.errors import GitError
from coord.fast.git import Git, stderr

LOCK_FILENAME = "coord-worktrees.lock"


def common_dir(repo: Path) -> Path:
    """The repository's git directory shared by all its worktrees, absolute."""
    return Path(Git(repo).out("rev-parse", "--path-format=absolute", "--git-common-dir"))


@contextlib.contextmanager
def changing_worktrees(repo: Path, common: Path | None = None) -> Iterator[None]:
    """``common``: the repository's ``common_dir``, when the caller knows it already."""
    common = common or common_dir(repo)
    fd = os.open(os.path.join(common, LOCK_FILENAME), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def worktree_list(repo: Path, *flags: str) -> bytes:
    """``git worktree list --porcelain flags…``; once more under the lock if it met a
    worktree half made or half removed (a merged item's, tidied on a thread of its own while
    the runner lands the next: "failed to read .git/worktrees/X/commondir")."""
    git = Git(repo)
    args = ("worktree", "list", "--porcelain", *flags)
    done = git.run(*args, check=False)
    if done.returncode != 0 and _met_a_worktree_being_made(stderr(done)):
        with changing_worktrees(repo):
            done = git.run(*args, check=False)
    if done.returncode != 0:
        raise GitError(
            f"`git {' '.join(args)}` failed: {stderr(done) or 'no message'}",
            command=["git", *args],
            exit_status=done.returncode,
        )
    return done.stdout


def fetch(repo: Path, remote: str, *refspecs: str, timeout: float) -> None:
    """``git fetch -q remote refspecs…``, once more under the lock if it met a worktree being
    made; any other failure is a ``GitError``."""
    git = Git(repo)
    args = ("fetch", "-q", remote, *refspecs)
    done = git.run(*args, check=False, timeout=timeout)
    if done.returncode != 0 and _met_a_worktree_being_made(stderr(done)):
        with changing_worktrees(repo):
            done = git.run(*args, check=False, timeout=timeout)
    if done.returncode != 0:
        raise GitError(
            f"`git {' '.join(args)}` failed: {stderr(done) or 'no message'}",
            command=["git", *args],
            exit_status=done.returncode,
        )


def _met_a_worktree_being_made(said: str) -> bool:
    # made ("bad object worktrees/X/HEAD") or removed meanwhile (a merged item's, tidied
    # while the runner fetches): either way read again under the lock, where none is half done
    return "worktrees/" in said
