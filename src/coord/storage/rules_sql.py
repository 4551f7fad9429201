"""The board's rules as SQL: one text per rule for both backends, the dialects' parts side by side.

Which item may be claimed, which claim has lapsed and what reaches an agent's inbox are rules
of the board, not of a database: written once here, each backend's transaction module reads
them with its own ``Dialect`` (the driver's placeholder, and how it reads a JSON field). A rule
that differs between the backends in more than these words is a bug in one of them.

Every fragment is written against the enclosing query's ``items`` row.
"""

from __future__ import annotations

from dataclasses import dataclass

# The dependencies an item waits on: those not done yet. They fill ``Item.blocked_by`` and
# make the listing's "blocked" state (and hold the item back from claim-next), one predicate.
WAITING_ON = (
    "FROM deps d JOIN items dep ON dep.id = d.depends_on "
    "WHERE d.item_id = items.id AND dep.state != 'done'"
)
# A dependency holds an item back until it is done.
UNMET_DEPS = f"EXISTS (SELECT 1 {WAITING_ON})"
# A design document's reservation line (or its track's marker) keeps the package from
# everyone: ``Item.claimable`` and ``coord.spec.protocol`` say the same.
RESERVED_IN_DOCUMENT = "items.reserved_for IS NOT NULL"
# What holds an open item back from being claimed, beside its state: each a named fragment,
# without parameters. Every claimable query (claim-next, its one-statement path, ``ls
# --ready``) requires all of them false.
HELD_BACK = (UNMET_DEPS, RESERVED_IN_DOCUMENT)
NOT_HELD_BACK = " AND ".join(f"NOT {fragment}" for fragment in HELD_BACK)


@dataclass(frozen=True)
class Dialect:
    """What one backend's SQL spells its own way."""

    mark: str  # a positional parameter
    named: str  # a named parameter, with ``{}`` for the name
    # "the JSON array at key ``{key}`` of ``{column}`` holds the parameter ``{param}``"
    array_holds: str
    # "the text at key ``{key}`` of ``{column}``"
    text_at: str

    def param(self, name: str) -> str:
        return self.named.format(name)


SQLITE = Dialect(
    mark="?",
    named=":{}",
    array_holds="EXISTS (SELECT 1 FROM json_each({column}, '$.{key}') m WHERE m.value = {param})",
    text_at="json_extract({column}, '$.{key}')",
)
POSTGRES = Dialect(
    mark="%s",
    named="%({})s",
    array_holds="({column}::jsonb -> '{key}') ? {param}",
    text_at="{column} ->> '{key}'",
)


def held_back_case(d: Dialect) -> str:
    """The CASE naming what holds an open item back, for ``nothing_ready``'s counts.
    Parameters: now, now, agent, now, agent."""
    mark, unmet_deps = d.mark, UNMET_DEPS
    live = f"state = 'claimed' AND lease_expires_at > {mark}"
    return (
        "CASE WHEN state = 'queued' THEN 'landing' "
        f"WHEN {live} AND question IS NOT NULL THEN 'needs_human' "
        f"WHEN {live} AND claimed_by = {mark} THEN 'yours' "
        f"WHEN {live} THEN 'claimed' "
        f"WHEN {unmet_deps} THEN 'waiting_on_dependencies' "
        f"WHEN items.reserved_for = {mark} THEN 'reserved_for_you' "
        "WHEN items.reserved_for IS NOT NULL THEN 'reserved_in_document' "
        "ELSE 'open' END"
    )


def lapsed_claim(d: Dialect) -> str:
    """A claim that can be taken over: its lease ran out. A question waiting on a human holds
    the lease only up to the escalation bound, so a stale one lapses too (``Item.lease_live``
    in the model says the same of one item). One parameter: now."""
    return f"items.state = 'claimed' AND items.lease_expires_at <= {d.mark}"


def inbox(d: Dialect) -> str:
    """What others did that concerns me, after a sequence number. Heartbeats are bookkeeping,
    not news. On an item I made, hold or replied on, only what came after I first acted on it:
    the history of an item I have just taken is not news (issue 25). Addressed to me, a
    mention, my claim taken or ended: always. Named parameters: after, me, limit."""
    me, after, limit = d.param("me"), d.param("after"), d.param("limit")
    mentioned = d.array_holds.format(column="e.details", key="mentions", param=me)
    taken_from = d.text_at.format(column="e.details", key="takeover_from")
    holder = d.text_at.format(column="e.details", key="holder")
    return f"""
SELECT e.seq, e.at, e.agent, e.item_id, e.kind, e.details, i.key, e.provenance
  FROM events e LEFT JOIN items i ON i.id = e.item_id
 WHERE e.seq > {after}
   AND (e.agent IS NULL OR e.agent != {me})
   AND e.kind != 'heartbeat'
   AND (i.recipient = {me}
        OR (i.created_by = {me} OR i.claimed_by = {me}
            OR EXISTS (SELECT 1 FROM replies r WHERE r.item_id = e.item_id AND r.author = {me}))
           AND EXISTS (SELECT 1 FROM events mine
                        WHERE mine.item_id = e.item_id AND mine.seq < e.seq AND mine.agent = {me})
        OR {mentioned}
        OR {taken_from} = {me}
        OR {holder} = {me})
 ORDER BY e.seq
 LIMIT {limit}
"""
