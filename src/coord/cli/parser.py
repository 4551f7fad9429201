"""The command line's grammar: each command's options, and the parser built from the table.

``coord.cli.main`` holds the table of commands (name, run, help, options); this module turns
it into argparse. Building every subparser costs more than a claim, so a call builds only the
one command it names; ``coord next`` usually skips argparse altogether (``coord.cli.entry``).
"""

from __future__ import annotations

import argparse
import os
import sys

from coord import model
from coord.cli import argtypes
from coord.limits import KINDS

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, NoReturn

    from coord.cli.context import Command

    # name -> (run, one-line help, options)
    Commands = dict[str, tuple[Command, str, Callable[[argparse.ArgumentParser], None]]]

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
2 usage/invalid input, 3 conflict (someone else holds it, lease lost), 4 nothing ready,
5 no such item; `coord guard` exits 2 when the edit is refused.
"""


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one JSON document under ``--json`` (a script reading
    stdout otherwise got nothing to parse) and exit 2 as before."""

    json_errors = False  # set by ``coord.cli.main`` when the command line asks for --json
    command_parsers: Mapping[str, argparse.ArgumentParser]  # the top parser's, by command

    def error(self, message: str) -> NoReturn:
        if Parser.json_errors:
            import json

            print(json.dumps({"error": "usage", "message": message, "usage": self.format_usage()}))
            sys.exit(2)
        super().error(message)


# --- each command's options -------------------------------------------------------------------


def args_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--database",
        metavar="URL",
        help="serve the team board in this PostgreSQL database (postgresql://USER@HOST/DB, no "
        "password in it); recorded in .coord/config.json if it names none, refused if it names "
        "another; default: the board config.json names",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=0,
        help="port (default 0: the port this board's daemon last used if it is free, else any)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="what the daemon logs to its stderr",
    )
    p.add_argument(
        "--idle-exit",
        type=argtypes.seconds,
        metavar="SECONDS",
        help="exit after this long with no request (what a daemon the CLI starts on demand "
        "does, after the board's idle_exit_seconds); by default a daemon you serve never idles, "
        "and a team board's never does (ignored there)",
    )
    p.add_argument(
        "--no-land",
        action="store_true",
        help="do not land the landing queue in this daemon (by default a daemon whose board "
        "is in a git repository does, unless config.json's land_in_daemon is false; a team "
        "board's only where it is true): `coord land` lands it then",
    )


def args_none(p: argparse.ArgumentParser) -> None:
    pass


def args_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("title", help="what to do, on one line")
    p.add_argument("--kind", default="task", choices=KINDS, help="what it is (default: task)")
    p.add_argument(
        "--priority", type=argtypes.priority, default=2, help="0 (highest) to 4; default 2"
    )
    p.add_argument("--label", action="append", default=[], help="a label (repeatable)")
    p.add_argument(
        "--dep",
        action="append",
        type=argtypes.item_ref,
        default=[],
        metavar="ID",
        help="an item this one waits on: an id or a package id (repeatable)",
    )
    p.add_argument("--body", default="", help="the details")
    p.add_argument("--to", metavar="AGENT", help="address it to an agent (handoffs, notes)")
    # One pattern per --file, as --label and --dep: with several, `--file a b "title"` took
    # the title for a pattern.
    p.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="PATTERN",
        help="a file or pattern the item owns; claiming it reserves them (repeatable)",
    )
    p.add_argument("--key", help="a package id to name it by, as in `coord claim R3`")
    p.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="CMD",
        help="a shell command that must pass before done (repeatable)",
    )


def args_import(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        help="one JSON object per line: title, kind, priority, labels, deps, "
        "body, to, ref (deps may name another line's ref)",
    )


def args_ls(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state",
        choices=model.LISTED_STATES,
        help="only items in this state (default: open, i.e. pending, claimed or queued); "
        "blocked: pending, waiting on a dependency not done",
    )
    p.add_argument(
        "--mine",
        action="store_true",
        help="only the items you hold (--as NAME or COORD_AGENT); with --state done or --all, "
        "also those you finished",
    )
    p.add_argument(
        "--holder",
        metavar="NAME",
        help="only the items NAME holds; with --state done or --all, also those NAME finished",
    )
    p.add_argument(
        "--needs-human", action="store_true", help="only items waiting for a human answer"
    )
    p.add_argument("--spec", metavar="DOC", help="only packages imported from this document")
    p.add_argument(
        "--all", action="store_true", help="every item: every state (closed ones too), every page"
    )
    p.add_argument("--ready", action="store_true", help="only items claimable now")
    p.add_argument("--kind", choices=KINDS, help="only items of this kind")
    p.add_argument("--label", help="only items with this label")
    p.add_argument(
        "--limit",
        type=argtypes.page_size(1000),
        default=100,
        help="at most this many items (1 to 1000)",
    )
    p.add_argument(
        "--after", type=argtypes.position, default=0, metavar="ID", help="ids after this one"
    )


def args_agents(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--all",
        action="store_true",
        help="people too: names that only added, edited, answered or replied (default: only "
        "agents, the names that claimed, reserved or read their inbox)",
    )
    p.add_argument(
        "--prune",
        action="store_true",
        help="forget the names not seen for --older-than that would lose nothing: no claim "
        "(a lapsed one included), no live reservation, nothing unread in their inbox that "
        "came after they were last seen",
    )
    p.add_argument(
        "--older-than",
        type=argtypes.duration,
        default=None,
        metavar="D",
        help="with --prune: unseen for this long, in seconds or 90m, 12h, 7d, 2w (default: "
        "7d; at least 1h)",
    )


def args_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", type=argtypes.item_ref, help="an item id, or a package id such as R3")


def args_token(p: argparse.ArgumentParser) -> None:
    p.add_argument("--token", type=argtypes.item_id, help="the claim's token (default: remembered)")


def args_edit(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument("--title", help="the new title")
    p.add_argument("--body", help="the new details")
    p.add_argument("--priority", type=argtypes.priority, help="the new priority, 0 (highest) to 4")
    p.add_argument("--label", action="append", help="replace the labels (repeatable)")
    p.add_argument(
        "--dep",
        action="append",
        type=argtypes.item_ref,
        default=[],
        metavar="ID",
        help="add a dependency: an id or a package id",
    )
    p.add_argument(
        "--no-dep",
        action="append",
        type=argtypes.item_ref,
        default=[],
        metavar="ID",
        help="remove a dependency",
    )
    p.add_argument(
        "--check", action="append", default=[], metavar="CMD", help="add a check (repeatable)"
    )
    p.add_argument("--no-check", action="append", default=[], metavar="CMD", help="remove a check")
    args_token(p)


def args_cancel(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument(
        "--reason",
        required=True,
        help="why (required: recorded in the log). Its creator, the holder of a live claim or "
        "a human listed in .coord/config.json `humans` may cancel",
    )
    args_token(p)


def args_reopen(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument(
        "--reason",
        required=True,
        help="why (required: recorded in the log). Its creator or a listed human may reopen",
    )


def args_lease(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease", type=argtypes.seconds, metavar="SECONDS", help="lease length")


def args_claim(p: argparse.ArgumentParser) -> None:
    args_id(p)
    args_lease(p)


def args_next(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", choices=KINDS, help="only this kind (default: task, bug, handoff)")
    p.add_argument("--label", help="only items with this label")
    args_lease(p)
    p.add_argument(
        "--count",
        type=argtypes.count,
        metavar="N",
        help="claim up to N items whose files overlap neither each other nor "
        'anything held (prints {"items": [...]})',
    )


def args_heartbeat(p: argparse.ArgumentParser) -> None:
    args_id(p)
    args_token(p)
    args_lease(p)


def args_release(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument("--reason", default="", help="why, for the log and the next holder")
    args_token(p)


def args_done(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "id",
        nargs="?",
        type=argtypes.item_ref,
        help="an item id or package id (default: the item of the coord worktree you are in)",
    )
    args_token(p)
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


def args_escalate(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument("question", nargs="+", help="what you need a human to decide")
    args_token(p)


def args_answer(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument("text", nargs="+", help="the answer; it reaches the holder's inbox")


def args_reply(p: argparse.ArgumentParser) -> None:
    args_id(p)
    p.add_argument("text", nargs="+", help="the reply; @name mentions reach that agent")


def args_send(p: argparse.ArgumentParser) -> None:
    p.add_argument("to", metavar="AGENT", help="who it is for (an agent's or a person's name)")
    p.add_argument("text", nargs="+", help="the message; its first line is its title")


def args_inbox(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peek", action="store_true", help="show without marking as seen")


def args_log(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--after", type=argtypes.position, default=0, metavar="SEQ", help="events after this one"
    )
    p.add_argument(
        "--limit",
        type=argtypes.page_size(5000),
        default=500,
        help="at most this many events (1 to 5000)",
    )
    p.add_argument(
        "--item",
        type=argtypes.item_ref,
        metavar="ID",
        help="only this item's events (an id or a package id)",
    )
    p.add_argument("--follow", "-f", action="store_true", help="keep streaming new events")


# --- building the parser ---------------------------------------------------------------------


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

    def _get_help_string(self, action: argparse.Action) -> str | None:
        """The help, with the default said where there is one worth saying: not for flags
        (off unless given), empty lists, "none", or a help that names its default already."""
        text = action.help or ""
        default = action.default
        if (
            default in (None, False, True, "", argparse.SUPPRESS)
            or default == []
            or "default" in text
            or not action.option_strings
        ):
            return action.help
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class _RawDescriptionFormatter(_Formatter, argparse.RawDescriptionHelpFormatter):
    pass


def build_parser(commands: Commands, only: str | None = None) -> Parser:
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
        help="act as this agent (default: $COORD_AGENT; for `coord open`, the OS user)",
    )

    parser = Parser(
        prog="coord",
        description="A shared board where parallel coding agents claim work atomically.",
        epilog=EPILOG,
        formatter_class=_RawDescriptionFormatter,
        parents=[common],
    )
    from coord import __version__

    parser.add_argument("--version", action="version", version=f"coord {__version__}")
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, (func, help_text, configure) in commands.items():
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
    parser.command_parsers = sub.choices
    return parser


def first_word(argv: list[str]) -> str | None:
    """The first word of argv that is not an option or an option's value: the command."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--as":
            skip = True
        elif arg in ("-h", "--help", "--version"):
            return None  # argparse answers these before any command
        elif not arg.startswith("-"):
            return arg
    return None


def command_in(argv: list[str], commands: Commands) -> str | None:
    """The command named in argv, skipping the global options before it."""
    word = first_word(argv)
    return word if word in commands else None
