"""Removing a coord worktree and its branch, and only when nothing would be lost (invariant 18).

``remove`` refuses unless the worktree is clean (no staged, modified or untracked-not-ignored
file) and every commit it would drop is kept: its HEAD and its branch's head are each on
main (by ancestry, patch-id or tree: ``steps.merged_outside``, what "merged" means) or in a
snapshot ref (``refs/coord/snapshots/``). With ``force_snapshot`` it first keeps what is not
kept: the worktree's uncommitted work and HEAD in a snapshot (``snapshot.take``), a branch
head that HEAD does not contain (a rebase stopped half-way) in a snapshot ref of its own;
then removes. The branch is deleted by compare-and-set from the head that was judged, so a
commit made meanwhile stops the deletion; ``git worktree remove`` without ``--force`` refuses
a worktree that got dirty meanwhile.

Ignored files (a copied ``.env``, build output) go with the worktree, as with ``git worktree
remove``: they are no change git keeps, and a snapshot does not hold them either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coord.errors import Conflict, NotFound
from coord.fast.git import Git
from coord.landing import snapshot
from coord.landing.gitlock import changing_worktrees
from coord.landing.steps import MAIN_REF, merged_outside
from coord.landing.worktrees import Worktree, dirname_for, find, main_root


@dataclass(slots=True)
class Removed:
    path: Path
    branch: str | None
    snapshots: list[str] = field(default_factory=list)  # refs written to keep work first


def kept(repo: Path, commit: str, main: str = MAIN_REF) -> str | None:
    """Where ``commit`` is kept: 'ancestry' / 'patch-id' / 'tree' (on main), 'snapshot', or
    None when removing it would lose it."""
    git = Git(repo)
    if git.ok("rev-parse", "-q", "--verify", main):
        base = git.out("merge-base", commit, main, check=False)
        how = merged_outside(repo, base, commit, main) if base else None
        if how:
            return how
    refs = git.out("for-each-ref", "--format=%(objectname)", snapshot.PREFIX).split()
    if any(git.ok("merge-base", "--is-ancestor", commit, ref) for ref in refs):
        return "snapshot"
    return None


def remove(
    repo: Path, path: str | Path, *, force_snapshot: bool = False, main: str = MAIN_REF
) -> Removed:
    """Remove the coord worktree at ``path`` (however spelled) and the branch coord made for
    it, or refuse (``Conflict``, nothing changed) when that would lose work; with
    ``force_snapshot``, keep that work in snapshot refs first. Whether its process still runs
    is the caller's judgement (``Worktree.alive``), not this one's."""
    repo = main_root(repo)
    wt = find(repo, path, main)
    if wt is None:
        raise NotFound(f"{path} is not a coord worktree of {repo}", worktree=str(path))
    if not wt.exists:
        raise Conflict(
            f"{wt.path} is gone from the disk: its uncommitted work cannot be checked; "
            f"run `git worktree unlock {wt.path}` and `git worktree prune` by hand",
            worktree=str(wt.path),
        )
    git = Git(repo)
    # the branch coord made (the one checked out may be another, or none: HEAD detached)
    branch = wt.lock.branch if wt.lock and wt.lock.branch else wt.branch
    branch_head = (
        git.out("rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False)
        if branch
        else None
    ) or None
    done = Removed(wt.path, branch)
    losing = _what_would_be_lost(repo, wt, branch, branch_head, main)
    if losing and not force_snapshot:
        raise Conflict(
            f"{wt.path} holds work that is neither on main nor in a snapshot: "
            + "; ".join(losing)
            + " (commit and land it, or remove it with a snapshot)",
            worktree=str(wt.path),
            branch=branch,
            losing=losing,
        )
    if losing:
        name = _snapshot(git, wt)
        done.snapshots.append(snapshot.PREFIX + name)
        if branch_head and not kept(repo, branch_head, main):
            git.run("update-ref", snapshot.PREFIX + name + "-branch", branch_head, "")
            done.snapshots.append(snapshot.PREFIX + name + "-branch")
    # dirty only when its work was just snapshotted; a change made since then is the window
    # this cannot close (and a clean one that got dirty meanwhile is refused by git)
    force = ["--force"] if losing and not wt.clean else []
    with changing_worktrees(repo):
        git.run("worktree", "unlock", str(wt.path))
        removed = git.run("worktree", "remove", *force, str(wt.path), check=False)
        if removed.returncode != 0:
            git.run("worktree", "lock", "--reason", wt.lock_reason or "coord", str(wt.path))
    if removed.returncode != 0:
        raise Conflict(
            f"git would not remove {wt.path}: " + removed.stderr.decode("utf-8", "replace").strip(),
            worktree=str(wt.path),
        )
    if branch and branch_head:
        deleted = git.run("update-ref", "-d", f"refs/heads/{branch}", branch_head, check=False)
        if deleted.returncode != 0:
            raise Conflict(
                f"branch {branch} moved while its worktree was removed: it is kept",
                branch=branch,
            )
    return done


def _what_would_be_lost(
    repo: Path, wt: Worktree, branch: str | None, branch_head: str | None, main: str
) -> list[str]:
    losing = []
    if wt.changed or wt.untracked:
        losing.append(f"{wt.changed} changed and {wt.untracked} untracked files not committed")
    # judged already (``find``): how HEAD reached main, if it did; else kept elsewhere?
    if wt.head and not wt.merged and not kept(repo, wt.head, main):
        losing.append(f"HEAD {wt.head[:12]} is not on main")
    if branch_head and branch_head != wt.head and not kept(repo, branch_head, main):
        losing.append(f"branch {branch} at {branch_head[:12]} is not on main")
    return losing


def _snapshot_base(wt: Worktree) -> str:
    if wt.lock is not None:
        return f"{wt.lock.item}-t{wt.lock.token}"
    return dirname_for(wt.branch or wt.path.name)


def _snapshot(git: Git, wt: Worktree) -> str:
    """Snapshot the worktree under a name no ref has yet; the name."""
    del git  # the worktree's own repository
    return snapshot.keep(wt.path, _snapshot_base(wt))
