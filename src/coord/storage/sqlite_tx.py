"""The SQLite backend's transaction verbs: the SQL behind ``ReadTx`` and ``WriteTx``.

Each method is one or two statements run on the connection of the transaction that
``SQLiteStorage.read()`` or ``.write()`` opened; none of them begins or commits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from coord.fast import holds, patterns
from coord.model import (
    SHOWN_STATES,
    AccessToken,
    Agent,
    Event,
    Item,
    LandingLease,
    Reply,
    Reservation,
)
from coord.storage import access_rows, rules_sql
from coord.storage.rows import reservation_of
from coord.storage.sqlite_items import SQLiteItemTx
from coord.storage.waits_tx import WaitsTx

_INBOX_SQL = rules_sql.inbox(rules_sql.SQLITE)

# an event with its item's package id (a lookup by primary key: the log is read in order)
_EVENT_COLUMNS = (
    "seq, at, agent, item_id, kind, details, (SELECT key FROM items WHERE items.id = e.item_id), "
    "provenance"
)


class SQLiteTx(WaitsTx, SQLiteItemTx):
    """The whole SQLite transaction: the item verbs (``SQLiteItemTx``), and here the
    reservations, the event log, replies, acknowledgements, agents and inboxes."""

    # --- reads -----------------------------------------------------------------------------

    def live_reservations(
        self, now: float, *, near: Sequence[str] | None = None, agent: str | None = None
    ) -> list[Reservation]:
        # a pattern asks for up to two prefixes (its folded key and, for a board not yet
        # migrated, as written)
        step = holds.MAX_NEAR_PREFIXES // 2
        if near is not None and len(near) > step:
            # in slices the query narrows by prefix: past MAX_NEAR_PREFIXES one query reads
            # every live hold, which grows with the board, not with what was asked
            found = {
                held.id: held
                for start in range(0, len(near), step)
                for held in self.live_reservations(
                    now, near=near[start : start + step], agent=agent
                )
            }
            return [found[key] for key in sorted(found)]  # oldest first, as one query gives
        query = holds.select_live(now, near=near, agent=agent)  # the guard's query too
        if query is None:
            return []
        return [reservation_of(row) for row in self.conn.execute(*query)]

    def count_items_by_state(self) -> dict[str, int]:
        # Never the items: the counts their writes keep (migration 9), and the questions
        # waiting (a few) off items_needs_human; a waiting claim is shown as needs_human.
        counts = dict.fromkeys(SHOWN_STATES, 0)
        for state, number in self.conn.execute("SELECT state, n FROM item_counts"):
            counts[state] = int(number)
        row = self.conn.execute(
            "SELECT count(*) FROM items INDEXED BY items_needs_human "
            "WHERE question IS NOT NULL AND state = 'claimed'"
        ).fetchone()
        waiting = int(row[0])
        counts["claimed"] -= waiting
        counts["needs_human"] = waiting
        # the items sent back from landing (a few, off items_rework): pending, shown apart
        row = self.conn.execute(
            "SELECT count(*) FROM items INDEXED BY items_rework "
            "WHERE rework IS NOT NULL AND state = 'pending'"
        ).fetchone()
        rework = int(row[0])
        counts["pending"] -= rework
        counts["needs_rework"] = rework
        return counts

    def queued_items(self, limit: int) -> list[Item]:
        return self._items(
            "state = 'queued'",
            (),
            f"ORDER BY submitted_at, id LIMIT {int(limit)}",
            source="items INDEXED BY items_queued",
        )

    def access_token(self, secret_sha256: str) -> AccessToken | None:
        row = self.conn.execute(access_rows.select_by_hash("?"), (secret_sha256,)).fetchone()
        return None if row is None else access_rows.token_of(row)

    def access_token_hash(self, ref: str) -> str | None:
        row = self.conn.execute(access_rows.select_by_ref("?"), (ref,)).fetchone()
        return None if row is None else str(row[0])

    def access_tokens(self) -> list[AccessToken]:
        return [access_rows.token_of(row) for row in self.conn.execute(access_rows.SELECT_ALL)]

    def insert_access_token(self, name: str, machine: bool, secret_sha256: str, now: float) -> int:
        cursor = self.conn.execute(
            access_rows.insert("?"), (name, int(machine), secret_sha256, now)
        )
        return int(cursor.lastrowid or 0)

    def revoke_access_token(self, token_id: int, now: float) -> bool:
        return self.conn.execute(access_rows.revoke("?"), (now, token_id)).rowcount > 0

    def touch_access_token(self, token_id: int, now: float) -> None:
        since = now - access_rows.TOUCH_SECONDS
        self.conn.execute(access_rows.touch("?"), (now, token_id, since))

    def landing_lease(self) -> LandingLease | None:
        row = self.conn.execute(
            "SELECT holder, token, expires_at FROM landing_lease WHERE name = 'main'"
        ).fetchone()
        return None if row is None else LandingLease(row[0], int(row[1]), row[2])

    def set_landing_lease(self, holder: str | None, token: int, expires_at: float | None) -> None:
        self.conn.execute(
            "INSERT INTO landing_lease (name, holder, token, expires_at) "
            "VALUES ('main', ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
            "holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at",
            (holder, token, expires_at),
        )

    def claims_ending_between(self, start: float, end: float, limit: int) -> list[Item]:
        # the partial index items_claimed_lease keeps this to the claims in the window (named,
        # as claim-next names its own: the planner's guess is never the question)
        return self._items(
            "state = 'claimed' AND question IS NULL AND lease_expires_at > ? "
            "AND lease_expires_at <= ?",
            (start, end),
            f"ORDER BY lease_expires_at, id LIMIT {int(limit)}",
            source="items INDEXED BY items_claimed_lease",
        )

    def replies(self, item_id: int, after: int = 0, limit: int = -1) -> list[Reply]:
        return [
            Reply(*row)
            for row in self.conn.execute(
                "SELECT id, item_id, author, body, created_at FROM replies "
                "WHERE item_id = ? AND id > ? ORDER BY id LIMIT ?",
                (item_id, after, limit),
            )
        ]

    def acks(self, item_id: int) -> list[tuple[str, float]]:
        return list(
            self.conn.execute(
                "SELECT agent, created_at FROM acks WHERE item_id = ? ORDER BY created_at, agent",
                (item_id,),
            )
        )

    def agents(self) -> list[Agent]:
        holding: dict[str, list[int]] = {}
        for name, item_id in self.conn.execute(
            "SELECT claimed_by, id FROM items WHERE state = 'claimed' ORDER BY id"
        ):
            holding.setdefault(name, []).append(item_id)
        return [
            Agent(name, first, last, tuple(holding.get(name, ())), bool(worked))
            for name, first, last, worked in self.conn.execute(
                "SELECT name, first_seen, last_seen, worked FROM agents "
                "ORDER BY last_seen DESC, name"
            )
        ]

    def events_after(
        self, seq: int, limit: int, item_id: int | None = None, max_bytes: int | None = None
    ) -> list[Event]:
        if item_id is None:
            rows = self.conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events e WHERE seq > ? ORDER BY seq LIMIT ?",
                (seq, limit),
            )
        else:
            rows = self.conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events e "
                "WHERE item_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (item_id, seq, limit),
            )
        if max_bytes is None:
            return [_event(row) for row in rows]
        # the cursor steps a row at a time: the rows past the budget are never read
        page, size = [], 0
        for row in rows:
            page.append(_event(row))
            size += len(row[5])
            if size >= max_bytes:
                break
        return page

    def last_seq(self) -> int:
        return int(self.conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])

    def inbox_cursor(self, agent: str) -> int:
        row = self.conn.execute("SELECT inbox_seq FROM agents WHERE name = ?", (agent,)).fetchone()
        return int(row[0]) if row else 0

    def inbox_events(self, agent: str, after_seq: int, limit: int) -> list[Event]:
        rows = self.conn.execute(_INBOX_SQL, {"after": after_seq, "me": agent, "limit": limit})
        return [_event(row) for row in rows]

    # --- writes ----------------------------------------------------------------------------

    def append_event(
        self,
        *,
        at: float,
        agent: str | None,
        item_id: int | None,
        kind: str,
        details: dict[str, Any],
        provenance: dict[str, Any] | None = None,
    ) -> int:
        cursor = self.conn.execute(
            "INSERT INTO events (at, agent, item_id, kind, details, provenance) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                at,
                agent,
                item_id,
                kind,
                _compact_json(details),
                None if provenance is None else _compact_json(provenance),
            ),
        )
        return int(cursor.lastrowid or 0)

    def touch_agent(self, name: str, now: float, *, worked: bool = False) -> None:
        if worked:  # once per agent and daemon: the mark is never taken back
            self.conn.execute(
                "INSERT INTO agents (name, first_seen, last_seen, worked) "
                "VALUES (?, ?, ?, 1) "
                "ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen, worked = 1",
                (name, now, now),
            )
            return
        self.conn.execute(
            "INSERT INTO agents (name, first_seen, last_seen) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen",
            (name, now, now),
        )

    def delete_agents(self, names: Sequence[str]) -> None:
        self.conn.executemany("DELETE FROM agents WHERE name = ?", [(name,) for name in names])

    def insert_reservation(
        self,
        *,
        agent: str,
        pattern: str,
        exclusive: bool,
        item_id: int | None,
        reason: str,
        now: float,
        expires_at: float,
    ) -> int:
        cursor = self.conn.execute(
            "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, reason, "
            "created_at, expires_at, rule) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent,
                pattern,
                patterns.search_prefix(pattern),
                int(exclusive),
                item_id,
                reason,
                now,
                expires_at,
                patterns.RULE,
            ),
        )
        return int(cursor.lastrowid or 0)

    def delete_reservations(self, ids: Iterable[int]) -> None:
        self.conn.executemany("DELETE FROM reservations WHERE id = ?", [(i,) for i in ids])

    def extend_item_reservations(self, item_id: int, agent: str, expires_at: float) -> None:
        self.conn.execute(
            "UPDATE reservations SET expires_at = ? WHERE item_id = ? AND agent = ?",
            (expires_at, item_id, agent),
        )

    def delete_item_reservations(self, item_id: int, agent: str | None) -> None:
        if agent is None:
            self.conn.execute("DELETE FROM reservations WHERE item_id = ?", (item_id,))
        else:
            self.conn.execute(
                "DELETE FROM reservations WHERE item_id = ? AND agent = ?", (item_id, agent)
            )

    def purge_expired_reservations(self, now: float) -> None:
        self.conn.execute("DELETE FROM reservations WHERE expires_at <= ?", (now,))

    def add_reply(self, item_id: int, author: str, body: str, now: float) -> int:
        cursor = self.conn.execute(
            "INSERT INTO replies (item_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (item_id, author, body, now),
        )
        return int(cursor.lastrowid or 0)

    def add_ack(self, item_id: int, agent: str, now: float) -> bool:
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO acks (item_id, agent, created_at) VALUES (?, ?, ?)",
            (item_id, agent, now),
        )
        return cursor.rowcount == 1

    def set_inbox_cursor(self, agent: str, seq: int, now: float) -> None:
        self.touch_agent(agent, now)
        self.conn.execute(
            "UPDATE agents SET inbox_seq = max(inbox_seq, ?) WHERE name = ?", (seq, agent)
        )


# json.dumps with any option builds a new encoder per call; the event log writes one per change.
_compact_json = json.JSONEncoder(separators=(",", ":")).encode


def _event(row: Sequence[Any]) -> Event:
    return Event(
        seq=row[0],
        at=row[1],
        agent=row[2],
        item_id=row[3],
        kind=row[4],
        details=json.loads(row[5]),
        item_key=row[6],
        provenance=json.loads(row[7]) if row[7] else None,
    )
