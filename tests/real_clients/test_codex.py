"""Codex CLI, driven headless through its real hooks against a scripted fake model.

Codex CLI 0.171.0 (``npm_clients.PINNED``), run as::

    codex exec --json --dangerously-bypass-hook-trust -C REPO "PROMPT"

with stdin closed, ``PATH`` holding coord's ``bin`` first (``repo.path_with_coord``) or no
``coord`` at all (``repo.path_without_coord``), and a fresh ``CODEX_HOME`` whose
``config.toml`` sets:

- a model provider ``fake`` with ``base_url = "http://127.0.0.1:PORT/v1"``,
  ``wire_api = "responses"`` and an ``env_key``, served by ``fake_openai.FakeOpenAI``;
- ``model = "gpt-5.5"``: a model in Codex's bundled catalog, so Codex offers the model its
  ``apply_patch`` (freeform) and ``exec_command`` (shell) tools, as for real sessions (an
  unknown model gets neither);
- ``approval_policy = "never"``, ``sandbox_mode = "danger-full-access"``: tools run unasked;
- ``[projects."REPO"] trust_level = "trusted"``: Codex reads a project's ``.codex/`` (the
  ``hooks.json`` that ``coord init --codex`` writes) only in a trusted project.

Codex also runs a project hook only once the user has trusted that hook (``/hooks``, kept as
``[hooks.state]`` ``trusted_hash`` in the user's config; openai/codex
``codex-rs/hooks/src/engine/discovery.rs``); ``--dangerously-bypass-hook-trust`` is its switch
for automation that vets its hooks, and runs them untrusted. The ``hooks`` feature is on by
default in this version (``codex features list``).

Each test scripts the model's tool calls; Codex runs them through coord's real hooks
(``PreToolUse`` for ``apply_patch`` and ``Bash``, ``SessionStart``), and the test reads the
file on disk, the board, and what each tool call returned to the model (a hook's refusal).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from coord.fast import identity
from real_clients.fake_openai import FakeOpenAI, Item, apply_patch, function_call
from real_clients.npm_clients import client_executable
from real_clients.repo import COORD_BIN_DIR, coord, path_with_coord, path_without_coord, wired_repo

pytestmark = pytest.mark.timeout(240)

MODEL = "gpt-5.5"
RUN_SECONDS = 120
HELD = "src/held.py"
FREE = "src/free.py"
FILES = {HELD: "held = 1\n", FREE: "free = 1\n", "src/a.py": "a = 1\n", "src/b.py": "b = 1\n"}


@pytest.fixture
def codex() -> Path:
    return client_executable("@openai/codex")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    repo = wired_repo(tmp_path, "--codex", FILES)
    yield repo
    coord(repo, "stop")  # the daemon a coord command started for this board


def run_codex(
    codex: Path, repo: Path, fake: FakeOpenAI, prompt: str, *, path: str | None = None
) -> str:
    """Run one Codex session to its end; its session id (Codex's thread id)."""
    home = repo.parent / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{MODEL}"\n'
        'model_provider = "fake"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{fake.base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "FAKE_OPENAI_API_KEY"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        f"[projects.{json.dumps(str(repo))}]\n"
        'trust_level = "trusted"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "CODEX_"))}
    env.update(
        CODEX_HOME=str(home),
        FAKE_OPENAI_API_KEY="fake-key",
        PATH=path_with_coord() if path is None else path,
    )
    done = subprocess.run(
        [str(codex), "exec", "--json", "--dangerously-bypass-hook-trust", "-C", str(repo), prompt],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
    )
    assert done.returncode == 0, f"codex exec failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    offered = fake.tool_names()
    assert {"apply_patch", "exec_command"} <= offered, f"Codex offered the model {offered}"
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    started = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
    assert started, f"codex printed no thread.started event:\n{done.stdout[-3000:]}"
    return str(started[0])


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


def test_a_held_file_is_refused_to_apply_patch_and_to_the_shell(codex: Path, repo: Path) -> None:
    held = coord(repo, "reserve", HELD, agent="other")
    assert held.returncode == 0, held.stderr
    script = [
        [apply_patch("patch-held", patch_update(HELD, "held = 1", "held = 2"))],
        [shell("shell-held", f"echo x > {HELD}")],
    ]
    with FakeOpenAI({"SCRIPT-HELD": script}) as fake:
        run_codex(codex, repo, fake, "SCRIPT-HELD: change the held file")
    for call_id in ("patch-held", "shell-held"):
        assert_refused(fake.tool_output(call_id), "other", HELD)
    assert (repo / HELD).read_text() == FILES[HELD]


def test_a_free_file_is_edited_through_apply_patch(codex: Path, repo: Path) -> None:
    script = [[apply_patch("patch-free", patch_update(FREE, "free = 1", "free = 2"))]]
    with FakeOpenAI({"SCRIPT-FREE": script}) as fake:
        run_codex(codex, repo, fake, "SCRIPT-FREE: change the free file")
    assert "Success" in fake.tool_output("patch-free")
    assert (repo / FREE).read_text() == "free = 2\n"


def test_two_sessions_started_seconds_apart_are_two_agents_that_keep_apart(
    codex: Path, repo: Path
) -> None:
    """Session A reserves src/a.py with its own `coord` command (no `--as`: the name comes
    from the session Codex runs it in) and edits it; session B, started after it, is refused
    src/a.py and edits src/b.py, which it reserved the same way."""
    reserve = str(COORD_BIN_DIR / "coord")  # the shell tool runs a login shell: its own PATH
    scripts = {
        "SCRIPT-A": [
            [shell("a-reserve", f"{reserve} reserve src/a.py")],
            [apply_patch("a-patch", patch_update("src/a.py", "a = 1", "a = 'A'"))],
        ],
        "SCRIPT-B": [
            [apply_patch("b-patch-a", patch_update("src/a.py", "a = 'A'", "a = 'B'"))],
            [shell("b-shell-a", "echo \"a = 'B'\" > src/a.py")],
            [shell("b-reserve", f"{reserve} reserve src/b.py")],
            [apply_patch("b-patch", patch_update("src/b.py", "b = 1", "b = 'B'"))],
        ],
    }
    with FakeOpenAI(scripts) as fake:
        first = run_codex(codex, repo, fake, "SCRIPT-A: work on a.py")
        second = run_codex(codex, repo, fake, "SCRIPT-B: work on a.py, then b.py")
    name_a, name_b = told_name(fake, "SCRIPT-A"), told_name(fake, "SCRIPT-B")
    assert name_a == identity.session_name("codex", first)
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


def test_without_coord_on_path_the_guard_refuses(codex: Path, repo: Path) -> None:
    script = [[apply_patch("patch-free", patch_update(FREE, "free = 1", "free = 2"))]]
    with FakeOpenAI({"SCRIPT-NOCOORD": script}) as fake:
        run_codex(codex, repo, fake, "SCRIPT-NOCOORD: change it", path=path_without_coord())
    said = fake.tool_output("patch-free")
    assert said.startswith("Command blocked by PreToolUse hook: coord"), said
    assert "coord is not on PATH" in said, said
    assert (repo / FREE).read_text() == FILES[FREE]
