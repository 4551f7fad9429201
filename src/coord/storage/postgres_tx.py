"""The PostgreSQL backend's transaction verbs: the SQL behind ``ReadTx`` and ``WriteTx``.

The twin of ``coord.storage.sqlite_tx``: reservations, the event log, replies,
acknowledgements, agents and inboxes, on top of the item verbs (``PostgresItemTx``). Each runs
on the connection of the transaction ``PostgresStorage.read()`` or ``.write()`` opened.
"""

from __future__ import annotations

import functools
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
from coord.storage.postgres_items import PostgresItemTx
from coord.storage.rows import reservation_of
from coord.storage.waits_tx import WaitsTx

_INBOX_SQL = rules_sql.inbox(rules_sql.POSTGRES)
_EVENT_COLUMNS = "seq, at, agent, item_id, kind, details"
# the item's package id (a lookup by primary key): every face names an item as `coord ls` does
_ITEM_KEY = "(SELECT key FROM items WHERE items.id = e.item_id)"


class PostgresTx(WaitsTx, PostgresItemTx):
    """The whole PostgreSQL transaction."""

    appended_seq: int | None = None  # the last event appended: its COMMIT notifies it

    def _sql(self, sql: str) -> str:
        return _placeholders(sql)

    # --- reads -----------------------------------------------------------------------------

    def live_reservations(
        self, now: float, *, near: Sequence[str] | None = None, agent: str | None = None
    ) -> list[Reservation]:
        # The guard's query (``coord.fast.holds``), so "live" and "near" mean one thing on
        # both backends. Past its prefix limit it reads every live hold: a superset, still
        # right, and PostgreSQL has no expression-depth limit that slicing would dodge.
        query = holds.select_live(now, near=near, agent=agent)
        if query is None:
            return []
        sql, params = query
        return [reservation_of(row) for row in self.conn.execute(_placeholders(sql), params)]

    def count_items_by_state(self) -> dict[str, int]:
        # Never the items: the counts their writes keep (migration 3), and the questions
        # waiting (a few) off items_needs_human; a waiting claim is shown as needs_human.
        counts = dict.fromkeys(SHOWN_STATES, 0)
        for state, number in self.conn.execute("SELECT state, n FROM item_counts"):
            counts[state] = int(number)
        row = self.conn.execute(
            "SELECT count(*) FROM items WHERE question IS NOT NULL AND state = 'claimed'"
        ).fetchone()
        waiting = int(row[0])  # type: ignore[index]
        counts["claimed"] -= waiting
        counts["needs_human"] = waiting
        # the items sent back from landing (a few, off items_rework): pending, shown apart
        row = self.conn.execute(
            "SELECT count(*) FROM items WHERE rework IS NOT NULL AND state = 'pending'"
        ).fetchone()
        rework = int(row[0])  # type: ignore[index]
        counts["pending"] -= rework
        counts["needs_rework"] = rework
        return counts

    def queued_items(self, limit: int) -> list[Item]:
        return self._items(
            "state = 'queued'",
            (),
            f"ORDER BY submitted_at, id LIMIT {int(limit)}",
        )

    def access_token(self, secret_sha256: str) -> AccessToken | None:
        row = self.conn.execute(access_rows.select_by_hash("%s"), (secret_sha256,)).fetchone()
        return None if row is None else access_rows.token_of(row)

    def access_token_hash(self, ref: str) -> str | None:
        row = self.conn.execute(access_rows.select_by_ref("%s"), (ref,)).fetchone()
        return None if row is None else str(row[0])

    def access_tokens(self) -> list[AccessToken]:
        return [access_rows.token_of(row) for row in self.conn.execute(access_rows.SELECT_ALL)]

    def insert_access_token(self, name: str, machine: bool, secret_sha256: str, now: float) -> int:
        row = self.conn.execute(
            access_rows.insert("%s") + " RETURNING id", (name, machine, secret_sha256, now)
        ).fetchone()
        assert row is not None  # RETURNING answers one row per row inserted
        return int(row[0])

    def revoke_access_token(self, token_id: int, now: float) -> bool:
        return self.conn.execute(access_rows.revoke("%s"), (now, token_id)).rowcount > 0

    def touch_access_token(self, token_id: int, now: float) -> None:
        since = now - access_rows.TOUCH_SECONDS
        self.conn.execute(access_rows.touch("%s"), (now, token_id, since))

    def landing_lease(self) -> LandingLease | None:
        row = self.conn.execute(
            "SELECT holder, token, expires_at FROM landing_lease WHERE name = 'main'"
        ).fetchone()
        return None if row is None else LandingLease(row[0], int(row[1]), row[2])

    def set_landing_lease(self, holder: str | None, token: int, expires_at: float | None) -> None:
        self.conn.execute(
            "INSERT INTO landing_lease (name, holder, token, expires_at) "
            "VALUES ('main', %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
            "holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at",
            (holder, token, expires_at),
        )

    def claims_ending_between(self, start: float, end: float, limit: int) -> list[Item]:
        return self._items(
            "state = 'claimed' AND question IS NULL AND lease_expires_at > %s "
            "AND lease_expires_at <= %s",
            (start, end),
            f"ORDER BY lease_expires_at, id LIMIT {int(limit)}",
        )

    def replies(self, item_id: int, after: int = 0, limit: int = -1) -> list[Reply]:
        return [
            Reply(*row)
            for row in self.conn.execute(
                "SELECT id, item_id, author, body, created_at FROM replies "
                "WHERE item_id = %s AND id > %s ORDER BY id LIMIT %s",
                (item_id, after, None if limit < 0 else limit),  # LIMIT NULL: all
            )
        ]

    def acks(self, item_id: int) -> list[tuple[str, float]]:
        return [
            (agent, at)
            for agent, at in self.conn.execute(
                "SELECT agent, created_at FROM acks WHERE item_id = %s "
                'ORDER BY created_at, agent COLLATE "C"',
                (item_id,),
            )
        ]

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
                'ORDER BY last_seen DESC, name COLLATE "C"'
            )
        ]

    def events_after(
        self, seq: int, limit: int, item_id: int | None = None, max_bytes: int | None = None
    ) -> list[Event]:
        where = "seq > %s" if item_id is None else "item_id = %s AND seq > %s"
        params: tuple[int, ...] = (seq,) if item_id is None else (item_id, seq)
        if max_bytes is None:
            rows = self.conn.execute(
                f"SELECT {_EVENT_COLUMNS}, {_ITEM_KEY}, provenance FROM events e "
                f"WHERE {where} ORDER BY seq LIMIT %s",
                (*params, limit),
            )
        else:  # the server sums the sizes and sends only the events within the budget
            rows = self.conn.execute(
                f"SELECT {_EVENT_COLUMNS}, {_ITEM_KEY}, provenance FROM (SELECT "
                f"{_EVENT_COLUMNS}, provenance, octet_length(details::text) AS size, "
                "sum(octet_length(details::text)) OVER (ORDER BY seq) AS upto "
                f"FROM events WHERE {where} ORDER BY seq LIMIT %s) e "
                "WHERE upto - size < %s ORDER BY seq",
                (*params, limit, max_bytes),
            )
        return [Event(*row) for row in rows]

    def last_seq(self) -> int:
        row = self.conn.execute("SELECT last_seq FROM board_counters").fetchone()
        return int(row[0]) if row else 0

    def inbox_cursor(self, agent: str) -> int:
        row = self.conn.execute("SELECT inbox_seq FROM agents WHERE name = %s", (agent,)).fetchone()
        return int(row[0]) if row else 0

    def inbox_events(self, agent: str, after_seq: int, limit: int) -> list[Event]:
        rows = self.conn.execute(_INBOX_SQL, {"after": after_seq, "me": agent, "limit": limit})
        return [Event(*row) for row in rows]

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
        # The sequence number comes from the counter row, locked to this transaction's end:
        # gapless (a rollback gives it back) and in commit order (the next writer waits).
        row = self.conn.execute(
            "WITH next AS (UPDATE board_counters SET last_seq = last_seq + 1 "
            "RETURNING last_seq) "
            "INSERT INTO events (seq, at, agent, item_id, kind, details, provenance) "
            "VALUES ((SELECT last_seq FROM next), %s, %s, %s, %s, %s::json, %s::json) "
            "RETURNING seq",
            (
                at,
                agent,
                item_id,
                kind,
                _compact_json(details),
                None if provenance is None else _compact_json(provenance),
            ),
        ).fetchone()
        self.appended_seq = int(row[0])  # type: ignore[index]
        return self.appended_seq

    def touch_agent(self, name: str, now: float, *, worked: bool = False) -> None:
        if worked:  # once per agent and daemon: the mark is never taken back
            self.conn.execute(
                "INSERT INTO agents (name, first_seen, last_seen, worked) "
                "VALUES (%s, %s, %s, TRUE) "
                "ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen, worked = TRUE",
                (name, now, now),
            )
            return
        self.conn.execute(
            "INSERT INTO agents (name, first_seen, last_seen) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen",
            (name, now, now),
        )

    def delete_agents(self, names: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM agents WHERE name = ANY(%s)", (list(names),))

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
        row = self.conn.execute(
            "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, reason, "
            "created_at, expires_at, rule) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "RETURNING id",
            (
                agent,
                pattern,
                patterns.literal_prefix(pattern),
                int(exclusive),
                item_id,
                reason,
                now,
                expires_at,
                patterns.RULE,
            ),
        ).fetchone()
        return int(row[0])  # type: ignore[index]

    def delete_reservations(self, ids: Iterable[int]) -> None:
        self.conn.execute("DELETE FROM reservations WHERE id = ANY(%s)", (list(ids),))

    def extend_item_reservations(self, item_id: int, agent: str, expires_at: float) -> None:
        self.conn.execute(
            "UPDATE reservations SET expires_at = %s WHERE item_id = %s AND agent = %s",
            (expires_at, item_id, agent),
        )

    def delete_item_reservations(self, item_id: int, agent: str | None) -> None:
        if agent is None:
            self.conn.execute("DELETE FROM reservations WHERE item_id = %s", (item_id,))
        else:
            self.conn.execute(
                "DELETE FROM reservations WHERE item_id = %s AND agent = %s", (item_id, agent)
            )

    def purge_expired_reservations(self, now: float) -> None:
        self.conn.execute("DELETE FROM reservations WHERE expires_at <= %s", (now,))

    def add_reply(self, item_id: int, author: str, body: str, now: float) -> int:
        row = self.conn.execute(
            "INSERT INTO replies (item_id, author, body, created_at) VALUES (%s, %s, %s, %s) "
            "RETURNING id",
            (item_id, author, body, now),
        ).fetchone()
        return int(row[0])  # type: ignore[index]

    def add_ack(self, item_id: int, agent: str, now: float) -> bool:
        cursor = self.conn.execute(
            "INSERT INTO acks (item_id, agent, created_at) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (item_id, agent, now),
        )
        return cursor.rowcount == 1

    def set_inbox_cursor(self, agent: str, seq: int, now: float) -> None:
        self.touch_agent(agent, now)
        self.conn.execute(
            "UPDATE agents SET inbox_seq = greatest(inbox_seq, %s) WHERE name = %s", (seq, agent)
        )


@functools.lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """The guard's SQLite query in psycopg's placeholders (its text holds no other '?')."""
    return sql.replace("?", "%s")


_compact_json = json.JSONEncoder(separators=(",", ":")).encode
