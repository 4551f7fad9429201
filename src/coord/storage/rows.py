"""Rows into nouns, for every backend: the order of an item's and a reservation's columns
as the backends select them, in one place.

Each backend decodes its own JSON (SQLite hands back text, PostgreSQL's driver decodes it) and
passes how: ``array`` for labels, checks and the relations, ``document`` for the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coord.model import Item, Reservation

ITEM_COLUMNS = (
    "id, kind, title, body, priority, labels, state, created_by, recipient, claimed_by, "
    "fencing_token, lease_expires_at, created_at, updated_at, closed_at, "
    "key, spec, spec_line, checks, evidence, question, escalate_to, reserved_for, "
    "branch, base_commit, worktree, submitted_head, submitted_at, merged_commit, rework, "
    "rework_for, rework_until"
)


def item_of(
    row: Sequence[Any],
    array: Callable[[Any], tuple[Any, ...]],
    document: Callable[[Any], Any],
) -> Item:
    """An item from a row of ``ITEM_COLUMNS`` followed by its dependencies, the dependencies
    not done yet, and its files."""
    return Item(
        id=row[0],
        kind=row[1],
        title=row[2],
        body=row[3],
        priority=row[4],
        labels=array(row[5]),
        state=row[6],
        created_by=row[7],
        to=row[8],
        claimed_by=row[9],
        fencing_token=row[10],
        lease_expires_at=row[11],
        created_at=row[12],
        updated_at=row[13],
        closed_at=row[14],
        key=row[15],
        spec=row[16],
        spec_line=row[17],
        checks=array(row[18]),
        evidence=document(row[19]),
        question=row[20],
        escalate_to=row[21],
        reserved_for=row[22],
        branch=row[23],
        base_commit=row[24],
        worktree=row[25],
        submitted_head=row[26],
        submitted_at=row[27],
        merged_commit=row[28],
        rework=document(row[29]),
        rework_for=row[30],
        rework_until=row[31],
        deps=array(row[32]),
        blocked_by=array(row[33]),
        files=array(row[34]),
    )


def reservation_of(row: Sequence[Any]) -> Reservation:
    """A reservation from a row of ``coord.fast.holds.COLUMNS`` (the guard's query)."""
    return Reservation(
        id=row[0],
        agent=row[1],
        pattern=row[2],
        exclusive=bool(row[3]),
        item_id=row[4],
        reason=row[5],
        created_at=row[6],
        expires_at=row[7],
        rule=row[8],
    )
