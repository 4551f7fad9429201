"""The web page's JSON endpoints: a one-time code for `coord open` (on the board's token only),
the daemon's proof to the page, and what the page's session is (``access.py`` says why)."""

from __future__ import annotations

from typing import Any

from coord.errors import InvalidInput, NotPermitted
from coord.server import identity
from coord.server.context import Call
from coord.server.schemas import AGENT
from coord.server.table import Body, Param, Route
from coord.server.web.access import CODE_SECONDS, WebAccess
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
        "file": {
            "type": ["string", "null"],
            "description": "asked with file: a page only this user may read that sends a "
            "browser on to the link (give a browser its file:// address, never the link: a "
            "command line is every user's to read); removed once the code is spent or expired",
        },
    },
}
PROOF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["proof"],
    "properties": {
        "proof": {
            "type": "string",
            "description": "hex HMAC-SHA256 keyed by the session's signature over "
            "'coord page identity v1' LF nonce: only the daemon process that made the session "
            "can compute it",
        }
    },
}
SESSION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["as", "expires_at", "server_now", "last_seq"],
    "properties": {
        "as": {
            "type": ["string", "null"],
            "description": "the person the page acts as (null: asked with the board's token)",
        },
        "expires_at": {"type": ["string", "null"]},
        "server_now": {"type": "number", "description": "the board's clock, Unix seconds"},
        "last_seq": {"type": "integer"},
    },
}


def _web(call: Call) -> WebAccess:
    web = call.server.web
    if web is None:
        raise InvalidInput("this daemon serves no web page")
    return web


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
    web = _web(call)
    code, expires_at = web.issue_code(name)
    path = f"/?code={code}"
    file = None
    if call.body.get("file"):
        # the address the caller reached this daemon at (checked: a loopback name, unless
        # the daemon was bound elsewhere on purpose)
        file = str(web.hand_off(code, f"http://{call.headers.get('host', '')}{path}"))
    return {
        "as": name,
        "code": code,
        "path": path,
        "expires_at": iso(expires_at),
        "expires_in": CODE_SECONDS,
        "file": file,
    }


def page_proof(call: Call) -> dict[str, str]:
    """The daemon proves to the page that it made the page's session (open: the page asks
    before it sends the session anywhere)."""
    web = _web(call)
    return {"proof": web.proof(call.query.get("session") or "", call.query.get("nonce") or "")}


def page_session(call: Call) -> dict[str, Any]:
    """The page's session: whom it acts as, and the board's clock and newest event to start
    from (asked with the board's token: no session, the clock and event all the same)."""
    session = _web(call).from_headers(call.headers)
    board = call.server.board
    return {
        "as": None if session is None else session.name,
        "expires_at": None if session is None else iso(session.expires_at),
        "server_now": board.now(),
        "last_seq": board.last_seq(),
    }


# the endpoints these answer (coord.server.routes gathers every table)
ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/web/codes",
        issue_code,
        "a one-time code that opens the web page at / as this agent (a human the board lists "
        "in `humans`, when it lists any; 403 not_permitted otherwise): good once, with this "
        "daemon process, for expires_in seconds; the page trades it for its session "
        "(`coord open`). With file: true, also a page only this user may read that sends a "
        "browser on to the link (`file`)",
        ANSWER_SCHEMA,
        status=201,
        body=Body(
            {
                "agent": AGENT,
                "file": {"type": "boolean", "description": "write the browser's hand-off file"},
            },
            ("agent",),
        ),
        errors=(403, 422),
        page=False,
        board=False,  # the board's humans are its settings, in memory
    ),
    Route(
        "GET",
        "/v1/web/proof",
        page_proof,
        "the daemon proves to the web page that it made the page's session, without the page "
        "sending it: an HMAC keyed by the session's signature over the page's nonce (open: no "
        "token, no session; the page asks before it sends its session anywhere)",
        PROOF_SCHEMA,
        params=(
            Param(
                "session",
                {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,1024}$"},
                "the part of the page's session before the dot (no secret)",
                required=True,
            ),
            Param("nonce", identity.NONCE_SCHEMA, required=True),
        ),
        errors=(422,),
        public=True,
    ),
    Route(
        "GET",
        "/v1/web/session",
        page_session,
        "the web page's session (its X-Coord-Session header): whom it acts as, until when, "
        "and the board's clock and newest event (with the token: no person, as and "
        "expires_at null)",
        SESSION_SCHEMA,
    ),
)
