"""CLI commands for file reservations, and the guard that hooks call before every edit.

Paths are taken relative to the current directory (as a shell user means them) and sent
to the daemon in their canonical repository-relative form.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from coord import patterns
from coord.cli import render
from coord.errors import CoordError, InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from coord.cli.main import Context, Result

EXIT_REFUSED = 2  # the guard's "do not edit": what the agents' hook protocols understand


def repo_relative(ctx: Context, given: list[str]) -> list[str]:
    root = ctx.board_dir.parent
    return [patterns.normalize(p, root, cwd=os.getcwd()) for p in given]


def cmd_reserve(args: argparse.Namespace, ctx: Context) -> Result:
    made = ctx.client.post(
        "/v1/reservations",
        {
            "agent": ctx.agent(),
            "patterns": repo_relative(ctx, args.patterns),
            "shared": args.shared,
            "lease_seconds": args.lease,
            "item": args.item,
            "reason": args.reason,
        },
    )
    held = made["reservations"]
    mode = "shared" if args.shared else "exclusive"
    until = held[0]["expires_at"] if held else "-"
    return made, f"reserved ({mode}, until {until}): " + ", ".join(r["pattern"] for r in held)


def cmd_unreserve(args: argparse.Namespace, ctx: Context) -> Result:
    if not args.patterns and not args.all:
        raise InvalidInput("name the patterns to free, or --all")
    result = ctx.client.post(
        "/v1/reservations:release",
        {"agent": ctx.agent(), "patterns": repo_relative(ctx, args.patterns), "all": args.all},
    )
    freed = result["freed"]
    return result, ("freed: " + ", ".join(freed)) if freed else "you held nothing to free"


def cmd_reservations(args: argparse.Namespace, ctx: Context) -> Result:
    query = f"?agent={ctx.agent()}" if args.mine else ""
    result = ctx.client.get("/v1/reservations" + query)
    return result, render.reservations_table(result["reservations"])


def cmd_who(args: argparse.Namespace, ctx: Context) -> Result:
    from urllib.parse import urlencode

    agent = ctx.agent(required=False)
    path = patterns.normalize(args.path, ctx.board_dir.parent, cwd=os.getcwd(), literal=True)
    result = ctx.client.get("/v1/who?" + urlencode({"path": path, "agent": agent}))
    if not result["holders"]:
        text = f"{path}: nobody holds it; you may edit it"
    else:
        text = render.reservations_table(result["holders"]) + (
            f"\n{agent} may edit {path}" if result["may_edit"] else f"\n{agent} may NOT edit {path}"
        )
    return result, text


def cmd_guard(args: argparse.Namespace, ctx: Context) -> Result:
    """May this agent edit these paths? Exit 0, or 2 with one line per refusal on stderr.

    Reads the board file directly (read-only): no daemon, fast, and when it cannot tell it
    refuses (fail closed) unless --fail-open was given.
    """
    from coord import guard

    as_json = bool(getattr(args, "json", False))
    # No name: a person at the keyboard, whom every agent's exclusive reservation binds.
    agent = getattr(args, "agent", None) or os.environ.get("COORD_AGENT") or None
    refusals: list[dict[str, Any]] = []
    lines: list[str] = []
    try:
        board_dir = ctx.board_dir
        given = _staged_paths(board_dir) if args.staged else list(args.paths)
        if not given and not args.staged:
            raise InvalidInput("name the paths to check, or --staged")
        live = guard.read_live(board_dir / "board.db")
    except (CoordError, guard.BoardUnreadable) as err:
        reason = getattr(err, "message", None) or str(err)
        if args.fail_open:
            print(f"coord guard: cannot check ({reason}); allowed by --fail-open", file=sys.stderr)
            return _verdict(as_json, [], reason)
        print(
            f"coord guard: cannot check the board ({reason}); refusing the edit. "
            "Fix the board or run `coord init`.",
            file=sys.stderr,
        )
        _exit_refused(as_json, [{"path": None, "reason": reason}])
    root = board_dir.parent
    for raw in given:
        try:
            path = patterns.normalize(raw, root, cwd=os.getcwd(), literal=True)
        except InvalidInput as err:
            refusals.append({"path": raw, "reason": err.message})
            lines.append(f"coord guard: {raw}: {err.message}")
            continue
        blocking = guard.blockers(path, live, agent)
        for r in blocking:
            refusals.append(
                {
                    "path": path,
                    "holder": r.agent,
                    "pattern": r.pattern,
                    "item": r.item_id,
                    "expires_at": r.expires_at,
                }
            )
        lines += guard.refusal_lines(path, blocking)
    if refusals:
        print("\n".join(lines), file=sys.stderr)
        _exit_refused(as_json, refusals)
    return _verdict(as_json, [], None)


def _verdict(as_json: bool, refusals: list[dict[str, Any]], note: str | None) -> Result:
    return {"may_edit": not refusals, "refusals": refusals, "note": note}, ""


def _exit_refused(as_json: bool, refusals: list[dict[str, Any]]) -> None:
    if as_json:
        print(json.dumps({"may_edit": False, "refusals": refusals}))
    raise SystemExit(EXIT_REFUSED)


def _staged_paths(board_dir: Path) -> list[str]:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "diff", "--cached", "--name-only", "-z", "--no-renames"],
            cwd=board_dir.parent,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise InvalidInput(f"cannot list the staged paths with git: {err}") from None
    root = str(board_dir.parent)
    return [os.path.join(root, p) for p in out.decode().split("\0") if p]


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    from coord.cli.main import _item_id, _seconds

    if name == "reserve":
        p.add_argument(
            "patterns",
            nargs="+",
            metavar="PATTERN",
            help="paths or gitignore-style patterns (src/auth/**, *.sql)",
        )
        p.add_argument(
            "--shared",
            action="store_true",
            help="shared: others may share it, nobody may take it exclusively",
        )
        p.add_argument("--lease", type=_seconds, metavar="SECONDS", help="lease length")
        p.add_argument(
            "--item",
            type=_item_id,
            metavar="ID",
            help="the item this is for (freed when its claim ends)",
        )
        p.add_argument("--reason", default="", help="why, for the others")
    elif name == "unreserve":
        p.add_argument("patterns", nargs="*", metavar="PATTERN")
        p.add_argument("--all", action="store_true", help="free all of your reservations")
    elif name == "reservations":
        p.add_argument("--mine", action="store_true", help="only yours")
    elif name == "who":
        p.add_argument("path")
    elif name == "guard":
        p.add_argument("paths", nargs="*", metavar="PATH")
        p.add_argument(
            "--staged",
            action="store_true",
            help="check the paths staged in git (for a pre-commit hook)",
        )
        p.add_argument(
            "--fail-open",
            action="store_true",
            help="allow the edit when the board cannot be read (default: refuse)",
        )
