"""A merged item's worktree and branch are removed off the landing path (issue 24, the
benchmark's overhead cut): a watching runner lands the next item while the last one's
removal is still to come, wakes at once on a submit, and a runner that dies between the
merge and the removal leaves a merged item's worktree that `coord worktree gc` removes,
saying why. A one-off `coord land` still removes before it reports, and says so.

A real daemon, real git; the runner in this process over HTTP (its removals held on an
event, to see the order), or as an OS process that dies at the moment named."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import test_landing_flow as flow
from conftest import Daemon, run_cli
from coord.client.http import Client
from coord.landing.runner import Landed, Runner


@pytest.fixture
def repo(daemon: Daemon) -> Path:
    """As test_landing_flow's: main checked out at the board's root, one commit."""
    root = daemon.board_dir.parent
    flow.git(root, "init", "-q", "-b", "main")
    flow.git(root, "config", "user.name", "Dev")
    flow.git(root, "config", "user.email", "dev@example.com")
    (root / ".git/info/exclude").write_text(".coord/\n")
    (root / "src").mkdir()
    (root / "src/app.py").write_text("A = 1\n")
    flow.git(root, "add", "-A")
    flow.git(root, "commit", "-qm", "base")
    return root


def until(condition: Any, within: float) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def runner_of(daemon: Daemon, **given: Any) -> Runner:
    client = Client(daemon.board_dir, autostart=False)
    return Runner.for_board(client, daemon.board_dir, "lander", **given)


def two_submitted(daemon: Daemon, repo: Path) -> list[dict[str, Any]]:
    made = []
    for name in ("one", "two"):
        item = flow.add(daemon, f"add {name}", files=[f"src/{name}.py"])
        made.append({"id": item, **flow.work(daemon, repo, item, name, {f"src/{name}.py": "X\n"})})
        assert flow.ok(daemon, "GET", f"/v1/items/{item}")["state"] == "queued"
    return made


def test_a_watching_runner_lands_the_next_item_before_the_last_ones_worktree_is_removed(
    daemon: Daemon, repo: Path
) -> None:
    made = two_submitted(daemon, repo)
    runner = runner_of(daemon)
    held = threading.Event()
    remove = runner._clean

    def clean_when_let(item: dict[str, Any]) -> str:
        assert held.wait(60)
        return remove(item)

    runner._clean = clean_when_let  # type: ignore[method-assign]
    tidied: list[Landed] = []
    runner.tidy_in_background(tidied.append)

    landed = runner.land_all()
    # both merged and recorded while the first one's removal still waits
    assert [r.kind for r in landed] == ["merged", "merged"]
    for m in made:
        assert flow.ok(daemon, "GET", f"/v1/items/{m['id']}")["state"] == "merged"
        assert m["worktree"].exists()
    assert runner.tidying and not tidied
    assert all(r.cleaned == "" for r in landed)  # not claimed before it happened

    held.set()
    assert runner.tidier is not None and runner.tidier.drain(60)
    assert not runner.tidying
    assert [t.item for t in tidied] == [m["id"] for m in made]  # in merge order
    for m, t in zip(made, tidied, strict=True):
        assert t.cleaned == f"removed {m['worktree']} and its branch"
        assert not m["worktree"].exists()
        assert flow.git(repo, "branch", "--list", m["branch"]) == ""


def test_a_watching_runner_is_woken_by_a_submit_not_by_its_timer(
    daemon: Daemon, repo: Path
) -> None:
    stop = threading.Event()
    runner = runner_of(daemon, stop=stop)
    reported: list[Landed] = []
    # a timer of 60 s (the longest long poll): a landing sooner than that was woken by the
    # submit; the wait below gives up at half of it
    watching = threading.Thread(target=runner.watch, args=(60.0, 3600.0, reported.append))
    watching.start()
    try:
        item = flow.add(daemon, "add new", files=["src/new.py"])
        flow.work(daemon, repo, item, "alice", {"src/new.py": "N = 1\n"})
        merged = until(lambda: flow.ok(daemon, "GET", f"/v1/items/{item}")["state"] == "merged", 30)
        assert merged, flow.ok(daemon, "GET", f"/v1/items/{item}")
    finally:
        stop.set()
        flow.add(daemon, "a change on the board: ends the long poll")
        watching.join(60)
    assert not watching.is_alive()
    assert [(r.item, r.kind) for r in reported] == [(item, "merged")]


def test_a_runner_killed_between_the_merge_and_the_removal_leaves_what_gc_removes(
    daemon: Daemon, repo: Path
) -> None:
    item = flow.add(daemon, "add new", files=["src/new.py"])
    made = flow.work(daemon, repo, item, "alice", {"src/new.py": "N = 1\n"})
    # a runner whose process dies the moment its first removal would start (kill -9 there)
    script = textwrap.dedent(
        """
        import os, sys
        from pathlib import Path
        from coord.client.http import Client
        from coord.landing.runner import Runner

        board = Path(sys.argv[1])
        runner = Runner.for_board(Client(board, autostart=False), board, "lander")
        runner._clean = lambda item: os._exit(9)
        runner.tidy_in_background(lambda landed: None)
        runner.land_all()
        runner.tidier.drain(60)
        """
    )
    died = subprocess.run(
        [sys.executable, "-c", script, str(daemon.board_dir)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == 9, died.stdout + died.stderr
    merged = flow.ok(daemon, "GET", f"/v1/items/{item}")
    assert merged["state"] == "merged"
    assert flow.git(repo, "rev-parse", "main") == merged["merged_commit"]
    assert made["worktree"].exists()  # left behind: merged, never removed
    assert flow.git(repo, "branch", "--list", made["branch"]) != ""

    gc = run_cli("worktree", "gc", board_dir=daemon.board_dir, cwd=repo, agent="lead")
    assert gc.returncode == 0, gc.stdout + gc.stderr
    assert f"removed {made['worktree']} ({made['branch']}): item {item} is merged" in gc.stdout
    assert not made["worktree"].exists()
    assert flow.git(repo, "branch", "--list", made["branch"]) == ""


def test_coord_land_removes_before_it_reports_and_says_so(daemon: Daemon, repo: Path) -> None:
    made = two_submitted(daemon, repo)
    done = flow.land(daemon, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    for m in made:
        assert not m["worktree"].exists()
        assert f"removed {m['worktree']} and its branch" in done.stdout


def test_a_landing_commits_as_coord_only_where_no_identity_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The identity is read in one git command now: the last value of each key wins, as
    `git config user.name` answers (a local empty name over a global one is no name)."""
    from coord.fast.git import Git
    from coord.landing import steps

    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Global\n\temail = g@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    flow.git(repo, "init", "-q")
    assert steps._identity(Git(repo)).env == {}  # named globally: nothing added
    flow.git(repo, "config", "user.name", "")
    assert steps._identity(Git(repo)).env == {
        "GIT_AUTHOR_NAME": "coord",
        "GIT_COMMITTER_NAME": "coord",
    }
    (home / ".gitconfig").unlink()
    assert steps._identity(Git(repo)).env == {
        "GIT_AUTHOR_NAME": "coord",
        "GIT_COMMITTER_NAME": "coord",
        "GIT_AUTHOR_EMAIL": "coord@localhost",
        "GIT_COMMITTER_EMAIL": "coord@localhost",
    }
