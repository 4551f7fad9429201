"""Every agent its own name (issue 13 item 9): a digest of the whole session id, not its start.

Codex session ids are UUIDv7: the first 48 bits are a millisecond timestamp, so ids made in
the same minute share their first 8 hex characters, which coord once took as the name.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from coord.fast import identity
from test_hooks import GUARDS, allowed, denied, fixture, hook, reserve


def uuid7(ms: int) -> str:
    """A UUIDv7 for the millisecond ``ms``, as Codex makes them (RFC 9562)."""
    value = (ms << 80) | (0x7 << 76) | (secrets.randbits(12) << 64) | (0b10 << 62)
    value |= secrets.randbits(62)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def test_five_codex_sessions_of_one_minute_get_five_names() -> None:
    start = (int(time.time() * 1000) >> 16) << 16  # the start of a 65.5-second span
    ids = [uuid7(start + i * 9_000) for i in range(5)]  # 5 sessions within 45 seconds
    assert len({i[:8] for i in ids}) == 1  # what coord used to name them after
    names = [identity.session_name("codex", i) for i in ids]
    assert len(set(names)) == 5
    for session_id, name in zip(ids, names, strict=True):
        assert identity.session_name("codex", session_id) == name  # stable
        assert name.startswith("codex-") and len(name) == len("codex-") + 8
        assert all(c in "0123456789abcdef" for c in name[len("codex-") :])


def test_a_session_recorded_under_its_old_name_keeps_it_until_it_ends(
    board_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COORD_AGENT", raising=False)
    session_id = uuid7(int(time.time() * 1000))
    old = f"codex-{session_id[:8]}"  # what coord before issue 13 recorded at SessionStart
    folder = board_dir / "sessions"
    folder.mkdir(exist_ok=True)
    record = {"agent": old, "client": "codex", "session_id": session_id}
    import json

    (folder / f"{identity.client_pid()}.json").write_text(json.dumps(record))
    assert identity.agent_name(board_dir, "codex", session_id) == old
    assert identity.remember(board_dir, "codex", session_id) == old  # a resumed session too
    # another session of the same client process is named afresh
    other = uuid7(int(time.time() * 1000))
    assert identity.agent_name(board_dir, "codex", other) == identity.session_name("codex", other)
    assert identity.remember(board_dir, "codex", other) == identity.session_name("codex", other)
    assert identity.recorded(board_dir) == identity.session_name("codex", other)


@pytest.mark.parametrize("client", sorted(GUARDS))
def test_two_sessions_started_together_keep_out_of_each_others_files(
    board_dir: Path, client: str
) -> None:
    repo = board_dir.parent
    (repo / "src" / "auth").mkdir(parents=True)
    now = int(time.time() * 1000)
    first, second = uuid7(now), uuid7(now + 3_000)
    name = {
        "claude": "claude/pre_tool_use_edit.json",
        "codex": "codex/pre_tool_use_apply_patch.json",
    }
    edit = fixture(name.get(client, "gemini/before_tool_write_file.json"), repo)
    reserve(board_dir, ["src/auth"], identity.session_name(client, first))
    edit["session_id"] = second
    reason = denied(hook(client, GUARDS[client], edit, board_dir=board_dir, cwd=repo), client)
    assert identity.session_name(client, first) in reason
    edit["session_id"] = first
    allowed(hook(client, GUARDS[client], edit, board_dir=board_dir, cwd=repo))


def test_the_name_costs_no_openssl_import() -> None:
    import subprocess
    import sys

    code = "import sys; from coord.fast import identity; identity.session_name('codex', 'x'); "
    code += "print('_hashlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# A process tree as a client makes it, with /proc hidden as on macOS: the client runs its
# SessionStart hook behind `sh -c` and its MCP server directly. Both must find the client.
_AS_MACOS = (
    "import sys\n"
    "from coord.fast import identity\n"
    "identity._PROC = '/nonexistent-proc'  # no /proc: as on macOS\n"
    "from coord.cli.entry import main\n"
)
_HOOK = _AS_MACOS + "sys.exit(main(['hook', 'claude', 'SessionStart']))\n"
_MCP_NAME = _AS_MACOS + "print(identity.agent_name(sys.argv[1]) or '')\n"
_CLIENT = """
import json, os, shlex, subprocess, sys
hook, mcp_name, board, repo, session = sys.argv[1:]
payload = json.dumps({"session_id": session, "cwd": repo, "hook_event_name": "SessionStart",
                      "source": "startup"})
line = f"{shlex.quote(sys.executable)} {shlex.quote(hook)}"
subprocess.run(["sh", "-c", line], input=payload, text=True, check=True, capture_output=True)
print(subprocess.run([sys.executable, mcp_name, board], text=True, capture_output=True,
                     check=True).stdout.strip())
"""


def test_without_proc_the_hooks_and_the_mcp_server_agree_on_the_agents_name(
    board_dir: Path, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    scripts = {}
    for name, text in {"hook": _HOOK, "mcp_name": _MCP_NAME, "client": _CLIENT}.items():
        scripts[name] = tmp_path / f"{name}.py"
        scripts[name].write_text(text)
    session = uuid7(int(time.time() * 1000))
    env = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    env["COORD_DIR"] = str(board_dir)
    done = subprocess.run(
        [
            sys.executable,
            scripts["client"],
            scripts["hook"],
            scripts["mcp_name"],
            str(board_dir),
            str(board_dir.parent),
            session,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == identity.session_name("claude", session)


@pytest.mark.process  # runs ps: tests/tiers.py cannot see it
def test_the_ps_table_gives_what_proc_gives() -> None:
    import os

    identity._ps_table = None
    try:
        table = identity._ps_processes()
    finally:
        identity._ps_table = None
    name, parent = identity._process(os.getpid())
    assert table[os.getpid()][1] == parent == os.getppid()
    assert name is not None and table[os.getpid()][0].startswith(name[:15])


_GEMINI_LIKE_CLIENT = """
import json, shlex, subprocess, sys
board, repo, session = sys.argv[1:]
payload = json.dumps({"session_id": session, "cwd": repo, "hook_event_name": "SessionStart",
                      "source": "startup", "transcript_path": "", "timestamp": "now"})
coord = f"{shlex.quote(sys.executable)} -m coord"
subprocess.run(["sh", "-c", f"{coord} hook gemini SessionStart"], input=payload, text=True,
               check=True, capture_output=True)
# the agent's own command, through the client's shell, with no --as and no COORD_AGENT
done = subprocess.run(["sh", "-c", f"{coord} reserve src/mine.py --json"], text=True,
                      capture_output=True, cwd=repo)
print(done.stdout if done.returncode == 0 else "FAILED " + done.stderr)
"""


def test_an_agents_own_command_acts_as_the_session_its_client_started(
    board_dir: Path, tmp_path: Path
) -> None:
    """Gemini CLI and Cursor pass their shell commands no session: the command finds the
    name SessionStart recorded for its client process, as the MCP server does."""
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "client.py"
    script.write_text(_GEMINI_LIKE_CLIENT)
    session = uuid7(int(time.time() * 1000))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "CODEX_"))}
    env["COORD_DIR"] = str(board_dir)
    done = subprocess.run(
        [sys.executable, script, str(board_dir), str(board_dir.parent), session],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not done.stdout.startswith("FAILED"), done.stdout
    held = json.loads(done.stdout)
    assert held["reservations"][0]["agent"] == identity.session_name("gemini", session), held
