"""`coord hook CLIENT EVENT` as the clients run it: the real command, their JSON on stdin.

The inputs are the documented ones in tests/hooks/ (see its README); the boards are real
SQLite files; every answer is checked the way the client reads it (stdout JSON, exit code).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, init_board_dir
from coord import hooks
from coord.core.board import Board
from coord.fast import board_files, identity
from coord.hooks import patch, shell

FIXTURES = Path(__file__).parent / "hooks"
HELD = "src/auth/session.py"  # the fixtures' file; alice holds src/auth in most tests

# (client, guard event, fixture) for every tool that edits files
EDITS = [
    ("claude", "PreToolUse", "claude/pre_tool_use_edit.json"),
    ("claude", "PreToolUse", "claude/pre_tool_use_write.json"),
    ("claude", "PreToolUse", "claude/pre_tool_use_multiedit.json"),
    ("codex", "PreToolUse", "codex/pre_tool_use_apply_patch.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_write_file.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_replace.json"),
]
SHELLS = [
    ("claude", "PreToolUse", "claude/pre_tool_use_bash.json"),
    ("codex", "PreToolUse", "codex/pre_tool_use_bash.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_run_shell_command.json"),
]
STARTS = [
    ("claude", "claude/session_start.json"),
    ("codex", "codex/session_start.json"),
    ("gemini", "gemini/session_start.json"),
]
STOPS = [
    ("claude", "Stop", "claude/stop.json"),
    ("codex", "Stop", "codex/stop.json"),
    ("gemini", "AfterAgent", "gemini/after_agent.json"),
]
GUARDS = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}
IDS = [f"{client}:{Path(name).stem}" for client, _, name in EDITS]


def fixture(name: str, repo: Path) -> dict[str, Any]:
    """A documented hook input, with the repository at /REPO."""
    return _place(json.loads((FIXTURES / name).read_text()), str(repo))


def _place(value: Any, root: str) -> Any:
    if isinstance(value, str) and (value == "/REPO" or value.startswith("/REPO/")):
        return root + value[len("/REPO") :]
    if isinstance(value, dict):
        return {k: _place(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_place(v, root) for v in value]
    return value


def hook(
    client: str,
    event: str,
    payload: Any,
    *,
    board_dir: Path | None,
    cwd: Path,
    agent: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`coord hook CLIENT EVENT` as a fresh process; ``board_dir`` None: no COORD_DIR."""
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    if board_dir is not None:
        env["COORD_DIR"] = str(board_dir)
    if agent is not None:
        env["COORD_AGENT"] = agent
    return subprocess.run(
        [sys.executable, "-m", "coord", "hook", client, event],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def denied(result: subprocess.CompletedProcess[str], client: str) -> str:
    """The refusal's reason, checked to be exactly the client's documented deny."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    if client == "gemini":
        assert set(answer) == {"decision", "reason"} and answer["decision"] == "deny"
        reason = answer["reason"]
    else:
        assert set(answer) == {"hookSpecificOutput"}
        out = answer["hookSpecificOutput"]
        assert set(out) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
        assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
        reason = out["permissionDecisionReason"]
    assert isinstance(reason, str) and reason.strip()
    return str(reason)


def allowed(result: subprocess.CompletedProcess[str]) -> None:
    """Allowed in silence: exit 0 and nothing on stdout (no "allow" that skips prompts)."""
    assert (result.returncode, result.stdout) == (0, ""), (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr


def name_of(client: str, payload: dict[str, Any]) -> str:
    return identity.session_name(client, payload["session_id"])


def reserve(board_dir: Path, patterns: list[str], agent: str, **options: Any) -> None:
    board = Board.open(board_dir)
    try:
        board.reserve(patterns, agent=agent, **options)
    finally:
        board.close()


def with_path(payload: dict[str, Any], path: str) -> dict[str, Any]:
    """The same edit, of another file (as written in the tool's own format)."""
    tool_input = payload["tool_input"]
    if payload["tool_name"] == "apply_patch":
        tool_input["command"] = (
            f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch"
        )
    else:
        key = "notebook_path" if "notebook_path" in tool_input else "file_path"
        tool_input[key] = path
    return payload


def with_command(payload: dict[str, Any], command: str) -> dict[str, Any]:
    payload["tool_input"]["command"] = command
    return payload


# --- the guard: edits -------------------------------------------------------------------------


@pytest.mark.parametrize(("client", "event", "name"), EDITS, ids=IDS)
def test_an_edit_of_a_file_another_agent_holds_is_denied(
    board_dir: Path, client: str, event: str, name: str
) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth"], "alice", reason="session rework")
    reason = denied(hook(client, event, fixture(name, repo), board_dir=board_dir, cwd=repo), client)
    assert f"{HELD} is held by alice (src/auth)" in reason
    assert "until" in reason and "pick other work" in reason
    assert not (board_dir / "daemon.json").exists()  # no daemon needed or started


@pytest.mark.parametrize(("client", "event", "name"), EDITS, ids=IDS)
def test_the_holder_and_free_files_are_allowed_in_silence(
    board_dir: Path, client: str, event: str, name: str
) -> None:
    repo = board_dir.parent
    payload = fixture(name, repo)
    reserve(board_dir, ["src/auth"], name_of(client, payload))  # this session holds it
    allowed(hook(client, event, payload, board_dir=board_dir, cwd=repo))
    reserve(board_dir, ["docs/shared.md"], "bob", shared=True)  # shared: others may edit
    free = with_path(fixture(name, repo), str(repo / "src/other.py"))
    allowed(hook(client, event, free, board_dir=board_dir, cwd=repo))
    shared = with_path(fixture(name, repo), str(repo / "docs/shared.md"))
    allowed(hook(client, event, shared, board_dir=board_dir, cwd=repo))
    # COORD_AGENT names the agent whatever the session: bob is not the holder
    reason = denied(
        hook(client, event, payload, board_dir=board_dir, cwd=repo, agent="bob"), client
    )
    assert f"held by {name_of(client, payload)}" in reason


def test_claude_notebook_edit_reads_notebook_path(board_dir: Path) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth/*.ipynb"], "alice")
    payload = fixture("claude/pre_tool_use_notebookedit.json", repo)
    reason = denied(hook("claude", "PreToolUse", payload, board_dir=board_dir, cwd=repo), "claude")
    assert "src/auth/analysis.ipynb is held by alice (src/auth/*.ipynb)" in reason
    allowed(hook("claude", "PreToolUse", payload, board_dir=board_dir, cwd=repo, agent="alice"))


def test_codex_patch_paths_are_read_relative_to_cwd_and_every_file_counts(board_dir: Path) -> None:
    repo = board_dir.parent
    (repo / "src").mkdir()
    reserve(board_dir, ["docs/auth.md"], "alice")
    payload = fixture("codex/pre_tool_use_apply_patch.json", repo)  # updates src/auth/session.py
    reason = denied(hook("codex", "PreToolUse", payload, board_dir=board_dir, cwd=repo), "codex")
    assert "docs/auth.md is held by alice" in reason  # the patch's second file
    payload["cwd"] = str(repo / "src")
    with_path(payload, "auth/session.py")
    reserve(board_dir, ["src/auth"], "carol")
    reason = denied(hook("codex", "PreToolUse", payload, board_dir=board_dir, cwd=repo), "codex")
    assert "src/auth/session.py is held by carol" in reason
    moved = fixture("codex/pre_tool_use_apply_patch.json", repo)
    moved["tool_input"]["command"] = (
        "*** Begin Patch\n*** Update File: src/free.py\n*** Move to: docs/auth.md\n*** End Patch"
    )
    assert "docs/auth.md is held by alice" in denied(
        hook("codex", "PreToolUse", moved, board_dir=board_dir, cwd=repo), "codex"
    )


def test_tools_that_do_not_edit_are_allowed_even_on_held_files(board_dir: Path) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth"], "alice")
    for client, name in (
        ("claude", "claude/pre_tool_use_read.json"),
        ("gemini", "gemini/before_tool_read_file.json"),
    ):
        payload = fixture(name, repo)
        allowed(hook(client, GUARDS[client], payload, board_dir=board_dir, cwd=repo))
    # a tool coord does not know is guarded when it names a file
    unknown = fixture("claude/pre_tool_use_edit.json", repo)
    unknown["tool_name"] = "mcp__files__overwrite"
    assert "held by alice" in denied(
        hook("claude", "PreToolUse", unknown, board_dir=board_dir, cwd=repo), "claude"
    )
    unknown["tool_input"] = {"file_path": ["src/a.py"]}  # a path it cannot read: refused
    reason = denied(hook("claude", "PreToolUse", unknown, board_dir=board_dir, cwd=repo), "claude")
    assert "no file_path string" in reason and "\n" not in reason
    unknown["tool_input"] = {"url": "https://example.com"}
    allowed(hook("claude", "PreToolUse", unknown, board_dir=board_dir, cwd=repo))


# --- one rule for every way of writing a file -------------------------------------------------

WRITERS = EDITS + SHELLS  # every client's every tool that writes a file


def writing(name: str, repo: Path, path: str) -> dict[str, Any]:
    """The tool of fixture ``name`` writing ``path``: an edit of it, or a shell command
    that writes into it."""
    payload = fixture(name, repo)
    if payload["tool_name"] in ("Bash", "run_shell_command"):
        return with_command(payload, f"echo x > {shlex.quote(path)}")
    return with_path(payload, path)


@pytest.mark.parametrize(
    ("client", "event", "name"), WRITERS, ids=[f"{c}:{Path(n).stem}" for c, _, n in WRITERS]
)
def test_every_way_of_writing_meets_one_rule_inside_and_outside_the_repository(
    board_dir: Path, tmp_path_factory: pytest.TempPathFactory, client: str, event: str, name: str
) -> None:
    """Outside every coord repository nothing can be held, so coord allows it (an agent's
    /tmp notes are normal work); a path that resolves into a repository is judged there
    however it is spelled; .git is refused. The same for edit tools and shell commands:
    before, an Edit outside was refused while a shell write there was allowed."""
    repo = board_dir.parent
    (repo / "src" / "auth").mkdir(parents=True)
    reserve(board_dir, ["src/auth"], "alice")
    outside = tmp_path_factory.mktemp("elsewhere")  # in no coord repository
    (repo / "out").symlink_to(outside)  # looks inside, leads outside
    (outside / "auth").symlink_to(repo / "src" / "auth")  # looks outside, leads inside
    other = tmp_path_factory.mktemp("other-repo")  # another repository with its own board
    (other / "lib").mkdir()
    reserve(init_board_dir(other), ["lib"], "carol")
    for path in (
        str(outside / "notes.md"),
        "../scratch.py",
        "/etc/passwd",
        "out/file.py",
        str(repo / "src" / "free.py"),
    ):
        allowed(hook(client, event, writing(name, repo, path), board_dir=board_dir, cwd=repo))
    for path, holder in (
        (str(outside / "auth" / "session.py"), "alice"),
        ("src/auth/../auth/session.py", "alice"),
        (str(other / "lib" / "x.py"), "carol"),
    ):
        payload = writing(name, repo, path)
        reason = denied(hook(client, event, payload, board_dir=board_dir, cwd=repo), client)
        assert f"held by {holder}" in reason or f"{holder} holds" in reason, (path, reason)
        allowed(hook(client, event, payload, board_dir=board_dir, cwd=repo, agent=holder))
    payload = writing(name, repo, ".git/config")
    reason = denied(hook(client, event, payload, board_dir=board_dir, cwd=repo), client)
    assert "inside .git" in reason and "\n" not in reason, reason


@pytest.mark.parametrize("client", ["claude", "codex", "gemini"])
@pytest.mark.parametrize("damage", ["garbage", "directory", "missing"])
def test_an_unreadable_board_fails_closed(tmp_path: Path, client: str, damage: str) -> None:
    board_dir = init_board_dir(tmp_path)
    db = board_dir / "board.db"
    for extra in (db, board_dir / "board.db-wal", board_dir / "board.db-shm"):
        extra.unlink(missing_ok=True)
    if damage == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    elif damage == "directory":
        db.mkdir()
    name = next(n for c, _, n in EDITS if c == client)
    result = hook(
        client, GUARDS[client], fixture(name, tmp_path), board_dir=board_dir, cwd=tmp_path
    )
    reason = denied(result, client)
    assert "cannot check the board" in reason and "\n" not in reason
    shell_name = next(n for c, _, n in SHELLS if c == client)  # writes src/auth/session.py
    result = hook(
        client, GUARDS[client], fixture(shell_name, tmp_path), board_dir=board_dir, cwd=tmp_path
    )
    assert "cannot check the board" in denied(result, client)


@pytest.mark.parametrize("client", ["claude", "codex", "gemini"])
def test_malformed_input_is_denied_with_one_line(board_dir: Path, client: str) -> None:
    repo = board_dir.parent
    event = GUARDS[client]
    name = next(n for c, _, n in EDITS if c == client)
    no_tool = fixture(name, repo)
    del no_tool["tool_name"]
    no_input = fixture(name, repo)
    no_input["tool_input"] = "src/a.py"
    bad_path = fixture(name, repo)
    bad_path["tool_input"] = {"file_path": 7, "command": ["apply_patch"]}
    no_cwd = fixture(name, repo)
    del no_cwd["cwd"]
    for payload in ("", "{not json", "[1, 2]", '"PreToolUse"', no_tool, no_input, bad_path, no_cwd):
        reason = denied(hook(client, event, payload, board_dir=board_dir, cwd=repo), client)
        assert "\n" not in reason and reason.startswith("coord hook:"), reason
    empty_patch = fixture("codex/pre_tool_use_apply_patch.json", repo)
    empty_patch["tool_input"]["command"] = "*** Begin Patch\n*** End Patch\n"
    reason = denied(
        hook("codex", "PreToolUse", empty_patch, board_dir=board_dir, cwd=repo), "codex"
    )
    assert "found no file" in reason


def test_without_a_board_coord_stays_out_of_the_way(tmp_path: Path) -> None:
    for client, event, name in EDITS + SHELLS:
        payload = fixture(name, tmp_path)
        allowed(hook(client, event, payload, board_dir=None, cwd=tmp_path))
    for client, event, name in SHELLS:  # not coord's business without a board
        payload = with_command(fixture(name, tmp_path), "git commit --no-verify -m x")
        allowed(hook(client, event, payload, board_dir=None, cwd=tmp_path))
    start = hook(
        "claude",
        "SessionStart",
        fixture("claude/session_start.json", tmp_path),
        board_dir=None,
        cwd=tmp_path,
    )
    assert start.returncode == 0
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "no coord board here" in context
    stop = hook(
        "claude", "Stop", fixture("claude/stop.json", tmp_path), board_dir=None, cwd=tmp_path
    )
    assert (stop.returncode, stop.stdout, stop.stderr) == (0, "", "")


def test_other_events_and_clients(board_dir: Path) -> None:
    repo = board_dir.parent
    note = fixture("claude/pre_tool_use_edit.json", repo)
    note["hook_event_name"] = "Notification"
    # an event coord does not answer is said (exit 1: the clients show it, never blocking),
    # with no decision on stdout
    for client, event, data in (("claude", "Notification", note), ("gemini", "PreToolUse", "")):
        answered = hook(client, event, data, board_dir=board_dir, cwd=repo)
        assert (answered.returncode, answered.stdout) == (1, ""), answered
        assert f"no event {event!r}" in answered.stderr
    unknown = hook("copilot", "PreToolUse", "{}", board_dir=board_dir, cwd=repo)
    assert unknown.returncode == 2 and "copilot" in unknown.stderr and unknown.stdout == ""


# What the edit hook and `coord guard`, run before every edit, must not pay for: pathlib (with
# urllib.parse and ipaddress, ~3 ms), the nouns' dataclasses, the core, storage, the HTTP
# client, the shell parser, typing. A third of their time is the interpreter's own start.
NOT_ON_THE_EDIT_PATH = (
    "pathlib",
    "urllib",
    "ipaddress",
    "typing",
    "dataclasses",
    "shlex",
    "coord.model",
    "coord.core",
    "coord.storage",
    "coord.client",
)


def test_the_edit_guard_imports_nothing_it_does_not_need(board_dir: Path) -> None:
    repo = board_dir.parent
    reserve(board_dir, ["src/auth"], "alice")
    edit = json.dumps(fixture("claude/pre_tool_use_edit.json", repo))
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    for argv, stdin in (
        (["hook", "claude", "PreToolUse"], edit),
        (["guard", "--as", "bob", HELD], None),
    ):
        imported = refused_importing(argv, stdin, env, repo)
        assert "coord.fast.holds" in imported  # the listing is what it claims to be
        heavy = {
            m
            for m in imported
            if any(m == n or m.startswith(n + ".") for n in NOT_ON_THE_EDIT_PATH)
        }
        assert not heavy, (argv[0], sorted(heavy))


def refused_importing(
    argv: list[str], stdin: str | None, env: dict[str, str], cwd: Path
) -> set[str]:
    """The modules `coord ARGV` imports (``-X importtime``), checked to refuse alice's path."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "coord", *argv],
        input=stdin,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "held by alice" in result.stdout + result.stderr, result.stderr[-500:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


# --- the guard: shell commands ------------------------------------------------------------


@pytest.mark.parametrize(("client", "event", "name"), SHELLS, ids=[c for c, _, _ in SHELLS])
def test_shell_writes_into_held_files_and_no_verify_commits_are_denied(
    board_dir: Path, client: str, event: str, name: str
) -> None:
    repo = board_dir.parent
    (repo / "src" / "auth").mkdir(parents=True)
    (repo / "src" / "auth" / "session.py").write_text("TIMEOUT = 30\n")
    reserve(board_dir, ["src/auth"], "alice")

    def run(command: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
        payload = with_command(fixture(name, repo), command)
        return hook(client, event, payload, board_dir=board_dir, cwd=repo, agent=agent)

    reason = denied(hook(client, event, fixture(name, repo), board_dir=board_dir, cwd=repo), client)
    assert "writes src/auth/session.py, and alice holds src/auth" in reason
    for command in (
        "echo x > src/auth/session.py",
        "pytest -q 2>&1 | tee -a src/auth/log.txt",
        "cd src && rm -rf auth",
        "mv src/auth/session.py /tmp/",
        "cp /tmp/x.py src/auth/",
        "touch src/auth/new.py",
        "truncate -s 0 src/auth/session.py",
        "bash -c 'cat > src/auth/session.py <<EOF\nx = 1\nEOF'",
    ):
        assert "alice holds src/auth" in denied(run(command), client), command
    for command in (
        "git commit --no-verify -m 'wip'",
        "git commit -n -m wip",
        "git add -A && git commit -anm wip",
        "git -c core.hooksPath=/dev/null commit -m wip",
    ):
        reason = denied(run(command), client)
        assert "pre-commit guard" in reason and "\n" not in reason, command
    reason = denied(run("echo 'exit 0' > .git/hooks/pre-commit"), client)
    assert "inside .git" in reason and "\n" not in reason
    # the holder may write, and commands that write nothing held pass in silence
    allowed(run("echo x > src/auth/session.py", agent="alice"))
    for command in (
        "pytest -q > /dev/null 2>&1",
        "cat src/auth/session.py | grep TIMEOUT > /tmp/out.txt",
        "echo x > src/other.py && git commit -m 'fix: no -n here'",
        "git log -n 3",
        "sed 's/a/b/' src/auth/session.py > src/other.py",
        "ls src/auth # rm src/auth/session.py",
    ):
        allowed(run(command))


# --- session start and stop ------------------------------------------------------------------


@pytest.mark.parametrize(("client", "name"), STARTS, ids=[c for c, _ in STARTS])
def test_session_start_registers_the_agent_and_tells_it_the_board(
    daemon: Daemon, client: str, name: str
) -> None:
    board_dir = daemon.board_dir
    repo = board_dir.parent
    payload = fixture(name, repo)
    me = name_of(client, payload)
    board = Board.open(board_dir)
    try:
        mine = board.add("Rework the session store", created_by="lead", files=["src/auth/**"])
        board.claim(mine.id, agent=me)
        board.reply(mine.id, agent="bob", body="@" + me + " the cookie name must stay SID")
        board.add("Document the new flow", created_by="lead", kind="bug", priority=1)
    finally:
        board.close()
    result = hook(client, "SessionStart", payload, board_dir=board_dir, cwd=repo)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ANY_TEXT}
    }
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert f"You are coord agent `{me}`" in context
    assert f'#{mine.id} "Rework the session store" (token 1' in context
    assert "files src/auth/**)" in context
    assert "the cookie name must stay SID" in context  # the inbox entry
    assert '"Document the new flow" [bug, priority 1]' in context  # ready
    assert "How to use coord" in context and f"coord next --as {me}" in context
    # the inbox was peeked, not read
    board = Board.open(board_dir)
    try:
        assert any(e.kind == "reply" for e in board.inbox(me, peek=True))
    finally:
        board.close()
    # recorded for the client process (here: this test process, the hook's parent) ...
    record = json.loads((board_dir / "sessions" / f"{os.getpid()}.json").read_text())
    assert record == {"agent": me, "client": client, "session_id": payload["session_id"]}
    # ... so another process the same client starts (its MCP server) finds the name
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from coord.fast import identity;"
            " print(identity.recorded(Path(sys.argv[1])))",
            str(board_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert found.stdout.strip() == me


class _AnyText:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other.strip())


ANY_TEXT = _AnyText()


def test_session_start_never_breaks_the_session(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path)
    (board_dir / "board.db").unlink()
    (board_dir / "board.db").write_bytes(b"garbage" * 500)
    payload = fixture("claude/session_start.json", tmp_path)
    result = hook("claude", "SessionStart", payload, board_dir=board_dir, cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "could not read the board" in context and "How to use coord" in context
    for bad in ("{broken", "[]"):
        result = hook("claude", "SessionStart", bad, board_dir=board_dir, cwd=tmp_path)
        assert result.returncode == 0 and "Traceback" not in result.stderr


@pytest.mark.parametrize(("client", "event", "name"), STOPS, ids=[c for c, _, _ in STOPS])
def test_stop_heartbeats_the_claims_and_reminds(
    daemon: Daemon, client: str, event: str, name: str
) -> None:
    board_dir = daemon.board_dir
    repo = board_dir.parent
    payload = fixture(name, repo)
    me = name_of(client, payload)
    board = Board.open(board_dir)
    try:
        item = board.add("Rework the session store", created_by="lead", files=["src/auth/**"])
        claim = board.claim(item.id, agent=me, lease_seconds=60)
        board.reserve(["docs/auth.md"], agent=me, lease_seconds=600)
        asked = board.add("Which cookie name?", created_by="lead")
        token = board.claim(asked.id, agent=me).token
        board.escalate(asked.id, agent=me, token=token, question="SID or session?")
        other = board.add("Someone else's", created_by="lead")
        board.claim(other.id, agent="bob", lease_seconds=60)
    finally:
        board.close()
    result = hook(client, event, payload, board_dir=board_dir, cwd=repo)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert set(answer) == {"systemMessage"}  # a reminder, never a block
    text = answer["systemMessage"]
    assert f'#{item.id} "Rework the session store"' in text and "lease renewed" in text
    assert f"coord done ID --as {me}" in text and "docs/auth.md" in text
    assert f'waiting for a human answer: #{asked.id} "Which cookie name?"' in text
    assert "Someone else's" not in text
    board = Board.open(board_dir)
    try:
        renewed = board.get(item.id)
        assert renewed.fencing_token == claim.token  # the same claim, extended
        assert renewed.lease_expires_at is not None
        assert renewed.lease_expires_at > claim.lease_expires_at + 600  # the default: 900 s
        assert board.get(other.id).lease_expires_at < claim.lease_expires_at + 60
        mine = [r for r in board.reservations(agent=me) if r.item_id == item.id]
        assert mine and mine[0].expires_at == renewed.lease_expires_at  # its files too
    finally:
        board.close()
    # nothing held: nothing said
    quiet = fixture(name, repo)
    quiet["session_id"] = "0000aaaa-no-claims"
    result = hook(client, event, quiet, board_dir=board_dir, cwd=repo)
    assert (result.returncode, result.stdout) == (0, "")


def test_stop_says_when_a_lease_ran_out_and_never_breaks(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path)
    payload = fixture("claude/stop.json", tmp_path)
    me = name_of("claude", payload)
    board = Board.open(board_dir, clock=lambda: 1_000_000.0)
    try:
        lapsed = board.add("Lapsed", created_by="lead")
        board.claim(lapsed.id, agent=me, lease_seconds=60)  # ran out long ago
    finally:
        board.close()
    daemon = Daemon(board_dir).start()
    try:
        result = hook("claude", "Stop", payload, board_dir=board_dir, cwd=tmp_path)
    finally:
        daemon.stop()
    assert result.returncode == 0, result.stderr
    assert "ran out" in json.loads(result.stdout)["systemMessage"]
    # the daemon gone and the board broken: the hook cannot start another, and says so once
    (board_dir / "board.db").unlink()
    (board_dir / "board.db").mkdir()
    result = hook("claude", "Stop", payload, board_dir=board_dir, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "daemon" in result.stderr


def test_session_hooks_reach_the_board_through_the_daemon_and_start_it(board_dir: Path) -> None:
    """No daemon running: the session-start hook starts one, as the CLI would, and reads
    the board through it (a hook never opens the board to write beside the daemon)."""
    repo = board_dir.parent
    payload = fixture("claude/session_start.json", repo)
    me = name_of("claude", payload)
    board = Board.open(board_dir)
    try:
        board.claim(board.add("Mine", created_by="lead").id, agent=me)
    finally:
        board.close()
    result = hook("claude", "SessionStart", payload, board_dir=board_dir, cwd=repo)
    record = json.loads(board_files.daemon_record_path(board_dir).read_text())
    try:
        assert result.returncode == 0, result.stderr
        context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        assert '#1 "Mine" (token 1' in context
        stop = hook(
            "claude", "Stop", fixture("claude/stop.json", repo), board_dir=board_dir, cwd=repo
        )
        assert '#1 "Mine"' in json.loads(stop.stdout)["systemMessage"]
        # the lease was renewed through the daemon's API: its event names the heartbeat
        events = subprocess.run(
            [sys.executable, "-m", "coord", "log", "--json"],
            env={**os.environ, "COORD_DIR": str(board_dir)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "heartbeat" in events.stdout, events.stderr
    finally:
        os.kill(int(record["pid"]), signal.SIGTERM)


def test_session_hooks_never_hang_on_a_daemon_that_does_not_answer(board_dir: Path) -> None:
    """A daemon that takes the connection and never answers: the requests time out, the
    session starts with the reason in its context, and the stop hook says one line. (A hang
    would fail here on the subprocess's own timeout.) It holds the board's daemon lock, as a
    hung daemon does: without it the record would be stale and the hook would start a daemon
    of its own."""
    import fcntl

    repo = board_dir.parent
    with (
        socket.create_server(("127.0.0.1", 0)) as silent,
        open(board_dir / "daemon.lock", "w") as lock,
    ):
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = silent.getsockname()[1]
        record = {"pid": os.getpid(), "host": "127.0.0.1", "port": port}
        record["url"] = f"http://127.0.0.1:{port}"
        board_files.write_json_atomic(board_files.daemon_record_path(board_dir), record)
        start = fixture("claude/session_start.json", repo)
        result = hook("claude", "SessionStart", start, board_dir=board_dir, cwd=repo)
        assert result.returncode == 0 and "Traceback" not in result.stderr
        context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        me = name_of("claude", start)
        assert f"You are coord agent `{me}`" in context and "How to use coord" in context
        assert "could not read the board" in context and "daemon" in context
        stop = hook(
            "claude", "Stop", fixture("claude/stop.json", repo), board_dir=board_dir, cwd=repo
        )
        assert (stop.returncode, stop.stdout) == (0, "")
        assert len(stop.stderr.strip().splitlines()) == 1 and "daemon" in stop.stderr


# --- in process: the parsers, crashes, identity ----------------------------------------------


def test_patch_parser() -> None:
    text = (
        "*** Begin Patch\n"
        "*** Add File: docs/new.md\n+hello\n"
        "*** Update File: src/app.py\n*** Move to: src/core/app.py\n@@ def f():\n-a\n+b\n"
        "*** Delete File: old/thing.txt\n"
        "*** Update File: src/app.py\n"  # twice: once in the answer
        "  *** Update File: spaced name.py  \r\n"
        "*** End Patch\n"
    )
    assert patch.paths(text) == [
        "docs/new.md",
        "src/app.py",
        "src/core/app.py",
        "old/thing.txt",
        "spaced name.py",
    ]
    assert patch.paths("no patch here\n+*** Add File: x") == []


@pytest.mark.parametrize(
    ("command", "targets"),
    [
        ("echo hi > a.txt", ["a.txt"]),
        ("echo hi >> 'b c.txt' 2>/dev/null", ["b c.txt", "/dev/null"]),
        ("cmd &> log.txt; other 2>&1 >| x", ["log.txt", "x"]),
        ("make 2> err.txt", ["err.txt"]),
        ("ls | tee -a out.txt other.txt", ["out.txt", "other.txt"]),
        ("sed -i.bak -e 's/a/b/' f1 f2", ["f1", "f2"]),
        ("sed -i 's/a/b/' f1", ["f1"]),
        ("sed -n 's/a/b/p' f1", []),
        ("perl -pi -e 's/a/b/' f1", ["f1"]),
        ("rm -rf -- build dist", ["build", "dist"]),
        ("mv -f a.py b.py", ["a.py", "b.py"]),
        ("cp -r src/a.py src/b.py dest/", ["dest/a.py", "dest/b.py"]),
        ("cp a.py b.py", ["b.py"]),
        ("cp -t out a.py", ["out/a.py"]),
        ("touch -d yesterday stamp", ["stamp"]),
        ("truncate --size 0 big.log", ["big.log"]),
        ("dd if=/dev/zero of=disk.img bs=1M", ["disk.img"]),
        ("FOO=1 sudo -u root env BAR=2 rm x", ["x"]),
        ("timeout 10 nice -n 5 touch y", ["y"]),
        ("cd sub && rm z", ["sub/z"]),
        ("x=$(rm inner); echo `touch tick`", ["inner", "tick"]),
        ("(cd a; rm b) | cat", ["a/b"]),
        ("bash -lc 'echo > deep.txt'", ["deep.txt"]),
        ("cat <<'EOF' > gen.py\nrm -rf everything\nEOF\nrm after", ["gen.py", "after"]),
        ("cat <<-EOF\n\trm -rf x\n\tEOF", []),
        ("echo a#b > c # > d", ["c"]),
        ("echo 'a > b' \"c >> d\"", []),
        ("echo $'it\\'s' > e", ["e"]),
        (
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: p.py\n*** End Patch\nEOF",
            ["p.py"],
        ),
        ("grep -rn foo . && git status && git diff > /tmp/d", ["/tmp/d"]),
    ],
)
def test_shell_parser_finds_written_files(command: str, targets: list[str]) -> None:
    found = shell.analyse(command, "/repo")
    got = [
        os.path.relpath(os.path.join(cwd, t), "/repo") if not t.startswith("/") else t
        for t, cwd in found.targets
    ]
    assert got == targets
    assert found.bypass == []


@pytest.mark.parametrize(
    ("command", "bypass"),
    [
        ("git commit --no-verify", True),
        ("git commit --no-veri -m x", True),
        ("git commit -n", True),
        ("git commit -anm 'msg'", True),
        ("git -C sub commit -qn", True),
        ("git -c core.hooksPath=/dev/null commit -m x", True),
        ("cd x && GIT_TRACE=1 git commit -m wip --no-verify", True),
        ("git commit -m -n", False),  # -n is the message
        ("git commit -m 'skip -n --no-verify'", False),
        ("git commit --amend --no-edit", False),
        ("git log -n 5 --no-verify", False),  # not a commit
        ("git commit -F msg.txt -- --no-verify", False),  # a path after --
        ("echo git commit --no-verify", False),
    ],
)
def test_shell_parser_finds_commits_that_skip_the_guard(command: str, bypass: bool) -> None:
    assert bool(shell.analyse(command, "/repo").bypass) is bypass


def test_a_crash_inside_the_guard_denies(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], board_dir: Path
) -> None:
    from coord.fast import guard

    def explode(*args: object, **options: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setenv("COORD_DIR", str(board_dir))
    monkeypatch.setattr(guard, "check", explode)
    payload = json.dumps(fixture("claude/pre_tool_use_edit.json", board_dir.parent))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload.encode())))
    assert hooks.run_hook("claude", "PreToolUse") == 0
    reason = json.loads(capsys.readouterr().out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason == "coord hook: RuntimeError: boom second line; refusing the call"


def test_when_no_json_can_be_written_the_guard_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{oops")))
    monkeypatch.setattr(sys, "stdout", Closed())
    assert hooks.run_hook("gemini", "BeforeTool") == 2
    assert "not JSON" in capsys.readouterr().err


def test_identity_remember_and_recorded(board_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COORD_AGENT", raising=False)
    assert identity.recorded(board_dir) is None
    codex = identity.session_name("codex", "019a3c5e-7d21")
    assert identity.remember(board_dir, "codex", "019a3c5e-7d21") == codex
    assert identity.recorded(board_dir) == identity.agent_name(board_dir) == codex
    claude = identity.agent_name(board_dir, "claude", "a/b c;d")
    assert claude is not None and claude.startswith("claude-") and len(claude) == 15
    monkeypatch.setenv("COORD_AGENT", "lead")
    assert identity.remember(board_dir, "codex", "another") == "lead"
    assert identity.agent_name(board_dir, "claude", "4f1c2a9e") == "lead"


def test_identity_finds_the_client_past_shells_but_not_past_a_node_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # hook: gemini (a node process, pid 40) -> sh (41) -> coord (this process)
    tree = {41: ("sh", 40), 40: ("node", 30), 30: ("bash", 20), 20: ("tmux: server", 1)}
    monkeypatch.setattr(os, "getppid", lambda: 41)
    monkeypatch.setattr(identity, "_process", lambda pid: tree.get(pid, (None, 0)))
    assert identity.client_pid() == 40  # not the tmux server every pane shares
    tree[41] = ("uvx", 40)
    assert identity.client_pid() == 40


def test_the_board_is_found_one_way_as_a_string_or_a_path(
    board_dir: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hooks and the guard find the board as a string (no pathlib on their path), the
    other faces as a Path: one walk, so they cannot find two different boards."""
    monkeypatch.delenv("COORD_DIR", raising=False)
    deep = board_dir.parent / "src" / "pkg"
    deep.mkdir(parents=True)
    elsewhere = tmp_path_factory.mktemp("no-board")
    real = os.path.realpath(board_dir)
    for start in (board_dir.parent, deep, deep / "not-yet"):
        assert board_files.locate(str(start)) == real
        assert board_files.find_board_dir(start) == Path(real)
    assert board_files.locate(str(elsewhere)) is None
    assert board_files.find_board_dir(elsewhere) is None
    monkeypatch.chdir(deep)
    assert board_files.locate() == real
    monkeypatch.setenv("COORD_DIR", str(board_dir))
    assert board_files.locate(str(elsewhere)) == real  # COORD_DIR names it outright
    assert board_files.locate(str(elsewhere), env=False) is None  # where a path lies


def test_session_records_of_ended_clients_are_dropped(board_dir: Path) -> None:
    folder = board_files.sessions_dir(board_dir)
    folder.mkdir(parents=True, exist_ok=True)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    (folder / f"{ended.pid}.json").write_text('{"agent": "claude-gone"}')
    (folder / "1.json").write_text('{"agent": "claude-init"}')  # pid 1 lives
    identity.remember(board_dir, "claude", "4f1c2a9e")
    left = sorted(p.name for p in folder.glob("*.json"))
    assert f"{ended.pid}.json" not in left
    assert "1.json" in left and f"{identity.client_pid()}.json" in left
