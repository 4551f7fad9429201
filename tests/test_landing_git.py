"""The git side of landing (issue 24) against real repositories in tmp dirs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from coord.landing import snapshot, steps


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    (root / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def branch_with(root: Path, name: str, path: str, text: str) -> str:
    git(root, "branch", name, "main")
    wt = root.parent / f"wt-{name}"
    git(root, "worktree", "add", "-q", str(wt), name)
    (wt / path).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", f"{name}: {path}")
    return git(wt, "rev-parse", "HEAD")


def test_a_branch_lands_by_compare_and_set(tmp_path: Path) -> None:
    root = repo(tmp_path)
    head = branch_with(root, "coord/1-t1", "b.txt", "b\n")
    out = steps.land(root, "coord/1-t1", head, ["test -f b.txt"], tmp_path / "landing")
    assert out.kind == "merged", out
    assert git(root, "rev-parse", "main") == out.commit
    assert git(root, "show", "main:b.txt") == "b"


def test_a_human_commit_during_the_check_makes_it_start_again(tmp_path: Path) -> None:
    """Invariant 16: the check commits to main (once) while it runs; the first CAS loses,
    the retry lands on top of the human's commit, which stays."""
    root = repo(tmp_path)
    head = branch_with(root, "coord/1-t1", "b.txt", "b\n")
    flag = tmp_path / "once"
    human = (
        f"if [ ! -e {flag} ]; then touch {flag}; cd {root} && echo h > h.txt && "
        "git add h.txt && git commit -qm human; fi"
    )
    out = steps.land(root, "coord/1-t1", head, [human], tmp_path / "landing")
    assert out.kind == "merged" and out.attempts == 2, out
    log = git(root, "log", "--format=%s", "main").splitlines()
    assert log[:2] == ["coord/1-t1: b.txt", "human"]
    assert git(root, "show", "main:h.txt") == "h"


def test_a_zombie_commit_after_submit_never_lands(tmp_path: Path) -> None:
    """Invariant 19."""
    root = repo(tmp_path)
    submitted = branch_with(root, "coord/1-t1", "b.txt", "b\n")
    wt = root.parent / "wt-coord/1-t1"
    (wt / "b.txt").write_text("zombie\n")
    git(wt, "commit", "-qam", "zombie")
    before = git(root, "rev-parse", "main")
    out = steps.land(root, "coord/1-t1", submitted, [], tmp_path / "landing")
    assert out.kind == "needs_rework" and "not the head submitted" in out.reason
    assert git(root, "rev-parse", "main") == before


def test_a_conflict_and_a_failing_check_need_rework_with_the_facts(tmp_path: Path) -> None:
    root = repo(tmp_path)
    head = branch_with(root, "coord/1-t1", "a.txt", "mine\n")
    (root / "a.txt").write_text("theirs\n")
    git(root, "commit", "-qam", "theirs")
    main = git(root, "rev-parse", "main")
    out = steps.land(root, "coord/1-t1", head, [], tmp_path / "landing")
    assert (out.kind, out.files, out.main) == ("needs_rework", ["a.txt"], main)
    head2 = branch_with(root, "coord/2-t1", "c.txt", "c\n")
    out = steps.land(root, "coord/2-t1", head2, ["echo boom; exit 3"], tmp_path / "landing")
    assert out.kind == "needs_rework" and "boom" in out.output_tail
    assert git(root, "rev-parse", "main") == main  # nothing landed
    assert git(root, "rev-parse", "coord/1-t1") == head  # the branches are untouched


def test_a_snapshot_restores_staged_unstaged_and_untracked_exactly(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "a.txt").write_text("staged\n")
    git(root, "add", "a.txt")
    (root / "a.txt").write_text("unstaged\n")
    (root / "new.txt").write_text("untracked\n")
    (root / "x.log").write_text("ignored\n")
    status = git(root, "status", "--porcelain")
    index_before = (root / ".git" / "index").read_bytes()
    snapshot.take(root, "1-t1")
    assert (root / ".git" / "index").read_bytes() == index_before  # the user's index kept
    other = tmp_path / "resumed"
    git(root, "worktree", "add", "-q", "--detach", str(other), "HEAD")
    snapshot.restore(other, "refs/coord/snapshots/1-t1")
    assert git(other, "status", "--porcelain") == status.replace("?? x.log\n", "")
    assert (other / "a.txt").read_text() == "unstaged\n"
    assert git(other, "show", ":a.txt") == "staged"
    assert not (other / "x.log").exists()


def test_a_branch_squash_merged_by_hand_is_detected_merged(tmp_path: Path) -> None:
    root = repo(tmp_path)
    base = git(root, "rev-parse", "main")
    head = branch_with(root, "coord/1-t1", "b.txt", "b\n")
    assert steps.merged_outside(root, base, head) is None
    git(root, "merge", "-q", "--squash", "coord/1-t1")
    git(root, "commit", "-qm", "squashed by hand")
    assert steps.merged_outside(root, base, head) in ("patch-id", "tree")


def test_a_fetch_that_meets_a_worktree_being_made_waits_for_it_and_lands(tmp_path: Path) -> None:
    """`git worktree add` first writes a placeholder HEAD (the null id); a fetch in that moment
    fails with "bad object worktrees/X/HEAD" (seen in CI). Here another process holds the
    worktree lock with such a record, as `git worktree add` under coord's lock does; the
    landing's fetch fails on it, waits for the lock, and lands once the worktree is made."""
    root = repo(tmp_path)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(root, "remote", "add", "origin", str(origin))
    git(root, "push", "-q", "origin", "main")
    head = branch_with(root, "coord/1-t1", "b.txt", "b\n")
    record = root / ".git/worktrees/being-made"
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from coord.landing.gitlock import changing_worktrees\n"
            "record = pathlib.Path(sys.argv[1])\n"
            "with changing_worktrees(record.parent.parent.parent):\n"
            "    record.mkdir()\n"
            "    (record / 'HEAD').write_text('0' * 40 + '\\n')\n"
            "    (record / 'commondir').write_text('../..\\n')\n"
            "    (record / 'gitdir').write_text(str(record) + '-checkout/.git\\n')\n"
            "    print('holding', flush=True)\n"
            "    sys.stdin.readline()\n"
            "    (record / 'HEAD').write_text(sys.argv[2] + '\\n')  # the worktree is made\n",
            str(record),
            head,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as maker:
        assert maker.stdout is not None and maker.stdout.readline() == "holding\n"
        landed: list[steps.Outcome] = []
        lander = threading.Thread(
            target=lambda: landed.append(
                steps.land(root, "coord/1-t1", head, [], tmp_path / "landing", remote="origin")
            )
        )
        lander.start()
        while not _waits_for_a_lock() and lander.is_alive():
            time.sleep(0.01)
        assert lander.is_alive() and not landed, landed  # it waited, rather than failing
        assert maker.stdin is not None
        maker.stdin.write("go\n")
        maker.stdin.flush()
        maker.stdin.close()
        lander.join(timeout=60)
    assert landed and landed[0].kind == "merged", landed
    assert git(origin, "rev-parse", "main") == landed[0].commit


def _waits_for_a_lock() -> bool:
    """This process is blocked in flock (a "->" waiter line in /proc/locks names its pid)."""
    mine = f" {os.getpid()} "
    return any(
        line.split(":", 1)[1].lstrip().startswith("->") and mine in line
        for line in Path("/proc/locks").read_text().splitlines()
        if ":" in line
    )
