"""Reservation lines of a design document become board state when it is imported.

A package's ``**Reserved:**`` line becomes a claim for its user; a track's ownership marker an
exclusive hold on the track's files. Both take the longest lease. A line that cannot be
adopted (the package waits on another, someone else holds the files) is reported with its
reason, and the rest are adopted all the same.
"""

from __future__ import annotations

from typing import Any

from coord import model
from coord.core import reservations, rules, worktree_holds
from coord.core.claims import Claims
from coord.core.context import BoardContext
from coord.errors import Conflict, InvalidInput
from coord.storage.base import WriteTx
from coord.times import iso

ADOPT_FIELDS = {"package", "track", "user", "line", "files"}


def check_adoptions(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
        raise InvalidInput("adopt must be a list of reservation lines", field="adopt")
    for entry in value:
        unknown = sorted(set(entry) - ADOPT_FIELDS)
        if unknown or not isinstance(entry.get("user"), str):
            raise InvalidInput(
                "each adopted reservation needs user and package (or track and files)",
                field="adopt",
            )
        model.check_agent(entry["user"])
    return value


def adopt(
    tx: WriteTx,
    ctx: BoardContext,
    claims: Claims,
    spec: str,
    adoptions: list[dict[str, Any]],
    prefix: str,
    now: float,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(what was adopted, what was not and why), in the import's write transaction."""
    adopted: list[dict[str, Any]] = []
    not_adopted: list[dict[str, Any]] = []
    lease = model.MAX_LEASE_SECONDS
    for entry in adoptions:
        user, line = entry["user"], entry.get("line")
        try:
            if entry.get("package"):
                key = prefix + model.check_key(entry["package"])
                item = rules.require_item(tx, key)
                rules.ensure_claimable(item, now, user)
                live = worktree_holds.live_holds(tx, now, near=item.files) if item.files else []
                claim = claims.take(tx, item, user, lease, now, live, by_agent=False)
                adopted.append({"package": entry["package"], "user": user, "token": claim.token})
            else:
                where = f"{spec}:{line}" if line else spec
                files = _hold_track(tx, ctx, entry, user, where, now, now + lease)
                adopted.append(
                    {
                        "track": entry.get("track"),
                        "user": user,
                        "files": list(files),
                        "until": iso(now + lease),
                    }
                )
        except (Conflict, InvalidInput) as err:  # not adopted: say why, adopt the rest
            not_adopted.append(
                {
                    "package": entry.get("package"),
                    "track": entry.get("track"),
                    "user": user,
                    "line": line,
                    "reason": err.message,
                }
            )
    return adopted, not_adopted


def _hold_track(
    tx: WriteTx,
    ctx: BoardContext,
    entry: dict[str, Any],
    user: str,
    where: str,
    now: float,
    until: float,
) -> tuple[str, ...]:
    """An exclusive hold of the track's files for ``user``, or the refusal naming holders."""
    track = entry.get("track")
    files = reservations.canonical(model.check_files(entry.get("files")), ctx.repo_root)
    if not files:
        raise InvalidInput(f"track {track} names no files to hold")
    live = worktree_holds.live_holds(tx, now, near=files)
    conflicts = reservations.find_conflicts(user, files, True, live, ctx.is_file)
    if conflicts:
        raise reservations.refusal(conflicts, f"track {track}")
    for pattern in files:
        tx.insert_reservation(
            agent=user,
            pattern=pattern,
            exclusive=True,
            item_id=None,
            reason=f"track {track} reserved in {where}",
            now=now,
            expires_at=until,
        )
    return files
