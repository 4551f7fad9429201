"""Codex CLI: its MCP server (a block of TOML) and its hooks. It reads ``AGENTS.md`` itself.

- MCP: ``.codex/config.toml`` ``[mcp_servers.NAME]`` with ``command`` and ``args``, read in
  trusted projects only. https://developers.openai.com/codex/mcp
- hooks: ``.codex/hooks.json``, Claude Code's shape; PreToolUse's matcher sees ``Bash`` and
  ``apply_patch`` (``Edit``/``Write`` are aliases of ``apply_patch``); Codex asks the user to
  trust a new hook (``/hooks``) before running it. https://developers.openai.com/codex/hooks
- instructions: ``AGENTS.md`` at the repository root.

coord writes no TOML library's output into the user's file: its table is a marked text block
(``wiring.text_blocks``), and the file is parsed before and after only to check it.
"""

from __future__ import annotations

import json

from coord.errors import InvalidInput
from coord.fast.clients import EVENTS
from coord.wiring.json_merge import FIX_AND_INIT, JsonSpec
from coord.wiring.plan import Target
from coord.wiring.shared_shapes import SERVER_NAME, hook_entries
from coord.wiring.text_blocks import BlockSpec, find_block

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from coord.wiring.plan import Plan

CONFIG = ".codex/config.toml"
HOOKS = ".codex/hooks.json"
FLAG_HELP = "Codex CLI: .codex/config.toml, .codex/hooks.json"
# Codex skips project config and untrusted hooks without a word, so init says so plainly
NOTES: tuple[str, ...] = (
    "Codex reads .codex/config.toml and .codex/hooks.json only in a trusted project (trust "
    'this folder when codex asks, or set `trust_level = "trusted"` for it under [projects] '
    "in ~/.codex/config.toml) and runs each new or changed hook only once you trust it "
    "(/hooks in codex): until then coord's guard is off in Codex",
)
# a hook's trust is kept per its content: any change (another --command) drops it
CHANGED_HOOKS_NOTE = (
    f"coord's hooks in {HOOKS} changed: Codex skips a changed hook, silently, until you trust "
    "it again (/hooks in codex)"
)


def toml_body(argv: list[str]) -> str:
    # JSON strings and arrays of strings are valid TOML basic strings and arrays
    command = json.dumps(argv[0])
    args = ", ".join(json.dumps(a) for a in [*argv[1:], "mcp"])
    return f"[mcp_servers.{SERVER_NAME}]\ncommand = {command}\nargs = [{args}]\n"


def config(root: Path, argv: list[str], shell: str) -> list[Target]:
    body = toml_body(argv)
    return [
        Target(CONFIG, root / CONFIG, BlockSpec("hash", lambda _i: body, check=_check_toml)),
        Target(HOOKS, root / HOOKS, JsonSpec(hook_entries("codex", EVENTS["codex"], shell))),
    ]


def instruction_files(root: Path, plan: Plan) -> list[Target]:
    return []  # AGENTS.md is Codex's own


def _check_toml(key: str, old: str, new: str) -> str | None:
    """Refuses a file that is not TOML, or that our table would make invalid; a warning (the
    file left as it is) when a server named like ours is the user's."""
    import tomllib  # only `coord init --codex` reads TOML

    try:
        data = tomllib.loads(old) if old else {}
    except tomllib.TOMLDecodeError as err:
        raise InvalidInput(f"{key}: not valid TOML ({err}); {FIX_AND_INIT}") from None
    servers = data.get("mcp_servers")
    has_block = find_block(key, old.splitlines(keepends=True), "hash") is not None
    if isinstance(servers, dict) and SERVER_NAME in servers and not has_block:
        return (
            f"{key}: left `mcp_servers.{SERVER_NAME}` as it is (it is not coord's); "
            "remove it and run `coord init` again to have coord's"
        )
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        raise InvalidInput(
            f"{key}: adding [mcp_servers.{SERVER_NAME}] would make it invalid TOML ({err}); "
            f"add it by hand or {FIX_AND_INIT}"
        ) from None
    return None
