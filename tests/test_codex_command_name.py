"""A `coord` command a Codex session runs acts as that session's agent (issue 13 item 10).

Codex 0.171.0 gives a SessionStart hook no way to set environment for later commands (its
output schema has ``additionalContext`` only, and it names no ``CODEX_ENV_FILE``), but it puts
the session's id in every command's environment as ``CODEX_THREAD_ID``: the id its hooks get
as ``session_id``. So the agent's own ``coord reserve`` needs no ``--as`` and no ``/proc``, and
its name is the one the guard judges its edits by.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import Daemon, run_cli
from coord.fast import identity
from test_hooks import allowed, denied, fixture, hook, reserve, with_path
from test_identity import uuid7


def holder(board_dir: Path, path: str) -> str:
    done = run_cli("--json", "reservations", board_dir=board_dir)
    assert done.returncode == 0, done.stderr
    found = {r["pattern"]: r["agent"] for r in json.loads(done.stdout)["reservations"]}
    return found[path]


def test_a_command_codex_runs_acts_as_the_session_its_hooks_name(
    board_dir: Path, daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = board_dir.parent
    now = int(time.time() * 1000)
    mine, other = uuid7(now), uuid7(now + 2_000)
    monkeypatch.setenv(identity.CODEX_SESSION_VAR, mine)
    done = run_cli("reserve", "src/a.py", board_dir=board_dir)
    assert done.returncode == 0, done.stderr
    name = identity.session_name("codex", mine)
    assert holder(board_dir, "src/a.py") == name
    guard = run_cli("guard", "src/a.py", board_dir=board_dir)  # the pre-commit guard too
    assert guard.returncode == 0, guard.stderr
    edit = with_path(fixture("codex/pre_tool_use_apply_patch.json", repo), "src/a.py")
    edit["session_id"] = mine
    allowed(hook("codex", "PreToolUse", edit, board_dir=board_dir, cwd=repo))
    edit["session_id"] = other
    reason = denied(hook("codex", "PreToolUse", edit, board_dir=board_dir, cwd=repo), "codex")
    assert name in reason


def test_an_explicit_name_wins_and_other_clients_hooks_keep_their_own(
    board_dir: Path, daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = board_dir.parent
    monkeypatch.setenv(identity.CODEX_SESSION_VAR, uuid7(int(time.time() * 1000)))
    done = run_cli("reserve", "src/b.py", board_dir=board_dir, agent="named")
    assert done.returncode == 0, done.stderr
    assert holder(board_dir, "src/b.py") == "named"
    done = run_cli("--as", "given", "reserve", "src/c.py", board_dir=board_dir)
    assert done.returncode == 0, done.stderr
    assert holder(board_dir, "src/c.py") == "given"
    # Claude Code started from a Codex command inherits CODEX_THREAD_ID; its session is its own
    edit = with_path(fixture("claude/pre_tool_use_edit.json", repo), str(repo / "src/d.py"))
    reserve(board_dir, ["src/d.py"], identity.session_name("claude", edit["session_id"]))
    allowed(hook("claude", "PreToolUse", edit, board_dir=board_dir, cwd=repo))
