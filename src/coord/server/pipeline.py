"""The one request pipeline every route goes through, the hot path included.

Host name → token, or the web page's session (X-Coord-Session) with its Origin checks (every
route but the few public ones) → body size → JSON → declared fields → handler (a PostgreSQL
board's on a worker thread: ``offload.py``) → answer, other holders' fencing tokens nulled
(``redaction.py``), and a ``CoordError`` anywhere becomes
its own answer. ``Endpoint.answer`` is all of it; Starlette's routes (app.py) and the
bare-ASGI hot path (hot.py) differ only in how they read the headers and write the response.
"""

from __future__ import annotations

import hmac
import inspect
import json
import math
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.types import Receive

from coord.core import provenance
from coord.errors import (
    CoordError,
    Forbidden,
    ForeignHost,
    InvalidInput,
    InvalidJson,
    NotPermitted,
    TooLarge,
    Unauthorized,
)
from coord.server.context import NOTHING, Call, Server
from coord.server.principals import (
    MACHINE_TOKEN,
    OWNER,
    PAGE,
    PERSON_TOKEN,
    Actor,
    provenance_of,
)
from coord.server.redaction import reader_of, redact
from coord.server.table import MAX_REQUEST_BYTES, Param, Route
from coord.server.web.access import Session

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

_encode_stdlib = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def render(content: Any) -> bytes:
    """orjson: a claim's answer costs ~1 µs to encode instead of ~13 µs with the stdlib's C
    encoder, on the path every agent calls."""
    try:
        return orjson.dumps(content)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, stored from evidence
        return _encode_stdlib(content).encode("utf-8")


class JSONResponse(StarletteJSONResponse):
    """Starlette's JSON response, encoded by ``render``."""

    def render(self, content: Any) -> bytes:
        return render(content)


class Endpoint:
    """A route of the table bound to the server's state: the pipeline for that route."""

    __slots__ = (
        "awaits",
        "board",
        "body",
        "handler",
        "max_body",
        "page",
        "params",
        "public",
        "reads",
        "route",
        "server",
        "status",
        "write",
    )

    def __init__(self, route: Route, server: Server) -> None:
        self.route = route
        self.server = server
        self.handler = route.handler
        self.awaits = inspect.iscoroutinefunction(route.handler)
        self.board = route.board
        self.body = route.body
        self.write = route.write
        self.public = route.public
        self.page = route.page
        self.reads = route.method == "GET"
        self.max_body = route.max_body
        self.status = route.status
        self.params = tuple(p for p in route.params if p.where == "query")

    async def answer(
        self,
        host: str,
        authorization: str,
        declared_length: str | None,
        receive: Receive,
        path: Mapping[str, Any] = NOTHING,
        query: Mapping[str, str] = NOTHING,
        headers: Mapping[str, str] = NOTHING,
    ) -> tuple[int, Any]:
        """The status and JSON content of the answer to one request."""
        server = self.server
        try:
            if server.check_host:
                check_host(host)
            actor = OWNER
            if not self.public:  # reads too: bodies, replies, check output, the log
                found = authorize(server, host, authorization, headers, self.reads, self.page)
                if isinstance(found, Session):
                    actor = Actor(found.name, PAGE)
                elif found is not None:  # not the board's token: a person's or machine's?
                    actor = await person_of(server, found, self.page)
            if self.params:
                check_query(self.params, query)
            body = None
            if self.body is not None:
                raw = await read_body(receive, declared_length, self.max_body)
                body = self.body.take(parse_json(raw))
            # a read's ?agent= may be a filter (whose files); its reader is the proven name
            if actor.name is not None and not self.reads:
                act_as(actor, body, query, headers)
            call = Call(server, body, path=path, query=query, headers=headers)
            with provenance.acting(provenance_of(actor, server.checkout, headers)):
                if self.awaits:
                    content = await self.handler(call)
                elif self.board and server.board_calls is not None:  # a PostgreSQL board
                    content = await server.board_calls.run(self.handler, call)
                else:
                    content = self.handler(call)
            if self.write:
                server.changes.notify()
            return self.status, redact(content, reader_of(body, query, headers, actor.name))
        except CoordError as err:
            return err.http_status, err.to_dict()


def check_query(params: tuple[Param, ...], query: Mapping[str, str]) -> None:
    """Each declared query parameter is what the document says it is (the handler reads the
    text); unknown ones are ignored, as HTTP servers do."""
    for param in params:
        value = query.get(param.name)
        if value is not None:
            param.check(value)
        elif param.required:
            raise InvalidInput(f"query parameter {param.name} is required", field=param.name)


def check_host(host: str) -> None:
    # DNS rebinding defence: a web page must not reach the board through a hostname it owns.
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if name not in LOOPBACK_HOSTS:
        raise ForeignHost(
            f"requests must address the daemon as 127.0.0.1 or localhost, not {host!r}"
        )


def authorize(
    server: Server,
    host: str,
    authorization: str,
    headers: Mapping[str, str],
    reads: bool,
    page: bool,
) -> Session | str | None:
    """The web page's session when the request comes on one (no Authorization header, the
    page's X-Coord-Session), its Origin checked; None for the board's token; else the bearer
    token given, for ``person_of`` to judge. A cookie opens nothing (coord.server.web.access
    says why)."""
    web = server.web
    if not authorization and web is not None:
        session = web.from_headers(headers)
        if session is not None:
            if not page:
                raise NotPermitted(
                    "the web page's session cannot do this; it needs the board's token "
                    "(the CLI: `coord`)"
                )
            web.check_request(host, headers, reads)
            return session
    return board_or_other(authorization, server.write_token)


async def person_of(server: Server, given: str, page: bool) -> Actor:
    """The person or machine whose token ``given`` is (read from the board on every request:
    a revocation holds at once on every daemon of a team board), or 401 as any wrong token."""
    found = await server.call(server.board.access.holder, given)
    if found is None:
        raise Unauthorized(
            WRONG_TOKEN + ", or a person's token `coord token create` issued and nobody revoked"
        )
    if not page:
        raise NotPermitted(
            f"a person's or machine's token ({found.name}'s) cannot do this; it needs the "
            "board's own token (.coord/token, its owner's)",
            agent=found.name,
        )
    return Actor(found.name, MACHINE_TOKEN if found.machine else PERSON_TOKEN, found.id)


def act_as(
    actor: Actor,
    body: dict[str, Any] | None,
    query: Mapping[str, str],
    headers: Mapping[str, str],
) -> None:
    """A page, a person's or a machine's token acts as its one name, never as anyone else:
    wherever a request may name its agent (the body's agent or runner, ?agent= and
    X-Coord-Agent). Refused before the handler runs: the board is unchanged."""
    named = (body.get("agent"), body.get("runner")) if body else ()
    for agent in (*named, query.get("agent"), headers.get("x-coord-agent")):
        if agent is not None and agent != actor.name:
            how = (
                f"`coord open --as {agent}` opens one that acts as {agent}"
                if actor.via == PAGE
                else f"act as {agent} with {agent}'s own token"
            )
            raise Forbidden(
                f"this {actor.via.replace('_', ' ')} acts as {actor.name}, not {agent!r}; {how}",
                agent=actor.name,
            )


def check_token(header: str, expected: str) -> None:
    """The board's own token, and nothing else (``/mcp``): ``header`` is the request's
    Authorization header."""
    if board_or_other(header, expected) is not None:
        raise Unauthorized(WRONG_TOKEN)


WRONG_TOKEN = (
    "wrong token: send the contents of this board's .coord/token (at the root of the "
    "repository the daemon serves)"
)


def board_or_other(header: str, expected: str) -> str | None:
    """None when ``header`` (the Authorization header) carries the board's token, else the
    token it carries (a person's, a machine's, or a wrong one)."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        from coord.server.routes import PUBLIC_PATHS  # the table is built after this module

        raise Unauthorized(
            "this endpoint needs the header 'Authorization: Bearer <token>', the token being "
            "the contents of .coord/token in the board's directory (at the repository root); "
            f"only {', '.join(PUBLIC_PATHS)} are open"
        )
    given = given.strip()
    if hmac.compare_digest(given.encode(), expected.encode()):
        return None
    return given


async def read_body(
    receive: Receive, declared: str | None, limit: int = MAX_REQUEST_BYTES
) -> bytes:
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"request body is {declared} bytes; the limit is {limit}")
    # Straight from the ASGI receive channel: Starlette's stream() generator costs more than
    # the rest of a small request's parsing.
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise InvalidInput("the client went away before sending the whole body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


# No request of the API nests deeper than a few levels; a deeper body is an attack or a bug,
# and past ~1,000 levels the decoder (and past 255 orjson) would fail with a RecursionError.
MAX_JSON_DEPTH = 32


def parse_json(raw: bytes) -> Any:
    if not raw.strip():
        return {}
    try:
        # JSON between systems is UTF-8 (RFC 8259), and a byte-order mark may be ignored
        decoded = _decode_json(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InvalidJson(f"request body is not valid JSON: {err}") from None
    except RecursionError:
        raise _too_deep() from None
    # counting brackets is cheap and rules out deep nesting for every ordinary body
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and _depth(decoded) > MAX_JSON_DEPTH:
        raise _too_deep()
    return decoded


def _too_deep() -> InvalidJson:
    return InvalidJson(f"request body nests arrays or objects more than {MAX_JSON_DEPTH} deep")


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value``, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in node)
    return deepest


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which JSON does not have: stored in evidence,
    # they would make every later answer about the item unencodable.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float | int:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise ValueError(f"{text} is out of range for a JSON number")
    # JSON has one kind of number: 3.0 is the integer 3 (JSON Schema agrees), so an id,
    # a token or a count written 3.0 is read as 3.
    return int(value) if value.is_integer() else value


# Built once: json.loads with any option builds a new decoder on every call.
_decode_json = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float).decode
