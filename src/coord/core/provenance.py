"""What every event records about who made it (issue 27, INVARIANTS' "provenance").

The face that took the request knows how its actor was known — the daemon's pipeline: a
token issued for the name (verified), or the board's own token or a page, whose names are
only asserted — and says so here for the length of the request (``acting``); the board's
one place that logs (``changes.Changes.record``) writes it into every event. A change made
through the Python library, with no face in between, is asserted by ``library``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

LIBRARY: dict[str, Any] = {"verified": False, "via": "library"}

_current: ContextVar[dict[str, Any] | None] = ContextVar("coord_provenance", default=None)


def current() -> dict[str, Any]:
    found = _current.get()
    return LIBRARY if found is None else found


@contextlib.contextmanager
def acting(provenance: dict[str, Any]) -> Iterator[None]:
    """Every event logged inside is recorded with ``provenance`` (this context only: a
    worker thread the call moves to must be given a copy of the context)."""
    token = _current.set(provenance)
    try:
        yield
    finally:
        _current.reset(token)
