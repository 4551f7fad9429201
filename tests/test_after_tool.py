"""The after-tool check: a call the guard allowed changed a file another agent holds.

Each client's real hook pair runs as the client runs it: `coord hook CLIENT <guard event>`
with the documented input (tests/hooks/), then the command itself, executed in the
repository as the client would run it, then `coord hook CLIENT <after event>`. The command
writes (or deletes) alice's held file through a spelling the guard lets through. What must
follow: the file is put back from the snapshot, one held_files_changed event names the agent,
the command and the file, it reaches alice's inbox, and the agent is told in its client's own
words (Cursor, which reads no after answer, at its stop hook).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from coord.core.board import Board
from test_hooks import HELD, allowed, fixture, hook, name_of, reserve

ORIGINAL = "TIMEOUT = 30\n"
# (client, guard event, guard fixture, after event)
CLIENTS = [
    ("claude", "PreToolUse", "claude/pre_tool_use_bash.json", "PostToolUse"),
    ("codex", "PreToolUse", "codex/pre_tool_use_bash.json", "PostToolUse"),
    ("gemini", "BeforeTool", "gemini/before_tool_run_shell_command.json", "AfterTool"),
    ("cursor", "beforeShellExecution", "cursor/before_shell_execution.json", "afterShellExecution"),
]
# Spellings of "write src/auth/session.py" the guard cannot read as a write of it: a script
# in a free path. The first one the guard allows is used (a stricter guard may refuse some).
WRITERS = [
    "python3 tools/regen.py",
    "sh tools/regen.sh",
]


@pytest.fixture
def repo(board_dir: Path) -> Path:
    """alice holds src/auth; its session.py exists; tools/ has scripts that write it."""
    root = board_dir.parent
    (root / "src/auth").mkdir(parents=True)
    (root / HELD).write_text(ORIGINAL)
    (root / "tools").mkdir()
    (root / "tools/regen.py").write_text(f"open({HELD!r}, 'w').write('TIMEOUT = 60\\n')\n")
    (root / "tools/regen.sh").write_text(f"echo 'TIMEOUT = 60' > {HELD}\n")
    (root / "tools/clean.py").write_text(f"import os\nos.remove({HELD!r})\n")
    (root / "tools/touch.py").write_text(f"import os\nos.utime({HELD!r}, (1, 1))\n")
    reserve(board_dir, ["src/auth"], "alice")
    return root


def with_command(client: str, payload: dict[str, Any], command: str) -> dict[str, Any]:
    if client == "cursor":
        payload["command"] = command
    else:
        payload["tool_input"]["command"] = command
    return payload


def after_payload(client: str, event: str, before: dict[str, Any], out: str) -> dict[str, Any]:
    """The after event's input: the same call, with what the tool answered (each client's
    documented field: tool_response, Cursor's output)."""
    payload = {**before, "hook_event_name": event}
    if client == "cursor":
        payload["output"] = out
        payload["duration"] = 12
    elif client == "gemini":
        payload["tool_response"] = {"llmContent": out, "returnDisplay": out}
    else:
        payload["tool_response"] = {"stdout": out, "stderr": "", "interrupted": False}
    return payload


def run_allowed_call(
    client: str,
    guard_event: str,
    guard_fixture: str,
    board_dir: Path,
    writers: list[str],
    *,
    succeeds: bool = True,
) -> tuple[dict[str, Any], str]:
    """Send the guard each spelling until one is allowed; run that command as the client
    would (it must succeed, or fail when not ``succeeds``). The guard's input and the
    command."""
    repo = board_dir.parent
    # the guard refuses what it cannot read near a held file; a test runner it lets through
    # unread (README: "let through unread") is how such a write still gets past it
    (repo / "Makefile").write_text("test:\n\t$(RUN)\n")
    for command in [*writers, *(f"make -s test RUN='{w}'" for w in writers)]:
        payload = with_command(client, fixture(guard_fixture, repo), command)
        answer = hook(client, guard_event, payload, board_dir=board_dir, cwd=repo)
        if (answer.returncode, answer.stdout) == (0, ""):
            break
    else:
        pytest.fail(f"the guard refused every spelling of the write: {writers}")
    done = subprocess.run(["sh", "-c", command], cwd=repo, capture_output=True, text=True)
    assert (done.returncode == 0) == succeeds, done.stderr
    return payload, command


def claude_after(payload: dict[str, Any], board_dir: Path, cwd: Path) -> Any:
    """Claude Code's PostToolUse hook for the call whose guard input was ``payload``."""
    after = after_payload("claude", "PostToolUse", payload, "")
    return hook("claude", "PostToolUse", after, board_dir=board_dir, cwd=cwd)


def agent_of(client: str, payload: dict[str, Any]) -> str:
    if client == "cursor":
        from coord.fast import identity

        return identity.session_name("cursor", payload["conversation_id"])
    return name_of(client, payload)


def told(client: str, result: subprocess.CompletedProcess[str]) -> str:
    """The message the client gives the agent from the after hook's answer."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    if client in ("claude", "codex"):
        assert answer["decision"] == "block"
        assert isinstance(answer["systemMessage"], str)
        return str(answer["reason"])
    if client == "gemini":
        out = answer["hookSpecificOutput"]
        assert out["hookEventName"] == "AfterTool"
        return str(out["additionalContext"])
    assert answer == {}  # Cursor reads no after answer: the stop hook delivers it
    return ""


def events_of(board_dir: Path, kind: str) -> list[Any]:
    board = Board.open(board_dir)
    try:
        return [e for e in board.events(0, 5000) if e.kind == kind]
    finally:
        board.close()


def inbox_of(board_dir: Path, agent: str) -> list[Any]:
    board = Board.open(board_dir)
    try:
        return board.inbox(agent, peek=True)
    finally:
        board.close()


@pytest.mark.parametrize(("client", "guard_event", "guard_fixture", "after_event"), CLIENTS)
def test_a_held_file_an_allowed_command_changed_is_put_back_reported_and_told(
    board_dir: Path,
    repo: Path,
    client: str,
    guard_event: str,
    guard_fixture: str,
    after_event: str,
) -> None:
    payload, command = run_allowed_call(client, guard_event, guard_fixture, board_dir, WRITERS)
    assert (repo / HELD).read_text() == "TIMEOUT = 60\n"  # the command did write it
    agent = agent_of(client, payload)

    result = hook(
        client,
        after_event,
        after_payload(client, after_event, payload, ""),
        board_dir=board_dir,
        cwd=repo,
    )
    text = told(client, result)

    assert (repo / HELD).read_text() == ORIGINAL  # put back from the snapshot
    (event,) = events_of(board_dir, "held_files_changed")
    assert event.agent == agent
    assert event.details["command"] == command
    assert [
        (f["path"], f["holder"], f["change"], f["restored"]) for f in event.details["files"]
    ] == [(HELD, "alice", "modified", True)]
    kept = event.details["files"][0]["kept"]  # what the restore overwrote is kept
    assert (board_dir / "snapshots" / kept).read_text() == "TIMEOUT = 60\n"
    assert [e.seq for e in inbox_of(board_dir, "alice")] == [event.seq]  # alice is told
    if client == "cursor":  # at the end of the turn, as a follow-up the agent reads
        stop = fixture("cursor/stop.json", repo)
        answer = hook("cursor", "stop", stop, board_dir=board_dir, cwd=repo)
        assert answer.returncode == 0, answer.stderr
        text = json.loads(answer.stdout)["followup_message"]
        again = hook("cursor", "stop", stop, board_dir=board_dir, cwd=repo)
        assert "followup_message" not in json.loads(again.stdout or "{}")  # told once
    assert HELD in text and "alice" in text and "put it back" in text
    assert command in text


def test_a_deleted_held_file_counts_and_comes_back_with_its_mode(
    board_dir: Path, repo: Path
) -> None:
    os.chmod(repo / HELD, 0o640)
    payload, _ = run_allowed_call(
        "claude",
        "PreToolUse",
        "claude/pre_tool_use_bash.json",
        board_dir,
        ["python3 tools/clean.py"],
    )
    assert not (repo / HELD).exists()
    result = claude_after(payload, board_dir, repo)
    assert "deleted" in told("claude", result)
    assert (repo / HELD).read_text() == ORIGINAL
    assert (os.stat(repo / HELD).st_mode & 0o777) == 0o640
    (event,) = events_of(board_dir, "held_files_changed")
    assert event.details["files"][0]["change"] == "deleted"
    assert "kept" not in event.details["files"][0]  # nothing was there to keep


def test_a_failing_command_claude_code_reports_as_a_failure_is_checked_too(
    board_dir: Path, repo: Path
) -> None:
    """Claude Code fires PostToolUseFailure, not PostToolUse, for a command that fails: a
    write before the failure is still caught, and the agent is told in that event's words."""
    (repo / "tools/regen_fail.py").write_text(
        f"open({HELD!r}, 'w').write('TIMEOUT = 60\\n')\nraise SystemExit(1)\n"
    )
    payload, _ = run_allowed_call(
        "claude",
        "PreToolUse",
        "claude/pre_tool_use_bash.json",
        board_dir,
        ["python3 tools/regen_fail.py"],
        succeeds=False,
    )
    failure = {**payload, "hook_event_name": "PostToolUseFailure", "error": "exit 1"}
    result = hook("claude", "PostToolUseFailure", failure, board_dir=board_dir, cwd=repo)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUseFailure"
    assert HELD in out["additionalContext"] and "alice" in out["additionalContext"]
    assert (repo / HELD).read_text() == ORIGINAL
    assert len(events_of(board_dir, "held_files_changed")) == 1


def test_nothing_changed_or_only_touched_says_nothing(board_dir: Path, repo: Path) -> None:
    for command in ("ls src", "python3 tools/touch.py"):
        payload, _ = run_allowed_call(
            "claude", "PreToolUse", "claude/pre_tool_use_bash.json", board_dir, [command]
        )
        result = hook(
            "claude",
            "PostToolUse",
            after_payload("claude", "PostToolUse", payload, ""),
            board_dir=board_dir,
            cwd=repo,
        )
        allowed(result)
    assert events_of(board_dir, "held_files_changed") == []


def test_the_holders_own_change_is_not_reported(board_dir: Path, repo: Path) -> None:
    payload = with_command(
        "claude", fixture("claude/pre_tool_use_bash.json", repo), "python3 tools/regen.py"
    )
    allowed(hook("claude", "PreToolUse", payload, board_dir=board_dir, cwd=repo, agent="alice"))
    subprocess.run(["python3", "tools/regen.py"], cwd=repo, check=True)
    after = after_payload("claude", "PostToolUse", payload, "")
    allowed(hook("claude", "PostToolUse", after, board_dir=board_dir, cwd=repo, agent="alice"))
    assert (repo / HELD).read_text() == "TIMEOUT = 60\n"  # alice's own write stands
    assert events_of(board_dir, "held_files_changed") == []


def test_a_change_while_the_holder_is_mid_call_is_kept_not_reverted(
    board_dir: Path, repo: Path
) -> None:
    """alice's own call is in flight (its guard ran, its after hook has not): the write may
    be hers, so the file is not put back; the event and both messages still happen."""
    alice_call = with_command("claude", fixture("claude/pre_tool_use_bash.json", repo), "make")
    alice_call["tool_use_id"] = "toolu_alice"
    allowed(hook("claude", "PreToolUse", alice_call, board_dir=board_dir, cwd=repo, agent="alice"))
    payload, _ = run_allowed_call(
        "claude", "PreToolUse", "claude/pre_tool_use_bash.json", board_dir, WRITERS
    )
    result = claude_after(payload, board_dir, repo)
    text = told("claude", result)
    assert "NOT put back" in text and "alice has a tool call running" in text
    assert (repo / HELD).read_text() == "TIMEOUT = 60\n"
    (event,) = events_of(board_dir, "held_files_changed")
    assert event.details["files"][0]["restored"] is False


def test_a_change_the_holder_made_in_a_call_of_its_own_meanwhile_is_not_reverted(
    board_dir: Path, repo: Path
) -> None:
    """bob's call runs long (a build, a wait); alice, the holder, edits her file in a call
    that begins and ends inside bob's: when bob's after hook runs, no call of hers is in
    flight, but the change may be hers, so it stays (Gemini CLI's two-session test caught
    alice's write being put back)."""
    bob_call = with_command("claude", fixture("claude/pre_tool_use_bash.json", repo), "ls src")
    allowed(hook("claude", "PreToolUse", bob_call, board_dir=board_dir, cwd=repo))
    alice_call = with_command("claude", fixture("claude/pre_tool_use_bash.json", repo), "true")
    alice_call["tool_use_id"] = "toolu_alice"
    allowed(hook("claude", "PreToolUse", alice_call, board_dir=board_dir, cwd=repo, agent="alice"))
    (repo / HELD).write_text("TIMEOUT = 45\n")  # alice's own edit
    alice_after = after_payload("claude", "PostToolUse", alice_call, "")
    hook("claude", "PostToolUse", alice_after, board_dir=board_dir, cwd=repo, agent="alice")
    result = claude_after(bob_call, board_dir, repo)
    assert result.returncode == 0, result.stderr
    assert (repo / HELD).read_text() == "TIMEOUT = 45\n"
    assert "alice ran a tool call of its own meanwhile" in told("claude", result)
    (event,) = events_of(board_dir, "held_files_changed")
    assert event.details["files"][0]["restored"] is False


def test_with_no_daemon_the_restore_stands_and_the_agent_hears_it_was_not_recorded(
    board_dir: Path, repo: Path
) -> None:
    payload, _ = run_allowed_call(
        "claude", "PreToolUse", "claude/pre_tool_use_bash.json", board_dir, WRITERS
    )
    after = after_payload("claude", "PostToolUse", payload, "")
    env_path = os.environ["PATH"]
    # the daemon cannot start: the board's token is unreadable to the check that starts it
    token = board_dir / "token"
    token.rename(board_dir / "token.away")
    try:
        result = hook("claude", "PostToolUse", after, board_dir=board_dir, cwd=repo)
    finally:
        (board_dir / "token.away").rename(token)
    assert os.environ["PATH"] == env_path
    text = told("claude", result)
    assert (repo / HELD).read_text() == ORIGINAL
    assert "could not record" in text and "tell alice yourself" in text
    assert events_of(board_dir, "held_files_changed") == []


def test_a_glob_hold_is_expanded_against_the_tree(board_dir: Path) -> None:
    """alice holds src/*.py: the files it matches are watched and put back; a file beside
    them it does not match (src/notes.txt) is not alice's, and changes to it stand."""
    root = board_dir.parent
    (root / "src").mkdir()
    (root / "src/a.py").write_text("a = 1\n")
    (root / "src/notes.txt").write_text("notes\n")
    (root / "tools").mkdir()
    (root / "tools/both.py").write_text(
        "open('src/a.py', 'w').write('a = 2\\n')\nopen('src/notes.txt', 'w').write('more\\n')\n"
    )
    reserve(board_dir, ["src/*.py"], "alice")
    payload, _ = run_allowed_call(
        "claude",
        "PreToolUse",
        "claude/pre_tool_use_bash.json",
        board_dir,
        ["python3 tools/both.py"],
    )
    result = claude_after(payload, board_dir, root)
    assert "src/a.py (held by alice)" in told("claude", result)
    assert (root / "src/a.py").read_text() == "a = 1\n"
    assert (root / "src/notes.txt").read_text() == "more\n"
    (event,) = events_of(board_dir, "held_files_changed")
    assert [f["path"] for f in event.details["files"]] == ["src/a.py"]


def test_a_bad_report_is_refused_and_changes_nothing(board_dir: Path) -> None:
    from coord.errors import InvalidInput

    board = Board.open(board_dir)
    try:
        before = board.last_seq()
        for changed in (
            [],
            [{"path": "src/a.py", "holder": "alice", "change": "renamed"}],
            [{"path": "src/a.py", "holder": "alice", "change": "modified", "colour": 1}],
            [{"path": "", "holder": "alice", "change": "modified"}],
            "src/a.py",
        ):
            with pytest.raises(InvalidInput) as refused:
                board.report_held_change(agent="bob", files=changed, command="make")
            assert refused.value.details["field"] == "changed"
        assert board.last_seq() == before
    finally:
        board.close()


def test_a_call_past_its_copy_budget_watches_by_stat_and_the_next_call_copies(
    board_dir: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call on a big tree cannot copy every held file inside the guard's deadline:
    what it did not copy is watched by its stat (a change is reported, not put back), and a
    later call copies it."""
    from coord.fast import tripwire, watchlist

    where = tripwire.place(str(board_dir), str(repo), "bob", "call-1")
    monkeypatch.setattr(watchlist, "COPY_SECONDS", 0.0)
    assert tripwire.before(where, {"tool": "Bash", "command": "make"}) == 1
    (repo / HELD).write_text("TIMEOUT = 60\n")
    (change,) = tripwire.after(where, tripwire.load(where) or {})
    assert (change.path, change.restored) == (HELD, False)
    assert change.why is not None and "no snapshot of its content" in change.why
    assert (repo / HELD).read_text() == "TIMEOUT = 60\n"

    monkeypatch.setattr(watchlist, "COPY_SECONDS", 2.0)
    where = tripwire.place(str(board_dir), str(repo), "bob", "call-2")
    tripwire.before(where, {"tool": "Bash", "command": "make"})
    (repo / HELD).write_text("TIMEOUT = 90\n")
    (change,) = tripwire.after(where, tripwire.load(where) or {})
    assert change.restored
    assert (repo / HELD).read_text() == "TIMEOUT = 60\n"
