"""The PostgreSQL tier of the tests: a fresh database per test, cloned from a migrated template.

The server is the one at ``COORD_TEST_PG`` (default: the local PostgreSQL 15 every machine
of this project runs, trust authentication). Tests of the tier carry the ``postgres`` mark.
Without the driver or the server they are left out of the run with one line saying why;
under ``CI=true`` they must not be left out: they run, and fail with the reason.

Each test gets ``CREATE DATABASE … TEMPLATE`` of a template migrated once per test session
(a file copy, far faster than running the migrations), dropped after the test.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

ADMIN_DSN = os.environ.get("COORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
_names = itertools.count(1)


@functools.cache
def unavailable() -> str | None:
    """Why the PostgreSQL tier cannot run here, or None when it can."""
    try:
        import psycopg
    except ImportError:
        return "the driver is not installed (pip install -e '.[postgres]')"
    try:
        psycopg.connect(ADMIN_DSN, connect_timeout=3).close()
    except psycopg.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"no PostgreSQL server at {_where()} ({first})"
    return None


def require_postgres() -> None:
    """Skip the test when the tier cannot run here; fail it under CI, where it must."""
    reason = unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tier must run under CI=true, but {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tier skipped: {reason}")


def _where() -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(ADMIN_DSN)
    return f"{parts.hostname}:{parts.port or 5432}"


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(sql.encode())


def dsn_of(database: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(ADMIN_DSN, dbname=database)


@functools.cache
def _template() -> str:
    """The migrated template of this test session (one per process: runs may overlap)."""
    from coord.storage.postgres import PostgresStorage

    name = f"coord_template_{os.getpid()}"
    _admin(f"DROP DATABASE IF EXISTS {name}")
    _admin(f"CREATE DATABASE {name}")
    PostgresStorage(dsn_of(name)).close()
    return name


def drop_template() -> None:
    if _template.cache_info().currsize:
        with suppress(Exception):
            _admin(f"DROP DATABASE IF EXISTS {_template()} WITH (FORCE)")


@contextmanager
def fresh_database() -> Iterator[str]:
    """The connection string of a new, migrated, empty board database; dropped after."""
    require_postgres()
    name = f"coord_t_{os.getpid()}_{next(_names)}"
    _admin(f"CREATE DATABASE {name} TEMPLATE {_template()}")
    try:
        yield dsn_of(name)
    finally:
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: the PostgreSQL tier (tests/pg_support.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tier = [item for item in items if item.get_closest_marker("postgres")]
    if not tier or os.environ.get("CI") == "true" or unavailable() is None:
        return
    config.hook.pytest_deselected(items=tier)
    items[:] = [item for item in items if not item.get_closest_marker("postgres")]
    config.stash[_LEFT_OUT] = len(tier)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    left_out = terminalreporter.config.stash.get(_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"PostgreSQL tier skipped ({left_out} tests): {unavailable()}", yellow=True
        )


_LEFT_OUT = pytest.StashKey[int]()


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    with fresh_database() as dsn:
        yield dsn


@pytest.fixture(scope="session", autouse=True)
def _drop_pg_template() -> Iterator[None]:
    yield
    drop_template()


def open_storage(dsn: str, **options: Any) -> Any:
    from coord.storage.postgres import PostgresStorage

    return PostgresStorage(dsn, **options)
