"""The racers of ``test_postgres_board``: each runs in its own OS process, opens its own
connections to the one database, waits for the start, and puts its answer on the queue.

A module of their own so the fork server imports it (with coord and the driver) once.
"""

from __future__ import annotations

from typing import Any

from coord.core.board import Board
from coord.errors import FilesReserved

# at import: the fork server loads the driver once, before it forks the racers
from coord.storage.postgres import PostgresStorage as open_storage


def take_first_pending(dsn: str, agent: str, start: Any, answers: Any) -> None:
    storage = open_storage(dsn)
    try:
        with storage.read() as tx:  # connected and warm before the start
            tx.last_seq()
        start.wait()  # every racer connected and waiting: then all at once
        with storage.write() as tx:
            now = tx.clock() or 0.0
            item = tx.take_first_pending(agent, ("task",), None, now, now + 60)
            if item is not None:
                tx.append_event(
                    at=now, agent=agent, item_id=item.id, kind="claimed", details={"token": 1}
                )
        answers.put((agent, None if item is None else (item.id, item.fencing_token)))
    except BaseException:
        answers.put((agent, "error"))
        raise
    finally:
        storage.close()


def reserve(dsn: str, root: str, agent: str, patterns: list[str], start: Any, answers: Any) -> None:
    board = Board(open_storage(dsn), repo_root=root)
    result = "error"
    try:
        board.reservations()  # connected and warm before the start
        start.wait()  # every racer connected and waiting: then all at once
        board.reserve(patterns, agent=agent, lease_seconds=60)
        result = "granted"
    except FilesReserved:
        result = "refused"
    finally:
        answers.put((agent, result))
        board.close()
