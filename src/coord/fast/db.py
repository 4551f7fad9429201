"""SQLite for the guard: the C module alone.

``import sqlite3`` loads ``datetime`` (and with it ``math`` and ``collections.abc``) only to
register adapters for dates, which the guard never binds: ~3.5 ms of a hook that runs before
every tool call. The ``sqlite3`` package is a thin layer over ``_sqlite3``, whose connection,
cursor and exception classes are the very ones ``sqlite3`` exports (``sqlite3.Error is
_sqlite3.Error``), so what the guard reads, and how it fails, does not change.
"""

from __future__ import annotations

try:
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter that does not ship the C module apart
    import sqlite3  # type: ignore[no-redef]

__all__ = ["sqlite3"]
