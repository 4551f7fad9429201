"""The landing queue end to end (issue 24): a real daemon, real git, `coord land` as a fresh
process. An item is claimed with a worktree over HTTP, worked and committed there, submitted,
and landed; what must hold afterwards is read back from git and the board, not from the
runner's own report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, run_cli
from coord.landing import worktrees


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout.strip()


@pytest.fixture
def repo(daemon: Daemon) -> Path:
    """The board's repository: main checked out at its root (the user's checkout), one
    commit, .coord/ ignored."""
    root = daemon.board_dir.parent
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".git/info/exclude").write_text(".coord/\n")
    (root / "src").mkdir()
    (root / "src/app.py").write_text("A = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def add(daemon: Daemon, title: str, **fields: Any) -> int:
    return int(ok(daemon, "POST", "/v1/items", {"agent": "lead", "title": title, **fields})["id"])


def work(daemon: Daemon, repo: Path, item: int, agent: str, writes: dict[str, str]) -> dict:
    """Claim ``item`` with a worktree, make it, commit ``writes`` there, submit the head."""
    base = git(repo, "rev-parse", "main")
    spec = {"base_commit": base, "path_root": str(repo / ".worktrees")}
    claim = ok(daemon, "POST", f"/v1/items/{item}/claim", {"agent": agent, "worktree": spec})
    shown = ok(daemon, "GET", f"/v1/items/{item}")
    made = worktrees.create(
        repo,
        shown["branch"],
        base,
        item=item,
        token=claim["token"],
        root=repo / ".worktrees",
    )
    wt = Path(made.path)
    assert wt == Path(shown["worktree"])
    for path, text in writes.items():
        (wt / path).parent.mkdir(parents=True, exist_ok=True)
        (wt / path).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", f"item {item}")
    head = git(wt, "rev-parse", "HEAD")
    body = {"agent": agent, "token": claim["token"], "head": head}
    ok(daemon, "POST", f"/v1/items/{item}/submit", body)
    return {"worktree": wt, "branch": shown["branch"], "head": head}


def land(daemon: Daemon, repo: Path) -> subprocess.CompletedProcess[str]:
    done = run_cli("land", board_dir=daemon.board_dir, cwd=repo, agent="lander")
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_a_submitted_item_lands_and_only_then_unblocks_its_dependent(
    daemon: Daemon, repo: Path
) -> None:
    first = add(daemon, "add the parser", files=["src/parser.py"], checks=["test -f src/parser.py"])
    second = add(daemon, "use the parser", deps=[first])
    made = work(daemon, repo, first, "alice", {"src/parser.py": "P = 1\n"})
    queued = ok(daemon, "GET", f"/v1/items/{first}")
    assert queued["state"] == "queued"
    assert not ok(daemon, "GET", f"/v1/items/{second}")["ready"]  # submitted is not merged
    held = ok(daemon, "GET", "/v1/reservations")["reservations"]
    assert [(r["agent"], r["pattern"]) for r in held] == [("coord/queue", "src/parser.py")]

    done = land(daemon, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = ok(daemon, "GET", f"/v1/items/{first}")
    assert merged["state"] == "merged"
    assert git(repo, "rev-parse", "main") == merged["merged_commit"]
    assert git(repo, "show", "main:src/parser.py") == "P = 1"
    # the user's checkout of main moved with it, not left looking reverted
    assert (repo / "src/parser.py").read_text() == "P = 1\n"
    assert git(repo, "status", "--porcelain") == ""
    assert ok(daemon, "GET", f"/v1/items/{second}")["ready"]
    assert ok(daemon, "GET", "/v1/reservations")["reservations"] == []
    assert not made["worktree"].exists()
    assert git(repo, "branch", "--list", made["branch"]) == ""


def test_a_failing_check_sends_the_item_back_with_its_output_and_main_stays(
    daemon: Daemon, repo: Path
) -> None:
    item = add(daemon, "break it", checks=["echo 'boom: 3 failed' && exit 1"])
    before = git(repo, "rev-parse", "main")
    work(daemon, repo, item, "alice", {"src/app.py": "A = 2\n"})
    done = land(daemon, repo)
    assert done.returncode == 1, done.stdout
    back = ok(daemon, "GET", f"/v1/items/{item}")
    assert back["state"] == "needs_rework"
    assert back["rework"]["reason"] == "check_failed"
    assert "boom: 3 failed" in back["rework"]["check_output"]
    assert back["rework_for"] == "alice"
    assert git(repo, "rev-parse", "main") == before


def test_a_conflict_with_main_names_the_files(daemon: Daemon, repo: Path) -> None:
    item = add(daemon, "change app")
    work(daemon, repo, item, "alice", {"src/app.py": "A = 2\n"})
    (repo / "src/app.py").write_text("A = 3\n")  # a human's commit to main meanwhile
    git(repo, "commit", "-qam", "human")
    before = git(repo, "rev-parse", "main")
    land(daemon, repo)
    back = ok(daemon, "GET", f"/v1/items/{item}")
    assert (back["state"], back["rework"]["reason"]) == ("needs_rework", "conflict")
    assert back["rework"]["files"] == ["src/app.py"]
    assert back["rework"]["main_commit"] == before
    assert git(repo, "rev-parse", "main") == before
    assert (repo / "src/app.py").read_text() == "A = 3\n"


def test_a_branch_that_changed_a_file_someone_else_holds_does_not_land(
    daemon: Daemon, repo: Path
) -> None:
    item = add(daemon, "sneaky", files=["src/mine.py"])
    ok(daemon, "POST", "/v1/reservations", {"agent": "bob", "patterns": ["src/app.py"]})
    before = git(repo, "rev-parse", "main")
    work(daemon, repo, item, "alice", {"src/mine.py": "M = 1\n", "src/app.py": "A = 9\n"})
    land(daemon, repo)
    back = ok(daemon, "GET", f"/v1/items/{item}")
    assert (back["state"], back["rework"]["reason"]) == ("needs_rework", "files_held")
    assert back["rework"]["files"] == ["src/app.py"]
    assert "bob" in back["rework"]["check_output"]
    assert git(repo, "rev-parse", "main") == before


def test_local_changes_in_the_checkout_of_main_make_the_landing_wait(
    daemon: Daemon, repo: Path
) -> None:
    ran = repo.parent / f"{repo.name}-checks-ran"
    item = add(daemon, "change app", checks=[f"echo ran >> {ran}"])
    work(daemon, repo, item, "alice", {"src/app.py": "A = 2\n"})
    (repo / "src/app.py").write_text("A = human's work in progress\n")
    before = git(repo, "rev-parse", "main")
    done = land(daemon, repo)
    assert done.returncode == 1 and "src/app.py" in done.stdout, done.stdout
    assert land(daemon, repo).returncode == 1  # a watching runner's next pass
    assert not ran.exists()  # the checks wait too: they do not run again on every pass
    assert ok(daemon, "GET", f"/v1/items/{item}")["state"] == "queued"
    assert git(repo, "rev-parse", "main") == before
    assert (repo / "src/app.py").read_text() == "A = human's work in progress\n"
    events = ok(daemon, "GET", "/v1/events?limit=5000")["events"]
    waits = [e["details"] for e in events if e["kind"] == "landing_waits"]
    assert [(w["reason"], w["files"]) for w in waits] == [("checkout_dirty", ["src/app.py"])] * 2

    git(repo, "checkout", "--", "src/app.py")  # the human puts it aside
    assert land(daemon, repo).returncode == 0
    assert ran.read_text() == "ran\n"
    assert ok(daemon, "GET", f"/v1/items/{item}")["state"] == "merged"
    assert (repo / "src/app.py").read_text() == "A = 2\n"


def test_a_zombies_commit_after_the_submit_never_reaches_main(daemon: Daemon, repo: Path) -> None:
    """Invariant 19: only the head recorded at submit lands."""
    item = add(daemon, "feature")
    made = work(daemon, repo, item, "alice", {"src/feature.py": "F = 1\n"})
    (made["worktree"] / "src/evil.py").write_text("EVIL = 1\n")
    git(made["worktree"], "add", "-A")
    git(made["worktree"], "commit", "-qm", "after the submit")
    before = git(repo, "rev-parse", "main")
    land(daemon, repo)
    back = ok(daemon, "GET", f"/v1/items/{item}")
    assert (back["state"], back["rework"]["reason"]) == ("needs_rework", "head_moved")
    assert git(repo, "rev-parse", "main") == before
    assert "src/evil.py" not in git(repo, "ls-tree", "-r", "--name-only", "main")


def test_a_branch_squash_merged_by_hand_is_found_merged(daemon: Daemon, repo: Path) -> None:
    """Item 8: merged means computed. A human squash-merges the branch; the next pass finds
    it on main by its patch and records it merged, with the same effects."""
    item = add(daemon, "feature", files=["src/feature.py"])
    dependent = add(daemon, "after it", deps=[item])
    fresh = add(daemon, "not started")
    made = work(daemon, repo, item, "alice", {"src/feature.py": "F = 1\n"})
    base = git(repo, "rev-parse", "main")
    spec = {"base_commit": base, "path_root": str(repo / ".worktrees")}
    ok(daemon, "POST", f"/v1/items/{fresh}/claim", {"agent": "bob", "worktree": spec})
    git(repo, "branch", ok(daemon, "GET", f"/v1/items/{fresh}")["branch"], base)
    git(repo, "merge", "--squash", "-q", made["branch"])
    git(repo, "commit", "-qm", "squashed by hand")
    done = land(daemon, repo)
    assert done.returncode == 0, done.stdout
    merged = ok(daemon, "GET", f"/v1/items/{item}")
    assert merged["state"] == "merged"
    assert merged["merged_commit"] == git(repo, "rev-parse", "main")
    assert ok(daemon, "GET", f"/v1/items/{dependent}")["ready"]
    assert ok(daemon, "GET", "/v1/reservations")["reservations"] == []
    # a claim whose branch has nothing of its own yet sits on main too: it is not merged
    assert ok(daemon, "GET", f"/v1/items/{fresh}")["state"] == "claimed"


def test_a_runner_killed_mid_check_is_replaced_and_main_moves_once(
    daemon: Daemon, repo: Path
) -> None:
    """kill -9 while the item's check runs: nothing was recorded, the item stays queued, the
    landing lease lapses, and the next runner lands it; main moved once for it."""
    marker = repo.parent / f"{repo.name}-check-started"
    check = f"if [ ! -e {marker} ]; then touch {marker}; sleep 60; fi"
    item = add(daemon, "slow check", checks=[check])
    base = git(repo, "rev-parse", "main")
    work(daemon, repo, item, "alice", {"src/slow.py": "S = 1\n"})
    env = {**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "lander"}
    runner = subprocess.Popen(
        [sys.executable, "-m", "coord", "land", "--lease", "2"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its check too, as a client's kill of the process tree
    )
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), runner.communicate(timeout=5)
    os.killpg(runner.pid, signal.SIGKILL)
    runner.communicate(timeout=5)
    assert ok(daemon, "GET", f"/v1/items/{item}")["state"] == "queued"
    assert git(repo, "rev-parse", "main") == base

    lease = ok(daemon, "GET", "/v1/landing")  # the dead runner's, lapsing
    while lease["holder"] is not None and not _lapsed(lease["expires_at"]):
        assert time.monotonic() < deadline, lease
        time.sleep(0.2)
        lease = ok(daemon, "GET", "/v1/landing")
    done = run_cli("land", "--lease", "2", board_dir=daemon.board_dir, cwd=repo, agent="next")
    assert done.returncode == 0, done.stdout + done.stderr
    merged = ok(daemon, "GET", f"/v1/items/{item}")
    assert merged["state"] == "merged"
    assert git(repo, "rev-list", "--count", f"{base}..main") == "1"
    assert git(repo, "show", "main:src/slow.py") == "S = 1"


def _lapsed(expires_at: str) -> bool:
    from datetime import datetime

    return datetime.fromisoformat(expires_at.replace("Z", "+00:00")).timestamp() < time.time()


PLAN = """# Plan

**Reserved: P1 by @alice.**
- [ ] **P1 — parser.** Dependencies: none.
  - Files: `src/parser.py`
  - Checks: `test -f src/parser.py`
- [ ] **P2 — printer.** Dependencies: P1.
  - Files: `src/printer.py`
"""


def test_landing_ticks_the_packages_box_and_drops_its_reservation_on_main(
    daemon: Daemon, repo: Path
) -> None:
    """The document on main says done only for code on main: the tick is part of what
    lands, in the same compare-and-set."""
    (repo / "docs").mkdir()
    (repo / "docs/plan.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plan")
    imported = run_cli(
        "spec", "import", "docs/plan.md", board_dir=daemon.board_dir, agent="lead", cwd=repo
    )
    assert imported.returncode == 0, imported.stderr
    first = int(ok(daemon, "GET", "/v1/items/P1")["id"])
    work(daemon, repo, first, "alice", {"src/parser.py": "P = 1\n"})
    before = git(repo, "rev-parse", "main")
    assert land(daemon, repo).returncode == 0
    on_main = git(repo, "show", "main:docs/plan.md")
    assert "- [x] **P1 — parser.**" in on_main
    assert "Reserved: P1" not in on_main
    assert "- [ ] **P2 — printer.**" in on_main
    assert on_main == PLAN.replace("**Reserved: P1 by @alice.**\n", "").replace(
        "- [ ] **P1", "- [x] **P1"
    ).rstrip("\n")
    # the code and the tick landed together: one move of main, both in its history
    assert git(repo, "show", f"{before}:docs/plan.md") == PLAN.rstrip("\n")
    assert git(repo, "show", "main:src/parser.py") == "P = 1"
    assert ok(daemon, "GET", "/v1/items/P1")["state"] == "merged"
    assert ok(daemon, "GET", "/v1/items/P2")["ready"]


def test_main_on_a_remote_is_moved_by_a_push_never_forced_and_a_lost_race_lands_again(
    daemon: Daemon, repo: Path
) -> None:
    """main lives on a bare remote: a human pushes to it while the item's check runs, the
    runner's push is refused (never forced), and the next attempt lands on top of theirs."""
    origin = repo.parent / f"{repo.name}-origin.git"
    git(repo.parent, "init", "-q", "--bare", "-b", "main", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "main")
    config = daemon.board_dir / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "land_remote": "origin"}))
    human = repo.parent / f"{repo.name}-human"
    git(repo.parent, "clone", "-q", str(origin), str(human))
    flag = repo.parent / f"{repo.name}-pushed-once"
    race = (
        f"if [ ! -e {flag} ]; then touch {flag}; cd {human} && echo h > human.txt && "
        "git add human.txt && git -c user.name=h -c user.email=h@example.com commit -qm "
        "human && git push -q origin main; fi"
    )
    item = add(daemon, "remote work", checks=[race])
    work(daemon, repo, item, "alice", {"src/remote.py": "R = 1\n"})
    done = land(daemon, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = ok(daemon, "GET", f"/v1/items/{item}")
    on_origin = git(origin, "rev-parse", "main")
    assert merged["state"] == "merged" and merged["merged_commit"] == on_origin
    assert git(origin, "show", "main:human.txt") == "h"  # the human's push stands
    assert git(origin, "show", "main:src/remote.py") == "R = 1"
    assert git(repo, "rev-parse", "main") == on_origin  # the local main followed
    assert (repo / "src/remote.py").read_text() == "R = 1\n"


def test_main_moving_under_every_attempt_leaves_the_item_queued_and_waiting(
    daemon: Daemon, repo: Path
) -> None:
    """Invariant 16: a human commits to main while each of the five checks runs; every
    compare-and-set loses, nothing is overwritten, and the item waits in the queue (nothing
    for its holder to fix), its files still held."""
    human = f"cd {repo} && echo x >> human.txt && git add human.txt && git commit -qm human"
    item = add(daemon, "race main", files=["src/app.py"], checks=[human])
    made = work(daemon, repo, item, "alice", {"src/app.py": "A = 2\n"})
    done = land(daemon, repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "waiting" in done.stdout and "main kept moving" in done.stdout, done.stdout
    assert "stays queued" in done.stdout, done.stdout  # and says what happens next
    shown = ok(daemon, "GET", f"/v1/items/{item}")
    assert shown["state"] == "queued", shown
    assert git(repo, "log", "--format=%s", "main").splitlines() == ["human"] * 5 + ["base"]
    assert git(repo, "show", "main:src/app.py") == "A = 1"
    assert git(repo, "rev-parse", made["branch"]) == made["head"]
    held = ok(daemon, "GET", "/v1/reservations")["reservations"]
    assert [(r["agent"], r["pattern"]) for r in held] == [("coord/queue", "src/app.py")]
    # and the board heard why, for the faces that show the queue
    events = ok(daemon, "GET", "/v1/events?limit=5000")["events"]
    waits = [e for e in events if e["kind"] == "landing_waits"]
    assert [(e["item_id"], e["details"]["reason"]) for e in waits] == [(item, "main_moved")]
    assert "main kept moving" in waits[0]["details"]["message"]


def test_a_watching_runner_tries_a_waiting_landing_again_only_once_something_changed(
    daemon: Daemon, repo: Path
) -> None:
    """A human's edit in the way may sit there for hours: each pass that tried again would
    take the lease, rebase and write three events. The runner passes over it until the
    queue, main or the checkout's local changes move."""
    from coord.client.http import Client
    from coord.landing.runner import Runner

    item = add(daemon, "change app")
    work(daemon, repo, item, "alice", {"src/app.py": "A = 2\n"})
    (repo / "src/app.py").write_text("A = human's work in progress\n")
    runner = Runner.for_board(Client(daemon.board_dir), daemon.board_dir, "lander")

    def events() -> list[str]:
        return [e["kind"] for e in ok(daemon, "GET", "/v1/events?limit=5000")["events"]]

    assert [x.kind for x in runner.land_all(sweep=False)] == ["waiting"]
    before = events()
    assert before[-3:] == ["landing_acquired", "landing_waits", "landing_released"]
    for _ in range(3):  # the watch loop's next passes: nothing changed
        assert runner.land_all(sweep=False) == []
    assert events() == before

    (repo / "src/app.py").write_text("A = more of the human's work\n")  # still " M src/app.py"
    assert runner.land_all(sweep=False) == []
    git(repo, "checkout", "--", "src/app.py")  # the human puts it aside: the listing changed
    assert [x.kind for x in runner.land_all(sweep=False)] == ["merged"]
    assert ok(daemon, "GET", f"/v1/items/{item}")["state"] == "merged"
