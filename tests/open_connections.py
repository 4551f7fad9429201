"""Every SQLite connection a test opens is closed by the end of that test.

A connection left open is garbage collected some time later, in whichever test happens to run
then; Python 3.13 warns (``ResourceWarning: unclosed database``) and ``filterwarnings = error``
turns that into a failure of an innocent test. So the leak is caught where it is made, on every
Python: ``sqlite3.connect`` is wrapped for the session, each connection made during a test is
kept (strongly, so the garbage collector cannot hide it and no warning fires elsewhere) with
where it was made, and after the test's own fixtures are torn down every one still open fails
the test, naming that place. The wrapper closes it then, so one leak fails one test.

Connections made while a fixture wider than a function is set up (a module's board, say) belong
to that fixture: its teardown, later, must have closed them, or it fails the test it ends in.
"""

from __future__ import annotations

import sqlite3
import traceback
from collections.abc import Generator, Iterator
from typing import Any

import pytest

_real_connect = sqlite3.connect
# (connection, where it was made) for the test running now; None between tests
Made = list[tuple[sqlite3.Connection, traceback.StackSummary]]
_made: Made | None = None
# the connections of each module, class, package or session fixture, and the one being set up
_of_wider_fixture: dict[int, Made] = {}
_wider_setting_up: list[Made] = []


def _tracked_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    conn = _real_connect(*args, **kwargs)
    made = _wider_setting_up[-1] if _wider_setting_up else _made
    if made is not None:
        made.append((conn, traceback.extract_stack(limit=12)[:-1]))
    return conn


def _is_open(conn: sqlite3.Connection) -> bool:
    try:
        conn.total_changes  # noqa: B018 (the attribute read is the test: a closed one raises)
    except sqlite3.ProgrammingError:
        return False
    return True


def pytest_sessionstart(session: pytest.Session) -> None:
    sqlite3.connect = _tracked_connect


def pytest_sessionfinish(session: pytest.Session) -> None:
    sqlite3.connect = _real_connect


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
    if fixturedef.scope == "function":
        return (yield)
    made = _of_wider_fixture.setdefault(id(fixturedef), [])
    _wider_setting_up.append(made)
    try:
        return (yield)
    finally:
        _wider_setting_up.pop()


def pytest_fixture_post_finalizer(fixturedef: pytest.FixtureDef[Any]) -> None:
    leaks = left_open(_of_wider_fixture.pop(id(fixturedef), []))
    if leaks:
        _fail(leaks, f"the {fixturedef.scope} fixture {fixturedef.argname!r}")


def _fail(leaks: list[str], maker: str) -> None:
    pytest.fail(
        f"{len(leaks)} SQLite connection(s) made by {maker} were left open (close the Board or "
        "storage, or the sqlite3 connection: a fixture, `with` or contextlib.closing); the "
        "first was made at:\n" + leaks[0],
        pytrace=False,
    )


def left_open(made: Made) -> list[str]:
    """Where each connection of ``made`` that is still open was made; closes them."""
    found = []
    for conn, where in made:
        if _is_open(conn):
            found.append("".join(traceback.format_list(where[-6:])))
            conn.close()
    return found


@pytest.fixture(autouse=True)
def every_sqlite_connection_closed() -> Iterator[None]:
    # autouse and defined in a plugin of the root conftest: set up before the test's other
    # function fixtures, so torn down after them (a `board` fixture has closed its board)
    global _made
    made: Made = []
    _made = made
    try:
        yield
    finally:
        _made = None
    leaks = left_open(made)
    if leaks:
        _fail(leaks, "this test")
