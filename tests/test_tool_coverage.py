"""Claude Code tools past Edit/Write/Bash: Monitor, PowerShell and other MCP servers' tools.

Each call is `coord hook claude PreToolUse` as Claude Code runs it: the documented hook JSON
(tests/hooks/claude/pre_tool_use_bash.json, with another tool_name and tool_input) on stdin,
a real board, and the answer read the way Claude Code reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coord.fast.clients import EVENTS
from coord.hooks import claude
from test_hooks import allowed, denied, fixture, hook, reserve


def call(repo: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    payload = fixture("claude/pre_tool_use_bash.json", repo)
    payload["tool_name"] = tool
    payload["tool_input"] = tool_input
    return payload


def judge(board_dir: Path, payload: dict[str, Any], agent: str | None = None) -> Any:
    repo = board_dir.parent
    return hook("claude", "PreToolUse", payload, board_dir=board_dir, cwd=repo, agent=agent)


@pytest.fixture
def held(board_dir: Path) -> Path:
    """A board where alice holds src/auth; the repository's root."""
    (board_dir.parent / "src" / "auth").mkdir(parents=True)
    reserve(board_dir, ["src/auth"], "alice")
    return board_dir.parent


def test_the_matcher_sends_monitor_powershell_and_mcp_tools_to_the_guard() -> None:
    import re

    matcher = re.compile(f"^(?:{EVENTS['claude']['PreToolUse']})$")
    for tool in ("Edit", "Bash", "Monitor", "PowerShell", "mcp__filesystem__write_file"):
        assert matcher.match(tool), tool


def test_monitor_is_judged_as_a_bash_command(board_dir: Path, held: Path) -> None:
    writes = call(held, "Monitor", {"command": "tail -F log >> src/auth/session.py"})
    assert "alice" in denied(judge(board_dir, writes), "claude")
    allowed(judge(board_dir, writes, agent="alice"))
    allowed(judge(board_dir, call(held, "Monitor", {"command": "tail -F src/auth/session.py"})))
    reason = denied(judge(board_dir, call(held, "Monitor", {"description": "x"})), "claude")
    assert "no command string" in reason and "\n" not in reason


@pytest.mark.parametrize(
    "command",
    [
        "Set-Content -Path src/auth/session.py -Value 'x'",
        "Set-Content -Path:src\\auth\\session.py -Value x",
        'Add-Content "src/auth/session.py" "x"; Get-Date',
        "Remove-Item -Recurse src/auth",
        "'x' | Out-File src/auth/../auth/session.py",
    ],
)
def test_a_powershell_command_naming_a_held_path_is_refused(
    board_dir: Path, held: Path, command: str
) -> None:
    payload = call(held, "PowerShell", {"command": command, "description": "edit"})
    assert "alice" in denied(judge(board_dir, payload), "claude")
    allowed(judge(board_dir, payload, agent="alice"))


def test_a_powershell_command_naming_no_held_path_is_allowed(board_dir: Path, held: Path) -> None:
    for command in (
        "Get-ChildItem -Recurse | Measure-Object",
        "Set-Content -Path src/free.py -Value $x",
        "Write-Output 'hello, world' > /tmp/notes.txt",
    ):
        allowed(judge(board_dir, call(held, "PowerShell", {"command": command})))
    reason = denied(judge(board_dir, call(held, "PowerShell", {"cmd": 1})), "claude")
    assert "no command string" in reason and "\n" not in reason


def test_an_mcp_tool_is_judged_on_the_paths_it_names(board_dir: Path, held: Path) -> None:
    for tool_input in (
        {"path": "src/auth/session.py", "content": "x"},
        {"paths": ["src/free.py", "src/auth/session.py"]},
        {"source": "src/free.py", "destination": "src/auth/new.py"},
    ):
        payload = call(held, "mcp__filesystem__write_file", tool_input)
        assert "alice" in denied(judge(board_dir, payload), "claude"), tool_input
        allowed(judge(board_dir, payload, agent="alice"))
    for tool_input in ({"path": "src/free.py"}, {"query": "src/auth/session.py"}, {}):
        allowed(judge(board_dir, call(held, "mcp__filesystem__write_file", tool_input)))
    for bad in ({"path": 3}, {"paths": ["src/a.py", None]}, {"path": []}):
        reason = denied(judge(board_dir, call(held, "mcp__files__edit", bad)), "claude")
        assert "coord hook:" in reason and "\n" not in reason, bad


def test_coords_own_mcp_tools_are_answered_by_the_board_not_the_guard(
    board_dir: Path, held: Path
) -> None:
    payload = call(held, "mcp__coord__reserve", {"paths": ["src/auth/session.py"]})
    allowed(judge(board_dir, payload))


def test_command_words() -> None:
    assert claude.command_words("Set-Content -Path:a\\b.py -Value $x; cat 'c d.txt'") == [
        "Set-Content",
        "a/b.py",
        "cat",
        "c",
        "d.txt",
    ]
    assert claude.command_words("") == []
