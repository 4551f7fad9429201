"""The landing runner killed outright (issue 24, "Faults": restarts, main moved at most once
per item). A runner is a separate OS process, killed with SIGKILL with its whole process
group (as a closed terminal or an OOM kill of the tree) at a moment the test chose:

- while the item's check runs: the check says so through a file, then waits forever;
- while it rebases: the repository signs its commits (``commit.gpgSign``) with a "gpg"
  that says so through a file, then waits forever. A rebase onto a main that moved re-makes
  each commit of the branch, and git asks the signer for each, in the middle of the rebase:
  the landing worktree is left with git's rebase state on disk, as a real crash leaves it.
  (A hook cannot do it: the landing runs none of the user's, ``core.hooksPath=/dev/null``;
  the sequence editor is asked only by an interactive rebase.)

Then a new runner is started at once (a `coord land`, or a restarted daemon's own runner):
it waits out the dead one's lease and lands the item. What is asserted is read from git and
the board: main moved exactly once for the item (its first-parent history and its reflog),
no commit of the item twice, the landing worktree left clean and usable, the lease taken
over from the dead runner, and nothing of the dead runner's check still running.

The daemon itself is killed too, while its own runner runs a check: the next daemon's runner
waits out the dead one's (60 s) lease and lands the item.

And one runner paused (git's reference-transaction hook) just after it moved main, before it
told the board, while a second starts: the second must not record the item merged by hand
(it is on main by then) under the first's feet; it waits its turn for the lease.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import landing_support
from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon
from landing_support import git, main_log, make_repo

# a check's process and its start are read from /proc (coord.fast.worktree.process_started)
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")

LEASE = "2"  # the killed runner's landing lease, in seconds: what the next one waits out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def daemon(repo: Path) -> Iterator[Daemon]:
    # the runners here are `coord land` processes: the daemon lands nothing until told to
    board = init_board_dir(repo, land_in_daemon=False)
    d = Daemon(board).start()
    yield d
    d.stop()
    stop_leftover_daemon(board)


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Process groups a test started that must not outlive it (a killed runner's check)."""
    groups: list[int] = []
    yield groups
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)


def ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def submit(daemon: Daemon, repo: Path, title: str, writes: dict[str, str], **fields: Any) -> dict:
    return landing_support.submit(partial(ok, daemon), repo, title, writes, **fields)


def start_runner(daemon: Daemon, repo: Path, name: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": name}
    return subprocess.Popen(
        [sys.executable, "-m", "coord", "land", "--lease", LEASE],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own: killed with what it started
    )


def wait_for(path: Path, runner: subprocess.Popen[str], within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not path.exists():
        if runner.poll() is not None or time.monotonic() > deadline:
            out, err = runner.communicate(timeout=5)
            pytest.fail(f"{path.name} never appeared; the runner said: {out}{err}")
        time.sleep(0.05)


def kill_group(runner: subprocess.Popen[str]) -> None:
    os.killpg(runner.pid, signal.SIGKILL)
    runner.communicate(timeout=10)


def landing_worktree(repo: Path) -> Path:
    return repo / ".worktrees" / ".landing"


def assert_landed_once(daemon: Daemon, repo: Path, item: dict, before: str, moves: int) -> None:
    """The item merged; main moved exactly once since ``before`` (``moves`` reflog entries
    then), by first parent and by its reflog; each of the item's commits on main once."""
    merged = ok(daemon, "GET", f"/v1/items/{item['id']}")
    assert merged["state"] == "merged", merged
    assert git(repo, "rev-parse", "main") == merged["merged_commit"]
    assert len(main_log(repo)) == moves + 1  # one move of main
    # rebased: the item's commits, each once, and nothing else since ``before``
    own = git(repo, "log", "--format=%s", f"{item['base']}..{item['head']}").splitlines()
    since = git(repo, "log", "--first-parent", "--format=%s", f"{before}..main").splitlines()
    assert sorted(since) == sorted(own), (own, since)
    on_main = git(repo, "log", "--format=%s", "main").splitlines()
    assert all(on_main.count(subject) == 1 for subject in own), (own, on_main)
    events = ok(daemon, "GET", f"/v1/events?item={item['id']}&limit=1000")["events"]
    assert [e["kind"] for e in events].count("merged") == 1


def assert_landing_worktree_clean(repo: Path) -> None:
    landing = landing_worktree(repo)
    listed = git(repo, "worktree", "list", "--porcelain")
    assert listed.count(f"worktree {landing}\n") == 1, listed
    assert git(landing, "status", "--porcelain", "--untracked-files=all") == ""
    for state in ("rebase-merge", "rebase-apply", "MERGE_HEAD", "index.lock"):
        where = git(landing, "rev-parse", "--path-format=absolute", "--git-path", state)
        assert not Path(where).exists(), state


def assert_taken_over(daemon: Daemon, dead: str, new: str) -> None:
    events = ok(daemon, "GET", "/v1/events?limit=1000")["events"]
    acquired = [e for e in events if e["kind"] == "landing_acquired"]
    assert acquired[-1]["agent"] == new, acquired
    assert acquired[-1]["details"].get("takeover_from") == dead, acquired


def group_alive(group: int) -> bool:
    """Whether any process of ``group`` still runs (a zombie nobody reaped does not: a
    container's first process may never reap the orphans it inherits)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def test_a_runner_killed_mid_check_is_replaced_at_once_and_main_moves_once(
    daemon: Daemon, repo: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    started, pids = tmp_path / "check-started", tmp_path / "check-pids"
    # the first run says it runs, then waits forever; a later run passes at once
    check = (
        f"echo $$ >> {pids}; if [ ! -e {started} ]; then touch {started}; "
        "while :; do sleep 0.1; done; fi"
    )
    before = git(repo, "rev-parse", "main")
    moves = len(main_log(repo))
    item = submit(daemon, repo, "slow check", {"src/slow.py": "S = 1\n"}, checks=[check])

    runner = start_runner(daemon, repo, "first")
    wait_for(started, runner)
    first_check = int(pids.read_text().split()[0])
    leftovers.append(first_check)  # its own process group: the kill of the runner's misses it
    kill_group(runner)
    assert ok(daemon, "GET", f"/v1/items/{item['id']}")["state"] == "queued"
    assert git(repo, "rev-parse", "main") == before
    assert ok(daemon, "GET", "/v1/landing")["holder"] == "first"  # the dead runner's, live

    # a new runner at once: it waits for the dead one's lease to lapse, then lands
    done = run_cli("land", "--lease", LEASE, board_dir=daemon.board_dir, cwd=repo, agent="next")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "waiting for it" in done.stderr and "held by first" in done.stderr, done.stderr
    assert_landed_once(daemon, repo, item, before, moves)
    assert git(repo, "show", "main:src/slow.py") == "S = 1"
    assert_taken_over(daemon, "first", "next")
    assert_landing_worktree_clean(repo)
    # the dead runner's check no longer runs in the landing worktree the next one used
    assert not group_alive(first_check)


SIGNER = """#!/bin/sh
# a stand-in for gpg that says the rebase reached it, then never answers
touch "{reached}"
while :; do sleep 0.1; done
"""


def test_a_runner_killed_mid_rebase_is_replaced_by_the_daemon_and_main_moves_once(
    daemon: Daemon, repo: Path, tmp_path: Path
) -> None:
    reached = tmp_path / "rebase-reached-the-signer"
    item = submit(
        daemon, repo, "two commits", {"src/one.py": "ONE = 1\n", "src/two.py": "TWO = 2\n"}
    )
    (repo / "src/app.py").write_text("A = 2\n")  # a human's commit: the branch must rebase
    git(repo, "commit", "-qam", "human")
    before = git(repo, "rev-parse", "main")
    moves = len(main_log(repo))
    signer = tmp_path / "signer"
    signer.write_text(SIGNER.format(reached=reached))
    signer.chmod(0o755)
    git(repo, "config", "gpg.program", str(signer))
    git(repo, "config", "commit.gpgSign", "true")

    runner = start_runner(daemon, repo, "first")
    wait_for(reached, runner)
    kill_group(runner)  # git and the signer with it: the rebase is cut where it stood
    git_dir = Path(git(landing_worktree(repo), "rev-parse", "--absolute-git-dir"))
    assert (git_dir / "rebase-merge").is_dir()  # the rebase's state, left on disk
    assert ok(daemon, "GET", f"/v1/items/{item['id']}")["state"] == "queued"
    assert git(repo, "rev-parse", "main") == before
    git(repo, "config", "--unset", "commit.gpgSign")

    # a restart: the daemon now lands itself, its runner waits the dead one's lease out
    daemon.stop()
    config = daemon.board_dir / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "land_in_daemon": True}))
    daemon.start()
    deadline = time.monotonic() + 60
    while ok(daemon, "GET", f"/v1/items/{item['id']}")["state"] == "queued":
        assert time.monotonic() < deadline, daemon.log_path.read_text()
        time.sleep(0.2)
    assert_landed_once(daemon, repo, item, before, moves)
    assert git(repo, "show", "main:src/two.py") == "TWO = 2"
    assert git(repo, "show", "main:src/app.py") == "A = 2"  # the human's commit built upon
    assert_taken_over(daemon, "first", "coord-daemon")
    assert_landing_worktree_clean(repo)


PAUSE_AFTER_MAIN_MOVED = """#!/bin/sh
# git's reference-transaction hook: once main's move is committed, say so and wait
[ "$1" = committed ] || exit 0
[ -e "{armed}" ] || exit 0
while read -r old new ref; do
  if [ "$ref" = refs/heads/main ]; then
    touch "{moved}"
    while [ ! -e "{go}" ]; do sleep 0.05; done
  fi
done
exit 0
"""


def test_a_second_runner_never_takes_an_item_between_main_moved_and_merged(
    daemon: Daemon, repo: Path, tmp_path: Path
) -> None:
    """Runner A has moved main to include the item and not yet said so; runner B starts then.
    B must not record the item merged by hand (it is on main by ancestry) under A's feet: it
    waits for the lease, and A records its own landing."""
    armed, moved, go = (tmp_path / name for name in ("armed", "moved", "go"))
    git(repo, "checkout", "-q", "-b", "work")  # main checked out nowhere: `git update-ref`
    hook = repo / ".git/hooks/reference-transaction"
    hook.write_text(PAUSE_AFTER_MAIN_MOVED.format(armed=armed, moved=moved, go=go))
    hook.chmod(0o755)
    before = git(repo, "rev-parse", "main")
    moves = len(main_log(repo))
    item = submit(daemon, repo, "feature", {"src/feature.py": "F = 1\n"})
    armed.touch()

    first = start_runner(daemon, repo, "first")
    wait_for(moved, first)  # main moved; the board not yet told
    second = start_runner(daemon, repo, "second")
    said: list[str] = []
    reading = threading.Thread(
        target=lambda: said.extend(second.stderr or ()), daemon=True
    )  # its stderr, line by line, while it runs
    reading.start()
    deadline = time.monotonic() + 60
    while second.poll() is None and not any("waiting for it" in line for line in said):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # B saw the item queued and the lease taken: it waits its turn, having recorded nothing
    waited = any("waiting for it" in line for line in said)
    go.touch()
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    second.wait(60)
    reading.join(10)
    for pipe in (second.stdout, second.stderr):
        if pipe is not None:
            pipe.close()
    assert second.returncode == 0, "".join(said)
    assert waited, said
    assert_landed_once(daemon, repo, item, before, moves)
    events = ok(daemon, "GET", f"/v1/events?item={item['id']}&limit=100")["events"]
    merged = [e for e in events if e["kind"] == "merged"]
    assert [e["agent"] for e in merged] == ["first"], merged
    assert "found_by" not in merged[0]["details"], merged


def test_the_daemon_killed_mid_check_is_replaced_by_the_next_daemon_and_main_moves_once(
    repo: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    """kill -9 of the daemon itself while its own runner runs an item's check (the check, in a
    group of its own, outlives it): the next daemon's runner waits out the dead one's lease
    (60 s, the daemon's), ends the check it left, and lands the item once."""
    started, pids = tmp_path / "check-started", tmp_path / "check-pids"
    check = (
        f"echo $$ >> {pids}; if [ ! -e {started} ]; then touch {started}; "
        "while :; do sleep 0.1; done; fi"
    )
    board = init_board_dir(repo)  # the daemon lands
    d = Daemon(board).start()
    try:
        before = git(repo, "rev-parse", "main")
        moves = len(main_log(repo))
        item = submit(d, repo, "slow check", {"src/slow.py": "S = 1\n"}, checks=[check])
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline, d.log_path.read_text()
            time.sleep(0.05)
        first_check = int(pids.read_text().split()[0])
        leftovers.append(first_check)
        d.kill9()
        assert group_alive(first_check)  # the dead daemon's check still runs

        d.start()
        deadline = time.monotonic() + 150  # the dead runner's 60 s lease, then the landing
        while ok(d, "GET", f"/v1/items/{item['id']}")["state"] == "queued":
            assert time.monotonic() < deadline, d.log_path.read_text()
            time.sleep(0.5)
        assert_landed_once(d, repo, item, before, moves)
        assert_taken_over(d, "coord-daemon", "coord-daemon")
        assert_landing_worktree_clean(repo)
        assert not group_alive(first_check)
    finally:
        d.stop()
        stop_leftover_daemon(board)
