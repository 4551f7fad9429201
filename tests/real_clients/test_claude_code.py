"""Claude Code, the real client, keeps to coord's board through the hooks `coord init` wires.

Claude Code 2.1.197 (``PINNED`` in ``npm_clients``; the npm package ships a native binary)
runs headless in a repository wired by ``coord init --claude``::

    claude -p PROMPT --output-format stream-json --verbose --include-hook-events \\
        --permission-mode acceptEdits --allowedTools Bash,Read,Edit,Write

with ``ANTHROPIC_BASE_URL`` pointing at the scripted fake Messages API (``fake_anthropic``,
one URL per session), ``ANTHROPIC_API_KEY=test-key``, a temporary ``HOME`` and
``CLAUDE_CONFIG_DIR`` (the user's own config is never read or written),
``DISABLE_AUTOUPDATER=1`` and ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``. The fake model
plays a script of tool calls; the client runs each one through its own PreToolUse hook from
the project's ``.claude/settings.json`` (headless mode loads project settings without a trust
prompt) and sends back the tool result, which the fake records: that is where a test reads
the guard's deny reason. ``--allowedTools`` answers Claude Code's own permission prompts for
these tools (``--dangerously-skip-permissions`` is refused as root); PreToolUse hooks run
before those permissions and a hook's deny wins over them. The SessionStart hook starts the
board's daemon and exports ``COORD_AGENT`` through ``CLAUDE_ENV_FILE``, which Claude Code
sources before each Bash command: the scripted ``coord`` commands carry no ``--as``.

Claude Code checks a tool call's input before its PreToolUse hooks run (Edit and Write refuse
a file the session has not read, Edit an ``old_string`` the file lacks), so every script reads
a file before editing it and spells its edits to match: a refusal seen here is the hook's.
Each test runs one or two clients of a few seconds each: the module takes about 20 s on an
idle machine, a minute on a loaded one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from real_clients.fake_anthropic import FakeAnthropic, ToolCall, ToolOutcome
from real_clients.npm_clients import client_executable
from real_clients.repo import coord, path_with_coord, path_without_coord, wired_repo

CLIENT_SECONDS = 120
pytestmark = pytest.mark.timeout(3 * CLIENT_SECONDS)

FILES = {
    "src/held.py": "held = 1\n",
    "src/free.py": "free = 1\n",
    "src/a.py": "a = 1\n",
    "src/b.py": "b = 1\n",
}


@pytest.fixture(scope="module")
def claude() -> Path:
    return client_executable("@anthropic-ai/claude-code")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    repo = wired_repo(tmp_path, "--claude", FILES)
    yield repo
    coord(repo, "stop")  # the daemon the hooks started


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def start_claude(
    claude: Path,
    repo: Path,
    fake: FakeAnthropic,
    session: str,
    *,
    path: str,
    extra: tuple[str, ...] = (),
    home_ready: bool = False,
) -> subprocess.Popen[str]:
    home = repo.parent / f"home-{session}"
    home.mkdir(exist_ok=home_ready)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "ANTHROPIC_", "CLAUDE"))
    }
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        ANTHROPIC_BASE_URL=fake.base_url(session),
        ANTHROPIC_API_KEY="test-key",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        PATH=path,
    )
    return subprocess.Popen(
        [
            str(claude),
            "-p",
            "Do the scripted work.",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash,Read,Edit,Write",
            *extra,
        ],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@dataclass
class Run:
    """What one headless run printed: its final result and every hook's outcome."""

    result: dict[str, Any]
    hooks: list[dict[str, Any]]  # stream-json "hook_response": hook_event, exit_code, outcome

    def hook_events(self) -> set[str]:
        return {h["hook_event"] for h in self.hooks}


def finish(process: subprocess.Popen[str]) -> Run:
    """The client's run, once it has played the whole script."""
    try:
        out, err = process.communicate(timeout=CLIENT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"claude did not finish in {CLIENT_SECONDS} s:\n{out[-2000:]}\n{err[-2000:]}")
    assert process.returncode == 0, f"claude exited {process.returncode}:\n{out}\n{err}"
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    result = lines[-1]
    assert result["type"] == "result" and result["is_error"] is False, result
    hooks = [x for x in lines if x["type"] == "system" and x.get("subtype") == "hook_response"]
    return Run(result, hooks)


def assert_hooks_clean(run: Run) -> None:
    """Claude Code ran coord's SessionStart, PreToolUse and Stop hooks (and the after-tool
    check for the calls it allowed) and took each answer as a success: no exit code or output
    shape it reports as a hook error."""
    after = {"PostToolUse", "PostToolUseFailure"}
    assert run.hook_events() - after == {"SessionStart", "PreToolUse", "Stop"}, run.hooks
    for hook in run.hooks:
        assert (hook["exit_code"], hook["outcome"]) == (0, "success"), hook


def run_claude(
    claude: Path,
    repo: Path,
    fake: FakeAnthropic,
    session: str,
    *,
    path: str | None = None,
    extra: tuple[str, ...] = (),
    home_ready: bool = False,
) -> Run:
    return finish(
        start_claude(
            claude,
            repo,
            fake,
            session,
            path=path or path_with_coord(),
            extra=extra,
            home_ready=home_ready,
        )
    )


def read(repo: Path, name: str) -> ToolCall:
    return ToolCall("Read", {"file_path": str(repo / name)})


def edit(repo: Path, name: str, old: str, new: str) -> ToolCall:
    return ToolCall("Edit", {"file_path": str(repo / name), "old_string": old, "new_string": new})


def write(repo: Path, name: str, content: str) -> ToolCall:
    return ToolCall("Write", {"file_path": str(repo / name), "content": content})


def bash(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "scripted"})


def outcome(fake: FakeAnthropic, session: str, name: str, key: str, value: str) -> ToolOutcome:
    """The session's one scripted call of tool ``name`` whose input ``key`` is ``value``."""
    found = [o for o in fake.outcomes(session) if o.name == name and o.input.get(key) == value]
    assert len(found) == 1, fake.outcomes(session)
    return found[0]


def assert_refused_for(call: ToolOutcome, path: str, holder: str) -> None:
    """The call failed with coord's own reason naming the file and its holder: the hook
    refused it (the guard says "PATH is held by HOLDER", the Bash guard "HOLDER holds PATH")."""
    assert call.is_error, call
    assert call.result.startswith("coord"), call
    assert (
        f"{path} is held by {holder}" in call.result or f"{holder} holds {path}" in call.result
    ), call


def holder(repo: Path, name: str) -> str:
    done = coord(repo, "who", name, "--json")
    assert done.returncode == 0, done.stderr
    holders = json.loads(done.stdout)["holders"]
    assert len(holders) == 1, holders
    return str(holders[0]["agent"])


def test_a_held_file_is_refused_to_edit_write_and_bash(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    reserved = coord(repo, "reserve", "src/held.py", agent="other")
    assert reserved.returncode == 0, reserved.stderr
    held = repo / "src/held.py"
    fake.script(
        "s",
        [
            [read(repo, "src/held.py")],
            [edit(repo, "src/held.py", "held = 1", "held = 2")],
            [write(repo, "src/held.py", "overwritten\n")],
            [bash("echo x > src/held.py")],
        ],
    )

    run = run_claude(claude, repo, fake, "s")

    assert held.read_text() == FILES["src/held.py"]
    refused = [
        outcome(fake, "s", "Edit", "file_path", str(held)),
        outcome(fake, "s", "Write", "file_path", str(held)),
        outcome(fake, "s", "Bash", "command", "echo x > src/held.py"),
    ]
    for call in refused:
        assert_refused_for(call, "src/held.py", "other")
        # and the next step, in the words the model reads (issue 26): wait in line or ask
        assert "next: wait for other" in call.result, call
        assert "`coord wait src/held.py" in call.result and "coord ask" in call.result, call
    denied = {d["tool_name"] for d in run.result["permission_denials"]}
    assert denied == {"Edit", "Write", "Bash"}
    assert_hooks_clean(run)  # a deny is an answer, not a hook error


def test_a_free_file_is_edited_and_a_new_one_written(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    coord(repo, "reserve", "src/held.py", agent="other")
    fake.script(
        "s",
        [
            [read(repo, "src/free.py")],
            [edit(repo, "src/free.py", "free = 1", "free = 2")],
            [write(repo, "src/new.py", "new = 1\n")],
        ],
    )

    run = run_claude(claude, repo, fake, "s")

    assert_hooks_clean(run)
    assert (repo / "src/free.py").read_text() == "free = 2\n"
    assert (repo / "src/new.py").read_text() == "new = 1\n"
    for call in fake.outcomes("s"):
        assert not call.is_error, call


def test_two_sessions_get_their_own_names_and_keep_out_of_each_others_files(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    # A reserves and edits src/a.py, then waits (its next answer gated) while B starts,
    # reserves src/b.py and tries A's file; then A tries B's. Both clients are alive at once.
    # The reserves carry no --as: the name comes from COORD_AGENT, which they echo.
    reserve_a, reserve_b = (
        f'coord reserve {f} && echo "name=$COORD_AGENT"' for f in ("src/a.py", "src/b.py")
    )
    fake.script(
        "a",
        [
            [bash(reserve_a)],
            [read(repo, "src/a.py")],
            [edit(repo, "src/a.py", "a = 1", "a = 2")],
            [read(repo, "src/b.py")],
            [edit(repo, "src/b.py", "b = 2", "b = 3")],
        ],
    )
    fake.script(
        "b",
        [
            [bash(reserve_b)],
            [read(repo, "src/b.py")],
            [edit(repo, "src/b.py", "b = 1", "b = 2")],
            [read(repo, "src/a.py")],
            [edit(repo, "src/a.py", "a = 2", "a = 4")],
            [bash("echo x > src/a.py")],
        ],
    )
    a_waits = fake.gate("a", 3)

    session_a = start_claude(claude, repo, fake, "a", path=path_with_coord())
    try:
        assert a_waits.reached.wait(CLIENT_SECONDS), "session A never reached its gated turn"
        run_b = finish(start_claude(claude, repo, fake, "b", path=path_with_coord()))
    finally:
        a_waits.opened.set()
    run_a = finish(session_a)
    assert_hooks_clean(run_a)
    assert_hooks_clean(run_b)

    name_a, name_b = holder(repo, "src/a.py"), holder(repo, "src/b.py")
    assert name_a != name_b
    assert name_a.startswith("claude-") and name_b.startswith("claude-")
    # each session's own `coord` commands carried its name: CLAUDE_ENV_FILE exported it
    assert f"name={name_a}" in outcome(fake, "a", "Bash", "command", reserve_a).result
    assert f"name={name_b}" in outcome(fake, "b", "Bash", "command", reserve_b).result
    # and the SessionStart hook told each model the same name, in its context
    for session, name in (("a", name_a), ("b", name_b)):
        first_request = json.dumps(fake.main_requests(session)[0])
        assert f"You are coord agent `{name}`" in first_request

    assert (repo / "src/a.py").read_text() == "a = 2\n"
    assert (repo / "src/b.py").read_text() == "b = 2\n"
    for session, other_file, other_name in (("b", "src/a.py", name_a), ("a", "src/b.py", name_b)):
        refused = outcome(fake, session, "Edit", "file_path", str(repo / other_file))
        assert_refused_for(refused, other_file, other_name)
    shell = outcome(fake, "b", "Bash", "command", "echo x > src/a.py")
    assert_refused_for(shell, "src/a.py", name_a)


def test_without_coord_on_path_an_edit_is_refused(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    fake.script(
        "s",
        [
            [read(repo, "src/free.py")],
            [edit(repo, "src/free.py", "free = 1", "free = 2")],
            [bash("echo x > src/free.py")],
        ],
    )

    run = run_claude(claude, repo, fake, "s", path=path_without_coord())

    assert (repo / "src/free.py").read_text() == FILES["src/free.py"]
    for call in (
        outcome(fake, "s", "Edit", "file_path", str(repo / "src/free.py")),
        outcome(fake, "s", "Bash", "command", "echo x > src/free.py"),
    ):
        assert call.is_error and "coord is not on PATH" in call.result, call
    guards = [h for h in run.hooks if h["hook_event"] == "PreToolUse"]
    assert [h["exit_code"] for h in guards] == [2, 2]  # the Edit's and the Bash command's


# Spellings of "overwrite src/held.py": a script in a free path, which the guard refuses near a
# held file as a script it does not read, and the same script run by `make test`, a test
# runner the guard lets through unread (docs/files-and-the-guard.md): whichever gets past, the
# after-tool hook must catch.
WRITERS = (
    "python3 tools/regen.py",
    "sh tools/regen.sh",
    "make -s test RUN='python3 tools/regen.py'",
)
MAKEFILE = "test:\n\t$(RUN)\n"


def test_a_held_file_an_allowed_command_changed_is_put_back_reported_and_told(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    """The guard cannot see that a script writes a held file; the PostToolUse hook sees the
    file change: coord puts it back, records who did it, tells the holder and the model."""
    from coord.core.board import Board

    assert coord(repo, "reserve", "src/held.py", agent="other").returncode == 0
    (repo / "tools").mkdir()
    (repo / "tools/regen.py").write_text("open('src/held.py', 'w').write('clobbered\\n')\n")
    (repo / "tools/regen.sh").write_text("echo clobbered > src/held.py\n")
    (repo / "Makefile").write_text(MAKEFILE)
    fake.script("s", [[bash(command)] for command in WRITERS])

    run = run_claude(claude, repo, fake, "s")

    assert_hooks_clean(run)
    assert "PostToolUse" in run.hook_events()
    assert (repo / "src/held.py").read_text() == FILES["src/held.py"]  # put back
    ran = [c for c in WRITERS if not outcome(fake, "s", "Bash", "command", c).is_error]
    assert ran, "the guard refused every spelling: nothing got past to check"
    board = Board.open(repo / ".coord")
    try:
        events = [e for e in board.events(0, 5000) if e.kind == "held_files_changed"]
        inbox = [e.seq for e in board.inbox("other", peek=True)]
    finally:
        board.close()
    assert [e.details["command"] for e in events] == ran
    for event in events:
        assert event.agent.startswith("claude-")
        assert [(f["path"], f["holder"], f["restored"]) for f in event.details["files"]] == [
            ("src/held.py", "other", True)
        ]
        assert event.seq in inbox  # the holder's inbox
    # the model was told, in the turn after each call (PostToolUse's decision: block)
    later = json.dumps(fake.main_requests("s")[-1])
    assert "src/held.py (held by other)" in later and "coord put it back" in later


def test_a_failing_command_that_changed_a_held_file_is_caught_by_post_tool_use_failure(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    """A Bash command that exits non-zero fires PostToolUseFailure, not PostToolUse: what it
    wrote before failing is put back all the same, and the model is told."""
    assert coord(repo, "reserve", "src/held.py", agent="other").returncode == 0
    (repo / "tools").mkdir()
    (repo / "tools/regen.py").write_text(
        "open('src/held.py', 'w').write('clobbered\\n')\nraise SystemExit(3)\n"
    )
    (repo / "Makefile").write_text(MAKEFILE)
    failing = "make -s test RUN='python3 tools/regen.py'"  # let through unread, then fails
    fake.script("s", [[bash(failing)]])

    run = run_claude(claude, repo, fake, "s")

    assert_hooks_clean(run)
    assert outcome(fake, "s", "Bash", "command", failing).is_error
    assert "PostToolUseFailure" in run.hook_events()
    assert (repo / "src/held.py").read_text() == FILES["src/held.py"]
    later = json.dumps(fake.main_requests("s")[-1])
    assert "src/held.py (held by other)" in later and "coord put it back" in later


def test_a_package_goes_from_a_coord_worktree_to_main(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    """Issue 24 with the real client: Claude Code starts the item in a coord worktree
    (`coord start`, through its Bash tool), edits there through its own Edit tool and the
    guard, commits, and submits with `coord done`; the landing queue puts it on main."""
    added = coord(repo, "add", "Tune the free module", "--file", "src/free.py", "--json")
    assert added.returncode == 0, added.stderr
    worktree = repo / ".worktrees" / "1-t1"
    fake.script(
        "s",
        [
            [bash("coord start 1")],
            [ToolCall("Read", {"file_path": str(worktree / "src/free.py")})],
            [
                ToolCall(
                    "Edit",
                    {
                        "file_path": str(worktree / "src/free.py"),
                        "old_string": "free = 1",
                        "new_string": "free = 2",
                    },
                )
            ],
            [bash(f"cd {worktree} && git add -A && git commit -qm 'tune free' && coord done")],
        ],
    )

    run = run_claude(claude, repo, fake, "s")

    assert_hooks_clean(run)
    for call in fake.outcomes("s"):
        assert not call.is_error, call
    shown = json.loads(coord(repo, "show", "1", "--json").stdout)
    # the daemon's own runner may have landed it already; `coord land` then waits its turn
    # and finds the queue empty
    assert shown["state"] in ("queued", "merged"), shown
    landed = coord(repo, "land")
    assert landed.returncode == 0, landed.stdout + landed.stderr
    shown = json.loads(coord(repo, "show", "1", "--json").stdout)
    assert shown["state"] == "merged", shown
    main = subprocess.run(
        ["git", "show", "main:src/free.py"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert main.stdout == "free = 2\n"
    assert (repo / "src/free.py").read_text() == "free = 2\n"  # the checkout moved with main
    assert not worktree.exists()


def test_claude_worktree_is_a_coord_claim_that_lands_on_main(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    """`claude --worktree` with coord's WorktreeCreate hook (wired by `coord init --claude`):
    the client makes no worktree of its own; coord claims the item the name names, makes its
    worktree, and the session works there under coord's hooks (the worktree's own settings,
    committed on main), commits and submits; the landing puts it on main. (The headless run
    does not ask to remove the worktree at its end: the hook's side is
    tests/test_claude_worktree_hooks.py.)"""
    # the team commits what `coord init` wired: the worktree's session reads its own copy
    subprocess.run(["git", "add", ".claude/settings.json", ".mcp.json"], cwd=repo, check=True)
    subprocess.run(
        ["git", "commit", "-qm", "coord's wiring"],
        cwd=repo,
        check=True,
        env={**os.environ, "PATH": path_with_coord()},  # its pre-commit hook runs coord
    )
    added = coord(repo, "add", "Tune the free module", "--file", "src/free.py", "--json")
    assert added.returncode == 0, added.stderr
    worktree = repo / ".worktrees" / "1-t1"
    fake.script(
        "s",
        [
            [ToolCall("Read", {"file_path": str(worktree / "src/free.py")})],
            [
                ToolCall(
                    "Edit",
                    {
                        "file_path": str(worktree / "src/free.py"),
                        "old_string": "free = 1",
                        "new_string": "free = 2",
                    },
                )
            ],
            [bash("git add -A && git commit -qm 'tune free' && coord done")],
        ],
    )

    run = run_claude(claude, repo, fake, "s", extra=("--worktree", "1"))

    created = [h for h in run.hooks if h["hook_event"] == "WorktreeCreate"]
    assert [(h["exit_code"], h["outcome"]) for h in created] in ([(0, "success")], []), created
    for call in fake.outcomes("s"):
        assert not call.is_error, call
    assert not (repo / ".claude/worktrees").exists()  # no worktree of the client's own
    shown = json.loads(coord(repo, "show", "1", "--json").stdout)
    # submitted from coord's worktree; the daemon's own runner may have landed it already
    assert shown["state"] in ("queued", "merged"), shown
    assert shown["worktree"] == str(worktree)
    landed = coord(repo, "land")
    assert landed.returncode == 0, landed.stdout + landed.stderr
    shown = json.loads(coord(repo, "show", "1", "--json").stdout)
    assert shown["state"] == "merged", shown
    main = subprocess.run(
        ["git", "show", "main:src/free.py"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert main.stdout == "free = 2\n"
    assert not worktree.exists()


def test_coords_tools_are_in_the_first_model_request(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    """Issue 25: `coord mcp` took 0.9-4.9 s to answer `initialize` and Claude Code's first model
    call said "MCP server 'coord' is still connecting": the agent's first turn had no coord
    tools. With the user's approval of `.mcp.json`'s server (what `/mcp` records), the very
    first request the model gets lists them."""
    config = repo.parent / "home-s" / ".claude"
    config.mkdir(parents=True)
    approved = {"enabledMcpjsonServers": ["coord"], "hasTrustDialogAccepted": True}
    (config / ".claude.json").write_text(json.dumps({"projects": {str(repo): approved}}))
    fake.script("s", [[bash("true")]])
    run = run_claude(claude, repo, fake, "s", home_ready=True)
    assert_hooks_clean(run)
    first = fake.main_requests("s")[0]
    tools = {t["name"] for t in first.get("tools") or []}
    assert {"mcp__coord__claim", "mcp__coord__done", "mcp__coord__board"} <= tools, sorted(tools)
