"""One name per agent across coord's faces: hooks, the MCP server and the CLI.

An agent's client (Claude Code, Codex, Gemini CLI) starts coord's hooks and its MCP server as
child processes. The hooks see the client's session id; the MCP server does not. So the
SessionStart hook records "the client process P is agent NAME" in ``.coord/sessions/P.json``,
and every later hook or MCP server started by that same client process finds the name there.

The name: ``COORD_AGENT`` when set (always wins), else ``<client>-<first 8 of the session id>``
(``claude-4f1c2a9e``): readable in ``coord agents`` and stable for the whole session.

Stdlib only: hooks run before every edit.
"""

from __future__ import annotations

import json
import os

from coord.fast.processes import alive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# processes between a client and the command it runs: skipped when looking for the client.
# Not "node": Gemini CLI (and an npm-installed client) *is* a node process, and skipping it
# would reach the terminal's shell or tmux server, which every session in it shares.
_LAUNCHERS = frozenset(
    {"sh", "bash", "dash", "zsh", "fish", "env", "timeout", "nohup", "npx", "uv", "uvx"}
)
# what an agent name may hold (coord.model.check_agent); a set, not a regex to compile: this
# runs before every edit
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@:+-")


def from_env() -> str | None:
    return os.environ.get("COORD_AGENT") or None


def session_name(client: str, session_id: str) -> str:
    """``claude-4f1c2a9e``: the client and the start of its session id, as a valid name."""
    short = "".join(c for c in session_id if c in _NAME_CHARS)[:8] or "session"
    return f"{client}-{short}"


def client_pid() -> int:
    """The nearest ancestor that is not a shell or launcher: the agent's client process."""
    pid = os.getppid()
    for _ in range(8):
        name, parent = _process(pid)
        if name is None or name not in _LAUNCHERS or parent <= 1:
            return pid
        pid = parent
    return pid


def remember(board_dir: Path, client: str, session_id: str) -> str:
    """Record this session's name for the client process; returns the name."""
    from coord.fast import board_files

    name = from_env() or session_name(client, session_id)
    record = {"agent": name, "client": client, "session_id": session_id}
    folder = board_files.sessions_dir(board_dir)
    folder.mkdir(parents=True, exist_ok=True)
    board_files.write_json_atomic(folder / f"{client_pid()}.json", record)
    _forget_ended(folder)
    return name


def _forget_ended(folder: Path) -> None:
    """Drop the records of client processes that are gone: one file per session would
    otherwise pile up forever (a reused pid is overwritten by its own SessionStart)."""
    for entry in folder.glob("*.json"):
        if entry.stem.isdigit() and not alive(int(entry.stem)):
            entry.unlink(missing_ok=True)


def recorded(board_dir: str | os.PathLike[str]) -> str | None:
    """The name the SessionStart hook recorded for the client that started this process."""
    from coord.fast import board_files

    record = os.path.join(board_dir, board_files.SESSIONS_DIRNAME, f"{client_pid()}.json")
    try:
        with open(record, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    name = data.get("agent") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else None


def agent_name(
    board_dir: str | os.PathLike[str] | None,
    client: str | None = None,
    session_id: str | None = None,
) -> str | None:
    """COORD_AGENT, else the session's own name, else what SessionStart recorded."""
    name = from_env()
    if name:
        return name
    if client and session_id:
        return session_name(client, session_id)
    return recorded(board_dir) if board_dir is not None else None


def _process(pid: int) -> tuple[str | None, int]:
    """(command name, parent pid) from /proc; (None, 0) where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None, 0
    name = stat[stat.find("(") + 1 : stat.rfind(")")]
    fields = stat[stat.rfind(")") + 2 :].split()
    return name, int(fields[1]) if len(fields) > 1 else 0
