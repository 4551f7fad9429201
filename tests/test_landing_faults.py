"""An agent killed (SIGKILL) mid-work in its worktree, end to end with real processes: a real
daemon, real git, agents as processes of their own running the real `coord` command.

Agent A starts an item, leaves a commit, staged, unstaged and untracked changes in its
worktree, and is killed. Once its lease lapsed, the item keeps its files (promise 20: a third
agent is refused them), a sweep keeps A's work in a snapshot, agent B takes the item over
with `coord start`, resumes the snapshot and finds every change as A left it, submits, and
`coord land` puts A's work on main. What must hold is read back from git and the board.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon
from coord.landing import removal

LEASE = "2"  # seconds: A's claim lapses soon after it is killed

# Agent A: start the item, work in the worktree, say where, then wait to be killed mid-work.
AGENT_A = r"""
import json, subprocess, sys, time
from pathlib import Path

def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

started = subprocess.run(
    [sys.executable, "-m", "coord", "start", sys.argv[1], "--lease", sys.argv[2], "--json"],
    capture_output=True, text=True,
)
if started.returncode != 0:
    print(json.dumps({"error": started.stdout + started.stderr}), flush=True)
    sys.exit(1)
wt = Path(json.loads(started.stdout)["worktree"]["path"])
(wt / "src").mkdir(exist_ok=True)
(wt / "src/committed.py").write_text("C = 1\n")
git(wt, "add", "src/committed.py")
git(wt, "commit", "-qm", "A's first step")
(wt / "a.txt").write_text("a, staged by A\n")                  # staged
git(wt, "add", "a.txt")
(wt / "src/both.py").write_text("B = 'staged'\n")              # staged, then changed again
git(wt, "add", "src/both.py")
(wt / "src/both.py").write_text("B = 'staged, then unstaged'\n")
(wt / "b.txt").write_text("b, changed by A, not staged\n")     # unstaged
(wt / "notes.txt").write_text("A's untracked notes\n")         # untracked
print(json.dumps({"worktree": str(wt)}), flush=True)
while True:  # mid-work: thinking, when the SIGKILL comes
    time.sleep(1)
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout.strip()


def cli(d: Daemon, *args: str, agent: str, cwd: Path | None = None) -> tuple[int, Any]:
    done = run_cli(*args, "--json", board_dir=d.board_dir, agent=agent, cwd=cwd)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


def item_of(d: Daemon, ref: int) -> dict[str, Any]:
    status, item = d.request("GET", f"/v1/items/{ref}")
    assert status == 200, item
    return item


def wait_until_lapsed(d: Daemon, ref: int) -> None:
    """Until the board says the claim's lease ran out (the board's clock decides)."""
    deadline = time.monotonic() + 60
    while not item_of(d, ref)["lease_expired"]:
        assert time.monotonic() < deadline, "the lease of a killed agent never ran out"
        time.sleep(0.2)


def changes(wt: Path) -> dict[str, list[str]]:
    """What git says of the worktree's uncommitted work, by kind."""
    return {
        "staged": git(wt, "diff", "--cached", "--name-only").splitlines(),
        "unstaged": git(wt, "diff", "--name-only").splitlines(),
        "untracked": git(wt, "ls-files", "--others", "--exclude-standard").splitlines(),
    }


def test_an_agent_killed_mid_work_loses_nothing_and_its_files_stay_held(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Dev")
    git(repo, "config", "user.email", "dev@example.com")
    (repo / ".gitignore").write_text(".coord/\n")
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    board = init_board_dir(repo)
    d = Daemon(board).start()
    try:
        _killed_mid_work(d, repo, tmp_path)
    finally:
        d.stop()
        stop_leftover_daemon(board)


def _killed_mid_work(d: Daemon, repo: Path, tmp_path: Path) -> None:
    files = ["--file", "a.txt", "--file", "b.txt", "--file", "src/"]
    code, added = cli(d, "add", "A's feature", *files, agent="lead")
    assert code == 0, added
    ref = int(added["id"])

    # agent A: a process of its own, killed with SIGKILL once its work is in the worktree
    script = tmp_path / "agent_a.py"
    script.write_text(AGENT_A)
    env = {**os.environ, "COORD_DIR": str(d.board_dir), "COORD_AGENT": "agent-a"}
    agent_a = subprocess.Popen(
        [sys.executable, str(script), str(ref), LEASE],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert agent_a.stdout is not None
        readable, _, _ = select.select([agent_a.stdout], [], [], 120)
        assert readable, "agent A never said it had worked"
        said = json.loads(agent_a.stdout.readline() or '{"error": "agent A exited"}')
        assert "error" not in said, said
    finally:
        agent_a.send_signal(signal.SIGKILL)
        _, stderr = agent_a.communicate(timeout=10)  # and its pipes closed
    assert agent_a.returncode == -signal.SIGKILL, stderr
    worktree = Path(said["worktree"])
    commit_a = git(worktree, "rev-parse", "HEAD")
    left = changes(worktree)
    assert left == {
        "staged": ["a.txt", "src/both.py"],
        "unstaged": ["b.txt", "src/both.py"],
        "untracked": ["notes.txt"],
    }

    # its lease lapses: the item keeps its files, a third agent is refused them
    wait_until_lapsed(d, ref)
    assert item_of(d, ref)["claimed_by"] == "agent-a"
    refused = run_cli("reserve", "b.txt", board_dir=d.board_dir, agent="agent-c")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert f"held by coord/lapsed for item {ref}" in refused.stderr
    assert f"coord start {ref}" in refused.stderr
    guard = run_cli("guard", str(repo / "src/committed.py"), board_dir=d.board_dir, agent="agent-c")
    assert guard.returncode == 2, guard.stdout + guard.stderr  # on main too
    assert f"(`coord start {ref}`)" in guard.stderr
    code, listed = cli(d, "worktree", "list", agent="agent-c")
    assert code == 0, listed
    (kept,) = [w for w in listed["worktrees"] if w["item"] == ref]
    assert (kept["alive"], kept["removable"]) == (False, False)

    # a sweep of the dead agent's worktree keeps its work in a snapshot first
    swept = removal.remove(repo, worktree, force_snapshot=True)
    assert not worktree.exists() and swept.snapshots
    assert refused_still(d, "a.txt")

    # agent B takes the item over, is offered A's snapshot, and resumes it
    code, taken = cli(d, "start", str(ref), agent="agent-b")
    assert code == 0, taken
    assert taken["takeover_from"] == "agent-a"
    offered = [s["ref"] for s in taken["worktree"]["snapshots"]]
    assert swept.snapshots[0] in offered
    assert cli(d, "release", str(ref), agent="agent-b")[0] == 0
    code, resumed = cli(d, "start", str(ref), "--resume", offered[0], agent="agent-b")
    assert code == 0, resumed
    where = Path(resumed["worktree"]["path"])
    assert git(where, "rev-parse", "HEAD") == commit_a
    assert changes(where) == left  # staged stays staged, unstaged unstaged, untracked untracked
    assert git(where, "show", ":src/both.py") == "B = 'staged'"  # the index as A left it
    assert (where / "src/both.py").read_text() == "B = 'staged, then unstaged'\n"
    assert (where / "a.txt").read_text() == "a, staged by A\n"
    assert (where / "b.txt").read_text() == "b, changed by A, not staged\n"
    assert (where / "notes.txt").read_text() == "A's untracked notes\n"
    assert (where / "src/committed.py").read_text() == "C = 1\n"
    held = run_cli("reserve", "b.txt", board_dir=d.board_dir, agent="agent-c")
    assert held.returncode == 3 and "held by agent-b" in held.stderr, held.stderr

    # B finishes A's work, submits, and it lands: main holds all of it
    git(where, "add", "-A")
    git(where, "commit", "-qm", "B finishes A's work")
    code, queued = cli(d, "done", agent="agent-b", cwd=where)
    assert code == 0 and queued["state"] == "queued", queued
    landed = run_cli("land", board_dir=d.board_dir, cwd=repo, agent="lander")
    assert landed.returncode == 0, landed.stdout + landed.stderr
    merged = item_of(d, ref)
    assert merged["state"] == "merged"
    assert git(repo, "rev-parse", "main") == merged["merged_commit"]
    assert git(repo, "merge-base", "--is-ancestor", commit_a, "main") == ""  # A's commit kept
    for path, text in {
        "a.txt": "a, staged by A",
        "b.txt": "b, changed by A, not staged",
        "src/both.py": "B = 'staged, then unstaged'",
        "src/committed.py": "C = 1",
        "notes.txt": "A's untracked notes",
    }.items():
        assert git(repo, "show", f"main:{path}") == text
    assert cli(d, "reserve", "b.txt", agent="agent-c")[0] == 0  # merged: its files are free


def refused_still(d: Daemon, path: str) -> bool:
    done = run_cli("reserve", path, board_dir=d.board_dir, agent="agent-c")
    return done.returncode == 3 and "coord/lapsed" in done.stderr


RACERS = 8  # six reserve one of the item's files, two take the item over


def _taker(n: int) -> bool:
    return n % 4 == 3


def _race(url: str, token: str, ref: int, n: int, path_root: str, barrier: Any, out: Any) -> None:
    """Racer ``n``: reserve the lapsed item's file, or (a taker) claim the item, at once."""
    import urllib.error
    import urllib.request

    if not _taker(n):
        path, body = "/v1/reservations", {"agent": f"reserver-{n}", "patterns": ["b.txt"]}
    else:
        worktree = {"base_commit": "a" * 40, "path_root": path_root}
        path, body = f"/v1/items/{ref}/claim", {"agent": f"taker-{n}", "worktree": worktree}
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {token}")
    barrier.wait()
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            out.put((n, answer.status, json.loads(answer.read())))
    except urllib.error.HTTPError as err:
        out.put((n, err.code, json.loads(err.read())))


def test_agents_racing_for_a_lapsed_items_files_never_get_them_and_one_takes_it_over(
    daemon: Daemon, tmp_path: Path
) -> None:
    """Separate processes released together: the takeover and the reservations of the lapsed
    item's files are judged in the database's write transactions, one at a time."""
    import multiprocessing

    (daemon.board_dir.parent / "b.txt").write_text("b\n")
    status, item = daemon.request(
        "POST", "/v1/items", {"agent": "lead", "title": "t", "files": ["a.txt", "b.txt"]}
    )
    assert status == 201, item
    ref, path_root = int(item["id"]), str(tmp_path / "worktrees")
    worktree = {"base_commit": "a" * 40, "path_root": path_root}
    body = {"agent": "agent-a", "lease_seconds": 1, "worktree": worktree}
    status, claim = daemon.request("POST", f"/v1/items/{ref}/claim", body)
    assert status == 200, claim
    wait_until_lapsed(daemon, ref)  # agent A is gone: no heartbeat came
    early = {"agent": "early-bird", "patterns": ["a.txt"]}
    status, refused = daemon.request("POST", "/v1/reservations", early)
    assert status == 409 and refused["holders"] == ["coord/lapsed"], refused

    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(RACERS), context.Queue()
    racers = [
        context.Process(
            target=_race, args=(daemon.url, daemon.token, ref, n, path_root, barrier, out)
        )
        for n in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    results = sorted(out.get(timeout=120) for _ in racers)
    for racer in racers:
        racer.join(30)
    reserved = [(n, status, answer) for n, status, answer in results if not _taker(n)]
    assert [status for _, status, _ in reserved] == [409] * len(reserved), reserved
    assert all(answer["error"] == "files_reserved" for _, _, answer in reserved)
    won = [answer for n, status, answer in results if _taker(n) and status == 200]
    assert len(won) == 1, results  # exactly one takeover
    assert won[0]["takeover_from"] == "agent-a"
    status, held = daemon.request("GET", "/v1/reservations")
    assert status == 200
    holders = {(r["agent"], r["pattern"]) for r in held["reservations"]}
    assert holders == {(won[0]["agent"], "a.txt"), (won[0]["agent"], "b.txt")}
