"""What to do next after the board refuses a claim or a reservation: the refusal's ``next``.

One function, ``for_refusal``, builds it for every face: the HTTP body, the CLI's ``--json``
and its text, the MCP error result all carry ``details["next"]`` of the raised error. (The
guard's refusal of an edit is built from the same options by ``coord.fast.next_options``: the
guard reads holds without the board's items.)

``other_work`` is what the claim itself would take: the items come from the claim's own scan
(``Claims.ready_now``: claimable, not kept for another, no file held by someone else), read
in one transaction just after the refusal. A claim that follows may still lose a race for
one of them, as any claim may; none of them was unclaimable when the refusal was answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from coord.core import claims, waiting
from coord.core.context import BoardContext, IsFile
from coord.errors import AlreadyClaimed, CoordError, FilesReserved, NothingReady
from coord.fast import next_options
from coord.model import Item
from coord.storage.base import ReadTx
from coord.times import iso

# how many ready items ``other_work`` names: enough to choose, few enough to read
OTHER_WORK_SHOWN = 3
# how far ahead to look for the claim that ends soonest when nothing is ready (a day)
_SOONEST_HORIZON = 86400.0

# the refusals that get a ``next``: held, file reserved, nothing ready
REFUSALS = (AlreadyClaimed, FilesReserved, NothingReady)

QueuePlace = Callable[..., "dict[str, Any] | None"]


def queue_place(
    tx: ReadTx,
    now: float,
    agent: str,
    *,
    item: int | None = None,
    paths: Sequence[str] = (),
    is_file: IsFile | None = None,
) -> dict[str, Any] | None:
    """What the line for ``item``'s claim or for ``paths`` says (``coord wait``'s queue),
    ``{"waiting": m, "first": name, "your_place": n}``: the place a newcomer would take."""
    del agent  # the place is the same for whoever asks: the end of the line
    return waiting.queue_facts(tx, now, item=item, paths=paths, is_file=is_file)


def for_refusal(
    ctx: BoardContext, err: CoordError, agent: str, *, place: QueuePlace = queue_place
) -> dict[str, Any] | None:
    """The ``next`` object of a claim's or a reservation's refusal by the board, or None for a
    refusal that has no next step to offer (bad input, a done item)."""
    if not isinstance(err, REFUSALS):
        return None
    with ctx.storage.read() as tx:
        now = ctx.now(tx)
        other = next_options.other_work(ready_items(ctx, tx, agent, now))
        if isinstance(err, AlreadyClaimed):
            return _held(tx, err, agent, now, other, place)
        if isinstance(err, FilesReserved):
            return _reserved(ctx, tx, err, agent, now, other, place)
        return _nothing_ready(tx, agent, now, other, place)


def ready_items(ctx: BoardContext, tx: ReadTx, agent: str, now: float) -> list[dict[str, Any]]:
    """The first ready items ``agent`` could claim now, best first: the claim's own scan."""
    found = []
    for item in claims.Claims(ctx).ready_now(tx, agent, now):
        found.append(_shown(item))
        if len(found) == OTHER_WORK_SHOWN:
            break
    return found


def _shown(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "ref": item.ref,
        "title": item.title,
        "priority": item.priority,
        "files": list(item.files),
    }


def _held(
    tx: ReadTx,
    err: AlreadyClaimed,
    agent: str,
    now: float,
    other: dict[str, Any],
    place: QueuePlace,
) -> dict[str, Any]:
    item_id = int(err.details["id"])
    item = tx.get_item(item_id)
    holder = err.details.get("holder")
    target = item.ref if item is not None else str(item_id)
    alive = item is not None and (item.lease_live(now) or item.state == "queued")
    until = item.lease_expires_at if item is not None else None
    wait = None
    if err.details.get("reason") != "reserved":  # a document's line has no lease to end
        queue = place(tx, now, agent, item=item_id)
        wait = next_options.wait(target, (), holder, iso(until) if until else None, alive, queue)
    ask = next_options.ask_holder(str(holder), target) if holder else None
    return next_options.assemble(wait, other, ask)


def _reserved(
    ctx: BoardContext,
    tx: ReadTx,
    err: FilesReserved,
    agent: str,
    now: float,
    other: dict[str, Any],
    place: QueuePlace,
) -> dict[str, Any]:
    conflicts = [c for c in err.details.get("conflicts") or [] if isinstance(c, dict)]
    first = conflicts[0]
    holder = str(first["holder"])
    # a claim's refusal waits for the item; a reservation's for the paths it asked
    claimed = err.details.get("claim_of")
    item = tx.get_item(int(claimed)) if claimed is not None else None
    requested = list(dict.fromkeys(str(c["requested"]) for c in conflicts))
    if item is not None:
        queue = place(tx, now, agent, item=item.id)
    else:
        queue = place(tx, now, agent, paths=requested, is_file=ctx.is_file)
    ref = item.ref if item is not None else None
    alive = True  # a conflict is with a live hold, on the board's clock
    wait = next_options.wait(ref, requested, holder, first["expires_at"], alive, queue)
    # asked about the path, as the guard's refusal of an edit asks: it reaches whoever holds
    # it, by a claim's files or by a reservation of its own
    ask = next_options.ask_holder(holder, None, [str(first["requested"])])
    return next_options.assemble(wait, other, ask)


def _nothing_ready(
    tx: ReadTx, agent: str, now: float, other: dict[str, Any], place: QueuePlace
) -> dict[str, Any]:
    """Nothing to claim: wait for the claim that ends soonest, if any runs."""
    wait = ask = None
    soonest = [i for i in tx.claims_ending_between(now, now + _SOONEST_HORIZON, 20) if i.claimed_by]
    soonest = [i for i in soonest if i.claimed_by != agent]
    if soonest:
        item = soonest[0]
        holder = str(item.claimed_by)
        until = iso(item.lease_expires_at) if item.lease_expires_at else None
        queue = place(tx, now, agent, item=item.id)
        wait = next_options.wait(item.ref, (), holder, until, True, queue)
        ask = next_options.ask_holder(holder, item.ref)
    return next_options.assemble(wait, other if other["items"] else None, ask)


@contextmanager
def told_on_refusal(ctx: BoardContext, agent: str) -> Iterator[None]:
    """Run a claim or a reservation; a refusal of it leaves with its ``next``. The refusal is
    what the caller must see: a failure to read what comes next (a busy board) leaves it
    without ``next`` rather than hiding it."""
    try:
        yield
    except REFUSALS as err:
        if "next" not in err.details:
            try:
                found = for_refusal(ctx, err, agent)
            except CoordError:
                found = None
            if found is not None:
                err.details["next"] = found
        raise
