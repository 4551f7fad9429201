"""`coord init --claude/--codex/--gemini/--cursor` and `coord uninstall`, on real repositories.

Every scenario runs the real CLI as a process in a temporary git repository and looks at the
bytes on disk: what was there is kept, coord's entries are added once, and uninstall gives
back the files as they were.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import run_cli
from coord.core.board import Board
from coord.fast.clients import EVENTS

OTHER_SERVER = {"command": "npx", "args": ["-y", "other-mcp"], "env": {"TOKEN": "x"}}
CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(make test)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint-bash.sh"}]}
        ],
        "PostToolUse": [
            {"matcher": "Edit", "hooks": [{"type": "command", "command": "ruff format"}]}
        ],
    },
}
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}
GEMINI_SETTINGS = {"theme": "GitHub", "context": {"fileName": ["GEMINI.md"]}}


def git(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=60,
    )


def new_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q").returncode == 0
    return repo


def coord(repo: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, board_dir=repo / ".coord", cwd=repo, **kw)  # type: ignore[arg-type]


def snapshot(repo: Path, *, hooks: bool = False) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mode, without .coord/ and .git/ (but .git/hooks/ if asked)."""
    out = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        top = rel.split("/")[0]
        if top == ".coord" or (top == ".git" and not (hooks and rel.startswith(".git/hooks/"))):
            continue
        if path.is_file():
            out[rel] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def dirs(repo: Path) -> set[str]:
    return {
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*")
        if p.is_dir() and p.relative_to(repo).parts[0] not in (".git", ".coord")
    }


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def populated_repo(tmp_path: Path) -> Path:
    """A repository whose owner already set up Claude Code and Gemini CLI their way."""
    repo = new_repo(tmp_path)
    write(repo / "CLAUDE.md", "# Project rules\n\nRun `make test` before you stop.\n")
    # compact JSON without a final newline: rewriting it changes bytes, restoring must not
    write(repo / ".mcp.json", json.dumps({"mcpServers": {"other": OTHER_SERVER}}))
    write(repo / ".claude/settings.json", json.dumps(CLAUDE_SETTINGS, indent=4) + "\n")
    write(repo / ".gemini/settings.json", json.dumps(GEMINI_SETTINGS, indent=2) + "\n")
    write(repo / "src/app.py", "print('hi')\n")
    return repo


def load(repo: Path, rel: str) -> dict:  # type: ignore[type-arg]
    return json.loads((repo / rel).read_text(encoding="utf-8"))


def hook_commands(groups: list[dict]) -> list[str]:  # type: ignore[type-arg]
    """What each hook runs; for coord's, the command its line runs once coord is found (the
    line's refusal without coord is tests/test_wiring_hook_lines.py's)."""
    return [runs(h["command"]) for g in groups for h in g.get("hooks", [g])]  # Cursor: flat


def runs(line: str) -> str:
    if not line.startswith("sh -c "):
        return line
    _sh, _c, script, reason = shlex.split(line)
    assert reason.startswith("coord: ") and "exit" in script, line
    _check, _, rest = script.partition("}; ")
    return rest.removeprefix("exec ").split(" || ")[0]


# --- the main scenario ----------------------------------------------------------------------


def test_init_all_keeps_everything_adds_ours_once_and_uninstall_restores_every_byte(
    tmp_path: Path,
) -> None:
    repo = populated_repo(tmp_path)
    before = snapshot(repo, hooks=True)
    dirs_before = dirs(repo)

    done = coord(repo, "init", "--all")
    assert done.returncode == 0, done.stderr
    assert (repo / ".coord/board.db").exists()

    # Claude Code: the other server and the other hooks are still there, equal; ours added
    mcp = load(repo, ".mcp.json")
    assert mcp["mcpServers"]["other"] == OTHER_SERVER
    assert mcp["mcpServers"]["coord"] == {"command": "coord", "args": ["mcp"]}
    settings = load(repo, ".claude/settings.json")
    assert settings["permissions"] == CLAUDE_SETTINGS["permissions"]
    post = settings["hooks"]["PostToolUse"]
    assert post[0] == CLAUDE_SETTINGS["hooks"]["PostToolUse"][0]
    assert hook_commands(post[1:]) == ["coord hook claude PostToolUse"]
    pre = settings["hooks"]["PreToolUse"]
    assert pre[0] == CLAUDE_SETTINGS["hooks"]["PreToolUse"][0]
    assert pre[1]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit|Bash|Monitor|PowerShell|mcp__.*"
    assert post[1]["matcher"] == pre[1]["matcher"]  # the after check: the guard's tools
    assert set(pre[1]) == {"matcher", "hooks"}
    assert set(pre[1]["hooks"][0]) == {"type", "command", "timeout"}
    assert hook_commands(pre[1:]) == ["coord hook claude PreToolUse"]
    assert hook_commands(settings["hooks"]["SessionStart"]) == ["coord hook claude SessionStart"]
    assert "matcher" not in settings["hooks"]["SessionStart"][0]
    assert hook_commands(settings["hooks"]["Stop"]) == ["coord hook claude Stop"]
    assert (repo / ".claude/settings.json").read_text().startswith('{\n  "permissions"')

    # Gemini CLI: its other settings kept; MCP server and hooks in the same file
    gemini = load(repo, ".gemini/settings.json")
    assert gemini["theme"] == "GitHub" and gemini["context"] == GEMINI_SETTINGS["context"]
    assert gemini["mcpServers"]["coord"] == {"command": "coord", "args": ["mcp"]}
    before_tool = gemini["hooks"]["BeforeTool"]
    assert [g["matcher"] for g in before_tool] == [EVENTS["gemini"]["BeforeTool"]]
    assert "write_file|replace" in before_tool[0]["matcher"]
    assert hook_commands(before_tool) == ["coord hook gemini BeforeTool"]
    assert hook_commands(gemini["hooks"]["SessionStart"]) == ["coord hook gemini SessionStart"]
    assert set(gemini["hooks"]) == set(EVENTS["gemini"])

    # Codex: TOML that parses, and hooks for apply_patch and Bash
    config = tomllib.loads((repo / ".codex/config.toml").read_text())
    assert config == {"mcp_servers": {"coord": {"command": "coord", "args": ["mcp"]}}}
    codex_hooks = load(repo, ".codex/hooks.json")["hooks"]
    assert [g["matcher"] for g in codex_hooks["PreToolUse"]] == ["apply_patch|Bash"]
    assert hook_commands(codex_hooks["PreToolUse"]) == ["coord hook codex PreToolUse"]
    assert set(codex_hooks) == set(EVENTS["codex"])
    # every hook coord wired is one `coord hook` answers
    assert set(settings["hooks"]) == set(EVENTS["claude"])
    # Cursor
    assert load(repo, ".cursor/mcp.json") == {
        "mcpServers": {"coord": {"command": "coord", "args": ["mcp"]}}
    }
    # every JSON file: two-space indentation and a final newline
    for rel in (
        ".mcp.json",
        ".claude/settings.json",
        ".gemini/settings.json",
        ".codex/hooks.json",
        ".cursor/mcp.json",
    ):
        text = (repo / rel).read_text()
        assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"

    # what agents read
    agents = (repo / "AGENTS.md").read_text()
    assert agents.startswith("<!-- coord:begin -->\n") and agents.endswith("<!-- coord:end -->\n")
    for needle in (
        "coord next",
        "coord done",
        "coord reserve",
        "coord escalate",
        "coord inbox",
        "--as NAME",
        "guard",
    ):
        assert needle in agents
    claude_md = (repo / "CLAUDE.md").read_text()
    assert claude_md.startswith("# Project rules\n\nRun `make test` before you stop.\n")
    assert "\n@AGENTS.md\n" in claude_md
    assert "@./AGENTS.md" in (repo / "GEMINI.md").read_text()

    # the git guard: executable, runs `coord guard --staged`
    hook = repo / ".git/hooks/pre-commit"
    assert os.access(hook, os.X_OK)
    assert "coord guard --staged" in hook.read_text()
    assert hook.read_text().startswith("#!/bin/sh\n")

    # a second init changes no byte, anywhere (the record included)
    wired = snapshot(repo, hooks=True)
    record = (repo / ".coord/wiring.json").read_bytes()
    again = coord(repo, "init", "--all")
    assert again.returncode == 0, again.stderr
    assert "already wired" in again.stdout
    assert snapshot(repo, hooks=True) == wired
    assert (repo / ".coord/wiring.json").read_bytes() == record

    # uninstall: the files as they were, byte for byte; created files and dirs gone
    gone = coord(repo, "uninstall")
    assert gone.returncode == 0, gone.stderr
    assert snapshot(repo, hooks=True) == before
    assert dirs(repo) == dirs_before
    assert not hook.exists()
    assert not (repo / ".coord/wiring.json").exists()
    assert (repo / ".coord/board.db").exists() and (repo / ".coord/token").exists()
    # and nothing left to do
    assert "nothing to remove" in coord(repo, "uninstall").stdout


def test_init_json_reports_what_it_did(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    done = coord(repo, "init", "--cursor", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["clients"] == ["cursor"] and doc["dry_run"] is False
    actions = {c["path"]: c["action"] for c in doc["changes"]}
    assert actions == {
        ".cursor/mcp.json": "create",
        ".cursor/hooks.json": "create",
        "AGENTS.md": "create",
        ".git/hooks/pre-commit": "create",
    }
    assert not (repo / "CLAUDE.md").read_text().count("@AGENTS.md")  # Claude not chosen


def test_init_without_flags_only_creates_the_board_and_names_the_flags(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    before = snapshot(repo, hooks=True)
    done = coord(repo, "init")
    assert done.returncode == 0, done.stderr
    assert (repo / ".coord/board.db").exists()
    assert snapshot(repo, hooks=True) == before
    for flag in ("--claude", "--codex", "--gemini", "--cursor", "--all"):
        assert flag in done.stdout


# --- dry run and refusals -------------------------------------------------------------------


def test_dry_run_shows_diffs_and_writes_nothing(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    before = snapshot(repo, hooks=True)
    shown = coord(repo, "init", "--all", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert snapshot(repo, hooks=True) == before
    assert not (repo / ".coord").exists()
    out = shown.stdout
    assert "--- a/.mcp.json\n+++ b/.mcp.json" in out
    assert '+    "coord": {' in out
    assert "--- /dev/null\n+++ b/.cursor/mcp.json" in out
    assert "+coord guard --staged || exit $?" in out
    doc = json.loads(coord(repo, "init", "--all", "--dry-run", "--json").stdout)
    assert {c["path"] for c in doc["changes"]} >= {".mcp.json", "AGENTS.md", "CLAUDE.md"}
    assert all(c["diff"].startswith("--- ") for c in doc["changes"])
    assert snapshot(repo, hooks=True) == before

    # uninstall --dry-run writes nothing either
    assert coord(repo, "init", "--all").returncode == 0
    wired = snapshot(repo, hooks=True)
    shown = coord(repo, "uninstall", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "would restore .mcp.json" in shown.stdout
    assert "would delete .cursor/mcp.json" in shown.stdout
    assert snapshot(repo, hooks=True) == wired
    assert (repo / ".coord/wiring.json").exists()


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ('{"mcpServers": {"other": {"command": "x"},}}', "not valid JSON at line 1"),
        ('["not", "an", "object"]', "holds a JSON list, not an object"),
        ('{"mcpServers": ["x"]}', "`mcpServers` is a list, not an object"),
    ],
)
def test_a_malformed_settings_file_refuses_everything(
    tmp_path: Path, content: str, what: str
) -> None:
    repo = populated_repo(tmp_path)
    write(repo / ".mcp.json", content)
    before = snapshot(repo, hooks=True)
    refused = coord(repo, "init", "--all")
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert "\n" not in line and "Traceback" not in refused.stderr
    assert line.startswith("coord: .mcp.json: ") and what in line
    assert "nothing was written" in line
    assert snapshot(repo, hooks=True) == before  # the other files too
    assert not (repo / ".coord").exists()
    as_json = json.loads(coord(repo, "init", "--all", "--json").stdout)
    assert as_json["error"] == "invalid_input" and ".mcp.json" in as_json["message"]


def test_invalid_toml_is_refused_and_a_valid_one_keeps_its_bytes(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    write(repo / ".codex/config.toml", 'model = "o3"\n[mcp_servers.x\n')
    refused = coord(repo, "init", "--codex")
    assert refused.returncode == 2
    assert refused.stderr.startswith("coord: .codex/config.toml: not valid TOML")
    assert not (repo / "AGENTS.md").exists()

    original = (
        '# mine\nmodel = "o3"  # keep this comment\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    )
    write(repo / ".codex/config.toml", original)
    assert coord(repo, "init", "--codex").returncode == 0
    text = (repo / ".codex/config.toml").read_text()
    assert text.startswith(original)
    data = tomllib.loads(text)
    assert data["mcp_servers"] == {
        "docs": {"command": "docs-mcp"},
        "coord": {"command": "coord", "args": ["mcp"]},
    }
    assert coord(repo, "uninstall").returncode == 0
    assert (repo / ".codex/config.toml").read_text() == original


def test_a_server_named_coord_that_is_not_ours_is_left_alone(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    theirs = {"command": "/opt/coord-fork", "args": ["serve-mcp"]}
    write(repo / ".cursor/mcp.json", json.dumps({"mcpServers": {"coord": theirs}}, indent=2) + "\n")
    write(repo / ".codex/config.toml", '[mcp_servers.coord]\ncommand = "/opt/coord-fork"\n')
    before = snapshot(repo)
    done = coord(repo, "init", "--cursor", "--codex")
    assert done.returncode == 0, done.stderr
    assert "left `mcpServers.coord` as it is" in done.stdout
    assert "left `mcp_servers.coord` as it is" in done.stdout
    assert (repo / ".cursor/mcp.json").read_bytes() == before[".cursor/mcp.json"][0]
    assert (repo / ".codex/config.toml").read_bytes() == before[".codex/config.toml"][0]
    assert coord(repo, "uninstall").returncode == 0
    assert snapshot(repo) == before


# --- --command ------------------------------------------------------------------------------


def test_command_replaces_coord_everywhere(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    write(repo / ".pre-commit-config.yaml", "repos:\n  - repo: local\n    hooks: []\n")
    cmd = "/abs/venv/bin/coord"
    done = coord(repo, "init", "--all", "--command", cmd)
    assert done.returncode == 0, done.stderr
    server = {"command": cmd, "args": ["mcp"]}
    assert load(repo, ".mcp.json")["mcpServers"]["coord"] == server
    assert load(repo, ".cursor/mcp.json")["mcpServers"]["coord"] == server
    assert load(repo, ".gemini/settings.json")["mcpServers"]["coord"] == server
    codex = tomllib.loads((repo / ".codex/config.toml").read_text())
    assert codex["mcp_servers"]["coord"] == server
    commands = [
        command
        for rel in (
            ".claude/settings.json",
            ".codex/hooks.json",
            ".gemini/settings.json",
            ".cursor/hooks.json",
        )
        for groups in load(repo, rel)["hooks"].values()
        for command in hook_commands(groups)
    ]
    wired = sum(len(events) for events in EVENTS.values())
    assert len(commands) == wired and all(c.startswith(f"{cmd} hook ") for c in commands)
    assert f"{cmd} next --as NAME" in (repo / "AGENTS.md").read_text()
    assert f'entry: "{cmd} guard --staged"' in (repo / ".pre-commit-config.yaml").read_text()
    # no bare `coord` command anywhere we wrote
    for rel in (
        ".claude/settings.json",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".mcp.json",
        ".cursor/mcp.json",
        ".codex/config.toml",
        "AGENTS.md",
        ".pre-commit-config.yaml",
    ):
        text = (repo / rel).read_text()
        bare = ('"coord hook', '"command": "coord"', 'command = "coord"', '"coord guard')
        for needle in (*bare, "`coord next", "`coord done", "`coord reserve"):
            assert needle not in text, (rel, needle)


def test_a_new_command_replaces_ours_in_place(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    before = snapshot(repo, hooks=True)
    assert coord(repo, "init", "--claude").returncode == 0
    # the owner adds a hook of their own after ours
    settings = load(repo, ".claude/settings.json")
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify"}]})
    write(repo / ".claude/settings.json", json.dumps(settings, indent=2) + "\n")

    assert coord(repo, "init", "--claude", "--command", "/new/coord").returncode == 0
    settings = load(repo, ".claude/settings.json")
    assert hook_commands(settings["hooks"]["Stop"]) == ["/new/coord hook claude Stop", "notify"]
    assert hook_commands(settings["hooks"]["PreToolUse"]) == [
        "./lint-bash.sh",
        "/new/coord hook claude PreToolUse",
    ]
    assert load(repo, ".mcp.json")["mcpServers"]["coord"]["command"] == "/new/coord"
    assert "/new/coord guard --staged" in (repo / ".git/hooks/pre-commit").read_text()
    assert "`/new/coord next" in (repo / "AGENTS.md").read_text()

    # uninstall takes out only ours; the owner's `notify` stays
    assert coord(repo, "uninstall").returncode == 0
    settings = load(repo, ".claude/settings.json")
    assert settings["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify"}]}]
    assert settings["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    assert "SessionStart" not in settings["hooks"]
    after = snapshot(repo, hooks=True)
    assert after[".mcp.json"] == before[".mcp.json"]
    assert after["CLAUDE.md"] == before["CLAUDE.md"]
    assert ".git/hooks/pre-commit" not in after and "AGENTS.md" not in after


# --- uninstall after the owner changed things -----------------------------------------------


def test_uninstall_after_edits_removes_only_coords_part(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    assert coord(repo, "init", "--claude", "--cursor").returncode == 0
    # edits after init: a second server in a file init modified, one in a file init created,
    # notes around coord's block in AGENTS.md
    mcp = load(repo, ".mcp.json")
    mcp["mcpServers"]["mine"] = {"command": "mine"}
    write(repo / ".mcp.json", json.dumps(mcp, indent=2) + "\n")
    cursor = load(repo, ".cursor/mcp.json")
    cursor["mcpServers"]["mine"] = {"command": "mine"}
    write(repo / ".cursor/mcp.json", json.dumps(cursor, indent=2) + "\n")
    agents = (repo / "AGENTS.md").read_text()
    write(repo / "AGENTS.md", "# Agents\n\n" + agents + "\nTests: `make test`.\n")

    gone = coord(repo, "uninstall")
    assert gone.returncode == 0, gone.stderr
    assert load(repo, ".mcp.json") == {
        "mcpServers": {"other": OTHER_SERVER, "mine": {"command": "mine"}}
    }
    assert load(repo, ".cursor/mcp.json") == {"mcpServers": {"mine": {"command": "mine"}}}
    assert (repo / "AGENTS.md").read_text() == "# Agents\n\n\nTests: `make test`.\n"
    # the files nobody touched are back exactly
    assert (repo / "CLAUDE.md").read_text() == (
        "# Project rules\n\nRun `make test` before you stop.\n"
    )
    assert load(repo, ".claude/settings.json") == CLAUDE_SETTINGS
    claude_settings = (repo / ".claude/settings.json").read_text()
    assert claude_settings == json.dumps(CLAUDE_SETTINGS, indent=4) + "\n"


def test_a_created_file_emptied_of_coords_entries_is_deleted(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    assert coord(repo, "init", "--codex").returncode == 0
    # reformatted by an editor: no longer what init wrote, still only coord's entries
    data = load(repo, ".codex/hooks.json")
    write(repo / ".codex/hooks.json", json.dumps(data, indent=4))
    assert coord(repo, "uninstall").returncode == 0
    assert not (repo / ".codex").exists()
    assert not (repo / "AGENTS.md").exists()


# --- the git pre-commit guard ---------------------------------------------------------------


def commit(repo: Path, agent: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in GIT_ENV.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    if agent:
        env["COORD_AGENT"] = agent
    return git(repo, "commit", "-q", "-m", "change", env=env)


def test_the_pre_commit_hook_runs_the_guard_for_real(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    coord_exe = Path(sys.executable).parent / "coord"
    assert coord_exe.exists()
    assert coord(repo, "init", "--claude", "--command", str(coord_exe)).returncode == 0
    hook = repo / ".git/hooks/pre-commit"
    assert os.access(hook, os.X_OK)
    assert f"{coord_exe} guard --staged || exit $?" in hook.read_text()

    board = Board.open(repo / ".coord")
    board.reserve(["src/app.py"], agent="alice")
    board.close()
    write(repo / "src/app.py", "print('changed')\n")
    assert git(repo, "add", "src/app.py").returncode == 0
    refused = commit(repo, "bob")
    assert refused.returncode != 0
    assert "src/app.py is held by alice" in refused.stderr
    assert git(repo, "rev-parse", "--verify", "-q", "HEAD").returncode != 0  # no commit
    allowed = commit(repo, "alice")
    assert allowed.returncode == 0, allowed.stderr


def fake_coord(tmp_path: Path, exit_code: int) -> Path:
    """A `coord` that records its arguments and exits as told."""
    exe = tmp_path / f"bin{exit_code}" / "coord"
    write(exe, f'#!/bin/sh\necho "$@" >> "{tmp_path}/calls"\nexit {exit_code}\n')
    exe.chmod(0o755)
    return exe


def run_hook(repo: Path, hook: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(hook)], cwd=repo, capture_output=True, text=True, timeout=60)


def test_an_existing_hook_is_chained_not_clobbered_and_restored(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    hook = repo / ".git/hooks/pre-commit"
    original = '#!/usr/bin/env bash\nset -e\necho "user hook ran" >> "$PWD/.user-hook"\n'
    write(hook, original)
    hook.chmod(0o750)

    refusing = fake_coord(tmp_path, 2)
    assert coord(repo, "init", "--cursor", "--command", str(refusing)).returncode == 0
    text = hook.read_text()
    assert text.startswith("#!/usr/bin/env bash\n# coord:begin")
    assert text.endswith('# coord:end\nset -e\necho "user hook ran" >> "$PWD/.user-hook"\n')
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750
    ran = run_hook(repo, hook)
    assert ran.returncode == 2  # the guard refused: the commit stops, the user's hook not run
    assert (tmp_path / "calls").read_text() == "guard --staged\n"
    assert not (repo / ".user-hook").exists()

    allowing = fake_coord(tmp_path, 0)
    assert coord(repo, "init", "--cursor", "--command", str(allowing)).returncode == 0
    assert run_hook(repo, hook).returncode == 0
    assert (repo / ".user-hook").read_text() == "user hook ran\n"
    assert hook.read_text().count("coord:begin") == 1

    (repo / ".user-hook").unlink()
    assert coord(repo, "uninstall").returncode == 0
    assert hook.read_text() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750


def test_a_hook_that_is_not_a_shell_script_is_left_alone(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    hook = repo / ".git/hooks/pre-commit"
    original = "#!/usr/bin/env python3\nprint('mine')\n"
    write(hook, original)
    done = coord(repo, "init", "--cursor")
    assert done.returncode == 0, done.stderr
    assert "left your pre-commit hook as it is" in done.stdout
    assert "coord guard --staged" in done.stdout
    assert hook.read_text() == original


def test_core_hooks_path_is_respected(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    assert git(repo, "config", "core.hooksPath", ".githooks").returncode == 0
    assert coord(repo, "init", "--gemini").returncode == 0
    hook = repo / ".githooks/pre-commit"
    assert os.access(hook, os.X_OK) and "coord guard --staged" in hook.read_text()
    assert not (repo / ".git/hooks/pre-commit").exists()
    assert coord(repo, "uninstall").returncode == 0
    assert not (repo / ".githooks").exists()
    assert not (repo / ".gemini").exists() and not (repo / "GEMINI.md").exists()


PRE_COMMIT_CONFIG = """\
# my hooks
default_install_hook_types: [pre-commit]
repos:
-   repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v4.6.0
    hooks:
    -   id: trailing-whitespace
# ruff, pinned
-   repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.6.0
    hooks:
    -   id: ruff

ci:
    autofix_prs: false
"""


def test_a_pre_commit_config_gets_a_local_hook_and_no_plain_git_hook(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    write(repo / ".pre-commit-config.yaml", PRE_COMMIT_CONFIG)
    done = coord(repo, "init", "--claude")
    assert done.returncode == 0, done.stderr
    assert "pre-commit install" in done.stdout
    assert not (repo / ".git/hooks/pre-commit").exists()
    text = (repo / ".pre-commit-config.yaml").read_text()
    ours = """\
-   repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.6.0
    hooks:
    -   id: ruff
# coord:begin (written by `coord init`; `coord uninstall` removes it)
- repo: local
  hooks:
    - id: coord-guard
      name: coord guard (files other agents hold)
      entry: "coord guard --staged"
      language: system
      pass_filenames: false
      always_run: true
# coord:end

ci:
"""
    assert ours in text
    # every other byte is the owner's
    lines = text.splitlines(keepends=True)
    begin = next(i for i, line in enumerate(lines) if line.startswith("# coord:begin"))
    end = next(i for i, line in enumerate(lines) if line.startswith("# coord:end"))
    assert "".join(lines[:begin] + lines[end + 1 :]) == PRE_COMMIT_CONFIG

    wired = snapshot(repo, hooks=True)
    assert coord(repo, "init", "--claude").returncode == 0
    assert snapshot(repo, hooks=True) == wired
    assert coord(repo, "uninstall").returncode == 0
    assert (repo / ".pre-commit-config.yaml").read_text() == PRE_COMMIT_CONFIG


def test_an_indented_repos_list_gets_an_item_at_its_indentation(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    config = "repos:\n  - repo: local\n    hooks:\n      - id: x\n        entry: x\n"
    write(repo / ".pre-commit-config.yaml", config)
    assert coord(repo, "init", "--cursor").returncode == 0
    text = (repo / ".pre-commit-config.yaml").read_text()
    assert text.startswith(config + "  # coord:begin")
    assert "\n  - repo: local\n    hooks:\n      - id: coord-guard\n" in text
    assert text.endswith("  # coord:end\n")


# --- instructions ---------------------------------------------------------------------------


def test_instructions_are_one_marked_block_and_an_existing_import_is_kept(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    write(repo / "AGENTS.md", "# Agents\n\nUse tabs.")  # no final newline
    write(repo / "CLAUDE.md", "@AGENTS.md\n\nClaude only: be brief.\n")
    done = coord(repo, "init", "--claude")
    assert done.returncode == 0, done.stderr
    agents = (repo / "AGENTS.md").read_text()
    assert agents.startswith("# Agents\n\nUse tabs.\n\n<!-- coord:begin -->\n")
    assert agents.count("<!-- coord:begin -->") == 1 and agents.endswith("<!-- coord:end -->\n")
    assert (repo / "CLAUDE.md").read_text() == "@AGENTS.md\n\nClaude only: be brief.\n"
    assert coord(repo, "uninstall").returncode == 0
    assert (repo / "AGENTS.md").read_text() == "# Agents\n\nUse tabs."


def test_claude_md_linked_to_agents_md_imports_nothing(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    write(repo / "AGENTS.md", "# Agents\n")
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")
    done = coord(repo, "init", "--claude")
    assert done.returncode == 0, done.stderr
    assert (repo / "CLAUDE.md").is_symlink()
    text = (repo / "AGENTS.md").read_text()
    assert "@AGENTS.md" not in text and text.count("<!-- coord:begin -->") == 1
    assert coord(repo, "uninstall").returncode == 0
    assert (repo / "AGENTS.md").read_text() == "# Agents\n"
    assert (repo / "CLAUDE.md").is_symlink()


def test_a_hooks_path_outside_the_repository_is_left_alone(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    shared = tmp_path / "global-hooks"
    assert git(repo, "config", "core.hooksPath", str(shared)).returncode == 0
    done = coord(repo, "init", "--cursor")
    assert done.returncode == 0, done.stderr
    assert "outside this repository" in done.stdout and "guard --staged" in done.stdout
    assert not shared.exists()
    assert not (repo / ".git/hooks/pre-commit").exists()


def test_a_worktree_wires_the_repository_hooks(tmp_path: Path) -> None:
    main = new_repo(tmp_path)
    assert git(main, "commit", "-q", "--allow-empty", "-m", "x", env=GIT_ENV).returncode == 0
    tree = tmp_path / "agent-1"
    assert git(main, "worktree", "add", "-q", str(tree)).returncode == 0
    done = coord(tree, "init", "--cursor", "--json")
    assert done.returncode == 0, done.stderr
    hook = main / ".git/hooks/pre-commit"
    assert {c["path"] for c in json.loads(done.stdout)["changes"]} == {
        ".cursor/mcp.json",
        ".cursor/hooks.json",
        "AGENTS.md",
        str(hook),
    }
    assert "coord guard --staged" in hook.read_text()
    assert coord(tree, "uninstall").returncode == 0
    assert not hook.exists() and not (tree / ".cursor").exists()


def test_clients_wired_one_after_another_are_all_undone(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    before = snapshot(repo, hooks=True)
    for client in ("--claude", "--codex", "--gemini", "--cursor"):
        done = coord(repo, "init", client)
        assert done.returncode == 0, done.stderr
    wired = snapshot(repo, hooks=True)
    assert coord(repo, "init", "--all").returncode == 0
    assert snapshot(repo, hooks=True) == wired
    assert coord(repo, "uninstall").returncode == 0
    assert snapshot(repo, hooks=True) == before


def test_uninstall_refuses_a_file_broken_since_and_removes_nothing(tmp_path: Path) -> None:
    repo = populated_repo(tmp_path)
    assert coord(repo, "init", "--claude").returncode == 0
    write(repo / ".claude/settings.json", '{"hooks": {// a comment\n}}')
    before = snapshot(repo, hooks=True)
    refused = coord(repo, "uninstall")
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert line.startswith("coord: .claude/settings.json: not valid JSON at line 1")
    assert "comments are not JSON" in line and "nothing was removed" in line
    assert snapshot(repo, hooks=True) == before
    assert (repo / ".coord/wiring.json").exists()
