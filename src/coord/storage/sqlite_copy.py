"""SQLite's half of moving a board (``coord.storage.transfer``): a board file read in one
snapshot, or a new board file written in one transaction.

Values are already in the copy's form (SQLite's own: JSON as text, REAL seconds). Counters:
AUTOINCREMENT tables keep theirs in ``sqlite_sequence`` (ids are never reused, even of rows
deleted since, as expired reservations are); the event log has none (``max(seq) + 1``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from coord.errors import AlreadyExists, CoordError
from coord.storage import migrations
from coord.storage.sqlite import SQLiteStorage
from coord.storage.transfer import BATCH_ROWS, BY_NAME, TABLES, Table

BUSY_TIMEOUT_SECONDS = 5.0


def _connect(path: Path, mode: str) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(
            f"file:{path}?mode={mode}",
            uri=True,
            isolation_level=None,  # no implicit transactions: BEGIN and COMMIT are ours
            timeout=BUSY_TIMEOUT_SECONDS,
        )
    except sqlite3.Error as error:
        raise CoordError(f"cannot open the SQLite board {path}: {error}") from None
    try:
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as error:
        conn.close()
        raise CoordError(f"cannot open the SQLite board {path}: {error}") from None
    return conn


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def _batches(conn: sqlite3.Connection, table: Table) -> Iterator[list[tuple[Any, ...]]]:
    """The table's rows in key order (text keys in byte order: SQLite's BINARY collation)."""
    cursor = conn.execute(
        f"SELECT {', '.join(table.columns)} FROM {table.name} ORDER BY {', '.join(table.key)}"
    )
    while rows := cursor.fetchmany(BATCH_ROWS):
        yield rows


def _bring_up_to_date(path: Path, conn: sqlite3.Connection) -> None:
    """A coord board at this release's schema: an older one is migrated forward as any coord
    command opening it would; a newer one is refused; a file of something else too."""
    try:
        tables = _tables(conn)
    except sqlite3.Error as error:
        raise CoordError(f"{path} is not a SQLite database ({error})") from None
    if "schema_migrations" not in tables:
        raise CoordError(f"{path} is not a coord board (it has no schema_migrations table)")
    applied = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
    shipped = migrations.shipped("sqlite_migrations")
    migrations.refuse_newer(applied, shipped)
    if set(applied) != {version for version, _, _ in shipped}:
        SQLiteStorage(path).close()


class SQLiteSource:
    """A board file read in one snapshot. The snapshot is taken with ``BEGIN IMMEDIATE``:
    no other writer can change the board while it is copied (one that tries waits, then
    fails as busy, rather than writing what the copy would leave behind)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.description = f"sqlite:{self.path}"
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> SQLiteSource:
        if not self.path.is_file():
            raise CoordError(f"there is no SQLite board at {self.path}")
        conn = self._conn = _connect(self.path, "rw")
        try:
            _bring_up_to_date(self.path, conn)
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            conn.close()
            raise CoordError(
                f"cannot hold {self.path} still for the copy ({error}): another process is "
                "writing it; stop it and migrate again"
            ) from None
        except BaseException:
            conn.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")  # read only: nothing to keep
            self._conn.close()

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None, "used outside its with block"
        return self._conn

    def tables(self) -> list[str]:
        # SQLite's own (sqlite_sequence, sqlite_stat1 after an ANALYZE) are not the board's
        return [name for name in _tables(self.conn) if not name.startswith("sqlite_")]

    def batches(self, table: Table) -> Iterator[list[tuple[Any, ...]]]:
        return _batches(self.conn, table)

    def counters(self) -> dict[str, int]:
        """The last id each counter handed out: the larger of the table's highest key and
        its AUTOINCREMENT record (rows deleted since keep their ids taken)."""
        sequences = dict(self.conn.execute("SELECT name, seq FROM sqlite_sequence"))
        found = {}
        for table in TABLES:
            if table.counter:
                (highest,) = self.conn.execute(
                    f"SELECT coalesce(max({table.key[0]}), 0) FROM {table.name}"
                ).fetchone()
                found[table.name] = max(int(highest), int(sequences.get(table.name) or 0))
        return found


class SQLiteTarget:
    """A new board file (or an empty board's), written in one transaction. On any failure
    the transaction rolls back, and a file this copy created is removed."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.description = f"sqlite:{self.path}"
        self._conn: sqlite3.Connection | None = None
        self._created = False

    def __enter__(self) -> SQLiteTarget:
        if not self.path.exists():
            self._create()
        else:
            probe = _connect(self.path, "rw")
            try:
                _bring_up_to_date(self.path, probe)
            except CoordError as error:
                raise AlreadyExists(
                    f"{self.path} exists and is not an empty coord board ({error.message}): "
                    "name a new file"
                ) from None
            finally:
                probe.close()
        try:
            SQLiteStorage(self.path).close()  # the schema, as a new board has it
            conn = self._conn = _connect(self.path, "rw")
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._discard()
            raise
        return self

    def _create(self) -> None:
        """The new file, made here: 0600 as every board file, and never through a symbolic
        link (a dangling one would have the board written wherever it points)."""
        if self.path.is_symlink():
            raise CoordError(
                f"{self.path} is a symbolic link to {os.readlink(self.path)}, which does not "
                "exist: coord migrate never makes a board file through a link; name the file "
                "itself, or remove the link; nothing was copied"
            )
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # made meanwhile by someone else: not ours to fill or remove
            raise AlreadyExists(f"{self.path} appeared during the copy: name a new file") from None
        except OSError as error:
            raise CoordError(
                f"cannot create {self.path}: {error.strerror}; nothing was copied"
            ) from None
        os.close(fd)
        self._created = True

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None:
            self._discard()
            return
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self._discard()
            raise
        self.conn.close()
        self._conn = None

    def _discard(self) -> None:
        """Roll back and close; remove the file if this copy created it."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            self._conn.close()
            self._conn = None
        if self._created:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.path}{suffix}").unlink()

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None, "used outside its with block"
        return self._conn

    def occupied(self) -> dict[str, int]:
        found = {}
        for table in TABLES:
            (rows,) = self.conn.execute(f"SELECT count(*) FROM {table.name}").fetchone()
            if rows:
                found[table.name] = int(rows)
        return found

    def load(self, table: Table, rows: Iterable[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" for _ in table.columns)
        self.conn.executemany(
            f"INSERT INTO {table.name} ({', '.join(table.columns)}) VALUES ({marks})", rows
        )

    def set_counters(self, counters: dict[str, int]) -> None:
        autoincrement = {
            name
            for (name,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%'"
            )
        }
        for name, last in counters.items():
            if name in autoincrement:
                self.conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (name,))
                self.conn.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, last)
                )
            else:  # the next key is max + 1: the copied rows already say where it goes on
                (highest,) = self.conn.execute(
                    f"SELECT coalesce(max({BY_NAME[name].key[0]}), 0) FROM {name}"
                ).fetchone()
                if highest != last:
                    raise CoordError(
                        f"{name}: the source's counter is at {last} but its last row is "
                        f"{highest}; a SQLite board cannot continue from there"
                    )

    def batches(self, table: Table) -> Iterator[list[tuple[Any, ...]]]:
        return _batches(self.conn, table)
