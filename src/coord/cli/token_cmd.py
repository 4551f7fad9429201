"""`coord token create|list|revoke`: people's and machines' tokens (issue 27).

Only the board's owner (who holds .coord/token) may run these: the daemon refuses a person's
token here. A person presents theirs with ``COORD_TOKEN_FILE`` (a file only they may read),
never on a command line, where other users' `ps` would show it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coord.cli.context import Context, Result


def args_token(p: argparse.ArgumentParser) -> None:
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = verbs.add_parser(
        "create",
        help="issue a token that acts as one name; printed once, the board keeps its hash",
    )
    create.add_argument(
        "--for",
        dest="name",
        required=True,
        metavar="NAME",
        help="the person or machine it acts as (its agent name)",
    )
    create.add_argument(
        "--machine", action="store_true", help="a machine's token (CI, a bot), not a person's"
    )
    verbs.add_parser("list", help="the tokens issued: name, kind, created, last used, revoked")
    revoke = verbs.add_parser("revoke", help="revoke a token by its id, or every one of a name")
    revoke.add_argument("which", metavar="NAME|ID", help="a token's id, or a name")


def cmd_token(args: argparse.Namespace, ctx: Context) -> Result:
    session = ctx.session
    if args.verb == "create":
        made = session.post("/v1/tokens", {"name": args.name, "machine": args.machine})
        text = (
            f"token {made['id']} for {made['name']} ({made['kind']}); shown this once, keep it "
            f"in a file only they can read and point COORD_TOKEN_FILE at it:\n{made['secret']}"
        )
        return made, text
    if args.verb == "list":
        listed = session.get("/v1/tokens")
        return listed, _table(listed["tokens"])
    which: Any = int(args.which) if args.which.isdigit() else args.which
    revoked = session.post("/v1/tokens:revoke", {"which": which})
    return revoked, "\n".join(f"revoked token {t['id']} ({t['name']})" for t in revoked["tokens"])


def _table(tokens: list[dict[str, Any]]) -> str:
    if not tokens:
        return "no tokens issued (`coord token create --for NAME`)"
    lines = [f"{'ID':>4}  {'NAME':<20} {'KIND':<8} {'CREATED':<21} {'LAST USED':<21} REVOKED"]
    for t in tokens:
        lines.append(
            f"{t['id']:>4}  {t['name']:<20} {t['kind']:<8} {t['created_at']:<21} "
            f"{t['last_used_at'] or '-':<21} {t['revoked_at'] or '-'}"
        )
    return "\n".join(lines)
