"""CLI commands for file reservations, and the guard that hooks call before every edit.

Paths are taken relative to the current directory (as a shell user means them) and sent
to the daemon in their canonical repository-relative form.
"""

from __future__ import annotations

import argparse
import os

from coord.cli import argtypes, render
from coord.errors import InvalidInput
from coord.fast import patterns, worktree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.cli.main import Context, Result


def repo_relative(ctx: Context, given: list[str], *, literal: bool = False) -> list[str]:
    """Paths as the board names them: relative to the repository root (or, in a linked
    worktree, to that worktree's root: the same repository path)."""
    cwd = os.getcwd()
    root = worktree.root_for(cwd, str(ctx.board_dir.parent))
    return [patterns.normalize(p, root, cwd=cwd, literal=literal) for p in given]


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
    path = repo_relative(ctx, [args.path], literal=True)[0]
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

    ``coord guard`` normally takes the fast path in ``coord.cli.entry``, which skips argparse;
    this is the same decision for ``--help`` and unusual spellings.
    """
    from coord.cli.guard_cmd import run_guard

    agent = getattr(args, "agent", None) or os.environ.get("COORD_AGENT") or None
    return run_guard(
        list(args.paths),
        agent,
        staged=args.staged,
        fail_open=args.fail_open,
        as_json=bool(getattr(args, "json", False)),
    )


def args_reserve(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--lease", type=argtypes.seconds, metavar="SECONDS", help="lease length")
    p.add_argument(
        "--item",
        type=argtypes.item_id,
        metavar="ID",
        help="the item this is for (freed when its claim ends)",
    )
    p.add_argument("--reason", default="", help="why, for the others")


def args_unreserve(p: argparse.ArgumentParser) -> None:
    p.add_argument("patterns", nargs="*", metavar="PATTERN")
    p.add_argument("--all", action="store_true", help="free all of your reservations")


def args_reservations(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mine", action="store_true", help="only yours")


def args_who(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")


def args_guard(p: argparse.ArgumentParser) -> None:
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
