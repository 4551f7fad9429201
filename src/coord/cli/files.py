"""CLI commands for file reservations, and the guard that hooks call before every edit.

Paths are taken relative to the current directory (as a shell user means them) and sent to
the daemon in their canonical repository-relative form (``coord.client.paths``).
"""

from __future__ import annotations

from coord.cli import argtypes, render
from coord.client import flow
from coord.errors import InvalidInput
from coord.fast import identity
from coord.times import clock_of_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from coord.cli.context import Context, Result


def cmd_reserve(args: argparse.Namespace, ctx: Context) -> Result:
    made = flow.reserve(
        ctx.session,
        ctx.agent(),
        args.patterns,
        shared=args.shared,
        lease=args.lease,
        item=None if args.item is None else flow.item_id(ctx.session, args.item),
        reason=args.reason,
    )
    held = made["reservations"]
    mode = "shared" if args.shared else "exclusive"
    until = clock_of_iso(held[0]["expires_at"] if held else None)
    return made, f"reserved ({mode}, until {until}): " + ", ".join(r["pattern"] for r in held)


def cmd_unreserve(args: argparse.Namespace, ctx: Context) -> Result:
    if not args.patterns and not args.all:
        raise InvalidInput("name the patterns to free, or --all")
    result = flow.unreserve(ctx.session, ctx.agent(), args.patterns, everything=args.all)
    freed = result["freed"]
    return result, ("freed: " + ", ".join(freed)) if freed else "you held nothing to free"


def cmd_reservations(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.session.get("/v1/reservations", {"agent": ctx.agent() if args.mine else None})
    return result, render.reservations_table(result["reservations"])


def cmd_who(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent(required=False)
    path, result = flow.who(ctx.session, agent, args.path)
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

    return run_guard(
        list(args.paths),
        getattr(args, "agent", None) or identity.of_command(),
        staged=args.staged,
        fail_open=args.fail_open,
        as_json=bool(getattr(args, "json", False)),
    )


# --- each command's options ------------------------------------------------------------------


def args_reserve(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "patterns",
        nargs="+",
        metavar="PATTERN",
        help="paths or gitignore-style patterns: a path is one file (existing or to be "
        "created) unless it is a directory or written dir/; a glob covers what it matches "
        "(src/auth/, *.sql). a.py and b.py held by two agents do not overlap",
    )
    p.add_argument(
        "--shared",
        action="store_true",
        help="shared: others may share it, nobody may take it exclusively",
    )
    p.add_argument("--lease", type=argtypes.seconds, metavar="SECONDS", help="lease length")
    p.add_argument(
        "--item",
        type=argtypes.item_ref,
        metavar="ID",
        help="the item this is for, an id or a package id (freed when its claim ends)",
    )
    p.add_argument("--reason", default="", help="why, for the others")


def args_unreserve(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "patterns", nargs="*", metavar="PATTERN", help="the patterns to free, as reserved"
    )
    p.add_argument("--all", action="store_true", help="free all of your reservations")


def args_reservations(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mine", action="store_true", help="only yours")


def args_who(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a path in the repository (any spelling: relative, absolute)")


def args_guard(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="the paths you mean to edit")
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
