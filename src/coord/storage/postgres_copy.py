"""PostgreSQL's half of moving a board (``coord.storage.transfer``): a board database read in
one snapshot, or an empty database filled in one transaction through ``COPY``.

Imported only by ``coord migrate`` with a PostgreSQL end (it imports the driver).

- **Target**: the database must hold nothing but (at most) an empty coord board; its schema
  is made or brought up to date by ``PostgresStorage`` (which refuses a newer one). The copy
  then runs in one transaction that holds the board's write lock (a daemon already serving
  the database waits), checks the board is empty under that lock, streams each table with
  ``COPY … FROM STDIN``, sets ``board_counters`` and the reply and reservation sequences, and
  commits only after the row counts and row digests (every column, read back as a source
  reads it) match the source's.
- **Source**: one REPEATABLE READ snapshot; each table through a server-side cursor in
  batches. JSON comes back as text in the form the SQLite backend writes: ``json`` columns
  verbatim, ``jsonb`` ones (which PostgreSQL normalises) re-encoded as both backends encode
  them (``json.dumps``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

import psycopg
from psycopg import sql

from coord.errors import AlreadyExists, CoordError, InvalidInput
from coord.storage import postgres_conn
from coord.storage.postgres import WRITE_LOCK_KEY, PostgresStorage, describe
from coord.storage.transfer import BATCH_ROWS, BY_NAME, NOT_COPIED, TABLES, Table

CONNECT_TIMEOUT_SECONDS = 10
# A copy's statements are the largest a board sees (a whole table through COPY, which the
# server may take minutes to absorb: 150 s for 100,000 items, its counting trigger a row at a
# time), so neither side bounds them; a person runs it and watches it (Ctrl-C ends it, and
# the target rolls back). TCP keepalives and tcp_user_timeout still find a dead peer.
BOUNDS = postgres_conn.Bounds(connect=CONNECT_TIMEOUT_SECONDS, answer=None)
# the sequences behind BIGSERIAL keys; items and events count in board_counters
_COUNTER_COLUMNS = {"items": "last_item", "events": "last_seq"}


def _connect(url: str) -> psycopg.Connection[Any]:
    try:
        return postgres_conn.connect(url, BOUNDS, autocommit=True)
    except psycopg.ProgrammingError as error:  # libpq could not read the connection string
        raise InvalidInput(f"not a usable PostgreSQL URL: {_first_line(error)}") from None
    except psycopg.OperationalError as error:
        raise CoordError(
            f"cannot reach the PostgreSQL database {describe(url)}: {_last_line(error)}; check "
            "that the server runs, the database exists (`createdb NAME`) and the URL is right",
        ) from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _last_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[-1].strip() if text else "refused"


def _tables(conn: psycopg.Connection[Any]) -> list[str]:
    """Every table the connection's search path shows (a board lives in one schema)."""
    return [
        name
        for (name,) in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()"
        )
    ]


def _open_board(url: str) -> None:
    """The board's schema made or brought to this release's (a newer one is refused)."""
    PostgresStorage(url, connect_timeout=CONNECT_TIMEOUT_SECONDS).close()


class _Ends:
    def __init__(self, url: str) -> None:
        self.url = url
        self.description = describe(url)
        self._conn: psycopg.Connection[Any] | None = None

    @property
    def conn(self) -> psycopg.Connection[Any]:
        assert self._conn is not None, "used outside its with block"
        return self._conn

    def _close(self, end: str | None = None) -> None:
        """Run ``end`` (COMMIT, ROLLBACK) and close; closing alone rolls back."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if end is not None:
                conn.execute(end)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.close()


class PostgresSource(_Ends):
    def __enter__(self) -> PostgresSource:
        conn = self._conn = _connect(self.url)
        try:
            if "schema_migrations" not in _tables(conn):
                raise CoordError(f"{self.description} holds no coord board")
            _open_board(self.url)
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._types = _column_types(conn)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(psycopg.Error):
            self._close("ROLLBACK")  # read only: nothing to keep

    def tables(self) -> list[str]:
        return _tables(self.conn)

    def batches(self, table: Table) -> Iterator[list[tuple[Any, ...]]]:
        return _batches(self.conn, table, self._types)

    def counters(self) -> dict[str, int]:
        last_seq, last_item = self.conn.execute(
            "SELECT last_seq, last_item FROM board_counters"
        ).fetchone() or (0, 0)
        found = {"items": int(last_item), "events": int(last_seq)}
        for table in TABLES:
            if table.counter and table.name not in _COUNTER_COLUMNS:
                found[table.name] = _sequence_value(self.conn, table)
        return found


def _column_types(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], str]:
    return {
        (table, column): kind
        for table, column, kind in conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema()"
        )
    }


def _batches(
    conn: psycopg.Connection[Any], table: Table, types: dict[tuple[str, str], str]
) -> Iterator[list[tuple[Any, ...]]]:
    """The table's rows in key order, in the copy's value forms, a batch at a time through a
    server-side cursor (inside the connection's transaction)."""
    kinds = [types.get((table.name, column)) for column in table.columns]
    selected = sql.SQL(", ").join(
        sql.SQL("{}::text").format(sql.Identifier(column))
        if kind in ("json", "jsonb")
        else sql.Identifier(column)
        for column, kind in zip(table.columns, kinds, strict=True)
    )
    query = sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
        selected, sql.Identifier(table.name), _key_order(table, types)
    )
    reencode = [i for i, kind in enumerate(kinds) if kind == "jsonb"]
    with conn.cursor(name=f"coord_copy_{table.name}") as cursor:
        cursor.itersize = BATCH_ROWS
        cursor.execute(query)
        while rows := cursor.fetchmany(BATCH_ROWS):
            if reencode:
                rows = [_reencoded(row, reencode) for row in rows]
            yield rows


def _reencoded(row: tuple[Any, ...], columns: list[int]) -> tuple[Any, ...]:
    """jsonb's text of an array of strings (labels, checks) in ``json.dumps``'s form. The two
    differ only where jsonb writes a character as itself and ``json.dumps`` escapes it
    (beyond ASCII, and DEL): printable ASCII text is kept as it is, the rest re-encoded."""
    values = list(row)
    for i in columns:
        text = values[i]
        if text is not None and not (text.isascii() and text.isprintable()):
            values[i] = json.dumps(json.loads(text))
    return tuple(values)


def _key_order(table: Table, types: dict[tuple[str, str], str]) -> sql.Composable:
    """The key in byte order, as SQLite sorts it (``COLLATE "C"`` on text)."""
    return sql.SQL(", ").join(
        sql.SQL('{} COLLATE "C"').format(sql.Identifier(column))
        if types.get((table.name, column)) == "text"
        else sql.Identifier(column)
        for column in table.key
    )


def _sequence_value(conn: psycopg.Connection[Any], table: Table) -> int:
    """The last id the table's BIGSERIAL handed out (deleted rows keep theirs taken)."""
    key = table.key[0]
    row = conn.execute(
        sql.SQL(
            "SELECT greatest(coalesce(max({key}), 0), "
            "(SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
            "   FROM {seq})) FROM {table}"
        ).format(
            key=sql.Identifier(key),
            seq=sql.Identifier(_sequence_name(conn, table)),
            table=sql.Identifier(table.name),
        )
    ).fetchone()
    return int(row[0]) if row else 0


def _sequence_name(conn: psycopg.Connection[Any], table: Table) -> str:
    row = conn.execute(
        "SELECT s.relname FROM pg_class s JOIN pg_depend d ON d.objid = s.oid "
        "JOIN pg_class t ON t.oid = d.refobjid "
        "WHERE s.relkind = 'S' AND t.relname = %s AND t.relnamespace = s.relnamespace",
        (table.name,),
    ).fetchone()
    if row is None:
        raise CoordError(f"table {table.name} has no sequence for its ids")
    return str(row[0])


class PostgresTarget(_Ends):
    def __enter__(self) -> PostgresTarget:
        conn = self._conn = _connect(self.url)
        try:
            strangers = sorted(set(_tables(conn)) - set(BY_NAME) - set(NOT_COPIED))
            if strangers:
                raise AlreadyExists(
                    f"{self.description} holds tables that are not a coord board's "
                    f"({', '.join(strangers)}); nothing was copied. Name an empty database "
                    "(`createdb NEWNAME`)",
                    tables=strangers,
                )
            _open_board(self.url)
            # one transaction under the board's write lock: a daemon already serving this
            # database waits, and finds the whole board or none of it
            conn.execute(
                "BEGIN ISOLATION LEVEL READ COMMITTED; "
                f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})".encode()
            )
            self._types = _column_types(conn)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            try:
                self._close("COMMIT")
            except psycopg.Error as error:
                raise CoordError(
                    f"the copy into {self.description} could not be committed: "
                    f"{_first_line(error)}; run migrate again once the database answers"
                ) from None
        else:
            with contextlib.suppress(psycopg.Error):
                self._close("ROLLBACK")

    def occupied(self) -> dict[str, int]:
        found = {}
        for table in TABLES:
            query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table.name))
            (rows,) = self.conn.execute(query).fetchone() or (0,)
            if rows:
                found[table.name] = int(rows)
        last_seq, last_item = self.conn.execute(
            "SELECT last_seq, last_item FROM board_counters"
        ).fetchone() or (0, 0)
        if not found and (last_seq or last_item):  # emptied by hand: its numbers were taken
            found["board_counters"] = int(last_seq)
        return found

    def load(self, table: Table, rows: Iterable[tuple[Any, ...]]) -> None:
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, table.columns))
        )
        with self.conn.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    def set_counters(self, counters: dict[str, int]) -> None:
        self.conn.execute(
            "UPDATE board_counters SET last_seq = %s, last_item = %s",
            (counters.get("events", 0), counters.get("items", 0)),
        )
        for table in TABLES:
            if table.counter and table.name not in _COUNTER_COLUMNS:
                last = counters.get(table.name, 0)
                self.conn.execute(
                    "SELECT setval(%s, %s, %s)",
                    (_sequence_name(self.conn, table), max(last, 1), last > 0),
                )

    def batches(self, table: Table) -> Iterator[list[tuple[Any, ...]]]:
        return _batches(self.conn, table, self._types)
