"""`coord land`: run the landing queue in the foreground.

Lands every queued worktree item on main in submit order (``coord.landing.runner``), under
the board's landing lease, and prints what became of each: merged (its commit), sent back
for rework (why, which files), or waiting (the checkout of main has local changes in the
way: which files). ``--watch`` keeps landing as items are queued (woken by each submit),
until interrupted; it removes merged items' worktrees in the background and prints a line
for each once done.

The daemon of a board in a git repository lands the queue itself (``land_in_daemon``); this
command runs beside it in turn: while the daemon's runner holds the landing lease it waits,
saying so once on stderr, then lands whatever is still queued.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coord.cli.context import Context, Result

EXIT_SENT_BACK = 1  # some item was sent back for rework, or must wait
WATCH_SECONDS = 2.0  # a watching runner reads the queue this often even when nothing woke it
SWEEP_SECONDS = 30.0  # how often it looks for items merged by hand (git work per item)


def args_land(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep landing as items are queued (at once on a submit), until interrupted",
    )
    p.add_argument(
        "--lease",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the landing lease's length, renewed while this runner lands; another runner "
        "may take the queue over this long after this one dies",
    )
    p.add_argument(
        "--check-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="how long one check may run on the candidate tree",
    )


def cmd_land(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.landing import runner

    landing = runner.Runner.for_board(
        ctx.session,
        ctx.board_dir,
        ctx.agent(required=False) or "landing",
        check_timeout=args.check_timeout,
        lease_seconds=args.lease,
        on_wait=lambda held: print(f"coord land: {held}", file=sys.stderr, flush=True),
    )
    if args.watch:
        landing.watch(
            WATCH_SECONDS,
            SWEEP_SECONDS,
            lambda landed: print("\n".join(_lines([landed.to_dict()])), flush=True),
            # merged items are tidied in the background: what became of each, once it has
            lambda landed: (
                print(f"item {landed.ref}: {landed.cleaned}", flush=True)
                if landed.cleaned
                else None
            ),
        )
    results = landing.land_all()
    shown = [r.to_dict() for r in results]
    code = 0 if all(r["outcome"] == "merged" for r in shown) else EXIT_SENT_BACK
    text = "\n".join(_lines(shown)) or "the landing queue is empty"
    return {"landed": shown}, text, code


def _lines(results: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in results:
        what = {
            "merged": f"merged as {str(r.get('commit', ''))[:12]}",
            "needs_rework": "sent back for rework",
            "waiting": "waiting",
            "skipped": "skipped",
            "stopped": "stopped, still queued",
        }.get(r["outcome"], r["outcome"])
        line = f"item {r['ref']}: {what}"
        if r.get("reason"):
            line += f": {r['reason']}"
        if r.get("files"):
            line += f" ({', '.join(r['files'])})"
        if r.get("cleaned"):
            line += f"; {r['cleaned']}"
        out.append(line)
    return out
