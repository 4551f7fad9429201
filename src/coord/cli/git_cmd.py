"""`coord git reserve|release|done|status|reap`: the design-document protocol with no daemon.

The commands are ``coord.gitmode.protocol``, on the remote's branch as the lock
(``coord.gitmode.remote``); settings live in git config (``coord.gitmode.settings``). Nothing
here touches the working tree, the index, ``HEAD`` or a local branch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from coord.errors import InvalidInput
from coord.times import DURATION_EXAMPLES, parse_duration

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coord.cli.main import Context, Result

NEEDS_ID = ("reserve", "release", "done")


def args_git(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["reserve", "release", "done", "status", "reap"],
        help="reserve: claim a package on the remote's main (exit 3 if another won); "
        "release: remove your reservation; done: run its checks, then tick it; "
        "status: what is claimable, who holds what since when; reap: remove old reservations",
    )
    p.add_argument("id", nargs="?", help="the package id (reserve, release, done)")
    p.add_argument(
        "--doc", metavar="PATH", help="the design document (default: git config coord.doc)"
    )
    p.add_argument("--remote", help="the remote (default: git config coord.remote, else origin)")
    p.add_argument("--branch", help="its branch (default: git config coord.branch, else main)")
    p.add_argument(
        "--older-than",
        default="14d",
        metavar="AGE",
        help="reap: reservations older than this (7d, 36h, 90m; default 14d)",
    )
    p.add_argument("--dry-run", action="store_true", help="reap: show what would go")
    p.add_argument(
        "--skip-checks",
        action="store_true",
        help="done: tick without running the checks (needs --reason; it goes in the commit)",
    )
    p.add_argument("--reason", help="done: why the checks are skipped")
    p.add_argument(
        "--check-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="done: give up on a check after this long (default 1800)",
    )
    p.add_argument(
        "--no-fetch",
        action="store_true",
        help="status: read the remote branch as last fetched, without the network",
    )


def cmd_git(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.gitmode import protocol, remote, settings

    if args.action in NEEDS_ID and not args.id:
        raise InvalidInput(
            f"coord git {args.action} needs a package id: coord git {args.action} ID"
        )
    if args.action not in NEEDS_ID and args.id:
        raise InvalidInput(f"coord git {args.action} takes no package id (got {args.id!r})")
    git = settings.repository(Path.cwd())
    config = settings.load(
        git,
        doc=args.doc,
        remote=args.remote,
        branch=args.branch,
        user=getattr(args, "agent", None),
    )
    session = remote.Session(git, config)
    if args.action == "status":
        document = protocol.status(session, fetch=not args.no_fetch)
        return document, _status_text(document)
    if args.action == "reap":
        result = protocol.reap(session, parse_age(args.older_than), dry_run=args.dry_run)
        return result, _reap_text(result)
    user = settings.require_user(config)
    if args.action == "reserve":
        result = protocol.reserve(session, args.id, user)
    elif args.action == "release":
        result = protocol.release(session, args.id, user)
    else:
        skip = None
        if args.skip_checks:
            if not args.reason or not args.reason.strip():
                raise InvalidInput("--skip-checks needs --reason TEXT (it goes in the commit)")
            skip = args.reason.strip()
        from coord.cli.check_progress import CheckProgress

        result = protocol.done(
            session,
            args.id,
            user,
            skip_reason=skip,
            check_timeout=args.check_timeout,
            watch=CheckProgress(),
        )
    return result, _write_text(result)


def parse_age(text: str) -> float:
    value = parse_duration(text)
    if value is None:
        raise InvalidInput(f"--older-than {text!r}: write a duration such as {DURATION_EXAMPLES}")
    return value


def _write_text(result: dict[str, Any]) -> str:
    where = f"{result['remote']}/{result['branch']}"
    package, action = result["package"], result["action"]
    if not result["changed"]:
        already = {
            "reserve": f"{package} is already reserved by you (@{result['user']}) on {where}",
            "release": f"{package} is not reserved on {where}: nothing to release",
        }
        lines = [already.get(action, "nothing to do")]
    else:
        commit = str(result["commit"])[:12]
        done = {
            "reserve": f"reserved {package} for @{result['user']}: {commit} is on {where}",
            "release": f"released {package}: {commit} is on {where}",
            "done": f"{package} is done: {commit} on {where} ticks it",
        }
        lines = [done[action]]
        if action == "reserve":
            lines.append(f"start from it: git switch -c work/{package} {where}")
    lines += [f"note: {note}" for note in result.get("notes", [])]
    return "\n".join(lines)


def _status_text(document: dict[str, Any]) -> str:
    where = f"{document['remote']}/{document['branch']}"
    lines = [f"{document['spec']} on {where} ({str(document['tip'])[:12]}):"]
    lines.append(f"  claimable now: {' '.join(document['claimable']) or 'nothing'}")
    if not document["reservations"]:
        lines.append("  no reservations")
    for r in document["reservations"]:
        what = r["package"] or f"track {r['track']}"
        age = f"{r['age']} ago" if r["age"] else "age unknown"
        lines.append(f"  {what:<8} @{r['user']:<16} since {age}  ({r['file']}:{r['line']})")
    return "\n".join(lines)


def _reap_text(result: dict[str, Any]) -> str:
    reaped = result.get("reaped", [])
    if not reaped:
        lines = ["no reservation is that old: nothing to reap"]
    elif result["dry_run"]:
        lines = ["would reap:"]
    else:
        lines = [
            f"reaped in {str(result['commit'])[:12]} on {result['remote']}/{result['branch']}:"
        ]
    lines += [f"  {r['package']} by @{r['user']}, {r['age']} old" for r in reaped]
    for marker in result.get("track_markers", []):
        lines.append(
            f"  (track {marker['track']} marker by @{marker['user']}, {marker['age']} old: "
            "not removed; edit it by hand)"
        )
    return "\n".join(lines)
