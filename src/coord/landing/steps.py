"""Landing one submitted branch: in a landing worktree of its own, main moved by compare-and-set.

``land`` checks that the branch head is still the one recorded at submit (a zombie's later
commits never land), rebases a detached copy of it onto main's tip in the landing worktree
(never a user's checkout; the branch itself is not moved), runs the item's checks on that
candidate tree, then moves main with ``git update-ref refs/heads/main NEW OLD``: git refuses
when main is no longer OLD, and the landing starts again from the new tip (bounded). Nothing
is ever forced: a human's commit to main is built upon, never overwritten.

``merged_outside`` tells whether a branch reached main another way: ancestry, then patch-id
of its whole change against each commit on main since its base, then tree equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coord.client import checks as checks_module
from coord.fast.git import Git

MAIN_REF = "refs/heads/main"


@dataclass(slots=True)
class Outcome:
    kind: str  # "merged" | "needs_rework"
    commit: str | None = None
    reason: str = ""
    files: list[str] = field(default_factory=list)
    output_tail: str = ""
    main: str | None = None
    attempts: int = 0
    runs: list[dict[str, Any]] = field(default_factory=list)


def _landing_worktree(git: Git, path: Path, tip: str) -> Git:
    if not (path / ".git").exists():
        git.run("worktree", "add", "--detach", str(path), tip)
    here = Git(path)
    if here.ok("rev-parse", "-q", "--verify", "REBASE_HEAD"):
        here.run("rebase", "--abort", check=False)
    here.run("checkout", "--detach", "--force", tip)  # our own tree: nothing of anyone's
    return here


def land(
    repo: Path,
    branch: str,
    submitted_head: str,
    checks: list[str],
    landing_path: Path,
    *,
    retries: int = 5,
    check_timeout: float = 1800.0,
) -> Outcome:
    git = Git(repo)
    now = git.out("rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
    if now != submitted_head:
        return Outcome(
            "needs_rework",
            reason=f"branch {branch} is at {now[:12] or 'nothing'}, not the head submitted "
            f"({submitted_head[:12]}): submit again",
        )
    for attempt in range(1, retries + 1):
        old = git.out("rev-parse", MAIN_REF)
        here = _landing_worktree(git, landing_path, submitted_head)
        rebased = here.run("rebase", "--no-autosquash", old, check=False)
        if rebased.returncode != 0:
            conflicted = here.out("diff", "--name-only", "--diff-filter=U").split()
            here.run("rebase", "--abort", check=False)
            return Outcome(
                "needs_rework",
                reason="conflict with main",
                files=conflicted,
                main=old,
                attempts=attempt,
            )
        candidate = here.out("rev-parse", "HEAD")
        runs = checks_module.run(checks, cwd=landing_path, timeout=check_timeout)
        failed = [r for r in runs if r["exit_code"] != 0]
        if failed:
            return Outcome(
                "needs_rework",
                reason="check failed: " + "; ".join(f"`{r['command']}`" for r in failed),
                output_tail=checks_module.failed_output(failed),
                main=old,
                attempts=attempt,
                runs=runs,
            )
        if git.ok("update-ref", "-m", f"coord: land {branch}", MAIN_REF, candidate, old):
            return Outcome("merged", commit=candidate, main=old, attempts=attempt, runs=runs)
        # main moved while we checked: start again from its new tip
    return Outcome(
        "needs_rework", reason=f"main kept moving: {retries} attempts lost", attempts=retries
    )


def merged_outside(repo: Path, base: str, head: str, main: str = MAIN_REF) -> str | None:
    """How ``head`` (branched at ``base``) reached main: 'ancestry', 'patch-id', 'tree', or
    None when it did not."""
    git = Git(repo)
    if git.ok("merge-base", "--is-ancestor", head, main):
        return "ancestry"
    mine = _patch_id(git, git.run("diff", base, head).stdout)
    tree = git.out("rev-parse", f"{head}^{{tree}}")
    for commit in git.out("rev-list", f"{base}..{main}").split():
        if mine and _patch_id(git, git.run("diff", f"{commit}^", commit).stdout) == mine:
            return "patch-id"
        if git.out("rev-parse", f"{commit}^{{tree}}") == tree:
            return "tree"
    return None


def _patch_id(git: Git, diff: bytes) -> str:
    if not diff:
        return ""
    found = git.run("patch-id", "--stable", input=diff).stdout.decode()
    return found.split(" ")[0]
