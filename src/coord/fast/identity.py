"""One name per agent across coord's faces: hooks, the MCP server and the CLI.

An agent's client (Claude Code, Codex, Gemini CLI) starts coord's hooks and its MCP server as
child processes. The hooks see the client's session id; the MCP server does not. So the
SessionStart hook records "the client process P is agent NAME" in ``.coord/sessions/P.json``,
and every later hook or MCP server started by that same client process finds the name there.

The name: ``COORD_AGENT`` when set (always wins), else ``<client>-<8 hex of a digest of the
whole session id>`` (``codex-b1ba07e5``): readable in ``coord agents`` and stable for the whole
session. A digest, not the id's first characters: Codex's ids are UUIDv7, whose first
characters are a timestamp, so sessions started in the same minute shared one name (issue 13).
A session whose SessionStart recorded another name (coord before that change) keeps it until
it ends: the record for its client process wins when it names the same session.

Stdlib only: hooks run before every edit.
"""

from __future__ import annotations

import os

from coord.fast import jsontext
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


# Codex puts the session's (thread's) id in the environment of every command it runs (openai/codex
# codex-rs/core/src/exec_env.rs, CODEX_THREAD_ID_ENV_VAR); its hooks get the same id as session_id
CODEX_SESSION_VAR = "CODEX_THREAD_ID"


def from_env() -> str | None:
    return os.environ.get("COORD_AGENT") or None


def person() -> str:
    """The person at this terminal, one name for every command that acts for a person (the
    CLI without ``--as`` nor an agent's name, and ``coord open``'s page): ``$USER``, else
    ``$USERNAME`` (Windows), else the account's own login name, else ``human`` (an account
    without a name, as a container's bare uid). ``coord open`` once asked the account and the
    CLI said ``human``: with no ``$USER`` one person acted under two names."""
    name = os.environ.get("USER") or os.environ.get("USERNAME")
    if name:
        return name
    import getpass  # only here: the usual path has $USER

    try:
        return getpass.getuser() or "human"
    except (OSError, KeyError, ImportError):  # no LOGNAME and no passwd entry
        return "human"


def of_command(board_dir: str | os.PathLike[str] | None = None) -> str | None:
    """The agent a `coord` command acts for when no ``--as`` is given: COORD_AGENT, else, in a
    command a Codex session runs, the name coord's hooks give that session, else the name the
    SessionStart hook recorded for the client process this command runs under (Gemini CLI
    and Cursor pass no session to their shell commands; the MCP server finds its name the same
    way). So an agent's own commands carry its name without ``--as`` (issue 13 item 10).

    Not for hooks: a hook knows its own session, and another client started from a Codex
    command (its hooks inherit CODEX_THREAD_ID) is another agent."""
    name = from_env()
    if name:
        return name
    session_id = os.environ.get(CODEX_SESSION_VAR)
    if session_id:
        return session_name("codex", session_id)
    return recorded(board_dir) if board_dir is not None else None


def session_name(client: str, session_id: str) -> str:
    """``codex-b1ba07e5``: the client and 8 hex characters of a BLAKE2b digest of the whole
    session id, so ids that share a prefix (UUIDv7's timestamp) get different names."""
    try:  # the builtin module: hashlib would load OpenSSL (~13 ms) before every edit
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    digest = blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=4)
    return f"{client}-{digest.hexdigest()}"


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

    name = agent_name(board_dir, client, session_id) or session_name(client, session_id)
    record = {"agent": name, "client": client, "session_id": session_id}
    folder = board_files.private_dir(board_files.sessions_dir(board_dir))
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
    name = _record(board_dir).get("agent")
    return name if isinstance(name, str) and name else None


def _record(board_dir: str | os.PathLike[str]) -> dict[str, object]:
    """The SessionStart record of the client that started this process ({} when none)."""
    from coord.fast import board_files

    record = os.path.join(board_dir, board_files.SESSIONS_DIRNAME, f"{client_pid()}.json")
    try:
        with open(record, encoding="utf-8") as f:
            data = jsontext.loads(f.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
        if board_dir is not None:  # a session named by an older coord keeps its name
            record = _record(board_dir)
            old = record.get("agent")
            same = record.get("session_id") == session_id and record.get("client") == client
            if same and isinstance(old, str) and old:
                return old
        return session_name(client, session_id)
    return recorded(board_dir) if board_dir is not None else None


# Where the process table is read from; tests point it elsewhere to act as macOS, which has
# no /proc.
_PROC = "/proc"
_ps_table: dict[int, tuple[str, int]] | None = None


def _process(pid: int) -> tuple[str | None, int]:
    """(command name, parent pid), from /proc or, where there is none (macOS), from ``ps``;
    (None, 0) for a process that is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        if os.path.isdir(_PROC):  # /proc is there: the process is gone
            return None, 0
        return _ps_processes().get(pid, (None, 0))
    name = stat[stat.find("(") + 1 : stat.rfind(")")]
    fields = stat[stat.rfind(")") + 2 :].split()
    return name, int(fields[1]) if len(fields) > 1 else 0


def _ps_processes() -> dict[int, tuple[str, int]]:
    """Every process's (command name, parent pid), from one ``ps`` run for the whole walk.

    Without this, a hook behind ``sh -c`` would take the shell for the client on macOS and
    record the session under the shell's pid, where the MCP server (the client's direct
    child) never looks: the two faces would name one agent twice (issue 13, item 10).
    """
    global _ps_table
    if _ps_table is None:
        _ps_table = {}
        import subprocess  # only without /proc: not on Linux's hot path

        try:
            listing = subprocess.run(
                ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "comm="],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            listing = ""
        for line in listing.splitlines():
            words = line.split(None, 2)
            if len(words) == 3 and words[0].isdigit() and words[1].isdigit():
                # macOS prints the executable's path, a login shell a leading "-"
                name = os.path.basename(words[2].strip()).lstrip("-")
                _ps_table[int(words[0])] = (name, int(words[1]))
    return _ps_table
