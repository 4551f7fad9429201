"""The hook lines `coord init` wires, run as the clients run them, with and without coord.

A client runs a hook's ``command`` through the shell with its hook JSON on stdin. When
``coord`` is not on the PATH, a bare ``coord hook ...`` exits 127, which every client takes for
a non-blocking error: the edit goes through. These tests take each guard line out of the
client's own config file, run it with ``/bin/sh -c`` in a real repository with a real board,
and check what the client would read: exit 2 and a reason on stderr (a refusal in Claude Code,
Codex and Gemini CLI) without coord; the usual answers with coord on the PATH. They also check
what `coord init` tells the user: the missing command, and each client's trust switch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from coord.core.board import Board
from coord.fast import identity
from coord.fast.clients import EVENTS

FIXTURES = Path(__file__).parent / "hooks"
HELD = "src/auth/session.py"  # the file the documented edit inputs write
COORD = Path(sys.executable).with_name("coord")  # the venv's console script
# (client, its config file, the guard event, an edit input in tests/hooks)
GUARDS = [
    ("claude", ".claude/settings.json", "PreToolUse", "claude/pre_tool_use_edit.json"),
    ("codex", ".codex/hooks.json", "PreToolUse", "codex/pre_tool_use_apply_patch.json"),
    ("gemini", ".gemini/settings.json", "BeforeTool", "gemini/before_tool_write_file.json"),
]
OTHERS = [
    ("claude", ".claude/settings.json", "SessionStart", "claude/session_start.json"),
    ("claude", ".claude/settings.json", "Stop", "claude/stop.json"),
    ("codex", ".codex/hooks.json", "Stop", "codex/stop.json"),
    ("gemini", ".gemini/settings.json", "AfterAgent", "gemini/after_agent.json"),
]


SH = ("/bin/sh", "-c")  # Claude Code and Gemini CLI
LOGIN_BASH = ("/bin/bash", "-lc")  # Codex: the user's $SHELL -lc


def fixture(name: str, repo: Path) -> dict[str, Any]:
    """A documented hook input, with the repository at /REPO."""
    text = (FIXTURES / name).read_text().replace('"/REPO', json.dumps(str(repo))[:-1])
    data: dict[str, Any] = json.loads(text)
    return data


def new_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def init(repo: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path} if path is not None else None
    return run_cli("init", *args, board_dir=repo / ".coord", cwd=repo, env=env)


def bin_with_coord(tmp_path: Path) -> Path:
    """A directory whose only program is coord: a PATH with it and the system's tools."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    link = folder / "coord"
    if not link.exists():
        link.symlink_to(COORD)
    return folder


def wired_line(repo: Path, config: str, event: str) -> str:
    groups = json.loads((repo / config).read_text())["hooks"][event]
    lines = [h["command"] for g in groups for h in g["hooks"] if "coord" in h["command"]]
    assert len(lines) == 1, lines
    return str(lines[0])


def wired_guard(
    tmp_path: Path, client: str, config: str, event: str, name: str
) -> tuple[Path, str, dict[str, Any]]:
    """A repository wired for ``client``, its guard line and an edit input for it."""
    repo = new_repo(tmp_path)
    assert init(repo, f"--{client}").returncode == 0
    return repo, wired_line(repo, config, event), fixture(name, repo)


def run_line(
    line: str, payload: dict[str, Any], repo: Path, path: str, shell: tuple[str, ...] = SH
) -> subprocess.CompletedProcess[str]:
    """The hook as the client runs it: its shell, the command line, the JSON on stdin."""
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    env["PATH"] = path
    return subprocess.run(
        [*shell, line],
        input=json.dumps(payload),
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )


def reserve(repo: Path, pattern: str, agent: str) -> None:
    board = Board.open(repo / ".coord")
    try:
        board.reserve([pattern], agent=agent)
    finally:
        board.close()


NO_COORD = "/usr/bin:/bin"  # the system's tools, no coord (checked below)


def test_the_system_path_used_here_has_no_coord() -> None:
    found = subprocess.run(
        ["/bin/sh", "-c", "command -v coord"], env={"PATH": NO_COORD}, capture_output=True
    )
    assert found.returncode != 0, "a coord is installed system-wide: these tests cannot run"


@pytest.mark.parametrize(("client", "config", "event", "name"), GUARDS, ids=[g[0] for g in GUARDS])
def test_without_coord_on_path_the_wired_guard_refuses(
    tmp_path: Path, client: str, config: str, event: str, name: str
) -> None:
    repo, line, payload = wired_guard(tmp_path, client, config, event, name)

    for shell in (SH, LOGIN_BASH):
        done = run_line(line, payload, repo, NO_COORD, shell)
        # exit 2: the code all three clients read as "refuse this tool call", reason on stderr
        assert done.returncode == 2, (shell, done.returncode, done.stderr)
        assert "coord is not on PATH" in done.stderr and "refused" in done.stderr
        assert "coord init --command" in done.stderr
        assert done.stderr.count("\n") == 1 and done.stdout == ""


def fake_coord(tmp_path: Path, body: str) -> Path:
    """A directory holding a `coord` that does what ``body`` says (a broken install)."""
    folder = tmp_path / "fake"
    folder.mkdir(exist_ok=True)
    exe = folder / "coord"
    exe.write_text(body)
    exe.chmod(0o755)
    return folder


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("#!/bin/sh\necho crashed >&2\nexit 1\n", 1),  # a traceback's exit 1: not a refusal
        ("#!/nonexistent/python\n", 127),  # its interpreter gone: the shell's 127
        ("#!/bin/sh\nkill -9 $$\n", 137),  # killed
    ],
    ids=["crash", "no-interpreter", "killed"],
)
def test_a_coord_that_fails_makes_the_guard_refuse(tmp_path: Path, body: str, code: int) -> None:
    repo = new_repo(tmp_path)
    assert init(repo, "--claude").returncode == 0
    line = wired_line(repo, ".claude/settings.json", "PreToolUse")
    path = f"{fake_coord(tmp_path, body)}:{NO_COORD}"
    done = run_line(line, fixture("claude/pre_tool_use_edit.json", repo), repo, path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert f"the coord hook exited {code}, so this call is refused" in done.stderr


@pytest.mark.parametrize(("client", "config", "event", "name"), GUARDS, ids=[g[0] for g in GUARDS])
def test_with_coord_on_path_the_wired_guard_answers_as_before(
    tmp_path: Path, client: str, config: str, event: str, name: str
) -> None:
    repo, line, payload = wired_guard(tmp_path, client, config, event, name)
    path = f"{bin_with_coord(tmp_path)}:{NO_COORD}"

    free = run_line(line, payload, repo, path)  # nobody holds the file: allowed in silence
    assert (free.returncode, free.stdout) == (0, ""), free.stderr

    reserve(repo, "src/auth", "alice")
    held = run_line(line, payload, repo, path)
    assert held.returncode == 0, held.stderr
    answer = json.loads(held.stdout)
    decision = answer if client == "gemini" else answer["hookSpecificOutput"]
    verdict = decision.get("decision") or decision.get("permissionDecision")
    assert verdict == "deny" and "alice" in json.dumps(answer)


def test_with_coord_on_path_the_holder_is_allowed(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    assert init(repo, "--gemini").returncode == 0
    payload = fixture("gemini/before_tool_replace.json", repo)
    reserve(repo, "src/auth", identity.session_name("gemini", payload["session_id"]))
    line = wired_line(repo, ".gemini/settings.json", "BeforeTool")
    done = run_line(line, payload, repo, f"{bin_with_coord(tmp_path)}:{NO_COORD}")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


@pytest.mark.parametrize(
    ("client", "config", "event", "name"), OTHERS, ids=[f"{o[0]}-{o[2]}" for o in OTHERS]
)
def test_without_coord_other_events_report_and_never_block(
    tmp_path: Path, client: str, config: str, event: str, name: str
) -> None:
    # a Stop hook's exit 2 would keep the agent working: these say so and exit 1
    repo = new_repo(tmp_path)
    assert init(repo, f"--{client}").returncode == 0
    done = run_line(wired_line(repo, config, event), fixture(name, repo), repo, NO_COORD)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "coord is not on PATH" in done.stderr


def test_a_missing_command_path_refuses_too(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    gone = tmp_path / "gone-venv" / "bin" / "coord"
    done = init(repo, "--claude", "--command", str(gone))
    assert done.returncode == 0, done.stderr
    assert f"warning: `{gone}` is not found here" in done.stdout
    line = wired_line(repo, ".claude/settings.json", "PreToolUse")
    run = run_line(line, fixture("claude/pre_tool_use_edit.json", repo), repo, NO_COORD)
    assert run.returncode == 2 and "is not found, so this call is refused" in run.stderr


def test_the_wired_lines_name_no_machine_path(tmp_path: Path) -> None:
    # a config a team commits works on every machine with coord on its PATH
    repo = new_repo(tmp_path)
    assert init(repo, "--all").returncode == 0
    for _client, config, event, _name in GUARDS + OTHERS:
        line = wired_line(repo, config, event)
        assert str(tmp_path) not in line and str(COORD.parent) not in line
        assert line.startswith("sh -c 'command -v coord ")
        assert f" coord hook {_client} {event}" in line


# --- what `coord init` says -----------------------------------------------------------------


def test_init_warns_when_coord_is_not_on_path(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    missing = init(repo, "--claude", path=NO_COORD)
    assert missing.returncode == 0, missing.stderr
    warning = [ln for ln in missing.stdout.splitlines() if ln.startswith("warning: `coord`")]
    assert len(warning) == 1 and "is not on PATH" in warning[0] and "--command" in warning[0]

    found = init(repo, "--claude", path=f"{bin_with_coord(tmp_path)}:{NO_COORD}")
    assert found.returncode == 0, found.stderr
    assert "not on PATH" not in found.stdout


def notes(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [ln for ln in done.stdout.splitlines() if ln.startswith("note: ")]


def test_init_names_each_wired_clients_trust_switch_and_no_other(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    gemini = " ".join(notes(init(repo, "--gemini")))
    assert "Gemini CLI ignores .gemini/settings.json" in gemini
    assert "/permissions" in gemini and "--skip-trust" in gemini
    assert "Codex" not in gemini

    codex = " ".join(notes(init(repo, "--codex")))
    assert 'trust_level = "trusted"' in codex and "/hooks in codex" in codex
    assert "Gemini" not in codex
    assert "changed" not in codex.split("runs each new or changed hook")[1]  # first wiring

    # the same command again: the hooks are unchanged, their trust holds
    assert "hooks in .codex/hooks.json changed" not in " ".join(notes(init(repo, "--codex")))
    # another --command rewrites them, and Codex silently stops running them
    again = " ".join(notes(init(repo, "--codex", "--command", "/opt/coord/bin/coord")))
    assert "coord's hooks in .codex/hooks.json changed" in again
    assert "trust it again (/hooks in codex)" in again


def test_json_output_carries_the_warning_and_notes(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    done = run_cli(
        "--json", "init", "--gemini", board_dir=repo / ".coord", cwd=repo, env={"PATH": NO_COORD}
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert any("is not on PATH" in w for w in doc["warnings"])


# --- an older init's bare `coord` hook ------------------------------------------------------

OLD_INIT = """
import sys
from coord.wiring import shared_shapes
# what `coord init` wrote before the hook line looked for coord: a bare `coord hook ...`
shared_shapes.hook_line = lambda shell, client, event, guard: f"{shell} hook {client} {event}"
from coord.cli.entry import main
sys.argv = ["coord", "init", "--all"]
raise SystemExit(main())
"""


def test_rerunning_init_replaces_an_older_bare_hook_and_uninstall_still_restores(
    tmp_path: Path,
) -> None:
    repo = new_repo(tmp_path)
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./lint.sh"}]}]}}  # fmt: skip
    (repo / ".claude").mkdir()
    original = (json.dumps(settings, indent=4) + "\n").encode()
    (repo / ".claude/settings.json").write_bytes(original)
    env = {**os.environ, "COORD_DIR": str(repo / ".coord")}
    old = subprocess.run(
        [sys.executable, "-c", OLD_INIT], cwd=repo, env=env, capture_output=True, text=True
    )
    assert old.returncode == 0, old.stderr
    bare = wired_line(repo, ".claude/settings.json", "PreToolUse")
    assert bare == "coord hook claude PreToolUse"

    assert init(repo, "--all").returncode == 0
    for client, config, event, _name in GUARDS + OTHERS:
        line = wired_line(repo, config, event)  # exactly one of ours: replaced, not added
        assert line.startswith("sh -c 'command -v coord ")
        assert f" coord hook {client} {event}" in line
    hooks = json.loads((repo / ".claude/settings.json").read_text())["hooks"]
    assert hooks["PreToolUse"][0] == settings["hooks"]["PreToolUse"][0]
    assert len(hooks["PreToolUse"]) == 2
    assert set(hooks) == set(EVENTS["claude"])

    # idempotent from there, and uninstall gives the owner's bytes back
    wired = (repo / ".claude/settings.json").read_bytes()
    assert "already wired" in init(repo, "--all").stdout
    assert (repo / ".claude/settings.json").read_bytes() == wired
    assert run_cli("uninstall", board_dir=repo / ".coord", cwd=repo).returncode == 0
    assert (repo / ".claude/settings.json").read_bytes() == original


def test_without_coord_the_pre_commit_hook_refuses_and_says_why(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    assert init(repo, "--cursor").returncode == 0
    (repo / "a.py").write_text("x = 1\n")
    env = {"PATH": NO_COORD, "HOME": str(tmp_path)}
    env.update({f"GIT_{who}_NAME": "t" for who in ("AUTHOR", "COMMITTER")})
    env.update({f"GIT_{who}_EMAIL": "t@e" for who in ("AUTHOR", "COMMITTER")})

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)

    assert git("add", "a.py").returncode == 0
    done = git("commit", "-q", "-m", "x")
    assert done.returncode != 0
    assert "coord is not found, so the commit is refused" in done.stderr
    assert git("rev-parse", "-q", "--verify", "HEAD").returncode != 0  # no commit was made
