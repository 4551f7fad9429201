"""The repository's lock for changing its worktrees.

`git worktree add` reads every other worktree's record and fails on one another process is
writing at that moment ("failed to read .git/worktrees/X/commondir"), seen with four agents
starting claims at once. So coord's own changes to the worktree list (an agent's worktree
made or removed, the landing worktree made) take turns: an advisory lock (``flock``) on a
file in the git directory, released by the kernel if the process dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from coord.fast.git import Git

LOCK_FILENAME = "coord-worktrees.lock"


@contextlib.contextmanager
def changing_worktrees(repo: Path) -> Iterator[None]:
    common = Git(repo).out("rev-parse", "--path-format=absolute", "--git-common-dir")
    fd = os.open(os.path.join(common, LOCK_FILENAME), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
