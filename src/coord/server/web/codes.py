"""`POST /v1/web/codes`: a one-time code for `coord open`, on the board's token only."""

from __future__ import annotations

from typing import Any

from coord.errors import InvalidInput, NotPermitted
from coord.server.context import Call
from coord.server.web.access import CODE_SECONDS
from coord.times import iso

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["as", "code", "path", "expires_at"],
    "properties": {
        "as": {"type": "string"},
        "code": {"type": "string"},
        "path": {"type": "string", "description": "the page's address with the code: /?code=…"},
        "expires_at": {"type": "string"},
        "expires_in": {"type": "number", "description": "seconds the code is good for"},
    },
}


def issue_code(call: Call) -> dict[str, Any]:
    """A code that opens the page as the body's agent, good once, for ``CODE_SECONDS``. When
    the board lists its humans, only they may be the page's person: answers are theirs."""
    name = call.agent()
    humans = call.board.humans
    if humans and name not in humans:
        raise NotPermitted(
            f"{name} is not one of this board's humans ({', '.join(sorted(humans))}, listed as "
            "`humans` in .coord/config.json): open the page as one of them (--as NAME), or add "
            f"{name} there",
            humans=sorted(humans),
        )
    web = call.server.web
    if web is None:
        raise InvalidInput("this daemon serves no web page")
    code, expires_at = web.issue_code(name)
    return {
        "as": name,
        "code": code,
        "path": f"/?code={code}",
        "expires_at": iso(expires_at),
        "expires_in": CODE_SECONDS,
    }
