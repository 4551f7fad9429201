"""The rules the core applies inside its transactions: pure checks, no I/O of their own.

Each raises the ``CoordError`` a face shows to the user, with the facts (holder, expiry,
blocking dependencies) that let an agent decide what to do next.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from coord import model
from coord.errors import (
    AlreadyClaimed,
    InvalidInput,
    LeaseLost,
    NotClaimable,
    NotFound,
    NothingReady,
    NotReady,
    TooLarge,
)
from coord.model import Item
from coord.spec import graph
from coord.storage.base import ReadTx
from coord.times import iso

IMPORT_FIELDS = {
    "title",
    "kind",
    "priority",
    "labels",
    "deps",
    "body",
    "to",
    "ref",
    "files",
    "key",
    "checks",
}


def require_item(tx: ReadTx, ref: int | str) -> Item:
    """The item with this id, or imported as this package key."""
    item = tx.get_item_by_key(ref) if isinstance(ref, str) else tx.get_item(ref)
    if item is None:
        what = f"package {ref}" if isinstance(ref, str) else f"item {ref}"
        raise NotFound(f"no {what} on this board; `coord ls` lists them", id=ref)
    return item


def ensure_claimable(item: Item, now: float, agent: str | None = None) -> None:
    """Refuse a claim of ``item`` by ``agent`` now, with what to do instead.

    ``agent``: the claimer; a package its document reserves for someone else is refused
    (``None`` skips that check, for callers that ask about the item alone)."""
    if item.state in ("done", "cancelled"):
        raise NotClaimable(
            f"item {item.ref} is {item.state}; pick another (`coord next`)",
            id=item.id,
            state=item.state,
        )
    if item.question is not None and item.lease_live(now):
        raise AlreadyClaimed(
            f"item {item.ref} is held by {item.claimed_by}, who is waiting for a human answer "
            f"(needs_human) until {iso(item.lease_expires_at)}; pick another (`coord next`)",
            id=item.id,
            holder=item.claimed_by,
            lease_expires_at=iso(item.lease_expires_at),
        )
    if item.lease_live(now):
        raise AlreadyClaimed(
            f"item {item.ref} is claimed by {item.claimed_by} until "
            f"{iso(item.lease_expires_at)}; pick another (`coord next`)",
            id=item.id,
            holder=item.claimed_by,
            lease_expires_at=iso(item.lease_expires_at),
        )
    if item.state == "queued":  # submitted: never handed to a second agent while it waits
        raise AlreadyClaimed(
            f"item {item.ref} is queued to land (submitted by {item.claimed_by} at "
            f"{iso(item.submitted_at)}); pick another (`coord next`)",
            id=item.id,
            holder=item.claimed_by,
            lease_expires_at=None,
            reason="queued",
        )
    kept = item.kept_for(now)
    if kept is not None and agent is not None and agent != kept[0]:
        raise AlreadyClaimed(
            _kept_text(item, *kept),
            id=item.id,
            holder=kept[0],
            lease_expires_at=iso(item.rework_until) if kept[1] == "first_refusal" else None,
            reason=kept[1],
        )
    if item.blocked_by:
        raise NotReady(
            f"item {item.ref} waits on {ids_text(item.blocked_by)}, not done yet; pick another",
            id=item.id,
            blocked_by=list(item.blocked_by),
        )


def _kept_text(item: Item, holder: str, why: str) -> str:
    if why == "reserved":  # as ``coord git reserve`` says it of the same line (gitmode.protocol)
        return (
            f"package {item.ref} is reserved for {holder} in {item.spec}; pick another (`coord "
            "next`), or take the reservation line out of the document and import it again"
        )
    return (
        f"item {item.ref} came back from landing (needs_rework) and {holder}, its last holder, "
        f"may claim it first until {iso(item.rework_until)}; pick another (`coord next`)"
    )


def ensure_holder(item: Item, agent: str, token: int, now: float) -> None:
    """The zombie check: only the live claim's holder, with its current token, may write.

    The refusal names the current token only to the holder itself (a claim it made again):
    told to anyone else, it would open the claim to them (issue 27)."""
    someone_elses = item.state in ("claimed", "needs_human") and item.claimed_by != agent
    facts = {
        "id": item.id,
        "holder": item.claimed_by if item.state == "claimed" else None,
        "lease_expires_at": iso(item.lease_expires_at),
        "state": item.state,
        "current_token": None if someone_elses else item.fencing_token,
    }
    if item.state == "claimed" and item.claimed_by == agent and item.fencing_token == token:
        if item.lease_live(now):
            return
        raise LeaseLost(
            f"your lease on item {item.ref} expired at {iso(item.lease_expires_at)}; "
            f"claim it again to go on (`coord claim {item.ref}`)",
            **facts,
        )
    if item.state == "claimed" and item.fencing_token != token:
        raise LeaseLost(
            f"item {item.ref} is now held by {item.claimed_by}"
            + ("" if someone_elses else f" (token {item.fencing_token})")
            + f" until {iso(item.lease_expires_at)}; your token {token} is stale: stop work on it",
            **facts,
        )
    if item.state == "claimed":
        raise LeaseLost(f"item {item.ref} is held by {item.claimed_by}, not {agent}", **facts)
    again = {
        "pending": f" (claim it again: `coord claim {item.ref}`)",
        "queued": " (it was submitted and waits to land; abandon it to take it back)",
    }
    raise LeaseLost(
        f"item {item.ref} is {item.state}; claim {token} is no longer live"
        + again.get(item.state, ""),
        **facts,
    )


def ensure_open(item: Item) -> None:
    """A done or cancelled item no longer changes (a cancelled one may be reopened)."""
    if item.state in ("done", "cancelled"):
        again = " (reopen it first, saying why)" if item.state == "cancelled" else ""
        raise NotClaimable(
            f"item {item.ref} is {item.state}; it can no longer change{again}",
            id=item.id,
            state=item.state,
        )


def ensure_editable(item: Item, agent: str, token: Any, now: float) -> None:
    ensure_open(item)
    if item.state == "queued":  # what waits to land is what was submitted
        raise NotClaimable(
            f"item {item.ref} is queued to land and can no longer change; abandon it first "
            "(it goes back to pending) to change it",
            id=item.id,
            state=item.state,
        )
    if item.lease_live(now):
        if token is None:
            raise LeaseLost(
                f"item {item.ref} is claimed by {item.claimed_by}; only the holder can change "
                "it, with its token",
                id=item.id,
                holder=item.claimed_by,
                lease_expires_at=iso(item.lease_expires_at),
            )
        ensure_holder(item, agent, model.check_token(token), now)


def dependency_path(tx: ReadTx, start: int, goal: int) -> list[int] | None:
    """A dependency path start → … → goal, if one exists (the shortest: ``coord.spec.graph``,
    one level of the search per query)."""
    return graph.shortest_path(start, goal, tx.deps_of)


def claim_args(agent: Any, item_id: Any, token: Any) -> tuple[str, int | str, int]:
    return model.check_agent(agent), model.check_item_ref(item_id), model.check_token(token)


def refuse_unknown_fields(entry: dict[str, Any], known: set[str], where: str, index: int) -> None:
    """Typos must not pass silently: name the unknown fields and the known ones."""
    unknown = sorted(set(entry) - known)
    if unknown:
        raise InvalidInput(
            f"{where}: unknown field {', '.join(unknown)}; known fields are "
            f"{', '.join(sorted(known))}",
            index=index,
        )


def check_entry(entry: Any, index: int, count: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput(f"item {index}: expected an object with at least a title", index=index)
    refuse_unknown_fields(entry, IMPORT_FIELDS, f"item {index}", index)
    try:
        deps = entry.get("deps") or []
        if not isinstance(deps, list):
            raise InvalidInput("deps must be a list of item ids or refs", field="deps")
        if len(deps) > model.MAX_DEPS:
            # the limit an edit applies (model.check_deps), said the same way
            raise TooLarge(f"{len(deps)} dependencies; the limit is {model.MAX_DEPS}", field="deps")
        ref = entry.get("ref")
        if ref is not None and (not isinstance(ref, str) or not ref):
            raise InvalidInput("ref must be a non-empty string", field="ref")
        to = entry.get("to")
        return {
            "title": model.check_title(entry.get("title")),
            "kind": model.check_kind(entry.get("kind", "task")),
            "priority": model.check_priority(entry.get("priority", model.PRIORITY_DEFAULT)),
            "labels": model.check_labels(entry.get("labels")),
            "body": model.check_body(entry.get("body")),
            "to": model.check_agent(to) if to is not None else None,
            "ref": ref,
            "files": model.check_files(entry.get("files")),
            "key": model.check_key(entry["key"]) if entry.get("key") is not None else None,
            "checks": model.check_commands(entry.get("checks")),
            "deps": [
                d if isinstance(d, str) and not d.isdigit() else model.check_item_id(d)
                for d in deps
            ],
        }
    except InvalidInput as err:
        if count == 1:
            raise
        # the same failure (its own class and code), said of this entry of the batch
        raise type(err)(f"item {index}: {err.message}", **{"index": index, **err.details}) from err


def ids_text(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in ids)


# What holds open work back from a claim-next, as the refusal says it (each with its count)
HELD_BACK_WORDS = {
    "claimed": "claimed by others",
    "needs_human": "waiting on a human's answer",
    "landing": "submitted, waiting to land",
    "waiting_on_dependencies": "waiting on dependencies",
    "files_held": "needing files others hold",
    "reserved_in_document": "reserved for someone else in a design document",
    "first_refusal": "kept for their last holder after landing sent them back",
    "reserved_for_you": "reserved for you in a design document (claim it by id)",
    "yours": "already yours",
}


def held_back_text(held_back: dict[str, int]) -> str:
    said = [
        f"{n} {HELD_BACK_WORDS[why]}"
        for why, n in held_back.items()
        if n and why in HELD_BACK_WORDS
    ]
    return ", ".join(said)


# How many of the packages a design document holds back a refusal names (the count says all)
NAMED_RESERVED = 5


def reserved_text(reserved: Sequence[Item], agent: str, counted: dict[str, int]) -> str:
    """The packages a document holds back, named: "; the document reserves A2 for alice, B1
    for bob" and "; yours to claim by id: A3", each cut at ``NAMED_RESERVED``
    with how many more the count holds."""
    said = ""
    for reason, words in (
        ("reserved_in_document", "the document reserves"),
        ("reserved_for_you", "yours to claim by id:"),
    ):
        mine = reason == "reserved_for_you"
        found = [item for item in reserved if (item.reserved_for == agent) == mine]
        if not found:
            continue
        names = [item.ref if mine else f"{item.ref} for {item.reserved_for}" for item in found]
        more = counted.get(reason, 0) - len(names)
        said += f"; {words} {', '.join(names)}" + (f" and {more} more" if more > 0 else "")
    return said


def nothing_ready(
    kind: str | None,
    label: str | None,
    held_back: dict[str, int],
    reserved: Sequence[Item] = (),
    agent: str = "",
) -> NothingReady:
    """Nothing to claim, and why: every open item (of this kind, with this label) counted
    by what holds it back, or none open at all. ``reserved``: the first of those a design
    document holds back (``NAMED_RESERVED``), named in the refusal with whom each is for."""
    parts = [f"kind={kind}" if kind else "", f"label={label}" if label else ""]
    shown = " ".join(p for p in parts if p)
    which = f" ({shown})" if shown else ""
    open_items = sum(held_back.values())
    if open_items == 0 and shown:  # other items may be open: only none of these
        reason = ": no open item is of that kind or has that label"
    elif open_items == 0:
        reason = ": no open work is left, every item is done or cancelled"
    else:
        others = open_items - held_back.get("yours", 0) - held_back.get("reserved_for_you", 0)
        then = "; wait for the others and try again (`coord next`)" if others else ""
        named = reserved_text(reserved, agent, held_back)
        reason = f": {open_items} open ({held_back_text(held_back)}){named}{then}"
    return NothingReady(
        f"nothing is ready to claim{which}{reason}",
        kind=kind,
        label=label,
        open=open_items,
        held_back=held_back,
        reserved=reserved_details(reserved),
    )


def reserved_details(reserved: Sequence[Item]) -> list[dict[str, Any]]:
    return [
        {"id": item.id, "ref": item.ref, "reserved_for": item.reserved_for} for item in reserved
    ]


def nothing_ready_within(
    kind: str | None,
    label: str | None,
    scanned: int,
    first_holder: dict[str, Any] | None,
    held_back: dict[str, int],
    reserved: Sequence[Item] = (),
) -> NothingReady:
    """Claim-next gave up after ``scanned`` items whose files others hold: ready work may lie
    further on, and those holds lapse with their leases."""
    held = ""
    if first_holder is not None:
        held = f" (the first: {first_holder['requested']} held by {first_holder['holder']})"
    return NothingReady(
        f"nothing ready among the first {scanned} claimable items: their files are held by "
        f"others{held}; try again shortly (holds lapse with their leases), or claim one by id",
        kind=kind,
        label=label,
        scanned=scanned,
        open=sum(held_back.values()),
        held_back=held_back,
        reserved=reserved_details(reserved),
    )
