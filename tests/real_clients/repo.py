"""A user's repository wired for one client, as `coord init --CLIENT` leaves it.

The clients' configs call a bare `coord` (what a team commits); the tests put the venv's
`bin` on PATH for the clients, or leave it off to prove the guard refuses without coord.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COORD_BIN_DIR = Path(sys.executable).parent


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def coord(repo: Path, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real `coord` command, run in the repository as a human or a named agent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    if agent is not None:
        env["COORD_AGENT"] = agent
    return subprocess.run(
        [str(COORD_BIN_DIR / "coord"), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def wired_repo(root: Path, client_flag: str, files: dict[str, str]) -> Path:
    """A fresh git repository holding `files`, committed, with `coord init CLIENT_FLAG` run."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.invalid")
    git(repo, "config", "user.name", "Dev")
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    done = coord(repo, "init", client_flag)
    assert done.returncode == 0, done.stderr
    return repo


def path_with_coord(extra: str = "") -> str:
    """PATH with the venv's `coord` first (the clients' hook lines call a bare `coord`)."""
    return os.pathsep.join(p for p in (str(COORD_BIN_DIR), extra, os.environ["PATH"]) if p)


def path_without_coord() -> str:
    """PATH with every directory that holds a `coord` removed: the guard must still refuse."""
    kept = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "coord").exists()]
    return os.pathsep.join(kept)
