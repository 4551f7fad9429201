"""What the tests of a landing runner in its own process share: a repository with main
checked out, and a worktree item claimed, committed and submitted over HTTP."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coord.landing import worktrees

Call = Callable[..., Any]  # call(method, path, body=None) -> the answer, raising on an error


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout.strip()


def make_repo(root: Path) -> Path:
    """A repository at ``root``: main checked out, one commit, .coord/ ignored."""
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".git/info/exclude").write_text(".coord/\n")
    (root / "src/app.py").write_text("A = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def submit(call: Call, repo: Path, title: str, writes: dict[str, str], **fields: Any) -> dict:
    """An item claimed with a worktree, one commit per file written there, submitted."""
    item = call("POST", "/v1/items", {"agent": "lead", "title": title, **fields})["id"]
    base = git(repo, "rev-parse", "main")
    spec = {"base_commit": base, "path_root": str(repo / ".worktrees")}
    claim = call("POST", f"/v1/items/{item}/claim", {"agent": "alice", "worktree": spec})
    shown = call("GET", f"/v1/items/{item}")
    made = worktrees.create(
        repo, shown["branch"], base, item=item, token=claim["token"], root=repo / ".worktrees"
    )
    for path, text in writes.items():
        (made.path / path).write_text(text)
        git(made.path, "add", "-A")
        git(made.path, "commit", "-qm", f"{title}: {path}")
    head = git(made.path, "rev-parse", "HEAD")
    body = {"agent": "alice", "token": claim["token"], "head": head}
    call("POST", f"/v1/items/{item}/submit", body)
    return {"id": item, "branch": shown["branch"], "base": base, "head": head}


def main_log(repo: Path) -> list[str]:
    """main's reflog, newest first: one line per move."""
    return git(repo, "reflog", "show", "--format=%H", "refs/heads/main").splitlines()
