"""`coord`: the command line. Each command is one call to the daemon, rendered.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 conflict (lost the race, lease lost),
4 nothing ready. With ``--json`` every command prints exactly one JSON document on stdout,
errors included (``{"error": ..., "message": ...}``).

Imports stay light (argparse, json, http.client): agents run this many times a minute.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable

from coord.cli import argtypes, commands, files
from coord.client import tokens
from coord.client.http import Client
from coord.errors import EXIT_OK, EXIT_USAGE, CoordError, InvalidInput
from coord.fast import board_files

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    # (the JSON document, the human text[, the exit code when it is not 0])
    Result = tuple[Any, str] | tuple[Any, str, int]
    Command = Callable[[argparse.Namespace, "Context"], Result]

EPILOG = """\
examples:
  coord init                         create the board in .coord/ at the repository root
  coord add "Fix login" --kind bug --priority 1 --label auth
  coord next --as claude-1           claim the best ready item (exit 4 if none)
  coord done 12 --as claude-1        close it: runs its checks first (the token is remembered)
  coord spec import docs/plan.md     work packages of a design document become items
  coord claim R3 --as claude-1       claim a package by its id
  coord escalate R3 "which API?"     ask a human; `coord answer R3 "..."` hands it back
  coord log --follow                 stream every change
  coord reserve 'src/auth/**' --as claude-1   hold files (exit 3 if someone else does)
  coord guard src/auth/login.py --as codex-1  may I edit it? (exit 2: no; for hooks)

Every command takes --json and --as NAME (or COORD_AGENT). Exit codes: 0 ok, 1 error,
2 usage/invalid input, 3 conflict (someone else holds it, lease lost), 4 nothing ready;
`coord guard` exits 2 when the edit is refused.
"""


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._client: Client | None = None
        self._board_dir: Path | None = None

    @property
    def board_dir(self) -> Path:
        if self._board_dir is None:
            self._board_dir = board_files.require_board_dir()
        return self._board_dir

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client(self.board_dir)
        return self._client

    def agent(self, *, required: bool = True) -> str:
        name = getattr(self.args, "agent", None) or tokens.agent_from_env()
        if name:
            return str(name)
        if required:
            raise InvalidInput(
                "who is claiming? pass --as NAME or set COORD_AGENT (each agent needs its own "
                "name, so two agents never share a claim)"
            )
        return os.environ.get("USER") or os.environ.get("USERNAME") or "human"

    def token_for(self, item_id: int | str, agent: str) -> int:
        given = getattr(self.args, "token", None)
        if given is not None:
            return int(given)
        remembered = tokens.remembered(self.board_dir, agent, item_id)
        if remembered is None:
            raise InvalidInput(
                f"no token remembered for item {item_id} as {agent}: pass --token T (the token "
                "your claim returned)"
            )
        return remembered


# --- parser ---------------------------------------------------------------------------------


def _args_init(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease", type=argtypes.seconds, help="default lease length in seconds (900)")
    from coord.wiring import command  # the client flags (--claude, --codex, ...) live with the code

    command.args_init(p)


def _cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.wiring import command

    # the wiring is handed what creates the board: it never imports the command line
    return command.cmd_init(args, ctx, create_board=commands.cmd_init)


def _args_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    p.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )


def _args_none(p: argparse.ArgumentParser) -> None:
    pass


def _args_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("title")
    p.add_argument("--kind", default="task", choices=KINDS)
    p.add_argument(
        "--priority", type=argtypes.priority, default=2, help="0 (highest) to 4; default 2"
    )
    p.add_argument("--label", action="append", default=[], help="a label (repeatable)")
    p.add_argument(
        "--dep",
        action="append",
        type=argtypes.item_id,
        default=[],
        metavar="ID",
        help="an item this one waits on (repeatable)",
    )
    p.add_argument("--body", default="", help="the details")
    p.add_argument("--to", metavar="AGENT", help="address it to an agent (handoffs, notes)")
    p.add_argument(
        "--file",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="files the item owns; claiming it reserves them (repeatable)",
    )
    p.add_argument("--key", help="a package id to name it by, as in `coord claim R3`")
    p.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="CMD",
        help="a shell command that must pass before done (repeatable)",
    )


def _args_import(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        help="one JSON object per line: title, kind, priority, labels, deps, "
        "body, to, ref (deps may name another line's ref)",
    )


def _args_ls(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state", choices=["pending", "claimed", "needs_human", "done", "cancelled", "open"]
    )
    p.add_argument(
        "--needs-human", action="store_true", help="only items waiting for a human answer"
    )
    p.add_argument("--spec", metavar="DOC", help="only packages imported from this document")
    p.add_argument("--all", action="store_true", help="every state, closed ones too")
    p.add_argument("--ready", action="store_true", help="only items claimable now")
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--label")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--after", type=int, default=0, metavar="ID", help="ids after this one")


def _args_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", type=argtypes.item_ref, help="an item id, or a package id such as R3")


def _args_token(p: argparse.ArgumentParser) -> None:
    p.add_argument("--token", type=argtypes.item_id, help="the claim's token (default: remembered)")


def _args_edit(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("--title")
    p.add_argument("--body")
    p.add_argument("--priority", type=argtypes.priority)
    p.add_argument("--label", action="append", help="replace the labels (repeatable)")
    p.add_argument(
        "--dep",
        action="append",
        type=argtypes.item_id,
        default=[],
        metavar="ID",
        help="add a dependency",
    )
    p.add_argument(
        "--no-dep",
        action="append",
        type=argtypes.item_id,
        default=[],
        metavar="ID",
        help="remove a dependency",
    )
    p.add_argument(
        "--check", action="append", default=[], metavar="CMD", help="add a check (repeatable)"
    )
    p.add_argument("--no-check", action="append", default=[], metavar="CMD", help="remove a check")
    _args_token(p)


def _args_cancel(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("--reason", default="")
    _args_token(p)


def _args_lease(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease", type=argtypes.seconds, metavar="SECONDS", help="lease length")


def _args_claim(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    _args_lease(p)


def _args_next(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", choices=KINDS, help="only this kind (default: task, bug, handoff)")
    p.add_argument("--label")
    _args_lease(p)
    p.add_argument(
        "--count",
        type=argtypes.count,
        metavar="N",
        help="claim up to N items whose files overlap neither each other nor "
        'anything held (prints {"items": [...]})',
    )


def _args_heartbeat(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    _args_token(p)
    _args_lease(p)


def _args_release(p: argparse.ArgumentParser) -> None:
    _args_cancel(p)


def _args_done(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    _args_token(p)
    p.add_argument("--summary", default="", help="what was done")
    p.add_argument(
        "--skip-checks",
        action="store_true",
        help="close without running the item's checks (needs --reason; recorded for all)",
    )
    p.add_argument("--reason", help="why the checks are skipped")
    p.add_argument(
        "--check-timeout",
        type=argtypes.seconds,
        default=1800,
        metavar="SECONDS",
        help="give up on a check after this long (default 1800)",
    )


def _args_escalate(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("question", nargs="+", help="what you need a human to decide")
    _args_token(p)


def _args_answer(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("text", nargs="+", help="the answer; it reaches the holder's inbox")


def _args_reply(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("text", nargs="+")


def _args_inbox(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peek", action="store_true", help="show without marking as seen")


def _args_log(p: argparse.ArgumentParser) -> None:
    p.add_argument("--after", type=int, default=0, metavar="SEQ")
    p.add_argument("--limit", type=int, default=500)
    p.add_argument("--item", type=argtypes.item_id, metavar="ID", help="only this item's events")
    p.add_argument("--follow", "-f", action="store_true", help="keep streaming new events")


def _elsewhere(
    module: str, help_text: str, command: str, configure: str
) -> tuple[Command, str, Callable[[argparse.ArgumentParser], None]]:
    """A command whose code is imported only when it runs (or its help is asked for): documents,
    git, MCP and client wiring are not what agents call every minute."""

    def run(args: argparse.Namespace, ctx: Context) -> Result:
        return getattr(importlib.import_module(module), command)(args, ctx)

    def arguments(p: argparse.ArgumentParser) -> None:
        getattr(importlib.import_module(module), configure)(p)

    return run, help_text, arguments


KINDS = ["task", "bug", "note", "handoff"]
# name -> (run, one-line help, arguments)
COMMANDS: dict[str, tuple[Command, str, Callable[[argparse.ArgumentParser], None]]] = {
    "init": (
        _cmd_init,
        "create the board in .coord/ at the repository root; wire agents' clients to it",
        _args_init,
    ),
    "serve": (commands.cmd_serve, "run the daemon (HTTP API) for this board", _args_serve),
    "stop": (commands.cmd_stop, "stop this board's daemon", _args_none),
    "add": (commands.cmd_add, "post an item: a task, bug, note or handoff", _args_add),
    "import": (
        commands.cmd_import,
        "add items from a JSON-lines file ('-' for stdin)",
        _args_import,
    ),
    "ls": (commands.cmd_ls, "list items (open ones by default)", _args_ls),
    "show": (commands.cmd_show, "an item with its thread and history", _args_id),
    "edit": (commands.cmd_edit, "change an item (while claimed, only its holder can)", _args_edit),
    "cancel": (commands.cmd_cancel, "cancel an item", _args_cancel),
    "claim": (commands.cmd_claim, "claim one item; exit 3 if someone else holds it", _args_claim),
    "next": (commands.cmd_next, "claim the best ready item; exit 4 if none", _args_next),
    "heartbeat": (commands.cmd_heartbeat, "extend your lease on a claimed item", _args_heartbeat),
    "release": (commands.cmd_release, "give a claimed item back (pending again)", _args_release),
    "done": (
        commands.cmd_done,
        "close a claimed item; runs its checks here first and refuses if one fails",
        _args_done,
    ),
    "escalate": (
        commands.cmd_escalate,
        "ask a human (needs_human): you keep the claim and files, the lease stops",
        _args_escalate,
    ),
    "answer": (
        commands.cmd_answer,
        "answer a needs_human item; it goes back to its holder",
        _args_answer,
    ),
    "reply": (commands.cmd_reply, "reply on an item's thread (@name mentions notify)", _args_reply),
    "ack": (commands.cmd_ack, "acknowledge an item", _args_id),
    "inbox": (
        commands.cmd_inbox,
        "what was said to you or about your items since you looked",
        _args_inbox,
    ),
    "agents": (commands.cmd_agents, "who is active and what each holds", _args_none),
    "log": (commands.cmd_log, "the event log", _args_log),
    "reserve": (
        files.cmd_reserve,
        "reserve paths or patterns (exit 3 if someone holds them)",
        files.args_reserve,
    ),
    "unreserve": (
        files.cmd_unreserve,
        "free your reservations",
        files.args_unreserve,
    ),
    "reservations": (
        files.cmd_reservations,
        "who holds which files, until when",
        files.args_reservations,
    ),
    "who": (
        files.cmd_who,
        "who holds a path, and may you edit it",
        files.args_who,
    ),
    "spec": _elsewhere(
        "coord.cli.spec_cmd",
        "design documents as work queues: lint, import, status, sync",
        "cmd_spec",
        "args_spec",
    ),
    "git": _elsewhere(
        "coord.cli.git_cmd",
        "git-native mode, no daemon: reserve/release/done/status/reap packages on main",
        "cmd_git",
        "args_git",
    ),
    "mcp": _elsewhere(
        "coord.mcp.stdio",
        "serve coord's MCP tools over stdio (agents' clients start this)",
        "cmd_mcp",
        "args_mcp",
    ),
    "hook": _elsewhere(
        "coord.hooks",
        "answer a client's hook (claude, codex, gemini): JSON on stdin, its decision out",
        "cmd_hook",
        "args_hook",
    ),
    "uninstall": _elsewhere(
        "coord.wiring.command",
        "remove what `coord init` wired into the agents' clients; keeps the board",
        "cmd_uninstall",
        "args_uninstall",
    ),
    "guard": (
        files.cmd_guard,
        "may I edit these paths? exit 0, or 2 with the reasons "
        "(reads the board directly; for hooks)",
        files.args_guard,
    ),
}


def _columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (and bz2, lzma and zlib
    with it): argparse's help formatter asks for it on every start, ~2 ms of a CLI call."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0 and sys.__stdout__ is not None:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _columns() - 2)


class _RawDescriptionFormatter(_Formatter, argparse.RawDescriptionHelpFormatter):
    pass


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one with just that command: agents call the CLI many
    times a minute, and building all twenty subparsers costs more than the claim itself."""
    common = argparse.ArgumentParser(add_help=False, formatter_class=_Formatter)
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print one JSON document (errors too)",
    )
    common.add_argument(
        "--as",
        dest="agent",
        metavar="NAME",
        default=argparse.SUPPRESS,
        help="act as this agent (default: $COORD_AGENT)",
    )

    parser = argparse.ArgumentParser(
        prog="coord",
        description="A shared board where parallel coding agents claim work atomically.",
        epilog=EPILOG,
        formatter_class=_RawDescriptionFormatter,
        parents=[common],
    )
    from coord import __version__

    parser.add_argument("--version", action="version", version=f"coord {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (func, help_text, configure) in COMMANDS.items():
        if only is not None and name != only:
            continue
        p = sub.add_parser(
            name,
            parents=[common],
            help=help_text,
            description=help_text,
            formatter_class=_Formatter,
        )
        configure(p)
        p.set_defaults(func=func)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """The command named in argv, skipping the global options before it."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--as":
            skip = True
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _json_mode(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=_command_in(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    as_json = _json_mode(args)
    ctx = Context(args)
    try:
        document, text, *rest = args.func(args, ctx)
    except CoordError as err:
        if as_json:
            print(json.dumps(err.to_dict()))
        else:
            print(f"coord: {err.message}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    finally:
        if ctx._client is not None:
            ctx._client.close()
    if as_json:
        if document is not None:
            print(json.dumps(document))
    elif text:
        print(text)
    return int(rest[0]) if rest else EXIT_OK
