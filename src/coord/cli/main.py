"""`coord`: the command line. Each command is one call to the daemon, rendered.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 conflict (lost the race, lease lost),
4 nothing ready. With ``--json`` every command prints exactly one JSON document on stdout,
errors included (``{"error": ..., "message": ...}``).

Imports stay light (argparse, json, http.client): agents run this many times a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from coord import paths
from coord.cli import files, render, tokens
from coord.cli.client import Client
from coord.errors import EXIT_OK, EXIT_USAGE, CoordError, InvalidInput

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    Result = tuple[Any, str]  # (the JSON document, the human text)
    Command = Callable[[argparse.Namespace, "Context"], Result]

EPILOG = """\
examples:
  coord init                         create the board in .coord/ at the repository root
  coord add "Fix login" --kind bug --priority 1 --label auth
  coord next --as claude-1           claim the best ready item (exit 4 if none)
  coord done 12 --as claude-1        close it (the CLI remembers the claim's token)
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
            self._board_dir = paths.require_board_dir()
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

    def token_for(self, item_id: int, agent: str) -> int:
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


# --- commands -------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.board import Board

    board_dir = paths.new_board_dir()
    created = paths.init_board_files(board_dir)
    if args.lease is not None:
        config = paths.read_config(board_dir)
        config["default_lease_seconds"] = args.lease
        paths.write_json_atomic(board_dir / "config.json", config)
    board = Board.open(board_dir, create=True)
    version = board.storage.schema_version()
    board.close()
    verb = "created" if created else "already there:"
    return (
        {"board": str(board_dir), "created": created, "schema_version": version},
        f"{verb} board {board_dir} (schema {version}); write token in "
        f"{paths.token_path(board_dir)}",
    )


def cmd_serve(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.server.daemon import serve

    serve(ctx.board_dir, host=args.host, port=args.port, log_level=args.log_level)
    return {"stopped": True}, "daemon stopped"


def cmd_stop(args: argparse.Namespace, ctx: Context) -> Result:
    client = Client(ctx.board_dir, autostart=False)
    url = client.daemon_url()
    if url is None:
        return {"stopped": False, "running": False}, "no daemon is running"
    client.post("/v1/shutdown", {})
    return {"stopped": True, "url": url}, f"stopped the daemon at {url}"


def cmd_add(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.client.post(
        "/v1/items",
        {
            "agent": ctx.agent(required=False),
            "title": args.title,
            "kind": args.kind,
            "priority": args.priority,
            "labels": args.label,
            "deps": args.dep,
            "body": args.body,
            "to": args.to,
            "files": files.repo_relative(ctx, args.file) if args.file else [],
        },
    )
    return item, f"added {item['id']}: {item['title']}"


def cmd_import(args: argparse.Namespace, ctx: Context) -> Result:
    source = sys.stdin if args.file == "-" else _open_text(args.file)
    entries = []
    with source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError as err:
                raise InvalidInput(f"{args.file}:{number}: not valid JSON: {err}") from None
    result = ctx.client.post(
        "/v1/items:import", {"agent": ctx.agent(required=False), "items": entries}
    )
    return result, f"imported {len(result['ids'])} items: {render.id_ranges(result['ids'])}"


def cmd_ls(args: argparse.Namespace, ctx: Context) -> Result:
    state = None if args.all else (args.state or ("open" if not args.ready else None))
    query = {
        "state": state,
        "ready": "true" if args.ready else None,
        "kind": args.kind,
        "label": args.label,
        "limit": args.limit,
        "after": args.after,
    }
    result = ctx.client.get("/v1/items?" + _query(query))
    return result, render.items_table(result["items"])


def cmd_show(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.client.get(f"/v1/items/{args.id}")
    return item, render.item_detail(item)


def cmd_edit(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent(required=False)
    body: dict[str, Any] = {"agent": agent}
    for key in ("title", "body", "priority"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    if args.label is not None:
        body["labels"] = args.label
    if args.dep:
        body["add_deps"] = args.dep
    if args.no_dep:
        body["remove_deps"] = args.no_dep
    token = (
        args.token if args.token is not None else tokens.remembered(ctx.board_dir, agent, args.id)
    )
    if token is not None:
        body["token"] = token
    item = ctx.client.call("PATCH", f"/v1/items/{args.id}", body)
    return item, f"edited {item['id']}: {item['title']}"


def cmd_cancel(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent(required=False)
    body: dict[str, Any] = {"agent": agent, "reason": args.reason}
    token = (
        args.token if args.token is not None else tokens.remembered(ctx.board_dir, agent, args.id)
    )
    if token is not None:
        body["token"] = token
    item = ctx.client.post(f"/v1/items/{args.id}/cancel", body)
    return item, f"cancelled {item['id']}: {item['title']}"


def cmd_claim(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    won = ctx.client.post(
        f"/v1/items/{args.id}/claim", {"agent": agent, "lease_seconds": args.lease}
    )
    tokens.remember(ctx.board_dir, agent, won["id"], won["token"])
    return won, render.claim_line(won)


def cmd_next(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    request = {"agent": agent, "lease_seconds": args.lease, "kind": args.kind, "label": args.label}
    if args.count is None:
        won = ctx.client.post("/v1/claim-next", request)
        tokens.remember(ctx.board_dir, agent, won["id"], won["token"])
        return won, render.claim_line(won)
    batch = ctx.client.post("/v1/claim-next", {**request, "count": args.count})
    for claim in batch["items"]:
        tokens.remember(ctx.board_dir, agent, claim["id"], claim["token"])
    return batch, "\n".join(render.claim_line(c) for c in batch["items"])


def cmd_heartbeat(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    token = ctx.token_for(args.id, agent)
    claim = ctx.client.post(
        f"/v1/items/{args.id}/heartbeat",
        {"agent": agent, "token": token, "lease_seconds": args.lease},
    )
    return claim, f"lease on {claim['id']} extended until {claim['lease_expires_at']}"


def _finish(args: argparse.Namespace, ctx: Context, action: str, extra: dict[str, Any]) -> Any:
    agent = ctx.agent()
    token = ctx.token_for(args.id, agent)
    try:
        item = ctx.client.post(
            f"/v1/items/{args.id}/{action}", {"agent": agent, "token": token, **extra}
        )
    except CoordError as err:
        if err.code == "lease_lost":  # that claim is over for good: drop its token
            tokens.forget(ctx.board_dir, agent, args.id)
        raise
    tokens.forget(ctx.board_dir, agent, args.id)
    return item


def cmd_release(args: argparse.Namespace, ctx: Context) -> Result:
    item = _finish(args, ctx, "release", {"reason": args.reason})
    return item, f"released {item['id']}: back to pending"


def cmd_done(args: argparse.Namespace, ctx: Context) -> Result:
    item = _finish(args, ctx, "done", {"summary": args.summary})
    return item, f"done {item['id']}: {item['title']}"


def cmd_reply(args: argparse.Namespace, ctx: Context) -> Result:
    reply = ctx.client.post(
        f"/v1/items/{args.id}/replies",
        {"agent": ctx.agent(required=False), "body": " ".join(args.text)},
    )
    return reply, f"replied on {reply['item_id']} (reply {reply['id']})"


def cmd_ack(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.client.post(f"/v1/items/{args.id}/ack", {"agent": ctx.agent(required=False)})
    return result, f"acknowledged {result['id']}" + ("" if result["new"] else " (already)")


def cmd_inbox(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.client.post("/v1/inbox", {"agent": ctx.agent(), "peek": args.peek})
    return result, render.events_table(result["events"], empty="inbox empty: nothing new")


def cmd_agents(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.client.get("/v1/agents")
    return result, render.agents_table(result["agents"])


def cmd_log(args: argparse.Namespace, ctx: Context) -> Result:
    query = {"after": args.after, "limit": args.limit, "item": args.item}
    if not args.follow:
        result = ctx.client.get("/v1/events?" + _query(query))
        return result, render.events_table(result["events"], empty="no events")
    after = args.after
    try:
        while True:
            result = ctx.client.get(
                "/v1/events?" + _query({**query, "after": after, "wait": 25}), timeout=40
            )
            for event in result["events"]:
                print(
                    json.dumps(event) if _json_mode(args) else render.event_line(event), flush=True
                )
            after = result["last_seq"]
    except KeyboardInterrupt:
        return None, ""


# --- parser ---------------------------------------------------------------------------------


def _args_init(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease", type=_seconds, help="default lease length in seconds (900)")


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
    p.add_argument("--priority", type=_priority, default=2, help="0 (highest) to 4; default 2")
    p.add_argument("--label", action="append", default=[], help="a label (repeatable)")
    p.add_argument(
        "--dep",
        action="append",
        type=_item_id,
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


def _args_import(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        help="one JSON object per line: title, kind, priority, labels, deps, "
        "body, to, ref (deps may name another line's ref)",
    )


def _args_ls(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state", choices=["pending", "claimed", "done", "cancelled", "open"])
    p.add_argument("--all", action="store_true", help="every state, closed ones too")
    p.add_argument("--ready", action="store_true", help="only items claimable now")
    p.add_argument("--kind", choices=KINDS)
    p.add_argument("--label")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--after", type=int, default=0, metavar="ID", help="ids after this one")


def _args_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", type=_item_id)


def _args_token(p: argparse.ArgumentParser) -> None:
    p.add_argument("--token", type=_item_id, help="the claim's token (default: remembered)")


def _args_edit(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("--title")
    p.add_argument("--body")
    p.add_argument("--priority", type=_priority)
    p.add_argument("--label", action="append", help="replace the labels (repeatable)")
    p.add_argument(
        "--dep", action="append", type=_item_id, default=[], metavar="ID", help="add a dependency"
    )
    p.add_argument(
        "--no-dep",
        action="append",
        type=_item_id,
        default=[],
        metavar="ID",
        help="remove a dependency",
    )
    _args_token(p)


def _args_cancel(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("--reason", default="")
    _args_token(p)


def _args_lease(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease", type=_seconds, metavar="SECONDS", help="lease length")


def _args_claim(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    _args_lease(p)


def _args_next(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", choices=KINDS, help="only this kind (default: task, bug, handoff)")
    p.add_argument("--label")
    _args_lease(p)
    p.add_argument(
        "--count",
        type=_count,
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


def _args_reply(p: argparse.ArgumentParser) -> None:
    _args_id(p)
    p.add_argument("text", nargs="+")


def _args_inbox(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peek", action="store_true", help="show without marking as seen")


def _args_log(p: argparse.ArgumentParser) -> None:
    p.add_argument("--after", type=int, default=0, metavar="SEQ")
    p.add_argument("--limit", type=int, default=500)
    p.add_argument("--item", type=_item_id, metavar="ID", help="only this item's events")
    p.add_argument("--follow", "-f", action="store_true", help="keep streaming new events")


KINDS = ["task", "bug", "note", "handoff"]
# name -> (run, one-line help, arguments)
COMMANDS: dict[str, tuple[Command, str, Callable[[argparse.ArgumentParser], None]]] = {
    "init": (cmd_init, "create the board in .coord/ at the repository root", _args_init),
    "serve": (cmd_serve, "run the daemon (HTTP API) for this board", _args_serve),
    "stop": (cmd_stop, "stop this board's daemon", _args_none),
    "add": (cmd_add, "post an item: a task, bug, note or handoff", _args_add),
    "import": (cmd_import, "add items from a JSON-lines file ('-' for stdin)", _args_import),
    "ls": (cmd_ls, "list items (open ones by default)", _args_ls),
    "show": (cmd_show, "an item with its thread and history", _args_id),
    "edit": (cmd_edit, "change an item (while claimed, only its holder can)", _args_edit),
    "cancel": (cmd_cancel, "cancel an item", _args_cancel),
    "claim": (cmd_claim, "claim one item; exit 3 if someone else holds it", _args_claim),
    "next": (cmd_next, "claim the best ready item; exit 4 if none", _args_next),
    "heartbeat": (cmd_heartbeat, "extend your lease on a claimed item", _args_heartbeat),
    "release": (cmd_release, "give a claimed item back (pending again)", _args_release),
    "done": (cmd_done, "close a claimed item", _args_done),
    "reply": (cmd_reply, "reply on an item's thread (@name mentions notify)", _args_reply),
    "ack": (cmd_ack, "acknowledge an item", _args_id),
    "inbox": (cmd_inbox, "what was said to you or about your items since you looked", _args_inbox),
    "agents": (cmd_agents, "who is active and what each holds", _args_none),
    "log": (cmd_log, "the event log", _args_log),
    "reserve": (
        files.cmd_reserve,
        "reserve paths or patterns (exit 3 if someone holds them)",
        lambda p: files.add_arguments("reserve", p),
    ),
    "unreserve": (
        files.cmd_unreserve,
        "free your reservations",
        lambda p: files.add_arguments("unreserve", p),
    ),
    "reservations": (
        files.cmd_reservations,
        "who holds which files, until when",
        lambda p: files.add_arguments("reservations", p),
    ),
    "who": (
        files.cmd_who,
        "who holds a path, and may you edit it",
        lambda p: files.add_arguments("who", p),
    ),
    "guard": (
        files.cmd_guard,
        "may I edit these paths? exit 0, or 2 with the reasons "
        "(reads the board directly; for hooks)",
        lambda p: files.add_arguments("guard", p),
    ),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one with just that command: agents call the CLI many
    times a minute, and building all twenty subparsers costs more than the claim itself."""
    common = argparse.ArgumentParser(add_help=False)
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
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    from coord import __version__

    parser.add_argument("--version", action="version", version=f"coord {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (func, help_text, configure) in COMMANDS.items():
        if only is not None and name != only:
            continue
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
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


def _item_id(text: str) -> int:
    value = text.lstrip("#")
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an item id (a positive integer)")
    return int(value)


def _count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r}: count is 1 to 64")
    return int(text)


def _priority(text: str) -> int:
    if text not in ("0", "1", "2", "3", "4"):
        raise argparse.ArgumentTypeError(f"{text!r}: priority is 0 (highest) to 4")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _query(params: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return urlencode({k: v for k, v in params.items() if v not in (None, "", 0, False)})


def _open_text(path: str) -> Any:
    try:
        return open(path, encoding="utf-8")
    except OSError as err:
        raise InvalidInput(f"cannot read {path}: {err.strerror}") from None


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
        document, text = args.func(args, ctx)
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
    return EXIT_OK
