"""Codex CLI, driven headless through its real hooks against a scripted fake model.

Codex CLI 0.171.0 (``npm_clients.PINNED``), run as::

    codex exec --json -C REPO "PROMPT"

with stdin closed, ``PATH`` holding coord's ``bin`` first (``repo.path_with_coord``) or no
``coord`` at all (``repo.path_without_coord``), and a fresh ``CODEX_HOME``
(``codex_client.CodexHome``) whose ``config.toml`` sets:

- a model provider ``fake`` with ``base_url = "http://127.0.0.1:PORT/v1"``,
  ``wire_api = "responses"`` and an ``env_key``, served by ``fake_openai.FakeOpenAI``;
- ``model = "gpt-5.5"``: a model in Codex's bundled catalog, so Codex offers the model its
  ``apply_patch`` (freeform) and ``exec_command`` (shell) tools, as for real sessions;
- ``approval_policy = "never"``, ``sandbox_mode = "danger-full-access"``: tools run unasked;
- ``[projects."REPO"] trust_level = "trusted"``: Codex reads a project's ``.codex/`` only in a
  trusted project;
- ``[hooks.state."KEY"] trusted_hash = "HASH"`` for each of coord's hooks, with the keys and
  hashes Codex's app server lists (``hooks/list``): what the user's ``/hooks`` records, since
  Codex runs a project hook only once its current content is trusted.

The ``hooks`` feature is on by default in this version (``codex features list``). Each test
scripts the model's tool calls; Codex runs them through coord's real hooks (``PreToolUse`` for
``apply_patch`` and ``Bash``, ``SessionStart``, ``Stop``), and the test reads the file on
disk, the board, and what each tool call returned to the model (a hook's refusal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from coord.fast import identity
from coord.wiring.codex import CHANGED_HOOKS_NOTE
from real_clients.codex_client import CodexHome
from real_clients.fake_openai import FakeOpenAI, Item, apply_patch, function_call, tool_search
from real_clients.npm_clients import client_executable
from real_clients.repo import COORD_BIN_DIR, coord, path_without_coord, wired_repo

pytestmark = pytest.mark.timeout(240)

HELD = "src/held.py"
FREE = "src/free.py"
FILES = {HELD: "held = 1\n", FREE: "free = 1\n", "src/a.py": "a = 1\n", "src/b.py": "b = 1\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    repo = wired_repo(tmp_path, "--codex", FILES)
    yield repo
    coord(repo, "stop")  # the daemon a coord command started for this board


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """The model, with no script yet: each test adds its own (``fake.scripts[MARKER]``)."""
    with FakeOpenAI({}) as fake:
        yield fake


@pytest.fixture
def codex(repo: Path, fake: FakeOpenAI) -> CodexHome:
    home = CodexHome(client_executable("@openai/codex"), repo, fake.base_url)
    home.trust_hooks()
    return home


def patch_update(path: str, old: str, new: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


def shell(call_id: str, command: str) -> Item:
    """Codex's shell tool for this model: ``exec_command`` (unified exec), one command line."""
    return function_call(call_id, "exec_command", {"cmd": command})


def told_name(fake: FakeOpenAI, marker: str) -> str:
    """The agent name coord's SessionStart hook told the model whose prompt holds ``marker``."""
    for body in fake.requests:
        text = json.dumps(body.get("input", []))
        if marker in text:
            found = re.search(r"You are coord agent `([^`]+)`", text)
            assert found, "coord's SessionStart context did not reach the model"
            return found.group(1)
    raise AssertionError(f"no request carried {marker}")


def assert_refused(said: str, holder: str, path: str) -> None:
    """The tool call was stopped by coord's PreToolUse hook, naming the file and its holder."""
    assert said.startswith("Command blocked by PreToolUse hook: coord"), said
    assert holder in said and path in said, said


def holders(repo: Path) -> dict[str, str]:
    """The board's reservations: pattern -> agent."""
    done = coord(repo, "--json", "reservations")
    assert done.returncode == 0, done.stderr
    return {r["pattern"]: r["agent"] for r in json.loads(done.stdout)["reservations"]}


def test_a_held_file_is_refused_to_apply_patch_and_to_the_shell(
    codex: CodexHome, fake: FakeOpenAI, repo: Path
) -> None:
    held = coord(repo, "reserve", HELD, agent="other")
    assert held.returncode == 0, held.stderr
    fake.scripts["SCRIPT-HELD"] = [
        [apply_patch("patch-held", patch_update(HELD, "held = 1", "held = 2"))],
        [shell("shell-held", f"echo x > {HELD}")],
    ]
    codex.run("SCRIPT-HELD: change the held file")
    for call_id in ("patch-held", "shell-held"):
        assert_refused(fake.tool_output(call_id), "other", HELD)
    assert (repo / HELD).read_text() == FILES[HELD]


def test_a_free_file_is_edited_through_apply_patch(
    codex: CodexHome, fake: FakeOpenAI, repo: Path
) -> None:
    fake.scripts["SCRIPT-FREE"] = [
        [apply_patch("patch-free", patch_update(FREE, "free = 1", "free = 2"))]
    ]
    codex.run("SCRIPT-FREE: change the free file")
    assert "Success" in fake.tool_output("patch-free")
    assert (repo / FREE).read_text() == "free = 2\n"


def test_two_sessions_started_seconds_apart_are_two_agents_that_keep_apart(
    codex: CodexHome, fake: FakeOpenAI, repo: Path
) -> None:
    """Session A reserves src/a.py with its own `coord` command (no `--as`: the name comes
    from the session Codex runs it in) and edits it; session B, started after it, is refused
    src/a.py, by apply_patch and by the shell, and edits src/b.py, reserved the same way."""
    reserve = str(COORD_BIN_DIR / "coord")  # the shell tool runs a login shell: its own PATH
    fake.scripts["SCRIPT-A"] = [
        [shell("a-reserve", f"{reserve} reserve src/a.py")],
        [apply_patch("a-patch", patch_update("src/a.py", "a = 1", "a = 'A'"))],
    ]
    fake.scripts["SCRIPT-B"] = [
        [apply_patch("b-patch-a", patch_update("src/a.py", "a = 'A'", "a = 'B'"))],
        [shell("b-shell-a", "echo \"a = 'B'\" > src/a.py")],
        [shell("b-reserve", f"{reserve} reserve src/b.py")],
        [apply_patch("b-patch", patch_update("src/b.py", "b = 1", "b = 'B'"))],
    ]
    first = codex.run("SCRIPT-A: work on a.py")
    second = codex.run("SCRIPT-B: work on a.py, then b.py")
    name_a, name_b = told_name(fake, "SCRIPT-A"), told_name(fake, "SCRIPT-B")
    assert name_a == identity.session_name("codex", first)  # the hooks' name for the session
    assert name_b == identity.session_name("codex", second)
    assert name_a != name_b
    assert "reserved" in fake.tool_output("a-reserve"), fake.tool_output("a-reserve")
    assert "Success" in fake.tool_output("a-patch")
    for call_id in ("b-patch-a", "b-shell-a"):
        assert_refused(fake.tool_output(call_id), name_a, "src/a.py")
    assert "Success" in fake.tool_output("b-patch")
    assert (repo / "src/a.py").read_text() == "a = 'A'\n"
    assert (repo / "src/b.py").read_text() == "b = 'B'\n"
    assert holders(repo) == {"src/a.py": name_a, "src/b.py": name_b}


def test_without_coord_on_path_the_guard_refuses(
    codex: CodexHome, fake: FakeOpenAI, repo: Path
) -> None:
    fake.scripts["SCRIPT-NOCOORD"] = [
        [apply_patch("patch-free", patch_update(FREE, "free = 1", "free = 2"))]
    ]
    codex.run("SCRIPT-NOCOORD: change the free file", path=path_without_coord())
    said = fake.tool_output("patch-free")
    assert said.startswith("Command blocked by PreToolUse hook: coord"), said
    assert "coord is not on PATH" in said, said
    assert (repo / FREE).read_text() == FILES[FREE]


def test_init_with_another_command_untrusts_the_hooks_and_says_so(
    codex: CodexHome, repo: Path
) -> None:
    """Codex keeps a hook's trust per its content: another `--command` is a changed hook,
    which Codex skips without a word until trusted again; `coord init` must say so."""
    assert {h["trustStatus"] for h in codex.hooks()} == {"trusted"}
    done = coord(repo, "init", "--codex", "--command", str(COORD_BIN_DIR / "coord"))
    assert done.returncode == 0, done.stderr
    assert CHANGED_HOOKS_NOTE in done.stdout + done.stderr
    assert {h["trustStatus"] for h in codex.hooks()} == {"modified"}


# Spellings of "overwrite src/held.py": a script in a free path, which the guard refuses near a
# held file as a script it does not read, and the same script run by `make test`, a test
# runner the guard lets through unread (docs/files-and-the-guard.md): whichever gets past, the
# after-tool hook must catch.
WRITERS = {
    "regen-py": "python3 tools/regen.py",
    "regen-sh": "sh tools/regen.sh",
    "regen-make": "make -s test RUN='python3 tools/regen.py'",
}


def test_a_held_file_an_allowed_command_changed_is_put_back_reported_and_told(
    codex: CodexHome, fake: FakeOpenAI, repo: Path
) -> None:
    """The guard cannot see that a script writes a held file; Codex's PostToolUse hook sees
    the file change: coord puts it back, records who did it, tells the holder and the model."""
    from coord.core.board import Board

    assert coord(repo, "reserve", HELD, agent="other").returncode == 0
    (repo / "tools").mkdir()
    (repo / "tools/regen.py").write_text(f"open({HELD!r}, 'w').write('clobbered\\n')\n")
    (repo / "tools/regen.sh").write_text(f"echo clobbered > {HELD}\n")
    (repo / "Makefile").write_text("test:\n\t$(RUN)\n")
    fake.scripts["SCRIPT-AFTER"] = [[shell(call_id, c)] for call_id, c in WRITERS.items()]

    codex.run("SCRIPT-AFTER: regenerate")

    assert (repo / HELD).read_text() == FILES[HELD]  # put back
    ran = [
        command
        for call_id, command in WRITERS.items()
        if not fake.tool_output(call_id).startswith("Command blocked by PreToolUse hook")
    ]
    assert ran, "the guard refused every spelling: nothing got past to check"
    board = Board.open(repo / ".coord")
    try:
        events = [e for e in board.events(0, 5000) if e.kind == "held_files_changed"]
        inbox = [e.seq for e in board.inbox("other", peek=True)]
    finally:
        board.close()
    assert [e.details["command"] for e in events] == ran
    for event in events:
        assert event.agent.startswith("codex-")
        assert [(f["path"], f["holder"], f["restored"]) for f in event.details["files"]] == [
            (HELD, "other", True)
        ]
        assert event.seq in inbox  # the holder's inbox
    # the model was told (PostToolUse's decision: block is fed back to it)
    later = json.dumps(fake.requests[-1].get("input", []))
    assert f"{HELD} (held by other)" in later and "coord put it back" in later


def test_coords_tools_are_in_the_first_model_request(codex: CodexHome, fake: FakeOpenAI) -> None:
    """Issue 25: Codex's first request announced no coord tools while `coord mcp` was still
    importing the MCP SDK. Codex 0.171 defers MCP tools behind its `tool_search` tool: the
    model's search in its very first turn finds coord's tools, with their schemas."""
    fake.scripts["FIRST-TURN"] = [[tool_search("s1", "coord claim board done")]]
    codex.run("FIRST-TURN: do the scripted work")
    found = [
        item
        for body in fake.requests
        for item in body.get("input", [])
        if item.get("type") == "tool_search_output" and item.get("call_id") == "s1"
    ]
    assert found, "the model's first tool_search got no answer"
    coord_tools = {
        tool["name"]
        for space in found[0]["tools"]
        if space.get("name") == "mcp__coord"
        for tool in space.get("tools", [])
    }
    assert {"claim", "done", "board"} <= coord_tools, found[0]
