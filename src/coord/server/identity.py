"""``GET /v1/identity``: the daemon proves it is this board's, without anyone sending the token.

Open to every caller, because the caller asks before it trusts the daemon with the token (the
proof and why: ``coord.fast.daemon_proof``). It tells nothing of the board: a random instance
id and an HMAC of the caller's nonce.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from coord.errors import InvalidInput
from coord.fast import daemon_proof
from coord.server.context import Call

NONCE_PATTERN = "^[0-9a-f]{16,128}$"
_NONCE = re.compile("[0-9a-f]{16,128}")
PERSON_PATTERN = "^[0-9a-f]{16}$"
_PERSON = re.compile("[0-9a-f]{16}")
PERSON_SCHEMA = {
    "type": "string",
    "pattern": PERSON_PATTERN,
    "description": "proof to a person's or machine's token: the first 16 hex digits of its "
    "SHA-256 (the proof is keyed by the whole hash)",
}
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


async def identity(call: Call) -> dict[str, Any]:
    nonce = call.query.get("nonce") or ""
    if not _NONCE.fullmatch(nonce):
        raise InvalidInput(
            "nonce must be 16 to 128 lowercase hex digits, chosen at random by the caller",
            field="nonce",
        )
    server = call.server
    key = server.write_token
    person = call.query.get("person")
    if person is not None:  # proven to a person's token: keyed by its hash, which we keep
        if not _PERSON.fullmatch(person):
            raise InvalidInput("person must be 16 lowercase hex digits", field="person")
        found = await server.call(server.board.access.proof_key, person)
        # no such token: a proof by a key nobody has, so the answer says nothing either way
        key = found if found is not None else secrets.token_hex(32)
    return {
        "instance": server.instance,
        "proof": daemon_proof.proof(key, nonce, server.instance, server.port),
    }
