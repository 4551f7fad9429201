"""The OpenAPI 3.1 document served at /openapi.json, generated from the route table.

Nothing here describes an endpoint by hand: paths, methods, bodies (with their limits),
parameters and error statuses all come from ``coord.server.routes.ROUTES``, the same table
the server is built from.
"""

from __future__ import annotations

from typing import Any

from coord.server.routes import PUBLIC_PATHS, ROUTES
from coord.server.schemas import COMPONENTS, ITEM_REF, ref
from coord.server.table import MAX_IMPORT_REQUEST_BYTES, MAX_REQUEST_BYTES, Param, Route
from coord.server.waiting import PATH_PARAMS as WAITING_PATH_PARAMS

ERROR_MEANINGS = {
    400: "invalid JSON, or JSON nested too deeply (invalid_json)",
    401: "missing or wrong bearer token (unauthorized): send 'Authorization: Bearer <token>' "
    "with the token in the board's .coord/token",
    403: "the request did not address the daemon by a loopback host name (foreign_host), or "
    "the agent may not do this to someone else's item (not_permitted: the message names who "
    "may); on the web page's session, a request from another origin or a change without an "
    "Origin (foreign_origin)",
    404: "no such item (not_found), or nothing ready (nothing_ready)",
    409: "the board's state refuses it: already_claimed, lease_lost, not_ready, not_claimable, "
    "files_reserved, checks_failed, checks_required, not_waiting, not_cancelled, "
    "already_exists or dependency_cycle",
    413: f"too large (too_large): a request body over {MAX_REQUEST_BYTES} bytes "
    f"({MAX_IMPORT_REQUEST_BYTES} for imports), or a field over its limit",
    422: "invalid input, the field named in the message (invalid_input; unknown fields are "
    "refused)",
    503: "the board cannot answer now: its file was deleted or replaced while the daemon ran "
    "(board_gone), another process holds its write lock (board_busy, with Retry-After), or "
    "the file system failed (board_io_error), or a team board's PostgreSQL server cannot be "
    "reached (database_unreachable, with Retry-After)",
    507: "the disk is full (disk_full): nothing was changed",
}

# a path's {name}: an item's id or package id, or a wait's or an ask's id
PATH_PARAMS = {
    "id": Param("id", {"anyOf": ITEM_REF["anyOf"]}, ITEM_REF["description"], where="path"),
    **WAITING_PATH_PARAMS,  # a wait's and an ask's id
}


def _operation(route: Route) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": route.summary, "operationId": _operation_id(route)}
    params = [PATH_PARAMS[name].spec() for name in _path_names(route)]
    params += [p.spec() for p in route.params]
    if params:
        op["parameters"] = params
    if not route.public:
        op["security"] = [{"bearer": []}]
    if route.body is not None:
        op["requestBody"] = {
            "required": bool(route.body.required),
            "content": {"application/json": {"schema": route.body.schema()}},
        }
    responses: dict[str, Any] = {
        str(route.status): {
            "description": "created" if route.status == 201 else "OK",
            "content": {route.media_type: {"schema": route.answer}},
        }
    }
    for status in route.error_statuses():
        responses[str(status)] = {
            "description": ERROR_MEANINGS[status],
            "content": {"application/json": {"schema": ref("Error")}},
        }
    op["responses"] = responses
    return op


def _path_names(route: Route) -> list[str]:
    return [part[1:-1] for part in route.path.split("/") if part.startswith("{")]


def _operation_id(route: Route) -> str:
    handler = route.handler
    return f"{handler.__module__.rsplit('.', 1)[-1]}.{handler.__name__}"


def build(routes: tuple[Route, ...] = ROUTES) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "coord",
            "version": "1",
            "description": "A shared board where parallel coding agents claim work atomically. "
            f"Every endpoint but {', '.join(PUBLIC_PATHS)} needs 'Authorization: Bearer "
            "<.coord/token>', reads included (or the X-Coord-Session header of the web page at /, "
            "which `coord open` signs a browser in to: HTML for people, not part of this "
            "document; no cookie opens anything). Times are ISO 8601 UTC on the "
            "daemon's clock. Free text is limited in bytes of UTF-8 (x-maxBytes), titles, "
            "labels and patterns in characters (maxLength).",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": COMPONENTS,
        },
        "paths": paths,
    }


OPENAPI: dict[str, Any] = build()
