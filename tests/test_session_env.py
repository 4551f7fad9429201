"""SessionStart passes the agent's name on to its shell (issue 13, item 10).

Without /proc (macOS), or under a wrapper that does not ``exec``, a later ``coord`` command
cannot find the client process, so it would not know the name the hooks use. Claude Code
sources the file named by ``CLAUDE_ENV_FILE`` before each Bash command (Codex the same with
``CODEX_ENV_FILE``): the SessionStart hook exports ``COORD_AGENT`` there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon
from test_hooks import fixture

EXPORT = re.compile(r"^export COORD_AGENT=", re.MULTILINE)


def start(
    client: str,
    payload: dict[str, Any],
    board_dir: Path,
    env_file: Path,
    *,
    env_var: str = "CLAUDE_ENV_FILE",
    agent: str | None = None,
) -> str:
    """Run `coord hook CLIENT SessionStart` with the env file named; the name it announced."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("COORD_DIR", "COORD_AGENT", "CLAUDE_ENV_FILE", "CODEX_ENV_FILE")
    }
    env |= {"COORD_DIR": str(board_dir), env_var: str(env_file)}
    if agent is not None:
        env["COORD_AGENT"] = agent
    result = subprocess.run(
        [sys.executable, "-m", "coord", "hook", client, "SessionStart"],
        input=json.dumps(payload),
        env=env,
        cwd=board_dir.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    announced = re.search(r"You are coord agent `([^`]+)`", context)
    assert announced, context
    return announced.group(1)


def sourced_name(env_file: Path) -> str:
    """COORD_AGENT as a shell sees it after sourcing the file, as the client does."""
    env = {k: v for k, v in os.environ.items() if k != "COORD_AGENT"}
    shell = subprocess.run(
        ["sh", "-c", '. "$1" && printf %s "$COORD_AGENT"', "sh", str(env_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert shell.returncode == 0, shell.stderr
    return shell.stdout


@pytest.mark.parametrize(
    ("client", "env_var"),
    [("claude", "CLAUDE_ENV_FILE"), ("codex", "CODEX_ENV_FILE")],
)
def test_session_start_exports_the_announced_name_once(
    daemon: Daemon, tmp_path: Path, client: str, env_var: str
) -> None:
    env_file = tmp_path / "session-env.sh"
    env_file.write_text("export OTHER_TOOL=1")  # another hook's line, with no final newline
    payload = fixture(f"{client}/session_start.json", daemon.board_dir.parent)
    name = start(client, payload, daemon.board_dir, env_file, env_var=env_var)
    text = env_file.read_text()
    assert len(EXPORT.findall(text)) == 1, text
    assert text.startswith("export OTHER_TOOL=1\n")  # kept, and not run into coord's line
    assert sourced_name(env_file) == name
    # resumed: the same session starts again and the file keeps one line, the same name
    again = start(
        client, {**payload, "source": "resume"}, daemon.board_dir, env_file, env_var=env_var
    )
    assert again == name
    assert env_file.read_text() == text


def test_a_later_session_does_not_rename_the_shell(daemon: Daemon, tmp_path: Path) -> None:
    """Another session id on the same env file (``/clear``): no second, conflicting line."""
    env_file = tmp_path / "session-env.sh"
    payload = fixture("claude/session_start.json", daemon.board_dir.parent)
    name = start("claude", payload, daemon.board_dir, env_file)
    other = {**payload, "session_id": "0f9e8d7c-6b5a-4f3e-8d2c-1b0a99887766", "source": "clear"}
    start("claude", other, daemon.board_dir, env_file)
    assert len(EXPORT.findall(env_file.read_text())) == 1
    assert sourced_name(env_file) == name


def test_nothing_is_written_when_coord_agent_is_set(daemon: Daemon, tmp_path: Path) -> None:
    env_file = tmp_path / "session-env.sh"
    env_file.write_text("")
    payload = fixture("claude/session_start.json", daemon.board_dir.parent)
    assert start("claude", payload, daemon.board_dir, env_file, agent="alice") == "alice"
    assert env_file.read_text() == ""


def test_an_env_file_that_cannot_be_written_does_not_stop_the_session(
    daemon: Daemon, tmp_path: Path
) -> None:
    env_file = tmp_path / "no-such-dir" / "session-env.sh"
    payload = fixture("claude/session_start.json", daemon.board_dir.parent)
    start("claude", payload, daemon.board_dir, env_file)  # exit 0, the name still announced
    assert not env_file.exists()
