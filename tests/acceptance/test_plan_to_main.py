"""From a design document to main (issue 24's acceptance): 12 packages with dependencies,
worked by 4 scripted agent processes at once, each in its own coord worktree, landed by one
runner. Some packages create files in one new directory, three edit one shared file in
sequence through their dependencies, one fails its check first and is sent back.

Everything asserted at the end is read from git and the board, not from what the agents or
the runner said: main holds every package's change; every check passes on the tree that
landed; no item merged twice or lost; every dependent's base contains its dependencies'
merged commits; the document on main has every box ticked and no Reserved: line; no
worktree or branch is left but the runner's own landing worktree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, run_cli

AGENTS = 4
HERE = Path(__file__).parent
PLAN = """# Plan

Escalate to: @lead.

### Track F — the feature

- [ ] **F1 — parser.** Dependencies: none.
  - Files: `src/feature/parser.py`
  - Checks: `test -f src/feature/parser.py`
- [ ] **F2 — printer.** Dependencies: none.
  - Files: `src/feature/printer.py`
- [ ] **F3 — lexer.** Dependencies: none.
  - Files: `src/feature/lexer.py`
- [ ] **F4 — tree.** Dependencies: F1, F3.
  - Files: `src/feature/tree.py`
  - Checks: `test -f src/feature/parser.py`, `test -f src/feature/lexer.py`
- [ ] **F5 — format.** Dependencies: F2, F4.
  - Files: `src/feature/format.py`
- [ ] **F6 — flaky first.** Dependencies: none.
  - Files: `src/feature/six.py`
  - Checks: `test -f src/feature/six_fixed.py`

### Track R — the registry, one file in sequence

- [ ] **R1 — register the parser.** Dependencies: F1.
  - Files: `src/registry.py`
- [ ] **R2 — register the printer.** Dependencies: R1, F2.
  - Files: `src/registry.py`
- [ ] **R3 — register the format.** Dependencies: R2, F5.
  - Files: `src/registry.py`
  - Checks: `grep -q R2 src/registry.py`

### Track D — docs

- [ ] **D1 — guide.** Dependencies: none.
  - Files: `docs/guide.md`
- [ ] **D2 — reference.** Dependencies: D1.
  - Files: `docs/reference.md`
- [ ] **D3 — changelog.** Dependencies: D2, R3.
  - Files: `docs/changes.md`
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def get(daemon: Daemon, path: str) -> Any:
    status, answer = daemon.request("GET", path)
    assert status == 200, answer
    return answer


@pytest.mark.parametrize("home", ["local main checked out", "a bare remote"])
def test_a_plan_of_twelve_packages_reaches_main_through_four_agents_in_worktrees(
    daemon: Daemon, home: str
) -> None:
    repo = daemon.board_dir.parent
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Lead")
    git(repo, "config", "user.email", "lead@example.com")
    (repo / ".git/info/exclude").write_text(".coord/\n")
    (repo / "src").mkdir()
    (repo / "src/registry.py").write_text("# registry\n")
    (repo / "docs").mkdir()
    (repo / "docs/plan.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the plan")
    origin = repo.parent / f"{repo.name}-origin.git"
    if home == "a bare remote":
        git(repo.parent, "init", "-q", "--bare", "-b", "main", str(origin))
        git(repo, "remote", "add", "origin", str(origin))
        git(repo, "push", "-q", "origin", "main")
        config = daemon.board_dir / "config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()), "land_remote": "origin"}))
    imported = run_cli(
        "spec", "import", "docs/plan.md", board_dir=daemon.board_dir, agent="lead", cwd=repo
    )
    assert imported.returncode == 0, imported.stderr
    packages = get(daemon, "/v1/items?limit=100")["items"]
    assert len(packages) == 12

    env = {**os.environ, "COORD_DIR": str(daemon.board_dir)}
    script = str(HERE / "_landing_agents.py")
    board, root = str(daemon.board_dir), str(repo)
    runner = subprocess.Popen([sys.executable, script, "runner", board, root], env=env)
    agents = [
        subprocess.Popen([sys.executable, script, "agent", board, root, f"agent-{n}"], env=env)
        for n in range(AGENTS)
    ]
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            merged = get(daemon, "/v1/items?state=merged&limit=100")["items"]
            if len(merged) == 12:
                break
            crashed = [a.returncode for a in agents if a.poll() not in (None, 0)]
            assert not crashed and runner.poll() is None, (crashed, runner.poll())
            time.sleep(0.3)
        for proc in agents:
            proc.wait(60)
        # the runner removes a merged item's worktree right after recording it merged
        while time.monotonic() < deadline and len(git(repo, "worktree", "list").splitlines()) > 2:
            time.sleep(0.2)
    finally:
        for proc in (*agents, runner):
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)

    if home == "a bare remote":  # main's home has it all, and the local main followed
        local, remote = git(repo, "rev-parse", "main"), git(origin, "rev-parse", "main")
        assert local == remote
    items = {i["key"]: i for i in get(daemon, "/v1/items?limit=100")["items"]}
    assert {key: i["state"] for key, i in items.items()} == dict.fromkeys(items, "merged")
    # main holds every package's change
    tree = git(repo, "ls-tree", "-r", "--name-only", "main").split()
    for item in items.values():
        for name in item["files"]:
            assert name in tree, (item["key"], name)
    registry = git(repo, "show", "main:src/registry.py").splitlines()
    assert registry == ["# registry", "R1 = True", "R2 = True", "R3 = True"]
    assert "src/feature/six_fixed.py" in tree  # F6 landed only once fixed
    # no item merged twice or lost: one merged event each, and main moved only through them
    events = get(daemon, "/v1/events?limit=1000")["events"]
    merged_events = [e for e in events if e["kind"] == "merged"]
    assert sorted(e["item_id"] for e in merged_events) == sorted(i["id"] for i in items.values())
    sent_back = [e for e in events if e["kind"] == "needs_rework"]
    assert [e["item_id"] for e in sent_back] == [items["F6"]["id"]]
    # every check passed on the tree that landed: run them again on each merged commit
    scratch = repo.parent / f"{repo.name}-scratch"
    git(repo, "worktree", "add", "-q", "--detach", str(scratch), "main")
    for item in items.values():
        git(scratch, "checkout", "-q", "--detach", item["merged_commit"])
        for check in item["checks"]:
            ran = subprocess.run(check, shell=True, cwd=scratch, capture_output=True)
            assert ran.returncode == 0, (item["key"], check)
    git(repo, "worktree", "remove", "--force", str(scratch))
    # every dependent started from a main that contained its dependencies' merged commits
    by_id = {i["id"]: i for i in items.values()}
    for item in items.values():
        for dep in item["deps"]:
            landed = by_id[dep]["merged_commit"]
            assert (
                subprocess.run(
                    ["git", "merge-base", "--is-ancestor", landed, item["base_commit"]], cwd=repo
                ).returncode
                == 0
            ), (item["key"], by_id[dep]["key"])
    # the document on main: every box ticked, no reservation line
    doc = git(repo, "show", "main:docs/plan.md")
    assert "- [ ]" not in doc and doc.count("- [x]") == 12
    assert "Reserved:" not in doc
    # no worktree or branch left but the runner's own landing worktree
    listed = git(repo, "worktree", "list", "--porcelain")
    trees = [line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("worktree ")]
    assert [Path(t).name for t in trees[1:]] == [".landing"], trees
    assert git(repo, "branch", "--list", "coord/*") == ""
