"""A worktree's uncommitted work kept in a ref, without touching the worktree or its index.

``take`` writes ``refs/coord/snapshots/<name>``: a commit whose tree is the working tree
(tracked and untracked-not-ignored files) and whose parents are HEAD and a commit of the
staged tree, as ``git stash`` keeps them. Both trees are written through a copy of the
worktree's index (``GIT_INDEX_FILE``), so the user's index is never written. ``restore`` puts
staged, unstaged and untracked changes back exactly, in a worktree at the same HEAD.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from coord.errors import Conflict, GitError
from coord.fast.git import Git

PREFIX = "refs/coord/snapshots/"


def take(worktree: Path, name: str, *, new: bool = False) -> str:
    """The snapshot's commit; with ``new``, refused (``GitError``) when the ref already
    exists, by git's compare-and-set, so that a concurrent snapshot is never overwritten."""
    git = Git(worktree)
    head = git.out("rev-parse", "HEAD")
    index = worktree / git.out("rev-parse", "--git-path", "index")
    with tempfile.TemporaryDirectory(prefix="coord-snapshot-") as tmp:
        copy = Path(tmp) / "index"
        if index.exists():
            shutil.copyfile(index, copy)
        private = git.with_env(GIT_INDEX_FILE=str(copy))
        if not index.exists():
            private.run("read-tree", head)
        staged_tree = private.out("write-tree")
        private.run("add", "-A", "--", ".")
        work_tree = private.out("write-tree")
    staged = git.out("commit-tree", staged_tree, "-p", head, "-m", f"coord snapshot {name}: index")
    commit = git.out(
        "commit-tree", work_tree, "-p", head, "-p", staged, "-m", f"coord snapshot {name}"
    )
    git.run("update-ref", PREFIX + name, commit, *([""] if new else []))
    return commit


def restore(worktree: Path, ref: str) -> None:
    """Working tree and index as they were snapshotted; the worktree must be at its HEAD."""
    git = Git(worktree)
    git.run("read-tree", "-u", "--reset", f"{ref}^{{tree}}")
    git.run("read-tree", f"{ref}^2^{{tree}}")


def keep(worktree: Path, base: str) -> str:
    """Snapshot ``worktree`` under ``base-<time>`` (``-2``, ``-3``… when taken): an earlier
    snapshot, or one another process takes at the same moment, is never overwritten. The
    name (under ``PREFIX``)."""
    git = Git(worktree)
    stamped = f"{base}-{int(time.time())}"
    for n in range(1, 100):
        name = stamped if n == 1 else f"{stamped}-{n}"
        if git.ok("rev-parse", "-q", "--verify", PREFIX + name):
            continue
        try:
            take(worktree, name, new=True)
        except GitError:
            if git.ok("rev-parse", "-q", "--verify", PREFIX + name):
                continue  # taken meanwhile by someone else
            raise
        return name
    raise Conflict(f"no free snapshot name for {stamped}: too many at once", worktree=str(worktree))
