"""Running an item's checks where the agent works, and packing their output as evidence.

``coord done`` (the CLI, the MCP face and git mode alike) runs the commands in the agent's own
working tree (often a separate git worktree) and sends the runs with ``done``; the core judges
them (``coord.core.evidence``).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from coord.errors import GitError
from coord.fast.git import Git
from coord.limits import MAX_EVIDENCE_OUTPUT

OUTPUT_LINES = 30


def run(commands: list[str], cwd: str | Path, timeout: float = 1800.0) -> list[dict[str, Any]]:
    """Run each command with the shell in ``cwd``; all of them, even after a failure, so the
    evidence shows the whole picture. Output is kept as its last lines."""
    head = git_head(cwd)
    runs = []
    for command in commands:
        started = time.monotonic()
        try:
            done = subprocess.run(
                command,
                shell=True,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                env={**os.environ, "COORD_CHECK": "1"},
            )
            code, output = done.returncode, done.stdout
        except subprocess.TimeoutExpired as err:
            code, output = 124, (err.stdout or b"") + f"\n[timed out after {timeout:g}s]".encode()
        runs.append(
            {
                "command": command,
                "exit_code": code,
                "duration_s": round(time.monotonic() - started, 3),
                "head": head,
                "output_tail": tail(output),
            }
        )
    return runs


def git_head(cwd: str | Path) -> str | None:
    """The commit the checks ran on, or None outside a repository (or without git)."""
    try:
        found = Git(Path(cwd)).run("rev-parse", "HEAD", check=False, timeout=10)
    except GitError:
        return None
    head = found.stdout.decode("ascii", "replace").strip()
    return head or None if found.returncode == 0 else None


def tail(output: bytes) -> str:
    text = output.decode("utf-8", errors="replace")
    kept = "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])
    return kept[-MAX_EVIDENCE_OUTPUT:]
