"""`GET /v1/status`: the daemon and the board at a glance, for `coord status`.

A read like any other (the board's token required): it tells who holds what and what waits
on whom. The board's half is the core's (``coord.core.overview``); this adds the daemon's.
"""

from __future__ import annotations

import os
from typing import Any

from coord import __version__
from coord.core.overview import overview
from coord.server.context import Call

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["version", "pid", "schema_version", "last_seq", "board"],
    "properties": {
        "version": {"type": "string"},
        "pid": {"type": "integer"},
        "schema_version": {"type": "integer"},
        # the newest event's sequence number: where a live view's feed starts
        "last_seq": {"type": "integer", "minimum": 0},
        "board": {
            "type": "object",
            "required": [
                "counts",
                "total",
                "active_agents",
                "near_expiry",
                "lapsed",
                "needs_human",
            ],
        },
    },
}


def status(call: Call) -> dict[str, Any]:
    board = call.board
    return {
        "version": __version__,
        "pid": os.getpid(),
        "schema_version": board.storage.schema_version(),
        "last_seq": board.last_seq(),
        "board": overview(board),
    }
