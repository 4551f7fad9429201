"""The HTTP face: a thin Starlette adapter over ``coord.core.board.Board``.

Each handler parses and checks the request, calls one Board method, and renders the result.
Errors are ``CoordError``s rendered once, by ``_render_error``.

Board calls run inline on the event loop. A board call is one short SQLite transaction
(tens of microseconds); a hop to a worker thread costs more than it saves and adds GIL
hand-off latency under load (measured in bench/). The daemon is the board's only regular
writer, so the write lock is rarely contended; when another process holds it, SQLite's busy
timeout bounds the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive

from coord import __version__, model
from coord.core import rules
from coord.core.board import Board
from coord.errors import CoordError, InvalidInput, TooLarge, Unauthorized

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from coord.server.mcp_mount import McpMount

MAX_BODY = 1024 * 1024
MAX_IMPORT_BODY = 16 * 1024 * 1024
MAX_WAIT_SECONDS = 60.0
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

Handler = Callable[[Request], Awaitable[Response]]
_MAX_BODY_KEY = "coord.max_body"


class JSONResponse(StarletteJSONResponse):
    """Starlette's JSON response, encoded by orjson: a claim's answer costs ~1 µs to encode
    instead of ~13 µs with the stdlib's C encoder, on the path every agent calls."""

    _stdlib_encode = json.JSONEncoder(
        ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode

    def render(self, content: Any) -> bytes:
        return self.render_content(content)

    @classmethod
    def render_content(cls, content: Any) -> bytes:
        try:
            return orjson.dumps(content)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits, stored from evidence
            return cls._stdlib_encode(content).encode("utf-8")


class Changes:
    """Wakes long-polling readers of /v1/events when this daemon writes."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)


def create_app(
    board: Board,
    write_token: str,
    *,
    check_host: bool = True,
    on_shutdown: Callable[[], None] | None = None,
    board_dir: Path | None = None,
) -> HotPaths:
    changes = Changes()

    def endpoint(handler: Handler, *, write: bool = False, max_body: int = MAX_BODY) -> Handler:
        async def wrapped(request: Request) -> Response:
            try:
                if check_host:
                    _check_host(request.headers.get("host", ""))
                if write:
                    _check_token(request.headers.get("authorization", ""), write_token)
                    request.scope[_MAX_BODY_KEY] = max_body
                response = await handler(request)
                if write:
                    changes.notify()
                return response
            except CoordError as err:
                return _render_error(err)

        return wrapped

    now = board.now

    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "ok": True,
                "version": __version__,
                "schema_version": board.storage.schema_version(),
                "last_seq": board.last_seq(),
            }
        )

    async def openapi(request: Request) -> Response:
        from coord.server.openapi import OPENAPI

        return JSONResponse(OPENAPI)

    async def add_item(request: Request) -> Response:
        body = await _json_object(request, (rules.IMPORT_FIELDS - {"ref"}) | {"agent"})
        entry = {k: v for k, v in body.items() if k != "agent"}
        ids = board.import_items([entry], created_by=_agent(body))
        return JSONResponse(board.get(ids[0]).to_dict(now()), status_code=201)

    async def import_items(request: Request) -> Response:
        payload = await _json(request)
        agent = request.query_params.get("agent") or request.headers.get("x-coord-agent")
        if isinstance(payload, dict):
            agent = payload.get("agent", agent)
            payload = payload.get("items")
        ids = board.import_items(payload, created_by=_agent({"agent": agent}))
        return JSONResponse({"ids": ids}, status_code=201)

    async def list_items(request: Request) -> Response:
        q = request.query_params
        items = board.list_items(
            state=q.get("state") or None,
            ready=_flag(q.get("ready")),
            kind=q.get("kind") or None,
            label=q.get("label") or None,
            spec=q.get("spec") or None,
            after_id=_int_param(q.get("after"), "after", 0),
            limit=_int_param(q.get("limit"), "limit", 100),
        )
        t = now()
        return JSONResponse({"items": [i.to_dict(t) for i in items]})

    async def show_item(request: Request) -> Response:
        return JSONResponse(board.show(request.path_params["id"]))

    async def edit_item(request: Request) -> Response:
        body = await _json_object(
            request,
            {
                "agent",
                "token",
                "title",
                "body",
                "priority",
                "labels",
                "add_deps",
                "remove_deps",
                "add_checks",
                "remove_checks",
            },
        )
        item = board.edit(
            request.path_params["id"],
            agent=_agent(body),
            token=body.get("token"),
            title=body.get("title"),
            body=body.get("body"),
            priority=body.get("priority"),
            labels=body.get("labels"),
            add_deps=model.check_deps(body.get("add_deps")),
            remove_deps=model.check_deps(body.get("remove_deps")),
            add_checks=model.check_commands(body.get("add_checks"), "add_checks"),
            remove_checks=model.check_commands(body.get("remove_checks"), "remove_checks"),
        )
        return JSONResponse(item.to_dict(now()))

    async def claim(request: Request) -> Response:
        body = await _json_object(request, {"agent", "lease_seconds"})
        won = board.claim(
            request.path_params["id"], agent=_agent(body), lease_seconds=body.get("lease_seconds")
        )
        return JSONResponse(won.to_dict(now()))

    def claim_next(body: dict[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {
            "agent": body.get("agent"),  # the board checks it
            "kind": body.get("kind"),
            "label": _optional_str(body, "label"),
            "lease_seconds": body.get("lease_seconds"),
        }
        if "count" in body:  # a batch for parallel work: {"items": [claim, ...]}
            won = board.claim_batch(body["count"], **options)
            t = now()
            return {"items": [c.to_dict(t) for c in won]}
        return board.claim_next(**options).to_dict(now())

    async def reserve(request: Request) -> Response:
        body = await _json_object(
            request, {"agent", "patterns", "shared", "lease_seconds", "item", "reason"}
        )
        made = board.reserve(
            body.get("patterns") or [],
            agent=_agent(body),
            shared=_bool(body, "shared"),
            lease_seconds=body.get("lease_seconds"),
            item=body.get("item"),
            reason=body.get("reason") or "",
        )
        return JSONResponse({"reservations": [r.to_dict() for r in made]}, status_code=201)

    async def unreserve(request: Request) -> Response:
        body = await _json_object(request, {"agent", "patterns", "all"})
        freed = board.unreserve(
            body.get("patterns") or [], agent=_agent(body), everything=_bool(body, "all")
        )
        return JSONResponse({"freed": freed})

    async def reservations(request: Request) -> Response:
        agent = request.query_params.get("agent") or None
        held = board.reservations(model.check_agent(agent) if agent else None)
        return JSONResponse({"reservations": [r.to_dict() for r in held]})

    async def who(request: Request) -> Response:
        path = request.query_params.get("path")
        if not path:
            raise InvalidInput("give the path to ask about: /v1/who?path=src/a.py", field="path")
        return JSONResponse(board.who(path, request.query_params.get("agent") or None))

    async def heartbeat(request: Request) -> Response:
        body = await _json_object(request, {"agent", "token", "lease_seconds"})
        extended = board.heartbeat(
            request.path_params["id"],
            agent=_agent(body),
            token=body.get("token"),
            lease_seconds=body.get("lease_seconds"),
        )
        return JSONResponse(extended.to_dict(now()))

    def end_claim(action: str, text_field: str) -> Handler:
        """release, done, cancel: agent + token (+ one free-text field)."""

        async def handler(request: Request) -> Response:
            body = await _json_object(request, {"agent", "token", text_field})
            item = getattr(board, action)(
                request.path_params["id"],
                agent=_agent(body),
                token=body.get("token"),
                **{text_field: body.get(text_field) or ""},
            )
            return JSONResponse(item.to_dict(now()))

        return handler

    async def done(request: Request) -> Response:
        body = await _json_object(request, {"agent", "token", "summary", "evidence", "skip_checks"})
        item = board.done(
            request.path_params["id"],
            agent=_agent(body),
            token=body.get("token"),
            summary=body.get("summary") or "",
            evidence=body.get("evidence"),
            skip_checks=body.get("skip_checks"),
        )
        return JSONResponse(item.to_dict(now()))

    async def escalate(request: Request) -> Response:
        body = await _json_object(request, {"agent", "token", "question"})
        item = board.escalate(
            request.path_params["id"],
            agent=_agent(body),
            token=body.get("token"),
            question=body.get("question"),
        )
        return JSONResponse(item.to_dict(now()))

    async def answer(request: Request) -> Response:
        body = await _json_object(request, {"agent", "text"})
        item = board.answer(request.path_params["id"], agent=_agent(body), text=body.get("text"))
        return JSONResponse(item.to_dict(now()))

    async def import_spec(request: Request) -> Response:
        body = await _json_object(
            request, {"agent", "spec", "packages", "escalate_to", "prefix", "adopt"}
        )
        contact = _optional_str(body, "escalate_to")
        result = board.import_packages(
            body.get("spec"),
            body.get("packages"),
            created_by=_agent(body),
            escalate_to=contact,
            prefix=_optional_str(body, "prefix") or "",
            adopt=body.get("adopt"),
        )
        return JSONResponse(result)

    async def reply(request: Request) -> Response:
        body = await _json_object(request, {"agent", "body"})
        posted = board.reply(request.path_params["id"], agent=_agent(body), body=body.get("body"))
        return JSONResponse(posted.to_dict(), status_code=201)

    async def ack(request: Request) -> Response:
        body = await _json_object(request, {"agent"})
        ref = model.check_item_ref(request.path_params["id"])
        added = board.ack(ref, agent=_agent(body))
        item_id = ref if isinstance(ref, int) else board.get(ref).id  # a key: say which item
        return JSONResponse({"id": item_id, "agent": body["agent"], "new": added})

    async def inbox(request: Request) -> Response:
        body = await _json_object(request, {"agent", "peek", "limit"})
        events = board.inbox(
            _agent(body),
            peek=bool(body.get("peek")),
            limit=_int_param(body.get("limit"), "limit", 200),
        )
        return JSONResponse({"events": [e.to_dict() for e in events]})

    async def agents(request: Request) -> Response:
        t = now()
        return JSONResponse(
            {"agents": [a.to_dict(t, board.active_window_seconds) for a in board.agents()]}
        )

    async def events(request: Request) -> Response:
        q = request.query_params
        after = _int_param(q.get("after"), "after", 0)
        limit = _int_param(q.get("limit"), "limit", 500)
        item = q.get("item")
        item_id = model.check_item_id(item) if item else None
        wait = _float_param(q.get("wait"), "wait", 0.0)
        if not 0 <= wait <= MAX_WAIT_SECONDS:
            raise InvalidInput(f"wait must be 0 to {MAX_WAIT_SECONDS:g} seconds", field="wait")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            found = board.events(after, limit, item_id=item_id)
            remaining = deadline - loop.time()
            if found or remaining <= 0:
                break
            # Woken by our own writes at once; polls for writers in other processes.
            await changes.wait(min(remaining, 0.25))
        last = found[-1].seq if found else after
        return JSONResponse({"events": [e.to_dict() for e in found], "last_seq": last})

    async def shutdown(request: Request) -> Response:
        if on_shutdown is None:
            raise InvalidInput("this server cannot be stopped over HTTP")
        on_shutdown()
        return JSONResponse({"ok": True, "message": "daemon stopping"})

    hot = {
        ("POST", "/v1/claim-next"): HotEndpoint(
            claim_next,
            {"agent", "lease_seconds", "kind", "label", "count"},
            write_token,
            check_host=check_host,
            on_write=changes.notify,
        )
    }
    routes = [
        *(Route(path, handler, methods=[method]) for (method, path), handler in hot.items()),
        Route("/v1/health", endpoint(health), methods=["GET"]),
        Route("/openapi.json", endpoint(openapi), methods=["GET"]),
        Route("/v1/items", endpoint(add_item, write=True), methods=["POST"]),
        Route("/v1/items", endpoint(list_items), methods=["GET"]),
        Route(
            "/v1/items:import",
            endpoint(import_items, write=True, max_body=MAX_IMPORT_BODY),
            methods=["POST"],
        ),
        Route("/v1/items/{id}", endpoint(show_item), methods=["GET"]),
        Route("/v1/items/{id}", endpoint(edit_item, write=True), methods=["PATCH"]),
        Route(
            "/v1/items/{id}/cancel",
            endpoint(end_claim("cancel", "reason"), write=True),
            methods=["POST"],
        ),
        Route("/v1/items/{id}/claim", endpoint(claim, write=True), methods=["POST"]),
        Route("/v1/items/{id}/heartbeat", endpoint(heartbeat, write=True), methods=["POST"]),
        Route(
            "/v1/items/{id}/release",
            endpoint(end_claim("release", "reason"), write=True),
            methods=["POST"],
        ),
        Route("/v1/items/{id}/done", endpoint(done, write=True), methods=["POST"]),
        Route("/v1/items/{id}/escalate", endpoint(escalate, write=True), methods=["POST"]),
        Route("/v1/items/{id}/answer", endpoint(answer, write=True), methods=["POST"]),
        Route(
            "/v1/spec:import",
            endpoint(import_spec, write=True, max_body=MAX_IMPORT_BODY),
            methods=["POST"],
        ),
        Route("/v1/items/{id}/replies", endpoint(reply, write=True), methods=["POST"]),
        Route("/v1/items/{id}/ack", endpoint(ack, write=True), methods=["POST"]),
        Route("/v1/inbox", endpoint(inbox, write=True), methods=["POST"]),
        Route("/v1/reservations", endpoint(reserve, write=True), methods=["POST"]),
        Route("/v1/reservations", endpoint(reservations), methods=["GET"]),
        Route("/v1/reservations:release", endpoint(unreserve, write=True), methods=["POST"]),
        Route("/v1/who", endpoint(who), methods=["GET"]),
        Route("/v1/agents", endpoint(agents), methods=["GET"]),
        Route("/v1/events", endpoint(events), methods=["GET"]),
        Route("/v1/shutdown", endpoint(shutdown, write=True), methods=["POST"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
        message = {
            404: f"no such endpoint: {request.method} {request.url.path}; see /openapi.json",
            405: f"{request.method} is not allowed on {request.url.path}; see /openapi.json",
        }.get(status, str(getattr(exc, "detail", "error")))
        return JSONResponse({"error": code, "message": message}, status_code=status)

    async def server_error(request: Request, exc: Exception) -> Response:
        # A bug of ours, not bad input: say so plainly and keep the details in the log.
        return JSONResponse(
            {
                "error": "internal",
                "message": f"internal error: {type(exc).__name__}; "
                "nothing was changed; see .coord/daemon.log and report it",
            },
            status_code=500,
        )

    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    mount = None
    if board_dir is not None:  # MCP over streamable HTTP at /mcp
        from coord.server.mcp_mount import McpMount

        mount = McpMount(board_dir, write_token)

    async def guard_mcp(request: Request) -> Response | None:
        try:
            if check_host:
                _check_host(request.headers.get("host", ""))
            _check_token(request.headers.get("authorization", ""), write_token)
        except CoordError as err:
            return _render_error(err)
        return None

    return HotPaths(app, hot, server_error, mcp=mount, guard_mcp=guard_mcp)


class HotEndpoint:
    """A write endpoint as a bare ASGI app: what every agent's loop calls, kept lean.

    The same checks, limits and error answers as an ``endpoint()``-wrapped Starlette
    handler (the same helpers do them), without Starlette's Request and Response objects:
    they measured ~30 µs of a claim's ~200 µs in the daemon (bench/). ``answer`` takes the
    checked JSON object and returns the 200 body; a ``CoordError`` becomes its own answer.
    Starlette sees an ASGI app here, so the route is listed (OpenAPI, tests) like the rest.
    """

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], Any],
        fields: set[str],
        write_token: str,
        *,
        check_host: bool,
        on_write: Callable[[], None],
    ) -> None:
        self.answer = answer
        self.fields = fields
        self.write_token = write_token
        self.check_host = check_host
        self.on_write = on_write

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:  # the first of a repeated header, as Starlette
            headers.setdefault(name, value)
        try:
            if self.check_host:
                _check_host(headers.get(b"host", b"").decode("latin-1"))
            _check_token(headers.get(b"authorization", b"").decode("latin-1"), self.write_token)
            declared = headers.get(b"content-length")
            raw = await _read_body(receive, declared.decode("latin-1") if declared else None)
            status, content = 200, self.answer(_object(_parse_json(raw), self.fields))
            self.on_write()
        except CoordError as err:
            status, content = err.http_status, err.to_dict()
        payload = JSONResponse.render_content(content)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-length", str(len(payload)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


class HotPaths:
    """Sends the hottest routes straight to their ``HotEndpoint``s, the rest to Starlette.

    Starlette's middleware and routing measured ~100 µs of the daemon's CPU per claim
    (bench/), as much as the claim's own SQL. Only the dispatch is skipped; an unexpected
    exception is answered with the same 500 as Starlette's, then raised for the log.
    """

    def __init__(
        self,
        app: Starlette,
        routes: dict[tuple[str, str], HotEndpoint],
        on_error: Callable[[Request, Exception], Awaitable[Response]],
        *,
        mcp: McpMount | None = None,
        guard_mcp: Callable[[Request], Awaitable[Response | None]] | None = None,
    ) -> None:
        self.app = app
        self.hot = routes
        self.on_error = on_error
        self.mcp = mcp
        self.guard_mcp = guard_mcp

    @property
    def routes(self) -> list[Any]:
        return self.app.routes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        handler = (
            self.hot.get((scope.get("method"), scope.get("path")))
            if scope["type"] == "http"
            else None
        )
        if handler is None:
            if self.mcp is not None and scope["type"] == "http" and scope["path"] == "/mcp":
                await self._mcp(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        try:
            await handler(scope, receive, send)
        except Exception as exc:  # a bug of ours: answer 500 as Starlette would, then log it
            await (await self.on_error(Request(scope, receive), exc))(scope, receive, send)
            raise

    async def _mcp(self, scope: Any, receive: Any, send: Any) -> None:
        assert self.mcp is not None and self.guard_mcp is not None
        refused = await self.guard_mcp(Request(scope, receive))
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.mcp.handle(self, scope, receive, send)


# --- request helpers -------------------------------------------------------------------------


def _render_error(err: CoordError) -> Response:
    return JSONResponse(err.to_dict(), status_code=err.http_status)


def _check_host(host: str) -> None:
    # DNS rebinding defence: a web page must not reach the board through a hostname it owns.
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    if name not in LOOPBACK_HOSTS:
        err = Unauthorized(
            f"requests must address the daemon as 127.0.0.1 or localhost, not {host!r}"
        )
        err.http_status = 403
        raise err


def _check_token(header: str, expected: str) -> None:
    """``header`` is the request's Authorization header."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise Unauthorized(
            "writes need the header 'Authorization: Bearer <token>' with the token in .coord/token"
        )
    if not hmac.compare_digest(given.strip().encode(), expected.encode()):
        raise Unauthorized("wrong token: use the one in this board's .coord/token")


async def _json(request: Request) -> Any:
    limit: int = request.scope.get(_MAX_BODY_KEY, MAX_BODY)
    raw = await _read_body(request.receive, request.headers.get("content-length"), limit)
    return _parse_json(raw)


async def _read_body(receive: Receive, declared: str | None, limit: int = MAX_BODY) -> bytes:
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


def _parse_json(raw: bytes) -> Any:
    if not raw.strip():
        return {}
    try:
        # JSON between systems is UTF-8 (RFC 8259), and a byte-order mark may be ignored
        return _decode_json(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as err:
        bad = InvalidInput(f"request body is not valid JSON: {err}")
        bad.code, bad.http_status = "invalid_json", 400
        raise bad from None


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which JSON does not have: stored in evidence,
    # they would make every later answer about the item unencodable.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise ValueError(f"{text} is out of range for a JSON number")
    return value


# Built once: json.loads with any option builds a new decoder on every call.
_decode_json = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float).decode


async def _json_object(request: Request, allowed: set[str]) -> dict[str, Any]:
    return _object(await _json(request), allowed)


def _object(body: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(
            f"unknown field {', '.join(unknown)}; this endpoint takes {', '.join(sorted(allowed))}",
            fields=unknown,
        )
    return body


def _agent(body: dict[str, Any]) -> str:
    return model.check_agent(body.get("agent"))


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{key} must be a string", field=key)
    return value


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key} must be true or false", field=key)
    return value


def _flag(value: str | None) -> bool:
    if value in (None, "", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise InvalidInput(f"expected true or false, not {value!r}")


def _int_param(value: Any, name: str, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise InvalidInput(f"{name} must be a non-negative integer, not {value!r}", field=name)


def _float_param(value: str | None, name: str, default: float) -> float:
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, not {value!r}", field=name) from None
