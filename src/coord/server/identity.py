"""``GET /v1/identity``: the daemon proves it is this board's, without anyone sending the token.

Open to every caller, because the caller asks before it trusts the daemon with the token (the
proof and why: ``coord.fast.daemon_proof``). It tells nothing of the board: a random instance
id and an HMAC of the caller's nonce.
"""

from __future__ import annotations

import re
from typing import Any

from coord.errors import InvalidInput
from coord.fast import daemon_proof
from coord.server.context import Call

NONCE_PATTERN = "^[0-9a-f]{16,128}$"
_NONCE = re.compile("[0-9a-f]{16,128}")
NONCE_SCHEMA = {
    "type": "string",
    "pattern": NONCE_PATTERN,
    "description": "random lowercase hex chosen by the caller, 16 to 128 digits",
}
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["instance", "proof"],
    "properties": {
        "instance": {"type": "string", "description": "the id in this daemon's daemon.json"},
        "proof": {
            "type": "string",
            "description": "hex HMAC-SHA256 keyed by the board's token over the nonce, the "
            "instance and the port (coord.fast.daemon_proof)",
        },
    },
}


def identity(call: Call) -> dict[str, Any]:
    nonce = call.query.get("nonce") or ""
    if not _NONCE.fullmatch(nonce):
        raise InvalidInput(
            "nonce must be 16 to 128 lowercase hex digits, chosen at random by the caller",
            field="nonce",
        )
    server = call.server
    return {
        "instance": server.instance,
        "proof": daemon_proof.proof(server.write_token, nonce, server.instance, server.port),
    }
