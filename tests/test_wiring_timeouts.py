"""A slow guard fails closed: `coord init` writes each client's hook timeout, and the guard
refuses on its own deadline well before the client would give up on it.

Every client lets a call through when its guard hook times out: Claude Code and Codex count a
timed-out hook as a failed one (openai/codex ``codex-rs/hooks/src/engine/command_runner.rs``:
"hook timed out", status Failed, the call not blocked), Gemini CLI resolves it unsuccessful
with no decision (``packages/core/src/hooks/hookRunner.ts``), and Cursor lets it through
unless the hook says ``failClosed``. So the guard must answer first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coord import hooks
from coord.fast.clients import EVENTS, GUARD_EVENTS, GUARD_TIMEOUT_SECONDS
from test_wiring import coord, load, new_repo

# where each client keeps coord's hooks, and the unit of its timeout (seconds per unit)
FILES = {
    "claude": (".claude/settings.json", 1),
    "codex": (".codex/hooks.json", 1),
    "gemini": (".gemini/settings.json", 1000),
}


def our_hooks(repo: Path, client: str) -> dict[str, list[dict[str, Any]]]:
    """Each event's coord hook entries (the inner hooks for Claude Code's shape)."""
    if client == "cursor":
        hooks_json = load(repo, ".cursor/hooks.json")["hooks"]
        return {e: [h for h in v if "coord" in h["command"]] for e, v in hooks_json.items()}
    groups = load(repo, FILES[client][0])["hooks"]
    return {
        event: [h for g in entries for h in g["hooks"] if "coord" in h["command"]]
        for event, entries in groups.items()
    }


@pytest.mark.parametrize("client", ["claude", "codex", "gemini", "cursor"])
def test_init_writes_every_hook_a_timeout_the_guard_answers_well_within(
    tmp_path: Path, client: str
) -> None:
    repo = new_repo(tmp_path)
    done = coord(repo, "init", f"--{client}")
    assert done.returncode == 0, done.stderr
    wired = our_hooks(repo, client)
    assert set(wired) >= set(EVENTS[client])
    unit = FILES.get(client, (None, 1))[1]
    for event in EVENTS[client]:
        (hook,) = wired[event]
        seconds = hook["timeout"] / unit
        if event in GUARD_EVENTS[client]:
            assert seconds == GUARD_TIMEOUT_SECONDS
            # the guard's own refusal comes first, with room for Python to start
            assert seconds >= hooks.GUARD_DEADLINE_SECONDS * 2
            if client == "cursor":
                assert hook["failClosed"] is True
        else:
            assert seconds >= GUARD_TIMEOUT_SECONDS  # session start may start the daemon


def deny_reason(client: str, stdout: str) -> str:
    answer = json.loads(stdout)
    if client == "gemini":
        assert answer["decision"] == "deny"
        return str(answer["reason"])
    if client == "cursor":
        assert answer["permission"] == "deny"
        return str(answer["agent_message"])
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    return str(out["permissionDecisionReason"])


@pytest.mark.parametrize(
    ("client", "event"),
    [
        ("claude", "PreToolUse"),
        ("codex", "PreToolUse"),
        ("gemini", "BeforeTool"),
        ("cursor", "beforeShellExecution"),
    ],
)
def test_a_guard_that_cannot_decide_refuses_at_its_deadline(
    tmp_path: Path, client: str, event: str
) -> None:
    """The guard is stuck (here: its input never ends, as from a client that never closes
    the pipe): at its deadline it refuses, in the client's own words, and exits."""
    env = {**os.environ, hooks.DEADLINE_VAR: "1"}
    env.pop("COORD_DIR", None)
    with subprocess.Popen(
        [sys.executable, "-m", "coord", "hook", client, event],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    ) as process:
        assert process.stdin and process.stdout and process.stderr
        process.stdin.write('{"tool_name": "Bash", ')  # and nothing more, never closed
        process.stdin.flush()
        try:
            process.wait(timeout=30)  # a liveness bound, not a timing
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("the guard never answered: the client's timeout lets the call through")
        out, err = process.stdout.read(), process.stderr.read()
    assert process.returncode == 0, err
    reason = deny_reason(client, out)
    assert "did not decide within 1 s" in reason and "refusing" in reason


def test_the_deadline_can_be_shortened_never_lengthened(monkeypatch: pytest.MonkeyPatch) -> None:
    for asked, expected in (
        ("2.5", 2.5),
        ("1000", hooks.GUARD_DEADLINE_SECONDS),
        ("0", hooks.GUARD_DEADLINE_SECONDS),
        ("-1", hooks.GUARD_DEADLINE_SECONDS),
        ("soon", hooks.GUARD_DEADLINE_SECONDS),
    ):
        monkeypatch.setenv(hooks.DEADLINE_VAR, asked)
        assert hooks.guard_deadline() == expected, asked
