"""`coord init --claude ...` and `coord uninstall`: wiring agents' clients to the board.

``coord init`` creates the board; with client flags it also registers ``coord mcp`` with each
chosen client, installs coord's hooks, tells agents how to work in ``AGENTS.md`` and puts the
git pre-commit guard in place. The formats, and the documents they come from, are in
``wiring_files``.

How it edits files it does not own:

- **JSON** (``.mcp.json``, ``.claude/settings.json``, ``.codex/hooks.json``,
  ``.gemini/settings.json``, ``.cursor/mcp.json``): parsed, coord's entries added only where no
  equal entry is there yet (a hook counts as there when some hook of that event already runs
  the same command), written back with two-space indentation and a final newline. A file
  with no change is not rewritten at all.
- **Text** (``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md``, ``.codex/config.toml``,
  ``.pre-commit-config.yaml``, the git hook): one block between ``coord:begin`` and
  ``coord:end`` markers; every other byte stays.
- **All or nothing**: every change is computed first; a file that cannot be read (malformed
  JSON or TOML, a marker without its end) refuses the whole run with one line naming it, and
  nothing is written. ``--dry-run`` prints the diffs and writes nothing.

``.coord/wiring.json`` records, per file: whether init created it, its bytes before init
(base64), the bytes init last wrote, and coord's entries in it. ``coord uninstall`` then:

- a file whose content is still exactly what init wrote is restored byte for byte (or
  deleted, when init created it);
- a file changed since loses only coord's entries or block, structurally (JSON entries equal
  to what init added; hooks running coord's command; the marked block), and a file init
  created is deleted when nothing else is left in it;
- directories init created (``.claude/``, ``.codex/``, ...) are removed when empty;
- the board (``.coord/board.db`` etc.) stays.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from coord.cli import commands
from coord.errors import InvalidInput
from coord.fast import board_files, files
from coord.fast.clients import CLIENTS
from coord.wiring import client_files as W

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from coord.cli.main import Context, Result

RECORD_NAME = "wiring.json"
FLAGS_HINT = (
    "wire agents' clients to it with `coord init --claude`, `--codex`, `--gemini`, `--cursor` "
    "or `--all` (MCP server, hooks, AGENTS.md, the pre-commit guard); add --dry-run to see "
    "the changes first"
)


# --- arguments ------------------------------------------------------------------------------


def args_init(p: argparse.ArgumentParser) -> None:
    for client, what in (
        ("claude", "Claude Code: .mcp.json, .claude/settings.json hooks, CLAUDE.md"),
        ("codex", "Codex CLI: .codex/config.toml, .codex/hooks.json"),
        ("gemini", "Gemini CLI: .gemini/settings.json (MCP and hooks), GEMINI.md"),
        ("cursor", "Cursor: .cursor/mcp.json"),
    ):
        p.add_argument(f"--{client}", action="store_true", help=f"wire {what}")
    p.add_argument(
        "--all",
        action="store_true",
        help="wire all four (any client flag also writes AGENTS.md and the git pre-commit guard)",
    )
    p.add_argument("--dry-run", action="store_true", help="show the changes (diffs); write nothing")
    p.add_argument(
        "--command",
        dest="coord_command",
        metavar="CMD",
        help="the coord command to write everywhere instead of `coord` "
        "(for example /abs/path/.venv/bin/coord)",
    )


def args_uninstall(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dry-run", action="store_true", help="show what would be removed; write nothing"
    )


# --- what each file gets --------------------------------------------------------------------


@dataclass
class JsonEntry:
    id: str
    kind: str  # "key": an object member at `path`; "hook": a hook group in the list at `path`
    path: tuple[str, ...]
    value: Any
    command: str = ""


@dataclass
class JsonSpec:
    entries: list[JsonEntry] = field(default_factory=list)


@dataclass
class BlockSpec:
    style: str  # "md" (<!-- -->) or "hash" (#)
    render: Callable[[int], str]  # the lines between the markers, for an indentation
    place: str = "end"  # "end", "shebang" (after the first line) or "yaml" (in `repos:`)
    new_text: str | None = None  # the whole file when it does not exist yet
    mode: int = 0o644
    already: tuple[str, ...] = ()  # a line meaning "already there" without our block
    check: Callable[[str, str, str], str | None] | None = None  # (key, old, new) -> problem


@dataclass
class Target:
    key: str  # the path as shown and recorded: relative to the root, or absolute outside it
    path: Path
    spec: JsonSpec | BlockSpec


@dataclass
class Change:
    key: str
    path: Path
    before: bytes | None
    after: bytes | None
    mode: int = 0o644

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        if self.after is None:
            return "delete"
        return "modify"


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _command(cmd: str | None) -> tuple[list[str], str]:
    """(argv for MCP registrations, the same as a shell word list for hooks and text)."""
    if not cmd:
        return ["coord"], "coord"
    # a path that exists (even with spaces) is one program; else shell words ("uv run coord")
    single = os.path.exists(cmd) or not any(c.isspace() for c in cmd)
    argv = [cmd] if single else shlex.split(cmd)
    if not argv or not argv[0]:
        raise InvalidInput("--command is empty: give the coord command to write")
    return argv, " ".join(shlex.quote(a) for a in argv)


def _chosen(args: argparse.Namespace) -> list[str]:
    if getattr(args, "all", False):
        return list(CLIENTS)
    return [c for c in CLIENTS if getattr(args, c, False)]


def _key(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _hook_entries(
    client: str, hooks: tuple[tuple[str, str | None], ...], shell: str, *, named: bool = False
) -> list[JsonEntry]:
    out = []
    for event, matcher in hooks:
        command = f"{shell} hook {client} {event}"
        name = f"coord-{event}" if named else None
        group = W.hook_group(command, matcher, name)
        out.append(JsonEntry(f"hook:{event}", "hook", ("hooks", event), group, command))
    return out


def _md_block(body: str) -> BlockSpec:
    return BlockSpec("md", lambda _indent: body)


def _targets(
    root: Path, clients: list[str], argv: list[str], shell: str, plan: Plan
) -> list[Target]:
    targets: list[Target] = []
    json_specs: dict[str, JsonSpec] = {}

    def add_json(rel: str, entries: list[JsonEntry]) -> None:
        if rel not in json_specs:
            json_specs[rel] = JsonSpec()
            targets.append(Target(rel, root / rel, json_specs[rel]))
        json_specs[rel].entries.extend(entries)

    mcp = [JsonEntry("mcp", "key", ("mcpServers", W.SERVER_NAME), W.mcp_server(argv))]
    if "claude" in clients:
        add_json(".mcp.json", mcp)
        add_json(".claude/settings.json", _hook_entries("claude", W.CLAUDE_HOOKS, shell))
    if "codex" in clients:
        toml_body = W.codex_toml_body(argv)
        targets.append(
            Target(
                ".codex/config.toml",
                root / ".codex/config.toml",
                BlockSpec("hash", lambda _i: toml_body, check=_toml_check),
            )
        )
        add_json(".codex/hooks.json", _hook_entries("codex", W.CODEX_HOOKS, shell))
    if "gemini" in clients:
        add_json(
            ".gemini/settings.json",
            mcp + _hook_entries("gemini", W.GEMINI_HOOKS, shell, named=True),
        )
    if "cursor" in clients:
        add_json(".cursor/mcp.json", mcp)

    # what agents read
    agents_md = root / "AGENTS.md"
    targets.append(Target("AGENTS.md", agents_md, _md_block(W.agents_md_body(shell))))
    for client, name, body in (
        ("claude", "CLAUDE.md", W.claude_md_body()),
        ("gemini", "GEMINI.md", W.gemini_md_body()),
    ):
        if client not in clients:
            continue
        path = root / name
        if path.exists() and agents_md.exists() and path.resolve() == agents_md.resolve():
            plan.notes.append(f"{name} is AGENTS.md (a link): nothing to import")
            continue
        md = _md_block(body)
        md.already = ("@AGENTS.md", "@./AGENTS.md")
        targets.append(Target(name, path, md))

    # the git pre-commit guard
    config = root / W.PRE_COMMIT_CONFIG
    hooks_dir, ours_to_edit = _git_hooks_dir(root)
    if config.exists():

        def item(indent: int) -> str:
            return W.pre_commit_item(shell, indent)

        targets.append(
            Target(
                W.PRE_COMMIT_CONFIG,
                config,
                BlockSpec(
                    "hash",
                    item,
                    place="yaml",
                    already=(f"id: {W.PRE_COMMIT_HOOK_ID}", f"- id: {W.PRE_COMMIT_HOOK_ID}"),
                ),
            )
        )
        if hooks_dir is None or not _is_pre_commit_framework(hooks_dir / "pre-commit"):
            plan.notes.append(
                f"the guard runs through {W.PRE_COMMIT_CONFIG}: run `pre-commit install` "
                "if you have not"
            )
    elif hooks_dir is None:
        plan.notes.append("not a git repository: no pre-commit guard installed")
    elif not ours_to_edit:
        plan.warnings.append(
            f"core.hooksPath is {hooks_dir}, outside this repository (other repositories may "
            f"use it): left it alone; add `{shell} guard --staged` to its pre-commit hook to "
            "run coord's guard"
        )
    else:
        hook = hooks_dir / "pre-commit"
        body = W.git_hook_body(shell)
        targets.append(
            Target(
                _key(root, hook),
                hook,
                BlockSpec(
                    "hash",
                    lambda _i: body,
                    place="shebang",
                    new_text=W.git_hook_new_file(shell),
                    mode=0o755,
                ),
            )
        )
    return targets


def _git_hooks_dir(root: Path) -> tuple[Path | None, bool]:
    """Where git runs this repository's hooks from (core.hooksPath when set, else the
    repository's hooks, which its worktrees share), and whether coord may edit them there: not
    when core.hooksPath leads outside both the working tree and the repository (a global hooks
    directory serves other repositories too)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--git-path", "hooks", "--git-common-dir"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return None, False
    if len(out) < 2 or not out[0].strip():
        return None, False
    hooks, common = (Path(p.strip()) for p in out[:2])
    hooks = hooks if hooks.is_absolute() else root / hooks
    common = common if common.is_absolute() else root / common
    return hooks, _inside(hooks, root) or _inside(hooks, common)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _is_pre_commit_framework(hook: Path) -> bool:
    try:
        text = hook.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(sign in text for sign in W.PRE_COMMIT_FRAMEWORK_SIGNS)


# --- JSON -----------------------------------------------------------------------------------


def _parse_json(key: str, raw: bytes | None, doing: str) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{key}: not UTF-8 text; {doing}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as err:
        where = ""
        if isinstance(err, json.JSONDecodeError):
            where = f" at line {err.lineno}, column {err.colno}: {err.msg}"
        if "//" in text or "/*" in text:
            where += " (comments are not JSON: coord reads plain JSON only)"
        raise InvalidInput(f"{key}: not valid JSON{where}; {doing}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{key}: holds a JSON {type(data).__name__}, not an object; {doing}")
    return data


def _dump_json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _walk(
    data: dict[str, Any], path: tuple[str, ...], key: str, created: list[list[str]] | None
) -> dict[str, Any]:
    """The object at ``path``, made (and noted in ``created``) where missing when asked."""
    node = data
    for depth, name in enumerate(path):
        if name not in node and created is not None:
            node[name] = {}
            created.append(list(path[: depth + 1]))
        child = node.get(name)
        if not isinstance(child, dict):
            shown = ".".join(path[: depth + 1])
            raise InvalidInput(
                f"{key}: `{shown}` is a {type(child).__name__}, not an object; fix it (or "
                "move the file away) and run `coord init` again: nothing was written"
            )
        node = child
    return node


def _runs(groups: list[Any], command: str) -> bool:
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        for hook in hooks if isinstance(hooks, list) else ():
            if isinstance(hook, dict) and hook.get("command") == command:
                return True
    return False


def _apply_json(
    key: str, raw: bytes | None, spec: JsonSpec, rec: dict[str, Any] | None, plan: Plan
) -> tuple[bytes | None, dict[str, Any] | None]:
    doing = "fix it (or move it away) and run `coord init` again: nothing was written"
    data = _parse_json(key, raw, doing)
    original = copy.deepcopy(data)
    prev = (rec or {}).get("entries", {})
    created: list[list[str]] = [list(k) for k in (rec or {}).get("created_keys", [])]
    ours: dict[str, Any] = {}
    for entry in spec.entries:
        before = prev.get(entry.id)
        mine = {"kind": entry.kind, "path": list(entry.path), "value": entry.value}
        if entry.kind == "hook":
            mine["command"] = entry.command
        parent = _walk(data, entry.path[:-1], key, created)
        name = entry.path[-1]
        if entry.kind == "key":
            if name not in parent:
                parent[name] = copy.deepcopy(entry.value)
                ours[entry.id] = mine
            elif parent[name] == entry.value:
                if before is not None:
                    ours[entry.id] = mine
            elif before is not None and parent[name] == before.get("value"):
                parent[name] = copy.deepcopy(entry.value)  # ours, from an earlier --command
                ours[entry.id] = mine
            else:
                shown = ".".join(entry.path)
                plan.warnings.append(
                    f"{key}: left `{shown}` as it is (it is not coord's); remove it and run "
                    "`coord init` again to have coord's"
                )
            continue
        if name not in parent:
            parent[name] = []
            created.append(list(entry.path))
        groups = parent[name]
        if not isinstance(groups, list):
            raise InvalidInput(
                f"{key}: `{'.'.join(entry.path)}` is a {type(groups).__name__}, not a list; {doing}"
            )
        if _runs(groups, entry.command):
            if before is not None:
                ours[entry.id] = before if before.get("value") in groups else mine
            continue
        old = before.get("value") if before is not None else None
        if old is not None and old in groups:
            groups[groups.index(old)] = copy.deepcopy(entry.value)
        else:
            groups.append(copy.deepcopy(entry.value))
        ours[entry.id] = mine
    after = raw if data == original else _dump_json(data)
    if not ours:
        return after, None
    unique = [list(k) for k in dict.fromkeys(tuple(k) for k in created)]
    return after, {"kind": "json", "entries": ours, "created_keys": unique}


def _remove_json(key: str, raw: bytes, rec: dict[str, Any]) -> tuple[bytes, bool]:
    """Coord's entries taken out; (the bytes, whether nothing else is left)."""
    doing = (
        "fix it (or take coord's entries out by hand) and run `coord uninstall` again: "
        "nothing was removed"
    )
    data = _parse_json(key, raw, doing)
    original = copy.deepcopy(data)
    for entry in rec.get("entries", {}).values():
        path = tuple(entry.get("path", ()))
        if not path:
            continue
        try:
            parent = _walk(data, path[:-1], key, None)
        except InvalidInput:
            continue
        name = path[-1]
        if entry.get("kind") == "key":
            if name in parent and parent[name] == entry.get("value"):
                del parent[name]
            continue
        groups = parent.get(name)
        if not isinstance(groups, list):
            continue
        if entry.get("value") in groups:
            groups.remove(entry["value"])
            continue
        command = entry.get("command")
        for group in list(groups):  # changed since: take out just the hook running coord
            hooks = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(hooks, list):
                continue
            kept = [h for h in hooks if not (isinstance(h, dict) and h.get("command") == command)]
            if len(kept) != len(hooks):
                if kept:
                    group["hooks"] = kept
                else:
                    groups.remove(group)
    for path in sorted((tuple(k) for k in rec.get("created_keys", [])), key=len, reverse=True):
        try:
            parent = _walk(data, path[:-1], key, None)
        except InvalidInput:
            continue
        if path[-1] in parent and parent[path[-1]] in ({}, []):
            del parent[path[-1]]
    if data == original:
        return raw, not data
    return _dump_json(data), not data


# --- marked text blocks ---------------------------------------------------------------------


def _markers(style: str) -> tuple[str, str, str]:
    """(begin line, begin prefix, end line)."""
    if style == "md":
        return W.MD_BEGIN, W.MD_BEGIN, W.MD_END
    return W.HASH_BEGIN, W.HASH_BEGIN_PREFIX, W.HASH_END


def _block(style: str, body: str, indent: int = 0) -> str:
    begin, _, end = _markers(style)
    pad = " " * indent
    return f"{pad}{begin}\n{body}{pad}{end}\n"


def _find_block(key: str, lines: list[str], style: str) -> tuple[int, int] | None:
    _, prefix, end = _markers(style)
    for i, line in enumerate(lines):
        if line.strip().startswith(prefix):
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == end:
                    return i, j
            raise InvalidInput(
                f"{key}: line {i + 1} opens a coord block that never closes (`{end}`); fix it "
                "by hand and run coord again: nothing was written"
            )
    return None


def _decode(key: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{key}: not UTF-8 text; nothing was written") from None


def _apply_block(
    key: str, raw: bytes | None, spec: BlockSpec, plan: Plan
) -> tuple[bytes | None, bool]:
    """(the new bytes, whether coord's block is in them)."""
    if raw is None:
        text = spec.new_text if spec.new_text is not None else _block(spec.style, spec.render(0))
        new = text
        old = ""
    else:
        old = _decode(key, raw)
        lines = old.splitlines(keepends=True)
        span = _find_block(key, lines, spec.style)
        if span is not None:
            begin, end = span
            indent = len(lines[begin]) - len(lines[begin].lstrip(" "))
            lines[begin : end + 1] = [_block(spec.style, spec.render(indent), indent)]
            new = "".join(lines)
        elif any(line.strip() in spec.already for line in lines):
            plan.notes.append(f"{key}: already has it; left as it is")
            return raw, False
        else:
            inserted = _insert_block(key, old, lines, spec, plan)
            if inserted is None:
                return raw, False
            new = inserted
    if spec.check is not None:
        problem = spec.check(key, old, new)
        if problem is not None:
            if problem.startswith("skip:"):
                plan.warnings.append(problem[len("skip:") :].strip())
                return raw, False
            raise InvalidInput(problem)
    after = new.encode("utf-8")
    return (raw if raw == after else after), True


def _insert_block(key: str, old: str, lines: list[str], spec: BlockSpec, plan: Plan) -> str | None:
    if spec.place == "end":
        text = old
        if text and not text.endswith("\n"):
            text += "\n"
        if text.strip() and not text.endswith("\n\n"):
            text += "\n"
        return text + _block(spec.style, spec.render(0))
    if spec.place == "shebang":
        first = lines[0] if lines else ""
        if not _is_shell(first):
            plan.warnings.append(
                f"{key}: left your pre-commit hook as it is (not a shell script); add "
                f"`{spec.render(0).strip()}` to it to run coord's guard"
            )
            return None
        if not first.endswith("\n"):
            first += "\n"
        return first + _block(spec.style, spec.render(0)) + "".join(lines[1:])
    return _insert_yaml(key, lines, spec, plan)


def _is_shell(first_line: str) -> bool:
    if not first_line.startswith("#!"):
        return False
    words = first_line[2:].split()
    if not words:
        return False
    program = os.path.basename(words[0])
    if program == "env" and len(words) > 1:
        program = os.path.basename(words[-1])
    return program in {"sh", "bash", "dash", "zsh", "ksh", "ash"}


def _insert_yaml(key: str, lines: list[str], spec: BlockSpec, plan: Plan) -> str | None:
    """Our item at the end of the top-level `repos:` block list, dashes lined up."""
    start = None
    for i, line in enumerate(lines):
        if line.startswith("repos:") and line[len("repos:") :].split("#")[0].strip() == "":
            start = i
            break
    if start is None:
        plan.warnings.append(
            f"{key}: no `repos:` block list found; left it as it is (add a `repo: local` hook "
            "running `coord guard --staged` by hand)"
        )
        return None
    last = start
    indent = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            continue
        at_column_0 = not line[0].isspace()
        if at_column_0 and not stripped.startswith("-"):
            if stripped.startswith("#"):
                continue  # a comment at column 0 may belong to the next key
            break
        if indent is None and stripped.startswith("-"):
            indent = len(line) - len(line.lstrip(" "))
        last = i
    indent = 2 if indent is None else indent
    head = lines[: last + 1]
    if head and not head[-1].endswith("\n"):
        head[-1] += "\n"
    block = _block(spec.style, spec.render(indent), indent)
    return "".join(head) + block + "".join(lines[last + 1 :])


def _toml_check(key: str, old: str, new: str) -> str | None:
    import tomllib

    doing = "fix it (or move it away) and run `coord init` again: nothing was written"
    try:
        data = tomllib.loads(old) if old else {}
    except tomllib.TOMLDecodeError as err:
        return f"{key}: not valid TOML ({err}); {doing}"
    servers = data.get("mcp_servers")
    lines = old.splitlines(keepends=True)
    has_block = _find_block(key, lines, "hash") is not None
    if isinstance(servers, dict) and W.SERVER_NAME in servers and not has_block:
        return (
            f"skip:{key}: left `mcp_servers.{W.SERVER_NAME}` as it is (it is not coord's); "
            "remove it and run `coord init` again to have coord's"
        )
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        return (
            f"{key}: adding [mcp_servers.{W.SERVER_NAME}] would make it invalid TOML ({err}); "
            f"add it by hand or {doing}"
        )
    return None


def _remove_block(raw: bytes, rec: dict[str, Any], key: str) -> tuple[bytes, bool]:
    text = _decode(key, raw)
    lines = text.splitlines(keepends=True)
    style = rec.get("style", "hash")
    while (span := _find_block(key, lines, style)) is not None:
        begin, end = span
        del lines[begin : end + 1]
        if begin == len(lines) and begin > 0 and not lines[begin - 1].strip():
            del lines[begin - 1]  # the blank line init put before a block at the end
    new = "".join(lines)
    rest = [line for line in lines if line.strip()]
    empty = not rest or (len(rest) == 1 and rest[0].startswith("#!"))
    return new.encode("utf-8"), empty


# --- planning -------------------------------------------------------------------------------


def _read(key: str, path: Path) -> bytes | None:
    if path.is_dir():
        raise InvalidInput(f"{key}: is a directory, not a file; nothing was written")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise InvalidInput(f"{key}: cannot read it ({err}); nothing was written") from None


def _b64(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(raw).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _load_record(board_dir: Path) -> dict[str, Any]:
    path = board_dir / RECORD_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": 1, "files": {}, "dirs": []}
    except (OSError, ValueError) as err:
        raise InvalidInput(f"cannot read {path}: {err}; fix or delete it") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise InvalidInput(f"{path} is not coord's wiring record; fix or delete it")
    data.setdefault("dirs", [])
    return data


def _plan_init(
    root: Path, clients: list[str], argv: list[str], shell: str, record: dict[str, Any]
) -> Plan:
    plan = Plan()
    files: dict[str, Any] = copy.deepcopy(record.get("files", {}))
    dirs: list[str] = list(record.get("dirs", []))
    problems: list[str] = []
    for target in _targets(root, clients, argv, shell, plan):
        rec = files.get(target.key)
        try:
            before = _read(target.key, target.path)
            if isinstance(target.spec, JsonSpec):
                after, meta = _apply_json(target.key, before, target.spec, rec, plan)
                mode = 0o644
            else:
                after, has_block = _apply_block(target.key, before, target.spec, plan)
                meta = {"kind": "block", "style": target.spec.style} if has_block else None
                mode = target.spec.mode
        except InvalidInput as err:
            problems.append(err.message)
            continue
        if after == before:
            plan.unchanged.append(target.key)
            if rec is not None and meta is not None:
                rec.update(meta)
            continue
        if before is None:
            rec = {"created": True, "original": None}
        elif rec is None:
            rec = {"created": False, "original": _b64(before)}
        elif rec.get("written") != _b64(before):
            rec["restorable"] = False  # changed by someone since init wrote it
        rec["written"] = _b64(after)
        rec.update(meta or {})
        files[target.key] = rec
        plan.changes.append(Change(target.key, target.path, before, after, mode))
        for parent in _missing_dirs(root, target.path):
            key = _key(root, parent)
            if key not in dirs:
                dirs.append(key)
    if problems:
        raise InvalidInput("\n".join(problems))
    plan.record = {
        "version": 1,
        "command": shell,
        "clients": sorted(set(record.get("clients", [])) | set(clients)),
        "files": files,
        "dirs": dirs,
    }
    return plan


def _missing_dirs(root: Path, path: Path) -> list[Path]:
    out = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        if parent == root:
            break
        parent = parent.parent
    return out


# --- writing --------------------------------------------------------------------------------


def _write(change: Change) -> None:
    target = change.path.resolve() if change.path.is_symlink() else change.path
    if change.after is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else change.mode
    files.write_atomic(target, change.after, mode)


def _diff(change: Change) -> str:
    import difflib

    def lines(raw: bytes | None) -> list[str]:
        if raw is None:
            return []
        out = raw.decode("utf-8", errors="replace").splitlines(keepends=True)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    old = "/dev/null" if change.before is None else f"a/{change.key}"
    new = "/dev/null" if change.after is None else f"b/{change.key}"
    return "".join(difflib.unified_diff(lines(change.before), lines(change.after), old, new))


def _verb(action: str, dry_run: bool) -> str:
    done = {"create": "created", "modify": "modified", "delete": "deleted", "restore": "restored"}
    will = {
        k: f"would {v}"
        for k, v in {
            "create": "create",
            "modify": "modify",
            "delete": "delete",
            "restore": "restore",
        }.items()
    }
    return (will if dry_run else done)[action]


def _report(
    changes: list[tuple[Change, str]], plan_warnings: list[str], notes: list[str], dry_run: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    docs = []
    text = []
    for change, action in changes:
        doc: dict[str, Any] = {"path": change.key, "action": action}
        if dry_run:
            doc["diff"] = _diff(change)
        docs.append(doc)
        text.append(f"{_verb(action, dry_run)} {change.key}")
        if dry_run:
            text.append(doc["diff"].rstrip("\n"))
    text += [f"warning: {w}" for w in plan_warnings]
    text += [f"note: {n}" for n in notes]
    return docs, text


# --- commands -------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    clients = _chosen(args)
    dry_run = bool(getattr(args, "dry_run", False))
    if not clients:
        if dry_run:
            board_dir = board_files.new_board_dir()
            there = board_files.db_path(board_dir).exists()
            verb = "board already there:" if there else "would create the board"
            doc = {"board": str(board_dir), "dry_run": True, "clients": [], "changes": []}
            return doc, f"{verb} {board_dir}; nothing else to do\n{FLAGS_HINT}"
        document, text, *_ = commands.cmd_init(args, ctx)
        return {**document, "clients": [], "changes": []}, f"{text}\n{FLAGS_HINT}"

    argv, shell = _command(getattr(args, "coord_command", None))
    board_dir = board_files.new_board_dir()
    root = board_files.repo_root(board_dir)
    record = _load_record(board_dir)
    plan = _plan_init(root, clients, argv, shell, record)  # refuses before anything is written
    if "codex" in clients:
        plan.notes.append(
            "Codex reads .codex/config.toml only in a trusted project and runs a new hook once "
            "you trust it (/hooks in codex)"
        )
    plan.notes.append("restart the clients that are running to load the changes")
    changes = [(c, c.action) for c in plan.changes]
    docs, lines = _report(changes, plan.warnings, plan.notes, dry_run)
    base = {
        "clients": clients,
        "command": shell,
        "dry_run": dry_run,
        "changes": docs,
        "unchanged": plan.unchanged,
        "warnings": plan.warnings,
    }
    if dry_run:
        head = "dry run: nothing written" + ("" if changes else "; nothing to change")
        return {"board": str(board_dir), **base}, "\n".join([head, *lines])

    document, text, *_ = commands.cmd_init(args, ctx)
    for change in plan.changes:
        _write(change)
    record_path = board_dir / RECORD_NAME
    new_record = json.dumps(plan.record, indent=2) + "\n"
    try:
        old_record = record_path.read_text(encoding="utf-8")
    except OSError:
        old_record = None
    if new_record != old_record:
        _write(Change(RECORD_NAME, record_path, None, new_record.encode("utf-8"), 0o644))
    if not changes:
        lines.insert(0, f"{', '.join(clients)}: already wired; nothing changed")
    return {**document, **base}, "\n".join([text, *lines])


def cmd_uninstall(args: argparse.Namespace, ctx: Context) -> Result:
    dry_run = bool(getattr(args, "dry_run", False))
    board_dir = board_files.find_board_dir()
    record_path = board_dir / RECORD_NAME if board_dir is not None else None
    if record_path is None or not record_path.exists():
        doc = {"dry_run": dry_run, "changes": [], "removed_dirs": []}
        return doc, "nothing to remove: `coord init` wired no client here"
    assert board_dir is not None
    root = board_files.repo_root(board_dir)
    record = _load_record(board_dir)
    changes: list[tuple[Change, str]] = []
    notes: list[str] = []
    problems: list[str] = []
    for key, rec in record["files"].items():
        path = Path(key) if os.path.isabs(key) else root / key
        try:
            current = _read(key, path)
            if current is None:
                notes.append(f"{key}: already gone")
                continue
            written = rec.get("written")
            if rec.get("restorable", True) and written is not None and _b64(current) == written:
                if rec.get("created"):
                    changes.append((Change(key, path, current, None), "delete"))
                else:
                    original = _unb64(rec.get("original"))
                    changes.append((Change(key, path, current, original), "restore"))
                continue
            if rec.get("kind") == "json":
                after, empty = _remove_json(key, current, rec)
            else:
                after, empty = _remove_block(current, rec, key)
        except InvalidInput as err:
            problems.append(err.message)
            continue
        if rec.get("created") and empty:
            changes.append((Change(key, path, current, None), "delete"))
        elif after != current:
            changes.append((Change(key, path, current, after), "modify"))
            notes.append(f"{key}: changed since `coord init`; took out only coord's part")
        else:
            notes.append(f"{key}: no coord entries left in it")
    if problems:
        raise InvalidInput("\n".join(problems))
    deleted = {c.path for c, action in changes if action == "delete"}
    removable = []
    for key in sorted(record.get("dirs", []), key=lambda k: k.count("/"), reverse=True):
        path = Path(key) if os.path.isabs(key) else root / key
        if path.is_dir() and all(
            p in deleted or _key(root, p) in removable for p in path.iterdir()
        ):
            removable.append(key)
    docs, lines = _report(changes, [], notes, dry_run)
    lines += [f"{'would remove' if dry_run else 'removed'} {k}/" for k in removable]
    doc = {"dry_run": dry_run, "changes": docs, "removed_dirs": removable}
    if dry_run:
        return doc, "\n".join(["dry run: nothing written", *lines])
    for change, _action in changes:
        _write(change)
    for key in removable:
        path = Path(key) if os.path.isabs(key) else root / key
        with contextlib.suppress(OSError):
            path.rmdir()
    record_path.unlink()
    lines.append("the board stays; `coord init --all` wires the clients again")
    return doc, "\n".join(lines)
