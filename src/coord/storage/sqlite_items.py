"""How an item lives in SQLite: its columns, the relations read along with it, the
claimable predicate and the one-statement claim of claim-next, and the item's writes.

``SQLiteItemTx`` holds the SQLite transaction's verbs about items, their dependencies and
their files; ``coord.storage.sqlite_tx.SQLiteTx`` adds reservations and the log to make the
whole ``WriteTx``. Like every verb of the backend, these run on the connection of the
transaction ``SQLiteStorage`` opened, and none begins or commits.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from coord.model import Item
from coord.storage import rules_sql
from coord.storage.base import (
    HELD_BACK_REASONS,
    ItemQuery,
    WriteTx,
    chunks,
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

_UPDATABLE = frozenset(
    {
        "title",
        "body",
        "priority",
        "labels",
        "state",
        "claimed_by",
        "fencing_token",
        "lease_expires_at",
        "updated_at",
        "closed_at",
        "spec",
        "spec_line",
        "checks",
        "evidence",
        "question",
        "escalate_to",
        "reserved_for",
        "branch",
        "base_commit",
        "worktree",
        "submitted_head",
        "submitted_at",
        "merged_commit",
        "rework",
        "rework_for",
        "rework_until",
    }
)
_JSON_COLUMNS = frozenset({"labels", "checks", "evidence", "rework"})
# UPDATE ... RETURNING arrived in SQLite 3.35 (2021); older libraries take the general path.
_HAS_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)
_ITEM_RELATIONS = (
    "(SELECT json_group_array(depends_on) FROM deps WHERE item_id = items.id), "
    f"(SELECT json_group_array(d.depends_on) {_WAITING_ON}), "
    "(SELECT json_group_array(pattern) FROM item_files WHERE item_id = items.id)"
)
_LAPSED_CLAIM = rules_sql.lapsed_claim(rules_sql.SQLITE)
_OPEN_STATE_INDEXES = (
    ("pending", "items_pending"),
    ("claimed", "items_claimed_lease"),
    ("queued", "items_queued"),
)
_HAS_LABEL = "EXISTS (SELECT 1 FROM json_each(items.labels) WHERE json_each.value = ?)"


class SQLiteItemTx(WriteTx):
    """The item half of the SQLite transaction (abstract: ``SQLiteTx`` is the whole)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _items(
        self, where: str, params: Sequence[Any], tail: str = "", source: str = "items"
    ) -> list[Item]:
        # One statement per read, however many items: dependencies and files come along as
        # JSON arrays (their primary keys keep them sorted). Each statement costs more than
        # the JSON does, and the claim path reads an item on every claim.
        rows = self.conn.execute(
            f"SELECT {_ITEM_COLUMNS}, {_ITEM_RELATIONS} FROM {source} WHERE {where} {tail}",
            params,
        ).fetchall()
        return [_item(row) for row in rows]

    def get_item(self, item_id: int) -> Item | None:
        found = self._items("id = ?", (item_id,))
        return found[0] if found else None

    def get_item_by_key(self, key: str) -> Item | None:
        found = self._items("key = ?", (key,))
        return found[0] if found else None

    def list_items(self, query: ItemQuery) -> list[Item]:
        where, params = listing_where(
            query,
            "?",
            unmet_deps=_UNMET_DEPS,
            has_label=_HAS_LABEL,
            claimable=f"(state = 'pending' OR ({_LAPSED_CLAIM})) AND {_NOT_HELD_BACK}",
        )
        if query.kinds:
            where.append(f"kind IN ({','.join('?' * len(query.kinds))})")
            params.extend(query.kinds)
        return self._items(" AND ".join(where), params, f"ORDER BY id LIMIT {int(query.limit)}")

    def claimable_items(
        self,
        now: float,
        kinds: Sequence[str],
        label: str | None,
        after: tuple[int, int] | None = None,
        limit: int = 1,
    ) -> list[Item]:
        # Two plain index walks, each reading whole items: pending rows in (priority, id)
        # order straight off their partial index, and claimed rows whose lease has run out
        # (usually none). Merged here. One statement with UNION ALL and an outer ORDER BY
        # measured 3-4x slower per claim: co-routines and temporary b-trees for one row.
        filters, params = _claim_filters(kinds, label)
        if after is not None:
            filters += " AND (priority, id) > (?, ?)"
            params.extend(after)
        tail = f"ORDER BY priority, id LIMIT {int(limit)}"
        found = self._items(
            f"state = 'pending' AND {filters} AND {_NOT_HELD_BACK}",
            params,
            tail,
            source="items INDEXED BY items_pending",
        ) + self._items(
            f"{_LAPSED_CLAIM} AND {filters} AND {_NOT_HELD_BACK}",
            [now, *params],
            tail,
            source="items INDEXED BY items_claimed_lease",
        )
        found.sort(key=lambda item: (item.priority, item.id))
        return found[:limit]

    def count_held_back(
        self, now: float, kinds: Sequence[str], label: str | None, agent: str
    ) -> dict[str, int]:
        # One walk of each open state's partial index, never the done rows (a board's
        # history grows without bound; claim-next's refusal comes to every polling agent).
        filters, params = _claim_filters(kinds, label)
        counts = dict.fromkeys(HELD_BACK_REASONS, 0)
        for state, index in _OPEN_STATE_INDEXES:
            for reason, number in self.conn.execute(
                f"SELECT {rules_sql.held_back_case(rules_sql.SQLITE)}, count(*) FROM items "
                f"INDEXED BY {index} WHERE state = '{state}' AND {filters} GROUP BY 1",
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
            source="items INDEXED BY items_pending",
        )

    def take_first_pending(
        self, agent: str, kinds: Sequence[str], label: str | None, now: float, expires_at: float
    ) -> Item | None:
        if not _HAS_RETURNING:
            return None
        filters, params = _claim_filters(kinds, label)
        rows = self.conn.execute(
            _take_first_pending_sql(filters), [agent, expires_at, now, *params, now, *params]
        ).fetchall()
        return _item(rows[0]) if rows else None

    def deps_of(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        ids = list(item_ids)
        result: dict[int, list[int]] = {}
        for part in chunks(ids):
            marks = ",".join("?" * len(part))
            for item_id, dep in self.conn.execute(
                f"SELECT item_id, depends_on FROM deps WHERE item_id IN ({marks})", part
            ):
                result.setdefault(item_id, []).append(dep)
        return result

    def existing_ids(self, item_ids: Iterable[int]) -> set[int]:
        ids = list(item_ids)
        found: set[int] = set()
        for part in chunks(ids):
            marks = ",".join("?" * len(part))
            found.update(
                row[0]
                for row in self.conn.execute(f"SELECT id FROM items WHERE id IN ({marks})", part)
            )
        return found

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
        cursor = self.conn.execute(
            "INSERT INTO items (kind, title, body, priority, labels, state, created_by, "
            "recipient, created_at, updated_at, key, spec, spec_line, checks, escalate_to) "
            "VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        )
        return int(cursor.lastrowid or 0)

    def update_item(self, item_id: int, expected_token: int, changes: dict[str, Any]) -> bool:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        values = {k: _json_value(v) if k in _JSON_COLUMNS else v for k, v in changes.items()}
        assignments = ", ".join(f"{column} = :{column}" for column in values)
        cursor = self.conn.execute(
            f"UPDATE items SET {assignments} WHERE id = :_id AND fencing_token = :_expected",
            {**values, "_id": item_id, "_expected": expected_token},
        )
        return cursor.rowcount == 1

    def add_deps(self, item_id: int, deps: Iterable[int]) -> None:
        self.conn.executemany(
            "INSERT OR IGNORE INTO deps (item_id, depends_on) VALUES (?, ?)",
            [(item_id, dep) for dep in deps],
        )

    def remove_deps(self, item_id: int, deps: Iterable[int]) -> None:
        self.conn.executemany(
            "DELETE FROM deps WHERE item_id = ? AND depends_on = ?",
            [(item_id, dep) for dep in deps],
        )

    def set_item_files(self, item_id: int, patterns: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM item_files WHERE item_id = ?", (item_id,))
        self.conn.executemany(
            "INSERT OR IGNORE INTO item_files (item_id, pattern) VALUES (?, ?)",
            [(item_id, p) for p in patterns],
        )


def _json_value(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(list(value) if isinstance(value, tuple | list) else value)


def _claim_filters(kinds: Sequence[str], label: str | None) -> tuple[str, list[Any]]:
    """The kind and label conditions of claim-next, on the ``items`` of the enclosing query."""
    filters = f"kind IN ({','.join('?' * len(kinds))})"
    params: list[Any] = list(kinds)
    if label is not None:
        filters += f" AND {_HAS_LABEL}"
        params.append(label)
    return filters, params


@functools.cache
def _take_first_pending_sql(filters: str) -> str:
    # Parameters: agent, lease end, now; the filters' values; now; the filters' values again.
    # Inside each subquery ``items`` names the subquery's own row (the innermost scope wins);
    # in the outer WHERE and in RETURNING it names the row being claimed.
    return f"""
UPDATE items
   SET state = 'claimed', claimed_by = ?, fencing_token = fencing_token + 1,
       lease_expires_at = ?, updated_at = ?
 WHERE id = (SELECT id FROM items INDEXED BY items_pending
              WHERE state = 'pending' AND {filters} AND {_NOT_HELD_BACK}
              ORDER BY priority, id LIMIT 1)
   AND NOT EXISTS (SELECT 1 FROM item_files WHERE item_id = items.id)
   AND items.rework IS NULL AND items.branch IS NULL
   AND NOT EXISTS (SELECT 1 FROM items INDEXED BY items_claimed_lease
                    WHERE {_LAPSED_CLAIM} AND {filters} AND {_NOT_HELD_BACK})
RETURNING {_ITEM_COLUMNS}, {_CLAIMED_PLAIN_RELATIONS}"""


# What _ITEM_RELATIONS reads, for an item take_first_pending just claimed: it waited on no
# dependency that is not done, and it declares no files. (A worktree item is left to the core:
# its branch renamed after the new token, an item sent back's first refusal and the queue's
# holds its claim takes over.)
_CLAIMED_PLAIN_RELATIONS = (
    "(SELECT json_group_array(depends_on) FROM deps WHERE item_id = items.id), '[]', '[]'"
)


def _item(row: Sequence[Any]) -> Item:
    """An item from a row of ``ITEM_COLUMNS`` followed by ``_ITEM_RELATIONS``."""
    return item_of(row, _array, _document)


def _document(text: str | None) -> Any:
    return json.loads(text) if text else None


def _array(text: str) -> tuple[Any, ...]:
    if text == "[]":
        return ()
    # The same few label sets come back on most items a claim or a listing reads.
    found = _arrays_seen.get(text)
    if found is None:
        if len(_arrays_seen) >= 512:
            _arrays_seen.clear()
        found = _arrays_seen[text] = tuple(json.loads(text))
    return found


_arrays_seen: dict[str, tuple[Any, ...]] = {}
