"""Moving a board between backends (`coord migrate`): every table of board state, one list.

The copy is driven by ``TABLES``, not by code per table: a source streams each table's rows in
key order in batches, a target loads them in one transaction, sets its counters so new writes
continue after the copied ones, and both sides' row counts and row digests (every column of
every row, ``Summary``) are compared before that transaction commits: a target that changes
what it is given (a trigger, a default, a type that rounds) fails the copy, not only one that
loses a row. Tables that hold no board state are named in ``NOT_COPIED`` with
the reason; a table in neither list is refused (a schema that grew one this release cannot
copy loses nothing silently), and a test holds both schemas to the lists.

Values travel in the SQLite form: JSON as text (what the SQLite backend writes), times as
float seconds since the epoch, integers (``exclusive`` is 0 or 1 on both backends). Each
backend's half (``sqlite_copy``, ``postgres_copy``) converts its own types.

Stdlib only: the PostgreSQL half is imported lazily, where a PostgreSQL end is opened.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from itertools import chain, zip_longest
from operator import itemgetter
from typing import Any, Protocol

from coord.errors import AlreadyExists, CoordError, InvalidInput
from coord.fast import board_files

BATCH_ROWS = 5000  # rows per batch read from the source and written to the target


@dataclass(frozen=True)
class Table:
    """A table of board state: its columns as both backends name them, its key (rows are read
    in its order and digested by it), and the counter that hands out that key, if any."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    counter: bool = False  # ids come from a counter that must continue after the copy
    # JSON columns PostgreSQL stores as jsonb, which respaces the text: digested by what the
    # JSON says (the ``json`` ones, evidence and details, keep their text on both backends)
    json: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # true/false columns: 0/1 in SQLite, booleans in PostgreSQL


def _table(
    name: str, columns: str, key: str, *, counter: bool = False, json: str = "", flags: str = ""
) -> Table:
    return Table(
        name,
        tuple(columns.split()),
        tuple(key.split()),
        counter,
        tuple(json.split()),
        tuple(flags.split()),
    )


# In load order: every table after the tables its foreign keys name.
TABLES: tuple[Table, ...] = (
    _table(
        "items",
        "id kind title body priority labels state created_by recipient claimed_by "
        "fencing_token lease_expires_at created_at updated_at closed_at key spec spec_line "
        "checks evidence question escalate_to reserved_for branch base_commit worktree "
        "submitted_head submitted_at merged_commit rework rework_for rework_until",
        "id",
        counter=True,
        json="labels checks",
    ),
    _table("deps", "item_id depends_on", "item_id depends_on"),
    _table("item_files", "item_id pattern", "item_id pattern"),
    _table("replies", "id item_id author body created_at", "id", counter=True),
    _table("acks", "item_id agent created_at", "item_id agent"),
    _table("agents", "name first_seen last_seen inbox_seq worked", "name", flags="worked"),
    _table(
        "reservations",
        "id agent pattern prefix exclusive item_id reason created_at expires_at rule",
        "id",
        counter=True,
    ),
    _table("events", "seq at agent item_id kind details provenance", "seq", counter=True),
    _table("landing_lease", "name holder token expires_at", "name"),
    _table(
        "asks",
        "id asker holder item_id token patterns reason created_at expires_at answer "
        "answer_reason deferred_until answered_at",
        "id",
        counter=True,
    ),
    _table(
        "access_tokens",
        "id name machine secret_sha256 created_at last_used_at revoked_at",
        "id",
        counter=True,
        flags="machine",
    ),
)
BY_NAME = {table.name: table for table in TABLES}

# Tables of either schema that are not copied, and why.
NOT_COPIED = {
    "schema_migrations": "each backend's own schema versions (independent numbering)",
    "board_counters": "PostgreSQL's item and event counters: set from the copied rows",
    "sqlite_sequence": "SQLite's AUTOINCREMENT counters: set from the copied rows",
    "daemons": "the daemons serving a shared database now: not board state",
    "waits": "places of waiting processes, leased by their heartbeats to the old daemon: "
    "they wait again on the new board",
    "item_counts": "derived: the target's own triggers count the items as they are copied in",
}


def unknown_tables(found: Sequence[str], where: str) -> None:
    """Refuse a board with a table this coord does not know how to copy."""
    unknown = sorted(set(found) - set(BY_NAME) - set(NOT_COPIED))
    if unknown:
        raise CoordError(
            f"{where} has tables this coord does not copy ({', '.join(unknown)}): a newer "
            "coord's (upgrade coord and migrate again) or your own (drop them first)",
        )


class Summary:
    """What one side holds of one table, read in key order (SQLite's byte order, PostgreSQL's
    ``COLLATE "C"``): its row count and a SHA-256 over every row in turn, each in a form
    neither backend's types change (``canonical``). A missing, extra or changed row, in any
    column, changes it."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.rows = 0
        self._hash = hashlib.sha256()
        self._json_at = tuple(table.columns.index(column) for column in table.json)
        self._flags_at = tuple(table.columns.index(column) for column in table.flags)
        self.key_of = itemgetter(*(table.columns.index(column) for column in table.key))
        self._read: dict[str, str] = {}

    def canonical(self, row: Sequence[Any]) -> bytes:
        """The row as bytes: JSON text by what it says (jsonb respaces what it stores),
        flags as 0/1 (PostgreSQL's are booleans, SQLite's integers), the rest as Python
        reads them (both drivers give int, float, str and None alike)."""
        if not (self._json_at or self._flags_at):
            return repr(tuple(row)).encode()
        values = list(row)
        for index in self._json_at:
            if isinstance(values[index], str):
                values[index] = self._json(values[index])
        for index in self._flags_at:
            if values[index] is not None:
                values[index] = int(values[index])
        return repr(values).encode()

    def _json(self, text: str) -> Any:
        """What the JSON says, as a repr: labels and checks repeat, so most are looked up."""
        found = self._read.get(text)
        if found is None:
            try:
                found = repr(json.loads(text))
            except ValueError:  # not JSON: compared as the text it is
                found = repr(text)
            if len(self._read) < _JSON_REMEMBERED:
                self._read[text] = found
        return _Verbatim(found)

    def add(self, rows: Iterable[Sequence[Any]]) -> None:
        """Rows in ``table.columns`` order, in the copy's value forms, in key order."""
        update, canonical = self._hash.update, self.canonical
        count = 0
        for row in rows:
            update(canonical(row))
            update(b"\n")  # never inside a repr
            count += 1
        self.rows += count

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


_JSON_REMEMBERED = 4096  # distinct JSON texts remembered per table and side


class _Verbatim(str):
    """A canonical JSON value already in repr form: written as it is into the row's repr."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def first_difference(
    table: Table,
    mine: Iterable[list[tuple[Any, ...]]],
    theirs: Iterable[list[tuple[Any, ...]]],
) -> tuple[Any, ...] | None:
    """The key of the first row (in key order) that is not the same on both sides, read
    again: only after the digests differed."""
    summary = Summary(table)
    single = len(table.key) == 1
    for one, other in zip_longest(chain.from_iterable(mine), chain.from_iterable(theirs)):
        if one is None or other is None or summary.canonical(one) != summary.canonical(other):
            keys = [summary.key_of(row) for row in (one, other) if row is not None]
            found = [(key,) if single else tuple(key) for key in keys]
            return min(found, key=_sort_key)
    return None


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    # text keys in byte order (SQLite's, and PostgreSQL's COLLATE "C"); None never in a key
    return tuple(k.encode() if isinstance(k, str) else k for k in key)


class Source(Protocol):
    """A board read in one snapshot. ``batches`` yields each table's rows (tuples in
    ``table.columns`` order, SQLite's value forms) in key order."""

    description: str

    def tables(self) -> list[str]: ...
    def batches(self, table: Table) -> Iterator[list[tuple[Any, ...]]]: ...
    def counters(self) -> dict[str, int]: ...


class Target(Protocol):
    """An empty board written in one transaction: nothing is visible until it commits."""

    description: str

    def occupied(self) -> dict[str, int]: ...
    def load(self, table: Table, rows: Iterable[tuple[Any, ...]]) -> None: ...
    def set_counters(self, counters: dict[str, int]) -> None: ...
    def batches(self, table: Table) -> Iterator[list[tuple[Any, ...]]]:
        """Every row the target holds now, read back as a source reads it (in key order)."""
        ...


@dataclass
class Report:
    source: str
    target: str
    tables: dict[str, dict[str, Any]]
    counters: dict[str, int]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "tables": self.tables,
            "counters": self.counters,
            "seconds": round(self.seconds, 3),
            "rows": sum(t["rows"] for t in self.tables.values()),
        }


def copy_board(
    source_cm: AbstractContextManager[Source], target_cm: AbstractContextManager[Target]
) -> Report:
    """Copy every table from the source's snapshot into the empty target, in the target's
    one transaction; verified (counts and row digests) before it commits. Any failure rolls
    the target back: it is left as empty as it was."""
    started = time.perf_counter()
    try:
        return _copy(source_cm, target_cm, started)
    except CoordError:
        raise
    except Exception as error:  # a driver's error outside a table's load (a lost connection)
        raise CoordError(f"the copy failed: {_first_line(error)}; nothing was copied") from error


def _copy(
    source_cm: AbstractContextManager[Source],
    target_cm: AbstractContextManager[Target],
    started: float,
) -> Report:
    with ExitStack() as stack:
        source = stack.enter_context(source_cm)
        unknown_tables(source.tables(), source.description)
        target = stack.enter_context(target_cm)
        occupied = target.occupied()
        if occupied:
            held = ", ".join(f"{name}: {rows}" for name, rows in occupied.items())
            instead = (
                "a new file (another path), or remove this one"
                if target.description.startswith("sqlite:")
                else "an empty database (`createdb NEWNAME`), or drop this one"
            )
            raise AlreadyExists(
                f"{target.description} already holds a board ({held}); nothing was copied. "
                f"Copy into {instead} if it is a copy you no longer need",
                occupied=occupied,
            )
        copied: dict[str, Summary] = {}
        for table in TABLES:
            summary = copied[table.name] = Summary(table)
            try:
                target.load(table, _counted(source.batches(table), summary))
            except CoordError:
                raise
            except Exception as error:  # the driver's refusal: say which table, roll back
                raise CoordError(
                    f"cannot copy table {table.name} into {target.description}: "
                    f"{_first_line(error)}; nothing was copied",
                    table=table.name,
                ) from error
        tables = {}
        for table in TABLES:
            mine, theirs = copied[table.name], Summary(table)
            for rows in target.batches(table):
                theirs.add(rows)
            digest = mine.hexdigest()
            if (mine.rows, digest) != (theirs.rows, theirs.hexdigest()):
                first = first_difference(table, source.batches(table), target.batches(table))
                raise _mismatch(table, mine, theirs, first, target.description)
            tables[table.name] = {"rows": mine.rows, "rows_sha256": digest}
        counters = source.counters()
        target.set_counters(counters)
        description = (source.description, target.description)
    # the target committed as the stack closed
    return Report(*description, tables, counters, time.perf_counter() - started)


def _counted(
    batches: Iterator[list[tuple[Any, ...]]], summary: Summary
) -> Iterator[tuple[Any, ...]]:
    """The source's rows one by one, each added to the source's summary on the way."""
    for rows in batches:
        summary.add(rows)
        yield from rows


def _mismatch(
    table: Table, mine: Summary, theirs: Summary, first: tuple[Any, ...] | None, target: str
) -> CoordError:
    what = {
        "items": "item",
        "replies": "reply",
        "reservations": "reservation",
        "events": "event",
    }.get(table.name, "row")
    where = ", ".join(map(str, first)) if first is not None else "?"
    return CoordError(
        f"the copy of table {table.name} does not match its source ({mine.rows} rows read, "
        f"{theirs.rows} written; first different: {what} {where}): {target} did not keep "
        "what it was given (a trigger or a rule of its own on that table?); nothing was "
        "copied: the target was rolled back",
        table=table.name,
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# --- where a board is --------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """One end of a copy: ``sqlite:PATH`` or a ``postgresql://`` URL."""

    kind: str  # "sqlite" or "postgresql"
    where: str  # the file's path, or the URL

    def __str__(self) -> str:
        return f"sqlite:{self.where}" if self.kind == "sqlite" else self.where


def location(text: str, option: str) -> Location:
    """Parse ``--to``/``--from``: InvalidInput naming the forms when it is neither."""
    if text.startswith("sqlite:"):
        path = text[len("sqlite:") :]
        if not path:
            raise InvalidInput(f"{option}: sqlite: names no file (sqlite:PATH)", field=option)
        return Location("sqlite", path)
    scheme = text.partition(":")[0].lower()
    if scheme in board_files.DATABASE_SCHEMES:
        return Location("postgresql", check_postgres_url(text, option))
    raise InvalidInput(
        f"{option}: {text!r} is neither postgresql://USER@HOST:PORT/DATABASE nor sqlite:PATH",
        field=option,
    )


def check_postgres_url(url: str, option: str) -> str:
    """``url`` if it names a PostgreSQL database without a password (the board's own rule for
    its ``database`` setting); the error names ``option``."""
    try:
        return board_files.check_database_url(url, field=option)
    except InvalidInput as err:
        raise InvalidInput(f"{option}: {err.message}", field=option) from None


def open_source(where: Location) -> AbstractContextManager[Source]:
    if where.kind == "sqlite":
        from coord.storage import sqlite_copy

        return sqlite_copy.SQLiteSource(where.where)
    return _postgres().PostgresSource(where.where)


def open_target(where: Location) -> AbstractContextManager[Target]:
    if where.kind == "sqlite":
        from coord.storage import sqlite_copy

        return sqlite_copy.SQLiteTarget(where.where)
    return _postgres().PostgresTarget(where.where)


def _postgres() -> Any:
    try:
        from coord.storage import postgres_copy
    except ImportError as error:
        raise CoordError(
            f"a PostgreSQL board needs its driver, which is not installed ({error}): "
            "pip install 'coord[postgres]'",
        ) from None
    return postgres_copy
