"""Claude Code's WorktreeCreate and WorktreeRemove hooks (issue 24): `claude --worktree` and
isolated subagents get a claimed, coord-made worktree. Each hook runs as Claude Code runs it,
`coord hook claude EVENT` a fresh process with the client's JSON on stdin (the contract read
from the client, 2.1.197: create answers with the path as the last line of stdout and exit 0;
remove's exit 0 means removed), against a real daemon and real git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon
from coord.fast import identity, worktree

SESSION = "5f0c1d8e-0000-4000-8000-00000000c1de"
AGENT = identity.session_name("claude", SESSION)
SETTINGS = '{"hooks": {}}\n'


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout.strip()


@pytest.fixture
def repo(daemon: Daemon) -> Path:
    root = daemon.board_dir.parent
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".git/info/exclude").write_text(".coord/\n")
    (root / "app.py").write_text("A = 1\n")
    (root / ".claude").mkdir()
    (root / ".claude/settings.json").write_text(SETTINGS)  # committed, as a team does
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def hook(repo: Path, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    """The hook as Claude Code runs it: no COORD_AGENT, no COORD_DIR, the session's JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    payload = {
        "session_id": SESSION,
        "transcript_path": str(repo / "transcript.jsonl"),
        "cwd": str(repo),
        "hook_event_name": event,
        **fields,
    }
    done = subprocess.run(
        [sys.executable, "-m", "coord", "hook", "claude", event],
        input=json.dumps(payload),
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def add(daemon: Daemon, title: str, **fields: Any) -> int:
    return int(ok(daemon, "POST", "/v1/items", {"agent": "lead", "title": title, **fields})["id"])


def made_path(done: subprocess.CompletedProcess[str]) -> Path:
    """What Claude Code reads: the last non-empty line of stdout."""
    assert done.returncode == 0, done.stdout + done.stderr
    return Path([line.strip() for line in done.stdout.splitlines() if line.strip()][-1])


def test_a_claude_worktree_is_a_claim_of_the_best_ready_item(daemon: Daemon, repo: Path) -> None:
    add(daemon, "later", priority=3)
    best = add(daemon, "first", priority=0, files=["app.py"])
    path = made_path(hook(repo, "WorktreeCreate", name="bright-running-fox"))
    assert path.is_dir()
    item = ok(daemon, "GET", f"/v1/items/{best}")
    assert item["state"] == "claimed" and item["claimed_by"] == AGENT
    assert Path(item["worktree"]) == path
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == item["branch"]
    assert git(path, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")
    # coord's worktree: locked with the item's reason, which the guard reads
    found = worktree.claim_of(str(path), str(repo))
    assert found is not None and found[1]["item"] == str(best)
    held = ok(daemon, "GET", "/v1/reservations")["reservations"]
    assert [(r["agent"], r["pattern"]) for r in held] == [(AGENT, "app.py")]


def test_a_name_that_names_an_item_claims_that_item(daemon: Daemon, repo: Path) -> None:
    add(daemon, "the best", priority=0)
    wanted = add(daemon, "this one", priority=3)
    path = made_path(hook(repo, "WorktreeCreate", name=str(wanted)))
    assert Path(ok(daemon, "GET", f"/v1/items/{wanted}")["worktree"]) == path


def test_no_ready_item_makes_no_worktree_and_says_why(daemon: Daemon, repo: Path) -> None:
    done = hook(repo, "WorktreeCreate", name="fox")
    assert done.returncode == 1 and done.stdout.strip() == "", done.stdout
    assert "coord" in done.stderr and "ready" in done.stderr, done.stderr
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_an_item_someone_else_holds_is_refused_with_the_holder(daemon: Daemon, repo: Path) -> None:
    item = add(daemon, "taken")
    ok(daemon, "POST", f"/v1/items/{item}/claim", {"agent": "bob"})
    done = hook(repo, "WorktreeCreate", name=str(item))
    assert done.returncode == 1 and "bob" in done.stderr, done.stderr
    assert done.stdout.strip() == ""


def test_removing_an_untouched_worktree_gives_its_claim_back(daemon: Daemon, repo: Path) -> None:
    item = add(daemon, "nothing to do here")
    path = made_path(hook(repo, "WorktreeCreate", name="agent-a1b2"))
    branch = ok(daemon, "GET", f"/v1/items/{item}")["branch"]
    done = hook(repo, "WorktreeRemove", worktree_path=str(path))
    assert done.returncode == 0, done.stderr
    assert not path.exists()
    assert git(repo, "branch", "--list", branch) == ""  # it held nothing but main's tip
    shown = ok(daemon, "GET", f"/v1/items/{item}")
    assert shown["state"] == "pending" and shown["claimed_by"] is None, shown


def test_removing_a_worktree_with_work_in_it_keeps_it_and_the_claim(
    daemon: Daemon, repo: Path
) -> None:
    """Promise 18: Claude Code asks to remove it; coord keeps it (exit 1, the reason)."""
    item = add(daemon, "some work")
    path = made_path(hook(repo, "WorktreeCreate", name="feature"))
    (path / "new.py").write_text("N = 1\n")
    git(path, "add", "new.py")
    git(path, "commit", "-qm", "work")
    (path / "app.py").write_text("A = 2\n")  # and an uncommitted change
    done = hook(repo, "WorktreeRemove", worktree_path=str(path))
    assert done.returncode == 1, done.stderr
    assert "kept" in done.stderr and str(item) in done.stderr, done.stderr
    assert (path / "new.py").exists() and (path / "app.py").read_text() == "A = 2\n"
    shown = ok(daemon, "GET", f"/v1/items/{item}")
    assert shown["state"] == "claimed" and shown["claimed_by"] == AGENT


def test_a_worktree_coord_did_not_make_is_left_to_git(daemon: Daemon, repo: Path) -> None:
    plain = repo.parent / "plain"
    git(repo, "worktree", "add", "-q", "-b", "plain", str(plain))
    (plain / "dirty.txt").write_text("x\n")
    kept = hook(repo, "WorktreeRemove", worktree_path=str(plain))
    assert kept.returncode == 1 and (plain / "dirty.txt").exists(), kept.stderr
    (plain / "dirty.txt").unlink()
    gone = hook(repo, "WorktreeRemove", worktree_path=str(plain))
    assert gone.returncode == 0 and not plain.exists(), gone.stderr
    assert git(repo, "branch", "--list", "plain") != ""  # its branch is kept


def test_coord_init_claude_wires_both_worktree_hooks(daemon: Daemon, repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coord", "init", "--claude"],
        cwd=repo,
        env={k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = json.loads((repo / ".claude/settings.json").read_text())["hooks"]
    for event in ("WorktreeCreate", "WorktreeRemove"):
        (group,) = hooks[event]
        assert "matcher" not in group
        (entry,) = group["hooks"]
        assert entry["command"].endswith(f"hook claude {event}'") or (
            f"hook claude {event}" in entry["command"]
        ), entry
        assert entry["timeout"] >= 600  # a setup command may install the project's deps


@pytest.mark.parametrize("settings", ["missing", "changed"])
def test_hooks_not_committed_on_main_make_no_worktree(
    daemon: Daemon, repo: Path, settings: str
) -> None:
    """Claude Code runs the session in the worktree with the worktree's own settings: made
    from a main without coord's hooks, it would run unguarded. No worktree, no claim."""
    item = add(daemon, "guarded work")
    if settings == "missing":
        git(repo, "rm", "-q", "--cached", ".claude/settings.json")
        git(repo, "commit", "-qm", "untrack the settings")
    else:
        (repo / ".claude/settings.json").write_text('{"hooks": {"PreToolUse": []}}\n')
    done = hook(repo, "WorktreeCreate", name=str(item))
    assert done.returncode == 1 and done.stdout.strip() == "", done.stdout
    assert ".claude/settings.json" in done.stderr and "git commit" in done.stderr, done.stderr
    assert ok(daemon, "GET", f"/v1/items/{item}")["state"] == "pending"
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
