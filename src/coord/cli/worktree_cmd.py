"""The command line of a worktree item's way to main (issue 24): `coord start`, `coord queue`,
`coord abandon`, `coord worktree list|gc`; `coord done` of a worktree item is a submit
(``coord.cli.commands.cmd_done`` renders it with ``submitted_text``).

Each command is one call of ``coord.landing.flow`` (or one request), rendered: what a
start, a submit or a worktree's fate means is written there once, for the MCP tools too.
Imported only when one of these commands runs: git is not on ``coord next``'s path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coord.cli import argtypes, render
from coord.landing import flow as worktree_flow
from coord.limits import KINDS
from coord.times import clock_of_iso

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from coord.cli.context import Context, Result


# --- options ---------------------------------------------------------------------------------


def args_start(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "id",
        nargs="?",
        type=argtypes.item_ref,
        help="an item id or package id (default: the best ready item)",
    )
    p.add_argument("--kind", choices=KINDS, help="with no ID: only this kind")
    p.add_argument("--label", help="with no ID: only items with this label")
    p.add_argument("--lease", type=argtypes.seconds, metavar="SECONDS", help="lease length")
    p.add_argument(
        "--resume",
        metavar="REF",
        help="go on from this snapshot of the item's earlier work (refs/coord/snapshots/…, "
        "as start lists them): its commits and uncommitted changes, restored in the worktree",
    )


def args_queue(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--limit", type=argtypes.page_size(1000), default=100, help="at most this many (1-1000)"
    )


def args_abandon(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", type=argtypes.item_ref, help="an item id, or a package id such as R3")
    p.add_argument("--reason", required=True, help="why it is taken off its way to main (recorded)")


def args_worktree(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["list", "gc"],
        help="list: each coord worktree with its item, branch, owner (alive or dead), clean or "
        "not, merged or not, and what gc would do; gc: remove those of merged, abandoned or "
        "released items, never one holding work neither on main nor in a snapshot",
    )
    p.add_argument("--dry-run", action="store_true", help="gc: only say what would be removed")


# --- commands --------------------------------------------------------------------------------


def cmd_start(args: argparse.Namespace, ctx: Context) -> Result:
    won = worktree_flow.start(
        ctx.session,
        ctx.agent(),
        args.id,
        kind=args.kind,
        label=args.label,
        lease=args.lease,
        resume=args.resume,
    )
    made = won["worktree"]
    lines = [render.claim_line(won), f"work in {made['path']} (branch {made['branch']})"]
    if made.get("reused"):
        lines.append(f"your earlier branch {made['reused']} was kept, renamed: its commits are in")
    if made.get("moved_from"):
        kept = f" (kept first in {made['kept_in']})" if made.get("kept_in") else ""
        lines.append(
            f"the earlier claim's worktree {made['moved_from']} was moved here with its "
            f"uncommitted work{kept}: go on from it"
        )
    if made.get("resumed"):
        lines.append(f"resumed from {made['resumed']}: its changes are back, uncommitted")
    for kept in made.get("snapshots") or []:
        lines.append(
            f"earlier work of this item is kept in {kept['ref']} ({kept['at']}): to go on "
            f"from it, `coord release {_ref(won['item'])}` and `coord start "
            f"{_ref(won['item'])} --resume {kept['ref']}`"
        )
    if not made.get("contains_base", True):
        lines.append(
            f"it starts from an older main: `git rebase {made['base_commit'][:12]}` there "
            "(main's tip now) before done"
        )
    if made.get("not_copied"):
        lines.append(
            "not copied from .worktreeinclude: "
            + ", ".join(f"{k} ({v})" for k, v in made["not_copied"].items())
        )
    setup = made.get("setup")
    if setup is not None and setup.get("exit_code") != 0:
        lines.append(
            f"the setup command failed (exit {setup.get('exit_code')}); fix it in the worktree: "
            + render.one_line(str(setup.get("output_tail", ""))[-300:])
        )
    lines.append(f"when finished: commit there, then `coord done {_ref(won['item'])}` submits it")
    return won, "\n".join(lines)


def submitted_text(item: dict[str, Any]) -> str:
    """What `coord done` says of a worktree item it submitted."""
    held = ", ".join(item.get("files") or [])
    files = f"; its files stay held until it is merged or abandoned: {held}" if held else ""
    head = (item.get("submitted_head") or "")[:12]
    return (
        f"submitted {_ref(item)}: {render.one_line(item['title'])} is queued to land "
        f"({item['branch']} at {head}); it is done once merged on main{files}"
    )


def cmd_queue(args: argparse.Namespace, ctx: Context) -> Result:
    answer = ctx.session.get("/v1/queue", {"limit": args.limit})
    items = answer["items"]
    if not items:
        return answer, "the landing queue is empty"
    rows = [("#", "ITEM", "BRANCH", "HEAD", "SINCE", "BY", "TITLE")]
    for place, item in enumerate(items, 1):
        rows.append(
            (
                str(place),
                str(item["id"]) + (f" {item['key']}" if item.get("key") else ""),
                item.get("branch") or "",
                (item.get("submitted_head") or "")[:12],
                clock_of_iso(item.get("submitted_at")) if item.get("submitted_at") else "",
                item.get("claimed_by") or "",
                render.one_line(item["title"]),
            )
        )
    return answer, _table(rows)


def cmd_abandon(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.session.post(
        f"/v1/items/{args.id}/abandon", {"agent": ctx.agent(), "reason": args.reason}
    )
    return item, (
        f"abandoned {_ref(item)}: pending again, its files freed; its branch and worktree are "
        "kept (`coord worktree gc` removes them if nothing would be lost)"
    )


def cmd_worktree(args: argparse.Namespace, ctx: Context) -> Result:
    if args.action == "list":
        found = worktree_flow.worktrees_judged(ctx.session)
        return {"worktrees": found}, _worktrees_text(found)
    dry = bool(args.dry_run)
    found = worktree_flow.gc(ctx.session, dry_run=dry)
    lines = []
    for wt in found:
        if wt["removed"]:
            verb = "removed"
        elif wt["removable"] and dry:
            verb = "would remove"
        else:
            verb = "kept"
        lines.append(f"{verb} {wt['path']} ({wt['branch']}): {wt['reason']}")
    return {"worktrees": found, "dry_run": dry}, "\n".join(lines) or "no coord worktrees"


def _worktrees_text(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no coord worktrees"
    rows = [("ITEM", "BRANCH", "OWNER", "CLEAN", "MERGED", "STATE", "PATH")]
    for wt in found:
        alive = {True: "alive", False: "dead", None: "elsewhere"}[wt["alive"]]
        clean = "clean" if wt["clean"] else f"{wt['changed']}+{wt['untracked']} changes"
        if wt["state"] == "merged" or wt["merged"]:
            merged = f"yes ({wt['merged']})" if wt["merged"] else "yes"
        else:
            merged = f"no ({wt['ahead']} ahead)" if wt["ahead"] else "nothing to land"
        rows.append(
            (
                str(wt["item"]),
                wt["branch"] or "(detached)",
                f"{wt['pid']} {alive}",
                clean if wt["exists"] else "gone",
                merged,
                wt["state"] or "(no item)",
                wt["path"],
            )
        )
    return _table(rows) + "\n" + "\n".join(f"{r['item']}: {r['reason']}" for r in found)


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    )


def _ref(item: dict[str, Any]) -> str:
    return str(item.get("key") or item["id"])
