"""`coord init --claude ...` and `coord uninstall`: the command-line entries of the wiring.

``coord init`` creates the board; with client flags it also registers ``coord mcp`` with each
chosen client, installs coord's hooks, tells agents how to work in ``AGENTS.md`` and puts the
git pre-commit guard in place. The command line hands in what creates the board
(``coord.cli.daemon_cmd.cmd_init``): the CLI calls the wiring, never the reverse.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import sys

from coord.errors import InvalidInput
from coord.fast import board_files
from coord.fast.clients import CLIENTS
from coord.wiring import claude, codex, cursor, gemini, instructions, precommit
from coord.wiring.plan import (
    RECORD_NAME,
    Plan,
    Target,
    load_record,
    path_of,
    plan_init,
    report,
    save_record,
    write,
)
from coord.wiring.uninstall import plan_uninstall

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, Protocol, TypeVar

    # The command line's context, handed through to what creates the board: the wiring never
    # reads it, so it names no type of the CLI's (the CLI calls the wiring, never the reverse).
    Context = TypeVar("Context")
    Answer = tuple[Any, str]  # the document and the text a command answers

    class ClientWiring(Protocol):
        """What each client's module (wiring.claude, ...) offers."""

        FLAG_HELP: str  # what `coord init --CLIENT` wires, for --help
        NOTES: tuple[str, ...]  # told to the user after its files are planned

        def config(self, root: Path, argv: list[str], shell: str) -> list[Target]: ...

        def instruction_files(self, root: Path, plan: Plan) -> list[Target]: ...


FLAGS_HINT = (
    "wire agents' clients to it with `coord init --claude`, `--codex`, `--gemini`, `--cursor` "
    "or `--all` (MCP server, hooks, AGENTS.md, the pre-commit guard); add --dry-run to see "
    "the changes first"
)
# one module a client of coord.fast.clients.CLIENTS (the one list, whose order is the flags'
# and the files')
CLIENT_MODULES: dict[str, ClientWiring] = {
    "claude": claude,
    "codex": codex,
    "gemini": gemini,
    "cursor": cursor,
}


# --- arguments ------------------------------------------------------------------------------


def args_init(p: argparse.ArgumentParser) -> None:
    for client in CLIENTS:
        help_text = f"wire {CLIENT_MODULES[client].FLAG_HELP}"
        p.add_argument(f"--{client}", action="store_true", help=help_text)
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


def command_words(cmd: str | None) -> tuple[list[str], str]:
    """(argv for MCP registrations, the same as a shell word list for hooks and text)."""
    if not cmd:
        return ["coord"], "coord"
    # a path that exists (even with spaces) is one program; else shell words ("uv run coord")
    single = os.path.exists(cmd) or not any(c.isspace() for c in cmd)
    argv = [cmd] if single else shlex.split(cmd)
    if not argv or not argv[0]:
        raise InvalidInput("--command is empty: give the coord command to write")
    return argv, " ".join(shlex.quote(a) for a in argv)


def _not_found(program: str) -> str | None:
    """The warning when the command written everywhere is not found here: the hooks then
    refuse every guarded call and the MCP server does not start."""
    if shutil.which(program):
        return None
    fix = "install coord on the PATH or re-run `coord init` with `--command /path/to/coord`"
    running = sys.argv[0]
    if os.path.basename(running) == "coord" and os.path.isfile(running):
        fix = (
            f"install coord on the PATH or re-run `coord init --command {os.path.abspath(running)}`"
        )
    where = "is not found" if "/" in program else "is not on PATH"
    return (
        f"`{program}` {where} here: the hooks wired refuse every edit they guard, and the MCP "
        f"server does not start, until it is; {fix}"
    )


def _chosen(args: argparse.Namespace) -> list[str]:
    if getattr(args, "all", False):
        return list(CLIENTS)
    return [c for c in CLIENTS if getattr(args, c, False)]


def _targets(
    root: Path, clients: list[str], argv: list[str], shell: str, plan: Plan
) -> list[Target]:
    """Every file the chosen clients need, in the order they are shown."""
    modules = [CLIENT_MODULES[c] for c in clients]
    targets: list[Target] = []
    for module in modules:
        targets += module.config(root, argv, shell)
    targets.append(instructions.agents_md(root, shell))  # any client flag writes it
    for module in modules:
        targets += module.instruction_files(root, plan)
    targets += precommit.targets(root, shell, plan)
    return targets


# --- commands -------------------------------------------------------------------------------


def cmd_init(
    args: argparse.Namespace,
    ctx: Context,
    create_board: Callable[[argparse.Namespace, Context], tuple[Any, ...]],
) -> Answer:
    clients = _chosen(args)
    dry_run = bool(getattr(args, "dry_run", False))
    if not clients:
        if dry_run:
            board_dir = board_files.new_board_dir()
            there = board_files.has_board(board_dir)
            verb = "board already there:" if there else "would create the board"
            doc = {"board": str(board_dir), "dry_run": True, "clients": [], "changes": []}
            return doc, f"{verb} {board_dir}; nothing else to do\n{FLAGS_HINT}"
        document, text, *_ = create_board(args, ctx)
        return {**document, "clients": [], "changes": []}, f"{text}\n{FLAGS_HINT}"

    argv, shell = command_words(getattr(args, "coord_command", None))
    board_dir = board_files.new_board_dir()
    root = board_files.repo_root(board_dir)
    record = load_record(board_dir)
    plan = Plan()
    targets = _targets(root, clients, argv, shell, plan)
    plan_init(plan, root, targets, record, clients, shell)  # refuses before anything is written
    missing = _not_found(argv[0])
    if missing:
        plan.warnings.append(missing)
    for module in (CLIENT_MODULES[c] for c in clients):
        plan.notes.extend(module.NOTES)
    if any(c.key == codex.HOOKS and c.before is not None for c in plan.changes):
        plan.notes.append(codex.CHANGED_HOOKS_NOTE)
    if plan.changes:  # nothing changed: nothing to load
        plan.notes.append("restart the clients that are running to load the changes")
    changes = [(c, c.action) for c in plan.changes]
    docs, lines = report(changes, plan.warnings, plan.notes, dry_run)
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

    document, text, *_ = create_board(args, ctx)
    for change in plan.changes:
        write(change)
    save_record(board_dir, plan.record)
    if not changes:
        lines.insert(0, f"{', '.join(clients)}: already wired; nothing changed")
    return {**document, **base}, "\n".join([text, *lines])


def cmd_uninstall(args: argparse.Namespace, ctx: object) -> Answer:
    dry_run = bool(getattr(args, "dry_run", False))
    board_dir = board_files.find_board_dir()
    if board_dir is None or not (board_dir / RECORD_NAME).exists():
        doc = {"dry_run": dry_run, "changes": [], "removed_dirs": []}
        return doc, "nothing to remove: `coord init` wired no client here"
    root = board_files.repo_root(board_dir)
    undo = plan_uninstall(root, load_record(board_dir))
    docs, lines = report(undo.changes, [], undo.notes, dry_run)
    lines += [f"{'would remove' if dry_run else 'removed'} {k}/" for k in undo.removable_dirs]
    doc = {"dry_run": dry_run, "changes": docs, "removed_dirs": undo.removable_dirs}
    if dry_run:
        return doc, "\n".join(["dry run: nothing written", *lines])
    for change, _action in undo.changes:
        write(change)
    for key in undo.removable_dirs:
        with contextlib.suppress(OSError):
            path_of(root, key).rmdir()
    (board_dir / RECORD_NAME).unlink()
    lines.append("the board stays; `coord init --all` wires the clients again")
    return doc, "\n".join(lines)
