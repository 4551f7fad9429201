"""The OpenAPI 3.1 document served at /openapi.json.

Written by hand, next to the routes it describes; ``tests/test_http_api.py`` checks that every
route is documented and every documented path exists.
"""

from __future__ import annotations

from typing import Any


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def _ok(schema: dict[str, Any], description: str = "OK", status: str = "200") -> dict[str, Any]:
    return {
        status: {"description": description, "content": {"application/json": {"schema": schema}}}
    }


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "invalid JSON",
        401: "missing or wrong bearer token",
        403: "request did not address the daemon by a loopback host name",
        404: "no such item / nothing ready",
        409: "conflict: already_claimed, lease_lost, not_ready, not_claimable, files_reserved, "
        "checks_failed, checks_required, not_waiting or already_exists",
        413: "request body or a field is too large",
        422: "invalid input (field named in the message) or dependency_cycle",
    }
    return {
        str(s): {"description": text[s], "content": {"application/json": {"schema": _ref("Error")}}}
        for s in statuses
    }


_WRITE_ERRORS = (400, 401, 403, 404, 409, 413, 422)
_AGENT = {"type": "string", "description": "the acting agent's name"}
_TOKEN = {"type": "integer", "description": "the fencing token the claim returned"}
_LEASE = {"type": "number", "description": "lease length in seconds (default: board setting)"}


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "properties": props,
        "additionalProperties": False,
    }


_ITEM_ID = [
    {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": ["integer", "string"]},
        "description": "an item id, or the work-package key it was imported as (R3)",
    }
]
_COMMANDS = {"type": "array", "items": {"type": "string"}, "description": "shell commands"}
_RUN = _obj(
    ["command", "exit_code"],
    command={"type": "string"},
    exit_code={"type": "integer"},
    duration_s={"type": "number"},
    head={"type": ["string", "null"], "description": "git HEAD where the check ran"},
    output_tail={"type": "string", "description": "the last lines of its output"},
)


def _write(
    summary: str, body: dict[str, Any], ok: dict[str, Any], *, path_id: bool = True
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "security": [{"bearer": []}],
        "requestBody": _body(body),
        "responses": {**ok, **_errors(*_WRITE_ERRORS)},
    }
    if path_id:
        op["parameters"] = _ITEM_ID
    return op


_NEW_ITEM = _obj(
    ["title"],
    title={"type": "string", "maxLength": 300},
    kind={"enum": ["task", "bug", "note", "handoff"], "default": "task"},
    priority={"type": "integer", "minimum": 0, "maximum": 4, "default": 2},
    labels={"type": "array", "items": {"type": "string"}},
    deps={
        "type": "array",
        "items": {"type": ["integer", "string"]},
        "description": "item ids, or refs of items in the same import",
    },
    body={"type": "string", "maxLength": 65536},
    to={"type": "string", "description": "the agent it is addressed to"},
    ref={"type": "string", "description": "import only: a name other entries' deps can use"},
    files={
        "type": "array",
        "items": {"type": "string"},
        "description": "paths or gitignore-style patterns the item owns; claiming it reserves them",
    },
    key={"type": "string", "description": "a work-package id to name the item by (R3)"},
    checks=_COMMANDS,
    agent=_AGENT,
)

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "coord",
        "version": "1",
        "description": "A shared board where parallel coding agents claim work atomically. "
        "Writes need 'Authorization: Bearer <.coord/token>'. Times are ISO 8601 UTC on the "
        "daemon's clock.",
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error", "message"],
                "properties": {
                    "error": {"type": "string"},
                    "message": {"type": "string"},
                    "holder": {"type": ["string", "null"]},
                    "lease_expires_at": {"type": ["string", "null"]},
                },
            },
            "Item": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "kind": {"type": "string"},
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "priority": {"type": "integer"},
                    "labels": {"type": "array", "items": {"type": "string"}},
                    "state": {"enum": ["pending", "claimed", "needs_human", "done", "cancelled"]},
                    "key": {"type": ["string", "null"]},
                    "spec": {"type": ["string", "null"], "description": "document:line"},
                    "checks": {"type": "array", "items": {"type": "string"}},
                    "evidence": {"type": ["object", "null"]},
                    "question": {"type": ["string", "null"]},
                    "escalate_to": {"type": ["string", "null"]},
                    "created_by": {"type": "string"},
                    "to": {"type": ["string", "null"]},
                    "claimed_by": {"type": ["string", "null"]},
                    "fencing_token": {"type": "integer"},
                    "lease_expires_at": {"type": ["string", "null"]},
                    "lease_expired": {"type": "boolean"},
                    "deps": {"type": "array", "items": {"type": "integer"}},
                    "blocked_by": {"type": "array", "items": {"type": "integer"}},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "files_held_by": {"type": "array", "items": _ref("Reservation")},
                    "ready": {"type": "boolean"},
                    "created_at": {"type": "string"},
                    "updated_at": {"type": "string"},
                    "closed_at": {"type": ["string", "null"]},
                },
            },
            "Claim": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "title": {"type": "string"},
                    "kind": {"type": "string"},
                    "agent": {"type": "string"},
                    "token": {"type": "integer"},
                    "lease_expires_at": {"type": "string"},
                    "takeover_from": {"type": ["string", "null"]},
                    "item": _ref("Item"),
                },
            },
            "Reservation": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "agent": {"type": "string"},
                    "pattern": {"type": "string"},
                    "exclusive": {"type": "boolean"},
                    "item": {"type": ["integer", "null"]},
                    "reason": {"type": "string"},
                    "created_at": {"type": "string"},
                    "expires_at": {"type": "string"},
                },
            },
            "Event": {
                "type": "object",
                "properties": {
                    "seq": {"type": "integer"},
                    "at": {"type": "string"},
                    "agent": {"type": ["string", "null"]},
                    "item_id": {"type": ["integer", "null"]},
                    "kind": {"type": "string"},
                    "details": {"type": "object"},
                },
            },
        },
    },
    "paths": {
        "/v1/health": {
            "get": {"summary": "liveness and schema version", "responses": _ok({"type": "object"})}
        },
        "/openapi.json": {
            "get": {"summary": "this document", "responses": _ok({"type": "object"})}
        },
        "/v1/items": {
            "get": {
                "summary": "list items",
                "parameters": [
                    {
                        "name": "state",
                        "in": "query",
                        "schema": {
                            "enum": [
                                "pending",
                                "claimed",
                                "needs_human",
                                "done",
                                "cancelled",
                                "open",
                            ]
                        },
                    },
                    {
                        "name": "spec",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "only packages imported from this document",
                    },
                    {
                        "name": "ready",
                        "in": "query",
                        "schema": {"type": "boolean"},
                        "description": "only items claimable now",
                    },
                    {"name": "kind", "in": "query", "schema": {"type": "string"}},
                    {"name": "label", "in": "query", "schema": {"type": "string"}},
                    {"name": "after", "in": "query", "schema": {"type": "integer"}},
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "maximum": 1000},
                    },
                ],
                "responses": {
                    **_ok(
                        {
                            "type": "object",
                            "properties": {"items": {"type": "array", "items": _ref("Item")}},
                        }
                    ),
                    **_errors(422),
                },
            },
            "post": _write(
                "post an item", _NEW_ITEM, _ok(_ref("Item"), "created", "201"), path_id=False
            ),
        },
        "/v1/items:import": {
            "post": _write(
                "post many items in one transaction (all or none)",
                {
                    "oneOf": [
                        {"type": "array", "items": _NEW_ITEM},
                        _obj(["items"], agent=_AGENT, items={"type": "array", "items": _NEW_ITEM}),
                    ]
                },
                _ok(
                    {
                        "type": "object",
                        "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
                    },
                    "created",
                    "201",
                ),
                path_id=False,
            )
        },
        "/v1/items/{id}": {
            "get": {
                "summary": "an item with replies, acknowledgements and history",
                "parameters": _ITEM_ID,
                "responses": {**_ok(_ref("Item")), **_errors(404, 422)},
            },
            "patch": _write(
                "edit an item; while it is claimed only the holder, with its token",
                _obj(
                    ["agent"],
                    agent=_AGENT,
                    token=_TOKEN,
                    title={"type": "string"},
                    body={"type": "string"},
                    priority={"type": "integer"},
                    labels={"type": "array", "items": {"type": "string"}},
                    add_deps={"type": "array", "items": {"type": "integer"}},
                    remove_deps={"type": "array", "items": {"type": "integer"}},
                    add_checks=_COMMANDS,
                    remove_checks=_COMMANDS,
                ),
                _ok(_ref("Item")),
            ),
        },
        "/v1/items/{id}/cancel": {
            "post": _write(
                "cancel an item",
                _obj(["agent"], agent=_AGENT, token=_TOKEN, reason={"type": "string"}),
                _ok(_ref("Item")),
            )
        },
        "/v1/items/{id}/claim": {
            "post": _write(
                "claim an item: exactly one concurrent caller wins",
                _obj(["agent"], agent=_AGENT, lease_seconds=_LEASE),
                _ok(_ref("Claim")),
            )
        },
        "/v1/claim-next": {
            "post": _write(
                "claim the best ready item (priority, then age); 404 nothing_ready. With "
                "count: up to count items whose files overlap neither each other nor anything "
                'held, as {"items": [claim, ...]}',
                _obj(
                    ["agent"],
                    agent=_AGENT,
                    lease_seconds=_LEASE,
                    kind={"enum": ["task", "bug", "note", "handoff"]},
                    label={"type": "string"},
                    count={"type": "integer", "minimum": 1, "maximum": 64},
                ),
                _ok(
                    {
                        "oneOf": [
                            _ref("Claim"),
                            {
                                "type": "object",
                                "properties": {"items": {"type": "array", "items": _ref("Claim")}},
                            },
                        ]
                    }
                ),
                path_id=False,
            )
        },
        "/v1/items/{id}/heartbeat": {
            "post": _write(
                "extend the lease; 409 lease_lost for a stale token",
                _obj(["agent", "token"], agent=_AGENT, token=_TOKEN, lease_seconds=_LEASE),
                _ok(_ref("Claim")),
            )
        },
        "/v1/items/{id}/release": {
            "post": _write(
                "give the item back to pending; 409 lease_lost for a stale token",
                _obj(["agent", "token"], agent=_AGENT, token=_TOKEN, reason={"type": "string"}),
                _ok(_ref("Item")),
            )
        },
        "/v1/items/{id}/done": {
            "post": _write(
                "close the item; 409 lease_lost for a stale token. An item with checks needs "
                "evidence that each passed (409 checks_required / checks_failed, the failed "
                "run recorded), or skip_checks: the reason, recorded",
                _obj(
                    ["agent", "token"],
                    agent=_AGENT,
                    token=_TOKEN,
                    summary={"type": "string"},
                    evidence={"type": "array", "items": _RUN},
                    skip_checks={"type": "string", "description": "why the checks are skipped"},
                ),
                _ok(_ref("Item")),
            )
        },
        "/v1/items/{id}/escalate": {
            "post": _write(
                "ask a human: the item becomes needs_human; the holder keeps claim and files "
                "and the lease stops running out until an answer",
                _obj(
                    ["agent", "token", "question"],
                    agent=_AGENT,
                    token=_TOKEN,
                    question={"type": "string"},
                ),
                _ok(_ref("Item")),
            )
        },
        "/v1/items/{id}/answer": {
            "post": _write(
                "answer a needs_human item: back to its holder with a fresh lease; the answer "
                "is a reply and reaches the holder's inbox; 409 not_waiting",
                _obj(["agent", "text"], agent=_AGENT, text={"type": "string"}),
                _ok(_ref("Item")),
            )
        },
        "/v1/spec:import": {
            "post": _write(
                "bring the board in step with a design document's work packages (parsed by "
                "the caller), in one transaction: all or nothing",
                _obj(
                    ["agent", "spec", "packages"],
                    agent=_AGENT,
                    spec={"type": "string", "description": "repository-relative path"},
                    packages={"type": "array", "items": {"type": "object"}},
                    escalate_to={"type": "string"},
                    prefix={"type": "string", "description": "prepended to every package id"},
                    adopt={
                        "type": "array",
                        "items": {"type": "object"},
                        "description": "reservation lines to turn into claims/holds",
                    },
                ),
                _ok(
                    {
                        "type": "object",
                        "properties": {
                            k: {"type": "array"}
                            for k in (
                                "created",
                                "updated",
                                "unchanged",
                                "removed",
                                "closed",
                                "conflicts",
                                "adopted",
                                "not_adopted",
                            )
                        },
                    }
                ),
                path_id=False,
            )
        },
        "/v1/items/{id}/replies": {
            "post": _write(
                "reply on the item's thread; @name mentions reach that agent's inbox",
                _obj(["agent", "body"], agent=_AGENT, body={"type": "string"}),
                _ok({"type": "object"}, "created", "201"),
            )
        },
        "/v1/items/{id}/ack": {
            "post": _write(
                "acknowledge the item", _obj(["agent"], agent=_AGENT), _ok({"type": "object"})
            )
        },
        "/v1/inbox": {
            "post": _write(
                "what others said to the agent or did to its items since it last looked "
                "(marks them seen unless peek)",
                _obj(["agent"], agent=_AGENT, peek={"type": "boolean"}, limit={"type": "integer"}),
                _ok(
                    {
                        "type": "object",
                        "properties": {"events": {"type": "array", "items": _ref("Event")}},
                    }
                ),
                path_id=False,
            )
        },
        "/v1/agents": {
            "get": {
                "summary": "agents, when last seen, and what each holds",
                "responses": _ok({"type": "object"}),
            }
        },
        "/v1/events": {
            "get": {
                "summary": "the event log after a sequence number; wait long-polls",
                "parameters": [
                    {"name": "after", "in": "query", "schema": {"type": "integer"}},
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "maximum": 5000},
                    },
                    {"name": "item", "in": "query", "schema": {"type": "integer"}},
                    {
                        "name": "wait",
                        "in": "query",
                        "schema": {"type": "number", "maximum": 60},
                        "description": "seconds to wait for new events when there are none",
                    },
                ],
                "responses": {
                    **_ok(
                        {
                            "type": "object",
                            "properties": {
                                "events": {"type": "array", "items": _ref("Event")},
                                "last_seq": {"type": "integer"},
                            },
                        }
                    ),
                    **_errors(422),
                },
            }
        },
        "/v1/reservations": {
            "get": {
                "summary": "live reservations (of one agent with ?agent=)",
                "parameters": [{"name": "agent", "in": "query", "schema": {"type": "string"}}],
                "responses": {
                    **_ok(
                        {
                            "type": "object",
                            "properties": {
                                "reservations": {"type": "array", "items": _ref("Reservation")}
                            },
                        }
                    ),
                    **_errors(422),
                },
            },
            "post": _write(
                "reserve paths or patterns, all or none; 409 files_reserved names every "
                "conflicting holder, pattern, item and expiry",
                _obj(
                    ["agent", "patterns"],
                    agent=_AGENT,
                    patterns={"type": "array", "items": {"type": "string"}},
                    shared={"type": "boolean", "default": False},
                    lease_seconds=_LEASE,
                    item={"type": "integer"},
                    reason={"type": "string"},
                ),
                _ok(
                    {
                        "type": "object",
                        "properties": {
                            "reservations": {"type": "array", "items": _ref("Reservation")}
                        },
                    },
                    "created",
                    "201",
                ),
                path_id=False,
            ),
        },
        "/v1/reservations:release": {
            "post": _write(
                "free the agent's reservations of these patterns, or all of them",
                _obj(
                    ["agent"],
                    agent=_AGENT,
                    patterns={"type": "array", "items": {"type": "string"}},
                    all={"type": "boolean"},
                ),
                _ok(
                    {
                        "type": "object",
                        "properties": {"freed": {"type": "array", "items": {"type": "string"}}},
                    }
                ),
                path_id=False,
            )
        },
        "/v1/who": {
            "get": {
                "summary": "who holds a path, and may the agent edit it",
                "parameters": [
                    {"name": "path", "in": "query", "required": True, "schema": {"type": "string"}},
                    {"name": "agent", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    **_ok(
                        {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string"},
                                "holders": {"type": "array", "items": _ref("Reservation")},
                                "may_edit": {"type": "boolean"},
                                "blocked_by": {"type": "array", "items": _ref("Reservation")},
                            },
                        }
                    ),
                    **_errors(422),
                },
            }
        },
        "/v1/shutdown": {
            "post": _write(
                "stop the daemon", {"type": "object"}, _ok({"type": "object"}), path_id=False
            )
        },
    },
}
