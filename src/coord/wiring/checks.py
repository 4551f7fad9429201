"""`coord doctor`'s look at the wiring: is every client still wired as `coord init` left it, do
the commands its files name resolve here, and — where a client's own files tell — does the
client trust them.

What "wired" means is not written twice: the record (``.coord/wiring.json``) names the clients
and the command, and ``coord init``'s own plan is computed again from it; a file that plan
would change is a file that lost coord's part (or never got it).

A finding is a dict: ``check``, ``status`` (``ok``; ``fix``: something needs fixing;
``unknown``: the files do not tell), ``message`` and, unless ok, ``fix``: the command to run.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from coord.errors import InvalidInput
from coord.fast.clients import EVENTS
from coord.wiring import command as init_command
from coord.wiring.plan import Plan, load_record, path_of, plan_init
from coord.wiring.shared_shapes import SERVER_NAME

Finding = dict[str, Any]


def finding(check: str, status: str, message: str, fix: str | None = None) -> Finding:
    return {"check": check, "status": status, "message": message, "fix": fix}


def wiring_findings(board_dir: Path) -> list[Finding]:
    root = board_dir.parent
    try:
        record = load_record(board_dir)
    except InvalidInput as err:
        return [finding("wiring", "fix", err.message, "coord init --all, once it is fixed or gone")]
    recorded = record.get("clients", [])
    clients = [c for c in init_command.CLIENT_MODULES if c in recorded]  # the flags' order
    if not clients:
        return [
            finding(
                "wiring",
                "unknown",
                "no agent client is wired to this board (no hooks, no MCP server, no "
                "pre-commit guard)",
                init_command.FLAGS_HINT,
            )
        ]
    shell = str(record.get("command") or "coord")
    argv = shlex.split(shell)
    reinit = _init_line(clients, shell)
    found = _as_init_left_them(root, record, clients, argv, shell, reinit)
    found += _hook_file_runs(root, record)
    found += _commands_resolve(root, record, shell)
    found += trust_findings(root, clients)
    return found


def _init_line(clients: list[str], shell: str) -> str:
    everyone = list(init_command.CLIENT_MODULES)
    flags = "--all" if clients == everyone else " ".join(f"--{c}" for c in clients)
    command = "" if shell == "coord" else f" --command {shlex.quote(shell)}"
    return f"coord init {flags}{command}"


def _as_init_left_them(
    root: Path, record: dict[str, Any], clients: list[str], argv: list[str], shell: str, fix: str
) -> list[Finding]:
    plan = Plan()
    try:
        targets = init_command._targets(root, clients, argv, shell, plan)
        plan_init(plan, root, targets, record, clients, shell)
    except InvalidInput as err:
        return [finding("wiring", "fix", err.message, f"fix the file named, then {fix}")]
    found = []
    for change in plan.changes:
        what = "is missing" if change.before is None else "lacks coord's part (or it changed)"
        if change.key.endswith("pre-commit") or change.key == ".pre-commit-config.yaml":
            what = f"{what}: the git pre-commit guard is not in place"
        found.append(finding(f"wiring {change.key}", "fix", f"{change.key} {what}", fix))
    if not found:
        wired = ", ".join(clients)
        found.append(finding("wiring", "ok", f"{wired}: wired as `coord init` left them"))
    return found


def _hook_file_runs(root: Path, record: dict[str, Any]) -> list[Finding]:
    """git skips a pre-commit hook it cannot execute, with only a hint on stderr."""
    for key in record.get("files", {}):
        path = path_of(root, key)
        if key.endswith("hooks/pre-commit") and path.exists() and not os.access(path, os.X_OK):
            message = f"{key} is not executable: git skips it, so the guard never runs"
            return [
                finding("pre-commit guard", "fix", message, f"chmod +x {shlex.quote(str(path))}")
            ]
    return []


def _commands_resolve(root: Path, record: dict[str, Any], shell: str) -> list[Finding]:
    """Every program coord's entries in the clients' files start must be found here (on the
    PATH of this shell: a client started elsewhere may see another PATH)."""
    programs: dict[str, set[str]] = {}
    for key in record.get("files", {}):
        for program in _programs_in(path_of(root, key), key):
            programs.setdefault(program, set()).add(key)
    found = []
    for program, keys in sorted(programs.items()):
        where = ", ".join(sorted(keys))
        if _resolves(program, root):
            found.append(finding("commands", "ok", f"`{program}` (in {where}) is found"))
            continue
        missing = "does not exist" if "/" in program else "is not on PATH"
        found.append(
            finding(
                "commands",
                "fix",
                f"`{program}`, named in {where}, {missing}: those hooks refuse every edit they "
                "guard and the MCP server does not start",
                "install coord on the PATH, or re-wire with the command that runs it: "
                f"coord init --all --command /path/to/coord (now: {shell})",
            )
        )
    return found


def _resolves(program: str, root: Path) -> bool:
    if "/" in program:
        path = program if os.path.isabs(program) else str(root / program)
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return shutil.which(program) is not None


def _programs_in(path: Path, key: str) -> list[str]:
    """The programs coord's entries in one client file start: the MCP server's ``command``
    and the program each hook line's ``sh -c`` wrapper looks for (``command -v PROGRAM``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # a missing file is the wiring check's finding
    if key.endswith(".toml"):
        import tomllib

        try:
            server = tomllib.loads(text).get("mcp_servers", {}).get(SERVER_NAME, {})
        except tomllib.TOMLDecodeError:
            return []
        return [server["command"]] if isinstance(server.get("command"), str) else []
    if not key.endswith(".json"):
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    programs = []
    server = data.get("mcpServers", {}).get(SERVER_NAME) if isinstance(data, dict) else None
    if isinstance(server, dict) and isinstance(server.get("command"), str):
        programs.append(server["command"])
    for line in _strings_under(data, "command"):
        program = _hook_program(line)
        if program is not None:
            programs.append(program)
    return programs


def _strings_under(data: Any, name: str) -> list[str]:
    if isinstance(data, dict):
        out = [v for k, v in data.items() if k == name and isinstance(v, str)]
        return out + [s for v in data.values() for s in _strings_under(v, name)]
    if isinstance(data, list):
        return [s for v in data for s in _strings_under(v, name)]
    return []


def _hook_program(line: str) -> str | None:
    """``sh -c 'command -v PROGRAM >/dev/null 2>&1 || ...; PROGRAM hook ...' REASON``: the
    program; None for a line that is not coord's wrapper."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if len(words) < 3 or words[:2] != ["sh", "-c"] or " hook " not in words[2]:
        return None
    test = words[2].split(">/dev/null", 1)[0].split()
    if test[:2] != ["command", "-v"] or len(test) != 3:
        return None
    return shlex.split(test[2])[0]


# --- trust: what the clients' own files say ---------------------------------------------------


def trust_findings(root: Path, clients: list[str]) -> list[Finding]:
    home = Path(os.environ.get("HOME") or "~").expanduser()
    checks = {"claude": _claude_trust, "codex": _codex_trust, "gemini": _gemini_trust}
    found = []
    for client in clients:
        if client in checks:
            found += checks[client](root, home)
    return found


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _claude_trust(root: Path, home: Path) -> list[Finding]:
    check = "trust claude"
    data = _load_json(home / ".claude.json")
    projects = data.get("projects") if isinstance(data, dict) else None
    project = projects.get(str(root)) if isinstance(projects, dict) else None
    if not isinstance(project, dict):
        return [
            finding(
                check,
                "unknown",
                "cannot tell whether Claude Code approved .mcp.json's coord server "
                "(~/.claude.json says nothing of this folder)",
                "start claude here and approve the `coord` server (/mcp shows it)",
            )
        ]
    if SERVER_NAME in (project.get("disabledMcpjsonServers") or []):
        return [
            finding(
                check,
                "fix",
                "Claude Code was told not to run .mcp.json's coord server here",
                "in claude: /mcp, enable `coord` (or remove it from disabledMcpjsonServers "
                "in ~/.claude.json)",
            )
        ]
    if project.get("enableAllProjectMcpServers") or SERVER_NAME in (
        project.get("enabledMcpjsonServers") or []
    ):
        return [finding(check, "ok", "Claude Code approved .mcp.json's coord server")]
    return [
        finding(
            check,
            "unknown",
            "Claude Code has not approved .mcp.json's coord server yet (it asks at start)",
            "start claude here and approve the `coord` server (/mcp shows it)",
        )
    ]


def _codex_trust(root: Path, home: Path) -> list[Finding]:
    check = "trust codex"
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    config_path = codex_home / "config.toml"
    import tomllib

    try:
        config = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return [
            finding(
                check,
                "unknown",
                f"cannot tell whether Codex trusts this folder ({config_path} cannot be read)",
                "start codex here and trust the folder when it asks; then /hooks",
            )
        ]
    level = (config.get("projects", {}).get(str(root)) or {}).get("trust_level")
    if level != "trusted":
        return [
            finding(
                check,
                "fix",
                f"Codex does not trust this folder ({config_path}: trust_level {level!r}), so "
                "it ignores .codex/config.toml and .codex/hooks.json",
                f'add to {config_path}: [projects.{json.dumps(str(root))}] trust_level = "trusted" '
                "(or trust the folder when codex asks)",
            )
        ]
    # Codex keeps a hook's trust per its content under hooks.state."<hooks.json>:<event>:..."
    # (the event spelled its own way: pre_tool_use or PreToolUse alike)
    hooks_file = str(root / ".codex" / "hooks.json")
    states = config.get("hooks", {}).get("state", {})
    trusted = {
        _event_word(key[len(hooks_file) + 1 :].split(":")[0])
        for key, state in states.items()
        if key.startswith(hooks_file + ":") and isinstance(state, dict) and "trusted_hash" in state
    }
    untrusted = [event for event in EVENTS["codex"] if _event_word(event) not in trusted]
    if untrusted:
        return [
            finding(
                check,
                "fix",
                f"Codex has not trusted coord's hooks for {', '.join(untrusted)} in "
                ".codex/hooks.json: it skips them, so coord's guard is off in Codex",
                "in codex: /hooks, and trust coord's hooks",
            )
        ]
    return [
        finding(
            check,
            "ok",
            "Codex trusts this folder and a version of each of coord's hooks (whether the "
            "version now in .codex/hooks.json: cannot tell; /hooks in codex shows it)",
        )
    ]


def _event_word(event: str) -> str:
    return "".join(c for c in event.lower() if c.isalpha())


def _gemini_trust(root: Path, home: Path) -> list[Finding]:
    check = "trust gemini"
    trusted = _load_json(home / ".gemini" / "trustedFolders.json")
    if not isinstance(trusted, dict):
        return [
            finding(
                check,
                "unknown",
                "cannot tell whether Gemini CLI trusts this folder (no "
                "~/.gemini/trustedFolders.json)",
                "start gemini here and trust the folder when it asks (/permissions)",
            )
        ]
    verdict: tuple[str, str] | None = None
    nearest = -1
    for folder, level in trusted.items():
        # TRUST_PARENT names a folder whose parent is trusted; the nearest rule wins
        covered = Path(folder).parent if level == "TRUST_PARENT" else Path(folder)
        if (covered == root or covered in root.parents) and len(covered.parts) > nearest:
            verdict, nearest = (str(covered), str(level)), len(covered.parts)
    if verdict is None:
        return [
            finding(
                check,
                "unknown",
                "Gemini CLI has no trust rule for this folder yet (it asks at start, when "
                "folder trust is on)",
                "start gemini here and trust the folder when it asks (/permissions)",
            )
        ]
    if verdict[1] == "DO_NOT_TRUST":
        return [
            finding(
                check,
                "fix",
                f"Gemini CLI does not trust {verdict[0]} (~/.gemini/trustedFolders.json), so it "
                "ignores .gemini/settings.json: no guard, no hooks, no MCP server",
                "in gemini: /permissions, and trust this folder",
            )
        ]
    return [finding(check, "ok", f"Gemini CLI trusts {verdict[0]} ({verdict[1]})")]
