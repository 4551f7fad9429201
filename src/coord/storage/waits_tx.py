"""The waiters' queue and the asks, in SQL both backends read alike (issue 26).

One mixin for ``SQLiteTx`` and ``PostgresTx``: the statements are plain SQL with ``?``
placeholders, which each backend's ``_sql`` turns into its driver's. Rows come back as
nouns (``Wait``, ``Ask``); which waiter is granted, and when, is the core's rule
(``coord.core.waiting``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from coord.model import Ask, Wait

_WAIT_COLUMNS = (
    "id, agent, item_id, patterns, lease_seconds, created_at, expires_at, state, ended_at, "
    "token, outcome"
)
_ASK_COLUMNS = (
    "id, asker, holder, item_id, token, patterns, reason, created_at, expires_at, answer, "
    "answer_reason, deferred_until, answered_at"
)


def _wait(row: Sequence[Any]) -> Wait:
    return Wait(
        id=int(row[0]),
        agent=row[1],
        item_id=None if row[2] is None else int(row[2]),
        patterns=tuple(json.loads(row[3])),
        lease_seconds=float(row[4]),
        created_at=float(row[5]),
        expires_at=float(row[6]),
        state=row[7],
        ended_at=row[8],
        token=None if row[9] is None else int(row[9]),
        outcome=row[10],
    )


def _ask(row: Sequence[Any]) -> Ask:
    return Ask(
        id=int(row[0]),
        asker=row[1],
        holder=row[2],
        item_id=None if row[3] is None else int(row[3]),
        token=None if row[4] is None else int(row[4]),
        patterns=tuple(json.loads(row[5])),
        reason=row[6],
        created_at=float(row[7]),
        expires_at=float(row[8]),
        answer=row[9],
        answer_reason=row[10],
        deferred_until=row[11],
        answered_at=row[12],
    )


class WaitsTx:
    """The verbs of ``ReadTx``/``WriteTx`` for waits and asks (``coord.storage.base``)."""

    def _sql(self, sql: str) -> str:
        return sql  # SQLite's placeholders; PostgreSQL's transaction says its own

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        # the backend's connection, typed there (an annotation here would retype it for the
        # whole transaction class, which lists this mixin first)
        return getattr(self, "conn").execute(self._sql(sql), tuple(params))  # noqa: B009

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        return self._run(sql, params).fetchone()

    # --- reads -----------------------------------------------------------------------------

    def get_wait(self, wait_id: int) -> Wait | None:
        row = self._one(f"SELECT {_WAIT_COLUMNS} FROM waits WHERE id = ?", (wait_id,))
        return None if row is None else _wait(row)

    def waiting(self, now: float, limit: int) -> list[Wait]:
        rows = self._run(
            (
                f"SELECT {_WAIT_COLUMNS} FROM waits WHERE state = 'waiting' AND expires_at > ? "
                "ORDER BY id LIMIT ?"
            ),
            (now, limit),
        )
        return [_wait(row) for row in rows]

    def get_ask(self, ask_id: int) -> Ask | None:
        row = self._one(f"SELECT {_ASK_COLUMNS} FROM asks WHERE id = ?", (ask_id,))
        return None if row is None else _ask(row)

    def open_asks(self, holder: str, now: float, limit: int) -> list[Ask]:
        rows = self._run(
            (
                f"SELECT {_ASK_COLUMNS} FROM asks WHERE holder = ? AND answer IS NULL "
                "AND expires_at > ? ORDER BY id LIMIT ?"
            ),
            (holder, now, limit),
        )
        return [_ask(row) for row in rows]

    # --- writes ----------------------------------------------------------------------------

    def insert_wait(
        self,
        *,
        agent: str,
        item_id: int | None,
        patterns: Sequence[str],
        lease_seconds: float,
        now: float,
        expires_at: float,
    ) -> int:
        row = self._one(
            "INSERT INTO waits (agent, item_id, patterns, lease_seconds, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (agent, item_id, json.dumps(list(patterns)), lease_seconds, now, expires_at),
        )
        return int(row[0])

    def renew_wait(self, wait_id: int, expires_at: float) -> None:
        self._run(
            ("UPDATE waits SET expires_at = ? WHERE id = ? AND state = 'waiting'"),
            (expires_at, wait_id),
        )

    def end_wait(
        self, wait_id: int, state: str, now: float, *, token: int | None = None, outcome: str = ""
    ) -> None:
        self._run(
            (
                "UPDATE waits SET state = ?, ended_at = ?, token = ?, outcome = ? "
                "WHERE id = ? AND state = 'waiting'"
            ),
            (state, now, token, outcome, wait_id),
        )

    def insert_ask(
        self,
        *,
        asker: str,
        holder: str,
        item_id: int | None,
        token: int | None,
        patterns: Sequence[str],
        reason: str,
        now: float,
        expires_at: float,
    ) -> int:
        row = self._one(
            "INSERT INTO asks (asker, holder, item_id, token, patterns, reason, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (asker, holder, item_id, token, json.dumps(list(patterns)), reason, now, expires_at),
        )
        return int(row[0])

    def answer_ask(
        self, ask_id: int, answer: str, reason: str, deferred_until: float | None, now: float
    ) -> None:
        self._run(
            (
                "UPDATE asks SET answer = ?, answer_reason = ?, deferred_until = ?, "
                "answered_at = ? WHERE id = ?"
            ),
            (answer, reason, deferred_until, now, ask_id),
        )
