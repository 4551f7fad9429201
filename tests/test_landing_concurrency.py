"""Agents starting claims while the runner removes merged worktrees: none fails.

`git worktree add` reads the records of the other worktrees and fails on one another
process is removing ("failed to read .git/worktrees/X/commondir"): seen with four agents
and the landing runner in bench/landing.py. Separate OS processes, released together, make
worktrees while others remove theirs."""

from __future__ import annotations

import multiprocessing
import subprocess
from pathlib import Path

PROCESSES = 6
ROUNDS = 2


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _change(repo: str, n: int, base: str, barrier: object, out: object) -> None:
    """Make worktree ``n``, or (``n`` negative) remove worktree ``-n``."""
    from coord.landing import removal, worktrees

    barrier.wait()  # type: ignore[attr-defined]
    try:
        if n > 0:
            worktrees.create(Path(repo), f"coord/{n}-t1", base, item=n, token=1)
        else:
            removal.remove(Path(repo), Path(repo) / ".worktrees" / f"{-n}-t1")
        out.put((n, "ok"))  # type: ignore[attr-defined]
    except Exception as err:  # the failure is the finding: reported, not raised
        out.put((n, f"{type(err).__name__}: {err}"))  # type: ignore[attr-defined]


def test_worktrees_made_while_others_are_removed_all_succeed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    from coord.landing import worktrees

    for n in range(1, PROCESSES + 1):  # merged ones, for the runner to remove
        worktrees.create(repo, f"coord/{n}-t1", base, item=n, token=1)
    context = multiprocessing.get_context("spawn")
    failures: list[tuple[int, str]] = []
    for round_ in range(ROUNDS):
        barrier, out = context.Barrier(2 * PROCESSES), context.Queue()
        gone = [-(round_ * PROCESSES + k + 1) for k in range(PROCESSES)]
        new = [(round_ + 1) * PROCESSES + k + 1 for k in range(PROCESSES)]
        workers = [
            context.Process(target=_change, args=(str(repo), n, base, barrier, out))
            for n in [*new, *gone]
        ]
        for worker in workers:
            worker.start()
        results = [out.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(30)
        failures += [r for r in results if r[1] != "ok"]
    assert failures == []
    listed = git(repo, "worktree", "list", "--porcelain")
    assert listed.count("\nlocked coord item=") == PROCESSES
