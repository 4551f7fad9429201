"""coord: a shared board where parallel AI coding agents claim work atomically.

The library face. An orchestrator written in Python can use the board without the daemon:

    from coord import Board
    board = Board.open()                 # the .coord/ found from the current directory
    item = board.add("Fix the login bug", created_by="me", kind="bug", priority=1)
    claim = board.claim(item.id, agent="worker-1", lease_seconds=600)
    board.heartbeat(item.id, agent="worker-1", token=claim.token)
    board.done(item.id, agent="worker-1", token=claim.token)

Errors are ``coord.errors.CoordError`` subclasses (``AlreadyClaimed``, ``LeaseLost``, ...).
Attributes load lazily so that the CLI, which imports this package, starts fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it

__version__ = "0.1.0"
__all__ = ["Board", "Claim", "CoordError", "Event", "Item", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from coord.core.board import Board
    from coord.errors import CoordError
    from coord.model import Claim, Event, Item


def __getattr__(name: str) -> Any:
    if name == "Board":
        from coord.core.board import Board

        return Board
    if name == "CoordError":
        from coord.errors import CoordError

        return CoordError
    if name in ("Claim", "Event", "Item"):
        from coord import model

        return getattr(model, name)
    raise AttributeError(f"module 'coord' has no attribute {name!r}")
