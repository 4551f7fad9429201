"""How an item lives in PostgreSQL: its columns, the relations read along with it, the
claimable predicate and the one-statement claim of claim-next, and the item's writes.

The PostgreSQL twin of ``coord.storage.sqlite_items``, held to the same contract suite;
``coord.storage.postgres_tx.PostgresTx`` adds reservations and the log. Every verb runs on
the connection of the transaction ``PostgresStorage`` opened, and none begins or commits.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg

from coord.model import Item
from coord.storage import rules_sql
from coord.storage.base import (
    HELD_BACK_REASONS,
    ItemQuery,
    WriteTx,
    listing_where,
)
from coord.storage.rows import ITEM_COLUMNS as _ITEM_COLUMNS
from coord.storage.rows import item_of
from coord.storage.rules_sql import (
    NOT_HELD_BACK as _NOT_HELD_BACK,
)
from coord.storage.rules_sql import (
    RESERVED_IN_DOCUMENT as _RESERVED_IN_DOCUMENT,
)
from coord.storage.rules_sql import UNMET_DEPS as _UNMET_DEPS
from coord.storage.rules_sql import WAITING_ON as _WAITING_ON

# Columns update_item may write, with the cast its value needs (JSON travels as text).
_UPDATABLE = {
    "title": "",
    "body": "",
    "priority": "",
    "labels": "::jsonb",
    "state": "",
    "claimed_by": "",
    "fencing_token": "",
    "lease_expires_at": "",
    "updated_at": "",
    "closed_at": "",
    "spec": "",
    "spec_line": "",
    "checks": "::jsonb",
    "evidence": "::json",
    "question": "",
    "escalate_to": "",
    "reserved_for": "",
    "branch": "",
    "base_commit": "",
    "worktree": "",
    "submitted_head": "",
    "submitted_at": "",
    "merged_commit": "",
    "rework": "::json",
    "rework_for": "",
    "rework_until": "",
}
# Inside each subquery ``items`` names the subquery's own row (the innermost scope wins); in
# an outer WHERE and in RETURNING it names the row being read or claimed.
_ITEM_RELATIONS = (
    "ARRAY(SELECT depends_on FROM deps WHERE item_id = items.id ORDER BY depends_on), "
    f"ARRAY(SELECT d.depends_on {_WAITING_ON} ORDER BY d.depends_on), "
    "ARRAY(SELECT pattern FROM item_files WHERE item_id = items.id ORDER BY pattern)"
)
_LAPSED_CLAIM = rules_sql.lapsed_claim(rules_sql.POSTGRES)
_HAS_LABEL = "items.labels ? %s"


class PostgresItemTx(WriteTx):
    """The item half of the PostgreSQL transaction (abstract: ``PostgresTx`` is the whole)."""

    def __init__(self, conn: psycopg.Connection[Any], clock: Callable[[], float] | None) -> None:
        self.conn = conn
        self._clock = clock

    def clock(self) -> float | None:
        if self._clock is None:  # a read: the server's clock, asked once
            row = self.conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
            now = float(row.fetchone()[0])  # type: ignore[index]
            self._clock = lambda: now
        return self._clock()

    def _items(self, where: str, params: Sequence[Any], tail: str = "") -> list[Item]:
        # One statement per read, dependencies and files along as arrays (see sqlite_items).
        rows = self.conn.execute(
            f"SELECT {_ITEM_COLUMNS}, {_ITEM_RELATIONS} FROM items WHERE {where} {tail}",
            params,
        ).fetchall()
        return [_item(row) for row in rows]

    def get_item(self, item_id: int) -> Item | None:
        found = self._items("id = %s", (item_id,))
        return found[0] if found else None

    def get_item_by_key(self, key: str) -> Item | None:
        found = self._items("key = %s", (key,))
        return found[0] if found else None

    def list_items(self, query: ItemQuery) -> list[Item]:
        where, params = listing_where(
            query,
            "%s",
            unmet_deps=_UNMET_DEPS,
            has_label=_HAS_LABEL,
            claimable=f"(state = 'pending' OR ({_LAPSED_CLAIM})) AND {_NOT_HELD_BACK}",
        )
        if query.kinds:
            where.append("kind = ANY(%s)")
            params.append(list(query.kinds))
        return self._items(" AND ".join(where), params, f"ORDER BY id LIMIT {int(query.limit)}")

    def claimable_items(
        self,
        now: float,
        kinds: Sequence[str],
        label: str | None,
        after: tuple[int, int] | None = None,
        limit: int = 1,
    ) -> list[Item]:
        # Pending rows off their partial index in claim order, and claimed rows whose lease
        # ran out (usually none), each an index walk; merged here, as in sqlite_items.
        filters, params = _claim_filters(kinds, label)
        if after is not None:
            filters += " AND (priority, id) > (%s, %s)"
            params.extend(after)
        tail = f"ORDER BY priority, id LIMIT {int(limit)}"
        found = self._items(
            f"state = 'pending' AND {filters} AND {_NOT_HELD_BACK}", params, tail
        ) + self._items(f"{_LAPSED_CLAIM} AND {filters} AND {_NOT_HELD_BACK}", [now, *params], tail)
        found.sort(key=lambda item: (item.priority, item.id))
        return found[:limit]

    def count_held_back(
        self, now: float, kinds: Sequence[str], label: str | None, agent: str
    ) -> dict[str, int]:
        # One state at a time, so each reads its state's partial index, never the done rows
        # (as in sqlite_items).
        filters, params = _claim_filters(kinds, label)
        counts = dict.fromkeys(HELD_BACK_REASONS, 0)
        for state in ("pending", "claimed", "queued"):
            for reason, number in self.conn.execute(
                f"SELECT {rules_sql.held_back_case(rules_sql.POSTGRES)}, count(*) FROM items "
                f"WHERE state = '{state}' AND {filters} GROUP BY 1",
                [now, now, agent, now, agent, *params],
            ).fetchall():
                counts[reason] += int(number)
        return counts

    def reserved_pending(self, kinds: Sequence[str], label: str | None, limit: int) -> list[Item]:
        filters, params = _claim_filters(kinds, label)
        return self._items(
            f"state = 'pending' AND {filters} AND {_RESERVED_IN_DOCUMENT} AND NOT {_UNMET_DEPS}",
            params,
            f"ORDER BY priority, id LIMIT {int(limit)}",
        )

    def take_first_pending(
        self, agent: str, kinds: Sequence[str], label: str | None, now: float, expires_at: float
    ) -> Item | None:
        filters, params = _claim_filters(kinds, label)
        rows = self.conn.execute(
            _take_first_pending_sql(filters), [agent, expires_at, now, *params, now, *params]
        ).fetchall()
        return _item(rows[0]) if rows else None

    def deps_of(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        result: dict[int, list[int]] = {}
        for item_id, dep in self.conn.execute(
            "SELECT item_id, depends_on FROM deps WHERE item_id = ANY(%s) "
            "ORDER BY item_id, depends_on",
            (list(item_ids),),
        ):
            result.setdefault(item_id, []).append(dep)
        return result

    def existing_ids(self, item_ids: Iterable[int]) -> set[int]:
        rows = self.conn.execute("SELECT id FROM items WHERE id = ANY(%s)", (list(item_ids),))
        return {row[0] for row in rows}

    def insert_item(
        self,
        *,
        kind: str,
        title: str,
        body: str,
        priority: int,
        labels: Sequence[str],
        created_by: str,
        recipient: str | None,
        now: float,
        key: str | None = None,
        spec: str | None = None,
        spec_line: int | None = None,
        checks: Sequence[str] = (),
        escalate_to: str | None = None,
    ) -> int:
        # The id comes from the board's counter row (see migration 0001): never reused, and
        # a rolled-back insert leaves no hole, as SQLite's AUTOINCREMENT.
        row = self.conn.execute(
            "WITH next AS (UPDATE board_counters SET last_item = last_item + 1 "
            "RETURNING last_item) "
            "INSERT INTO items (id, kind, title, body, priority, labels, state, created_by, "
            "recipient, created_at, updated_at, key, spec, spec_line, checks, escalate_to) "
            "VALUES ((SELECT last_item FROM next), %s, %s, %s, %s, %s::jsonb, 'pending', %s, "
            "%s, %s, %s, %s, %s, %s, %s::jsonb, %s) RETURNING id",
            (
                kind,
                title,
                body,
                priority,
                json.dumps(list(labels)),
                created_by,
                recipient,
                now,
                now,
                key,
                spec,
                spec_line,
                json.dumps(list(checks)),
                escalate_to,
            ),
        ).fetchone()
        return int(row[0])  # type: ignore[index]

    def update_item(self, item_id: int, expected_token: int, changes: dict[str, Any]) -> bool:
        unknown = set(changes) - set(_UPDATABLE)
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        values = {k: _json_value(v) if _UPDATABLE[k] else v for k, v in changes.items()}
        assignments = ", ".join(f"{column} = %({column})s{_UPDATABLE[column]}" for column in values)
        cursor = self.conn.execute(
            f"UPDATE items SET {assignments} WHERE id = %(_id)s AND fencing_token = %(_expected)s",
            {**values, "_id": item_id, "_expected": expected_token},
        )
        return cursor.rowcount == 1

    def add_deps(self, item_id: int, deps: Iterable[int]) -> None:
        self.conn.execute(
            "INSERT INTO deps (item_id, depends_on) SELECT %s, unnest(%s::bigint[]) "
            "ON CONFLICT DO NOTHING",
            (item_id, list(deps)),
        )

    def remove_deps(self, item_id: int, deps: Iterable[int]) -> None:
        self.conn.execute(
            "DELETE FROM deps WHERE item_id = %s AND depends_on = ANY(%s)", (item_id, list(deps))
        )

    def set_item_files(self, item_id: int, patterns: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM item_files WHERE item_id = %s", (item_id,))
        self.conn.execute(
            "INSERT INTO item_files (item_id, pattern) SELECT %s, unnest(%s::text[]) "
            "ON CONFLICT DO NOTHING",
            (item_id, list(patterns)),
        )


def _json_value(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(list(value) if isinstance(value, tuple | list) else value)


def _claim_filters(kinds: Sequence[str], label: str | None) -> tuple[str, list[Any]]:
    """The kind and label conditions of claim-next, on the ``items`` of the enclosing query."""
    filters = "items.kind = ANY(%s)"
    params: list[Any] = [list(kinds)]
    if label is not None:
        filters += f" AND {_HAS_LABEL}"
        params.append(label)
    return filters, params


@functools.cache
def _take_first_pending_sql(filters: str) -> str:
    # One statement: the pick locks the first pending row in claim order, skipping rows
    # another transaction holds (FOR UPDATE SKIP LOCKED), and the conditional UPDATE claims
    # it only if it is still pending, declares no files and no lapsed lease comes first.
    # Parameters: agent, lease end, now; the filters' values; now; the filters' values again.
    return f"""
UPDATE items
   SET state = 'claimed', claimed_by = %s, fencing_token = fencing_token + 1,
       lease_expires_at = %s, updated_at = %s
 WHERE id = (SELECT id FROM items
              WHERE state = 'pending' AND {filters} AND {_NOT_HELD_BACK}
              ORDER BY priority, id LIMIT 1
              FOR UPDATE SKIP LOCKED)
   AND state = 'pending'
   AND NOT EXISTS (SELECT 1 FROM item_files WHERE item_id = items.id)
   AND items.rework IS NULL AND items.branch IS NULL
   AND NOT EXISTS (SELECT 1 FROM items
                    WHERE {_LAPSED_CLAIM} AND {filters} AND {_NOT_HELD_BACK})
RETURNING {_ITEM_COLUMNS}, {_CLAIMED_PLAIN_RELATIONS}"""


# What _ITEM_RELATIONS reads, for an item take_first_pending just claimed: it waited on no
# dependency that is not done, and it declares no files. (A worktree item is left to the core:
# its branch renamed after the new token, an item sent back's first refusal and the queue's
# holds its claim takes over.)
_CLAIMED_PLAIN_RELATIONS = (
    "ARRAY(SELECT depends_on FROM deps WHERE item_id = items.id ORDER BY depends_on), "
    "'{}'::bigint[], '{}'::text[]"
)


def _item(row: Sequence[Any]) -> Item:
    """An item from a row of ``ITEM_COLUMNS`` followed by ``_ITEM_RELATIONS``: the driver
    has decoded the JSON and the arrays already."""
    return item_of(row, tuple, _as_is)


def _as_is(value: Any) -> Any:
    return value
