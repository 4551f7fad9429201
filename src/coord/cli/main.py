"""`coord`: the command line. Each command is one call to the daemon, rendered.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 conflict (lost the race, lease lost),
4 nothing ready, 5 no such item (docs/commands.md has the table). With ``--json`` every command
prints exactly one JSON document on stdout, errors included (``{"error": ..., "message":
...}``).

The command line is cut along its concerns: the grammar (``parser``), what a command runs
with and how its answer is printed (``context``), the commands (``commands``, ``files``,
``spec_cmd``, ``git_cmd``), human output (``render``). This module is the table that names
them, and the entry after ``coord.cli.entry``'s fast paths.

Imports stay light (argparse, json, a socket): agents run this many times a minute.
"""

from __future__ import annotations

import importlib
import sys

from coord.cli import argtypes, commands, daemon_cmd, files, parser
from coord.cli.context import Context as Context  # for the commands kept elsewhere
from coord.cli.context import execute
from coord.errors import EXIT_USAGE
from coord.fast.clients import HOOK_CLIENTS

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from coord.cli.context import Command
    from coord.cli.context import Result as Result
    from coord.cli.parser import Commands


def _args_init(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease", type=argtypes.seconds, help="default lease length in seconds (900)")
    p.add_argument(
        "--database",
        metavar="URL",
        help="make this checkout's board the team board in this PostgreSQL database "
        "(postgresql://USER@HOST:PORT/DATABASE, no password in it); default: a SQLite board "
        "in .coord/board.db",
    )
    from coord.wiring import command  # the client flags (--claude, --codex, ...) live with the code

    command.args_init(p)


def _cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.wiring import command

    # the wiring is handed what creates the board: it never imports the command line
    return command.cmd_init(args, ctx, create_board=daemon_cmd.cmd_init)


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


# name -> (run, one-line help, options)
COMMANDS: Commands = {
    "init": (
        _cmd_init,
        "create the board in .coord/ at the repository root; wire agents' clients to it",
        _args_init,
    ),
    "serve": (daemon_cmd.cmd_serve, "run the daemon (HTTP API) for this board", parser.args_serve),
    "stop": (daemon_cmd.cmd_stop, "stop this board's daemon", parser.args_none),
    "add": (commands.cmd_add, "post an item: a task, bug, note or handoff", parser.args_add),
    "import": (
        commands.cmd_import,
        "add items from a JSON-lines file ('-' for stdin)",
        parser.args_import,
    ),
    "ls": (commands.cmd_ls, "list items (open ones by default)", parser.args_ls),
    "show": (commands.cmd_show, "an item with its thread and history", parser.args_id),
    "edit": (
        commands.cmd_edit,
        "change an item (while claimed, only its holder can)",
        parser.args_edit,
    ),
    "cancel": (
        commands.cmd_cancel,
        "cancel an item, with the reason (its creator, holder or a listed human)",
        parser.args_cancel,
    ),
    "reopen": (
        commands.cmd_reopen,
        "a cancelled item back to pending, with the reason (its creator or a listed human)",
        parser.args_reopen,
    ),
    "claim": (
        commands.cmd_claim,
        "claim one item; exit 3 if someone else holds it",
        parser.args_claim,
    ),
    "next": (commands.cmd_next, "claim the best ready item; exit 4 if none", parser.args_next),
    "heartbeat": (
        commands.cmd_heartbeat,
        "extend your lease on a claimed item",
        parser.args_heartbeat,
    ),
    "release": (
        commands.cmd_release,
        "give a claimed item back (pending again)",
        parser.args_release,
    ),
    "done": (
        commands.cmd_done,
        "close a claimed item; runs its checks here first and refuses if one fails (a "
        "worktree item: submit it to land)",
        parser.args_done,
    ),
    "start": _elsewhere(
        "coord.cli.worktree_cmd",
        "claim an item (default: the best ready one) in a worktree of its own, on its own "
        "branch from main's tip; prints where to work",
        "cmd_start",
        "args_start",
    ),
    "queue": _elsewhere(
        "coord.cli.worktree_cmd",
        "the landing queue: submitted worktree items in the order they land",
        "cmd_queue",
        "args_queue",
    ),
    "abandon": _elsewhere(
        "coord.cli.worktree_cmd",
        "take a queued or needs_rework item, or one whose worktree claim lapsed, off its way "
        "to main (pending, its files freed)",
        "cmd_abandon",
        "args_abandon",
    ),
    "worktree": _elsewhere(
        "coord.cli.worktree_cmd",
        "coord's worktrees: list (owner, clean, merged) and gc (what is merged or abandoned, "
        "never unlanded work)",
        "cmd_worktree",
        "args_worktree",
    ),
    "escalate": (
        commands.cmd_escalate,
        "ask a human (needs_human): you keep the claim and files up to the escalation bound",
        parser.args_escalate,
    ),
    "answer": (
        commands.cmd_answer,
        "answer a needs_human item; it goes back to its holder",
        parser.args_answer,
    ),
    "wait": _elsewhere(
        "coord.cli.wait_cmd",
        "wait your turn for an item or paths, first come first served; prints one line when "
        "granted (exit 6 on --timeout)",
        "cmd_wait",
        "args_wait",
    ),
    "ask": _elsewhere(
        "coord.cli.wait_cmd",
        "ask the holder of an item or paths to let go (it answers release or defer)",
        "cmd_ask",
        "args_ask",
    ),
    "answer-ask": _elsewhere(
        "coord.cli.wait_cmd",
        "answer an ask of what you hold: release, or defer --until",
        "cmd_answer_ask",
        "args_answer_ask",
    ),
    "asks": _elsewhere(
        "coord.cli.wait_cmd",
        "the asks waiting for your answer",
        "cmd_asks",
        "args_asks",
    ),
    "reply": (
        commands.cmd_reply,
        "reply on an item's thread (@name mentions notify)",
        parser.args_reply,
    ),
    "send": (
        commands.cmd_send,
        "a direct message to an agent or a person: it reaches their inbox",
        parser.args_send,
    ),
    "ack": (commands.cmd_ack, "acknowledge an item", parser.args_id),
    "inbox": (
        commands.cmd_inbox,
        "what was said to you or about your items since you looked",
        parser.args_inbox,
    ),
    "agents": (
        commands.cmd_agents,
        "the agents: who is active and what each holds; --prune forgets the long gone",
        parser.args_agents,
    ),
    "log": (commands.cmd_log, "the event log", parser.args_log),
    "reserve": (
        files.cmd_reserve,
        "reserve paths or patterns (exit 3 if someone holds them)",
        files.args_reserve,
    ),
    "unreserve": (files.cmd_unreserve, "free your reservations", files.args_unreserve),
    "reservations": (
        files.cmd_reservations,
        "who holds which files, until when",
        files.args_reservations,
    ),
    "who": (files.cmd_who, "who holds a path, and may you edit it", files.args_who),
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
        # the clients from their one list: the words once named three of the four
        f"answer a client's hook ({', '.join(HOOK_CLIENTS)}): JSON on stdin, its decision out",
        "cmd_hook",
        "args_hook",
    ),
    "uninstall": _elsewhere(
        "coord.wiring.command",
        "remove what `coord init` wired into the agents' clients; keeps the board",
        "cmd_uninstall",
        "args_uninstall",
    ),
    "open": _elsewhere(
        "coord.cli.open_cmd",
        "print (and open) a one-time link to the live board, as a person: --as NAME, "
        "default the OS user",
        "cmd_open",
        "args_open",
    ),
    "status": _elsewhere(
        "coord.cli.status_cmd",
        "the daemon and the board at a glance; starts no daemon",
        "cmd_status",
        "args_status",
    ),
    "watch": _elsewhere(
        "coord.cli.watch_cmd",
        "the board live in a terminal: claims with their leases counting down, questions, "
        "ready work, held files, activity (keys: q quit, r refresh, Tab pane, f agent)",
        "cmd_watch",
        "args_watch",
    ),
    "doctor": _elsewhere(
        "coord.cli.doctor_cmd",
        "check the install, the wiring and the board; each finding with its fix (exit 1)",
        "cmd_doctor",
        "args_doctor",
    ),
    "migrate": _elsewhere(
        "coord.cli.migrate_cmd",
        "copy the board to PostgreSQL (--to postgresql://…) or back to a SQLite file "
        "(--to sqlite:PATH); verified, one transaction",
        "cmd_migrate",
        "args_migrate",
    ),
    "token": _elsewhere(
        "coord.cli.token_cmd",
        "people's and machines' tokens: create --for NAME (acts as NAME alone), list, revoke "
        "(the board's owner only)",
        "cmd_token",
        "args_token",
    ),
    "land": _elsewhere(
        "coord.cli.land_cmd",
        "land queued worktree items on main in order, in the foreground (the daemon of a board "
        "in a git repository does it too; this waits its turn for the landing lease): checks "
        "on the exact tree, main moved by compare-and-set (exit 1 if one was sent back or must "
        "wait)",
        "cmd_land",
        "args_land",
    ),
    "guard": (
        files.cmd_guard,
        "may I edit these paths? exit 0, or 2 with the reasons "
        "(reads the board directly; for hooks)",
        files.args_guard,
    ),
}


def build_parser(only: str | None = None) -> parser.Parser:
    """The full parser, or (``only``) one with just that command."""
    return parser.build_parser(COMMANDS, only)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser.Parser.json_errors = "--json" in argv
    command = parser.command_in(argv, COMMANDS)
    full = build_parser(only=command)
    if command is None:
        unknown = parser.first_word(argv)
        if unknown is not None:
            import difflib

            near = difflib.get_close_matches(unknown, COMMANDS, n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            full.error(f"no command {unknown!r}{hint} (`coord --help` lists them)")
    args, extra = full.parse_known_args(argv)
    if extra:  # said by the command's own parser, with its usage, not the top level's
        hint = ""
        if "--file" in argv:  # it took several patterns once; the title went with them
            hint = "; --file takes one pattern: repeat it (--file A --file B)"
        full.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if not getattr(args, "command", None):
        full.print_help()
        return EXIT_USAGE
    if getattr(args, "json", False) and args.command in NO_JSON:
        parser.Parser.json_errors = False  # it was taken, then ignored: say so, plainly
        full.command_parsers[args.command].error(f"--json: {NO_JSON[args.command]}")
    return execute(args.func, args)


# Commands whose output is not one answer to print as JSON: taking --json and ignoring it
# misled scripts.
NO_JSON = {
    "serve": "the daemon's answers are JSON already; `coord status --json` reports on it",
    "mcp": "it speaks MCP (JSON-RPC) on stdout already",
    "hook": "its answer is the client's own JSON already",
}
