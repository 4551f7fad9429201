"""`GET /v1/status`: the daemon and the board at a glance, for `coord status`.

A read like any other (the board's token required): it tells who holds what and what waits
on whom. The board's half is the core's (``coord.core.overview``); this adds the daemon's:
where the board is kept (``Storage.location``, never a password) and the daemons serving it
(on a team board every machine's live daemon, this one marked ``this``), and whether it
lands the queue: its landing runner's state, or why it runs none.
"""

from __future__ import annotations

import os
from typing import Any

from coord import __version__
from coord.core.overview import overview
from coord.server.context import Call

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["version", "pid", "schema_version", "last_seq", "storage", "daemons", "board"],
    "properties": {
        "version": {"type": "string"},
        "pid": {"type": "integer"},
        "schema_version": {"type": "integer"},
        # the newest event's sequence number: where a live view's feed starts
        "last_seq": {"type": "integer", "minimum": 0},
        "storage": {
            "type": "object",
            "required": ["backend"],
            "properties": {
                "backend": {"type": "string", "enum": ["sqlite", "postgresql"]},
                "path": {"type": "string"},
                "database": {"type": "string"},
            },
        },
        "daemons": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["instance", "machine", "pid", "url", "this"],
            },
        },
        "landing": {
            "type": "object",
            "required": ["in_daemon"],
            "properties": {
                "in_daemon": {"type": "boolean"},
                "off": {"type": "string", "description": "why this daemon lands nothing"},
                "runner": {"type": "string"},
                "state": {
                    "enum": ["starting", "watching", "lease_held", "failed", "stopped", "dead"]
                },
                "item": {"type": "string", "description": "the item landing now"},
                "landed": {"type": "integer"},
                "last_pass_at": {"type": "string"},
                "error": {"type": "string", "description": "why its last pass failed"},
                "failed_at": {"type": "string"},
                "failures": {"type": "integer"},
                "note": {"type": "string"},
            },
        },
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
    storage = board.storage
    return {
        "version": __version__,
        "pid": os.getpid(),
        "schema_version": storage.schema_version(),
        "storage": storage.location(),
        "daemons": [
            {**daemon, "this": daemon["instance"] == call.server.instance}
            for daemon in storage.live_daemons()
        ],
        "last_seq": board.last_seq(),
        "landing": landing(call),
        "board": overview(board),
    }


def landing(call: Call) -> dict[str, Any]:
    lander = call.server.lander
    if lander is None:
        return {"in_daemon": False, "off": call.server.landing_off or "not started"}
    return {"in_daemon": True, **lander.describe()}
