"""``/v1/tokens``: people's and machines' tokens (issue 27), the board's owner's alone.

Every route here is ``page=False``: neither the web page nor a person's or machine's token
may issue, list or revoke tokens (``pipeline.person_of``), only the board's own token.
"""

from __future__ import annotations

from typing import Any

from coord.core.access import check_which
from coord.server.context import Call
from coord.server.schemas import AGENT, listing
from coord.server.table import Body, Route

ISSUED: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "kind", "created_at"],
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "kind": {"enum": ["person", "machine"]},
        "created_at": {"type": "string"},
        "last_used_at": {"type": ["string", "null"]},
        "revoked_at": {"type": ["string", "null"]},
    },
}
CREATED: dict[str, Any] = {
    **ISSUED,
    "required": [*ISSUED["required"], "secret"],
    "properties": {
        **ISSUED["properties"],
        "secret": {
            "type": "string",
            "description": "the token itself, shown this once: the board keeps its SHA-256",
        },
    },
}


def create(call: Call) -> dict[str, Any]:
    issued, secret = call.board.access.issue(call.body["name"], machine=call.flag("machine"))
    return {**issued.to_dict(), "secret": secret}


def issued(call: Call) -> dict[str, Any]:
    return {"tokens": [t.to_dict() for t in call.board.access.issued()]}


def revoke(call: Call) -> dict[str, Any]:
    revoked = call.board.access.revoke(check_which(call.body.get("which")))
    return {"tokens": [t.to_dict() for t in revoked]}


ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/tokens",
        create,
        "issue a token for a person or a machine: requests carrying it act as that name alone "
        "(the board's own token only; the secret is in this answer and nowhere else)",
        CREATED,
        status=201,
        write=True,
        page=False,
        body=Body(
            {
                "name": {**AGENT, "description": "the one agent name the token acts as"},
                "machine": {"type": "boolean", "description": "a machine's (CI, a bot)"},
            },
            ("name",),
        ),
        errors=(403, 422),
    ),
    Route(
        "GET",
        "/v1/tokens",
        issued,
        "every token issued, revoked ones too: name, kind, created, last used; never a secret",
        listing("tokens", ISSUED),
        page=False,
        errors=(403,),
    ),
    Route(
        "POST",
        "/v1/tokens:revoke",
        revoke,
        "revoke a token by its id, or every live token of a name; refused at once by every "
        "daemon of the board",
        listing("tokens", ISSUED),
        write=True,
        page=False,
        body=Body(
            {
                "which": {
                    "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "\\S"}],
                    "description": "a token's id, or a name",
                }
            },
            ("which",),
        ),
        errors=(403, 404, 422),
    ),
)
