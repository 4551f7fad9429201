"""Scripted agents and the landing runner of the plan-to-main acceptance test, as separate
OS processes (``python tests/acceptance/_landing_agents.py agent|runner ...``).

An agent loops: claim the best ready item with a worktree (``POST /v1/claim-next``), make
the worktree (``coord.landing.worktrees.create``; an item sent back reuses its branch),
do the package's work (write the files the package names; append its line to a shared file
it edits), commit, submit. The work of a package is read from the item itself, so any plan
can be worked: ``src/registry.py`` gets one line per package that names it; any other file
is created. A package whose check looks for a ``*_fixed.py`` file gets it only when landing
sent it back once: its first submit fails its check on purpose.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SHARED = "src/registry.py"


def git(cwd: Path | str, *args: str) -> str:
    identity = ["-c", "user.name=agent", "-c", "user.email=agent@example.com"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def work(tree: Path, item: dict[str, Any]) -> None:
    for name in item["files"]:
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == SHARED:
            with open(path, "a") as out:
                out.write(f"{item['key']} = True\n")
        else:
            path.write_text(f"# {item['key']}\n")
    for check in item.get("checks") or []:
        if "_fixed.py" in check and item.get("rework"):  # the fix landing asked for
            fixed = check.split()[-1]
            (tree / fixed).write_text("FIXED = True\n")


def agent(board_dir: str, repo: str, name: str) -> None:
    from coord.client.http import Client
    from coord.errors import NothingReady
    from coord.landing import worktrees

    client = Client(Path(board_dir))
    root = Path(repo) / ".worktrees"
    while True:
        base = git(repo, "rev-parse", "main")
        spec = {"base_commit": base, "path_root": str(root)}
        try:
            won = client.post("/v1/claim-next", {"agent": name, "worktree": spec})
        except NothingReady:
            left = client.get("/v1/items?state=pending&limit=1")["items"]
            if not left:
                return  # nothing left to claim
            time.sleep(0.1)
            continue
        item, token = won["item"], won["token"]
        rework = item.get("rework") or {}
        made = worktrees.create(
            Path(repo),
            item["branch"],
            base,
            item=item["id"],
            token=token,
            root=root,
            reuse=rework.get("previous_branch"),
        )
        work(Path(made.path), item)  # sent back: the fix goes on top; landing rebases it
        git(made.path, "add", "-A")
        git(made.path, "commit", "-qm", f"{item['key']}: the work")
        head = git(made.path, "rev-parse", "HEAD")
        client.post(f"/v1/items/{item['id']}/submit", {"agent": name, "token": token, "head": head})


def runner(board_dir: str, repo: str) -> None:
    from coord.client.http import Client
    from coord.landing.runner import Runner

    del repo  # the runner finds the board's repository, and its settings, as `coord land`
    Runner.for_board(Client(Path(board_dir)), Path(board_dir), "lander").watch(
        0.1, 1.0, lambda landed: None
    )


if __name__ == "__main__":
    if sys.argv[1] == "agent":
        agent(*sys.argv[2:5])
    else:
        runner(*sys.argv[2:4])
