"""Live reservations, read from the board: the one query, for the daemon and the guard alike.

The daemon's storage (``coord.storage.sqlite_tx``) asks it inside its own transactions; the
guard, every edit hook and ``coord guard`` ask it read-only from ``board.db`` with no daemon,
before every edit (``read_live``). One SQL text, so "live" and "near" cannot come to mean two
things: live is ``expires_at`` after the board's clock; near a set of canonical patterns is
every reservation whose literal prefix is an ancestor of, equal to, or beneath one of theirs
(only those can overlap them), found through the indexed ``prefix`` column. The column holds
the prefix's widest key (``patterns.search_prefix``: NFC, case folded), so the search finds every
spelling a file system could take for one file; the caller's overlap rule then compares by
the board's own fold (``coord.fast.fsfold``).

Stdlib only (and ``coord.fast.patterns``): hooks run before every edit.
"""

from __future__ import annotations

import os
import time

from coord.fast import patterns
from coord.fast.db import sqlite3

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

COLUMNS = "id, agent, pattern, exclusive, item_id, reason, created_at, expires_at, rule"
# what tells one set of live exclusive reservations from another for the after-tool check's
# kept watch list (coord.fast.watchlist): read before every tool call, so no more
WATCH_COLUMNS = "id, agent, pattern, rule"
# Past a few hundred prefixes (a page of listed items) one range per prefix would make
# SQLite's expression tree too deep, while reading every live reservation stays cheap.
MAX_NEAR_PREFIXES = 200


class BoardUnreadable(Exception):
    """The board file is missing or cannot be read: the guard refuses (fail closed)."""


class Held:
    """A live reservation as the guard reads it: the columns of ``COLUMNS``, without the
    core's dataclasses (``coord.model`` costs more to import than the whole guard)."""

    __slots__ = (
        "agent",
        "created_at",
        "exclusive",
        "expires_at",
        "id",
        "item_id",
        "pattern",
        "reason",
        "rule",
    )

    def __init__(
        self,
        id: int,
        agent: str,
        pattern: str,
        exclusive: int,
        item_id: int | None,
        reason: str | None,
        created_at: float,
        expires_at: float,
        rule: int,
    ) -> None:
        self.id = id
        self.agent = agent
        self.pattern = pattern
        self.exclusive = bool(exclusive)
        self.item_id = item_id
        self.reason = reason
        self.created_at = created_at
        self.expires_at = expires_at
        self.rule = rule  # the overlap rule it was granted under (migration 0007)


def select_live(
    now: float,
    *,
    near: Iterable[str] | None = None,
    agent: str | None = None,
    exclusive_only: bool = False,
    columns: str = COLUMNS,
) -> tuple[str, list[Any]] | None:
    """The SELECT of the reservations live at ``now`` (``columns``, oldest first) and its
    parameters: of one ``agent``, or (``near``) at least every one that could overlap those
    canonical patterns. None when ``near`` is empty: nothing is near no pattern."""
    where = ["expires_at > ?"]
    params: list[Any] = [now]
    if exclusive_only:
        where.append("exclusive = 1")
    if agent is not None:
        where.append("agent = ?")
        params.append(agent)
    live = " AND ".join(where)
    if near is not None:
        # and as written: a board a release before schema 8 wrote keeps its prefixes so
        # until a newer daemon migrates it, and the guard reads it read-only meanwhile
        prefixes = {patterns.search_prefix(p) for p in near}
        prefixes.update(patterns.literal_prefix(p) for p in near)
        if not prefixes:
            return None
        # a pattern that starts with a glob may meet anything: read them all
        if "" not in prefixes and len(prefixes) <= MAX_NEAR_PREFIXES:
            ancestors = {""}
            ranges: list[str] = []
            for prefix in prefixes:
                parts = prefix.split("/")
                ancestors.update("/".join(parts[: i + 1]) for i in range(len(parts)))
                ranges += [prefix + "/", prefix + "0"]  # '0' is the character after '/'
            # Two index searches, not one WHERE with an OR per prefix: past two prefixes
            # SQLite's planner scans the whole table for that OR, and a claim-next page or
            # a batch asks about hundreds of files while the board holds thousands.
            marks = ",".join("?" * len(ancestors))
            spans = ",".join(["(?,?)"] * len(prefixes))
            sql = (
                f"SELECT {columns} FROM reservations WHERE {live} AND prefix IN ({marks}) "
                f"UNION SELECT {columns} FROM (VALUES {spans}) AS span "
                f"JOIN reservations ON prefix >= span.column1 AND prefix < span.column2 "
                f"WHERE {live} ORDER BY id"
            )
            return sql, [*params, *sorted(ancestors), *ranges, *params]
    sql = f"SELECT {columns} FROM reservations WHERE {live} ORDER BY id"
    return sql, params


def read_live(
    db_path: str | os.PathLike[str], near: Iterable[str], now: float | None = None
) -> list[Held]:
    """Live *exclusive* reservations that could overlap these canonical patterns, read-only
    from the board file (no daemon needed). ``BoardUnreadable`` says why it could not."""
    query = select_live(time.time() if now is None else now, near=near, exclusive_only=True)
    return [Held(*row) for row in _rows(db_path, query)]


def read_watch_key(db_path: str | os.PathLike[str], now: float | None = None) -> list[Any]:
    """``WATCH_COLUMNS`` of every live exclusive reservation, oldest first: what the after-
    tool check compares with the holds its kept watch list was made from."""
    moment = time.time() if now is None else now
    return _rows(db_path, select_live(moment, exclusive_only=True, columns=WATCH_COLUMNS))


def _rows(db_path: str | os.PathLike[str], query: tuple[str, list[Any]] | None) -> list[Any]:
    if not os.path.exists(db_path):
        raise BoardUnreadable(f"no board at {db_path}")
    if query is None:
        return []
    try:
        conn = sqlite3.connect(f"file:{_uri_path(db_path)}?mode=ro", uri=True, timeout=2)
        try:
            rows = conn.execute(*query).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise BoardUnreadable(f"cannot read {db_path}: {err}") from None
    return rows


def _uri_path(path: str | os.PathLike[str]) -> str:
    """The path as SQLite's ``file:`` URI reads it: '?' and '#' would end the path, '%'
    starts an escape (a repository in ``~/c#/app`` is a real place)."""
    return os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
