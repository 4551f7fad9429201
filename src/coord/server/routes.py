"""The route table: every endpoint of the daemon, once.

The Starlette routes (app.py), the hot path (hot.py), the body checks (pipeline.py) and the
OpenAPI document at /openapi.json (openapi.py) are all made from ``ROUTES``.
"""

from __future__ import annotations

from coord import model
from coord.limits import (
    INBOX_PAGE,
    MAX_ANSWER_BYTES,
    MAX_INBOX_PAGE,
    MAX_REPLIES_PAGE,
    REPLIES_PAGE,
)
from coord.server import (
    claims,
    events,
    identity,
    items,
    landing,
    reservations,
    status,
    stream,
    tokens,
    waiting,
)
from coord.server.landing import WORKTREE
from coord.server.schemas import (
    ADOPT,
    AGENT,
    CHECK_RUNS,
    COMMANDS,
    DOCUMENT_PATH,
    IMPORT_ITEMS,
    ITEM_IDS,
    KIND,
    LABELS,
    LEASE,
    NEW_ITEM_FIELDS,
    PACKAGES,
    PRIORITY,
    SPEC_IMPORTED,
    TITLE,
    TOKEN,
    integer,
    listing,
    paged_listing,
    ref,
    text,
)
from coord.server.table import MAX_IMPORT_REQUEST_BYTES, Body, Param, Route
from coord.server.web import codes

# a read names its reader so that a claim's fencing token is shown to its holder (redaction.py)
READER = Param("agent", AGENT, "who reads: a claim's fencing token is shown to its holder alone")

ITEM = ref("Item")
ITEM_SHOWN = {
    "allOf": [ITEM],
    "required": ["replies", "replies_next"],
    "properties": {
        "replies": {"type": "array", "items": ref("Reply")},
        "replies_next": {"type": ["integer", "null"]},
        "acks": {"type": "array"},
        "history": {"type": "array", "items": ref("Event")},
    },
}
CLAIM = ref("Claim")
ANY_OBJECT = {"type": "object"}
# what the board answers about an item named in the path: 404 no such item, 409 its state
# refuses, 422 a bad value
ABOUT_AN_ITEM = (404, 409, 422)

_END_CLAIM = Body({"agent": AGENT, "token": TOKEN, "reason": text("why")}, ("agent", "token"))

ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/v1/health",
        events.health,
        "liveness and schema version (open: no token); 503 or 507 with the reason when the "
        "board cannot take writes",
        ANY_OBJECT,
        errors=(507,),
        public=True,
    ),
    Route(
        "GET",
        "/openapi.json",
        events.openapi_document,
        "this document (open: no token)",
        ANY_OBJECT,
        public=True,
        board=False,
    ),
    Route(
        "GET",
        "/v1/identity",
        identity.identity,
        "the daemon proves it holds this board's token without anyone sending it: an HMAC "
        "keyed by the token over the caller's nonce, its instance and its port (open: no "
        "token; clients ask before they send the token)",
        identity.ANSWER_SCHEMA,
        params=(
            Param("nonce", identity.NONCE_SCHEMA, required=True),
            Param("person", identity.PERSON_SCHEMA),
        ),
        errors=(422,),
        public=True,
        board=False,
    ),
    Route(
        "POST",
        "/v1/items",
        items.add_item,
        "post an item",
        ITEM,
        status=201,
        write=True,
        body=Body({"agent": AGENT, **NEW_ITEM_FIELDS}, ("agent", "title")),
        errors=(404, 409, 422),
    ),
    Route(
        "GET",
        "/v1/items",
        items.list_items,
        "list items, a page at a time: `next` is the `after` of the next page (null: no more)",
        paged_listing("items", ITEM),
        params=(
            Param(
                "state",
                {"enum": list(model.LISTED_STATES)},
                "open: pending or claimed; blocked: pending, waiting on a dependency not done",
            ),
            Param(
                "holder",
                AGENT,
                "only items this agent holds (and, with state done, those it finished)",
            ),
            Param("spec", {"type": "string"}, "only packages imported from this document"),
            Param("ready", {"type": "boolean"}, "only items claimable now"),
            Param("kind", KIND),
            Param("label", {"type": "string"}),
            Param("after", integer(0), "items with a greater id"),
            Param("limit", integer(1, maximum=1000)),
            READER,
        ),
        errors=(422,),
    ),
    Route(
        "POST",
        "/v1/items:import",
        items.import_items,
        "post many items in one transaction (all or none)",
        listing("ids", {"type": "integer"}),
        status=201,
        write=True,
        body=Body(
            {"agent": AGENT, "items": IMPORT_ITEMS},
            ("agent", "items"),
            list_field="items",
        ),
        params=(Param("agent", AGENT, "the agent, when the body is a bare array"),),
        errors=(404, 409, 422),
        max_body=MAX_IMPORT_REQUEST_BYTES,
    ),
    Route(
        "GET",
        "/v1/items/{id}",
        items.show_item,
        "an item with acknowledgements, history and a page of its replies: up to "
        f"replies_limit of them and {MAX_ANSWER_BYTES} bytes of their text; replies_next, "
        "when not null, is the replies_after of the next page",
        ITEM_SHOWN,
        params=(
            Param(
                "replies_after",
                integer(0),
                "replies with a greater id (the last page's replies_next)",
            ),
            Param(
                "replies_limit",
                {**integer(1, maximum=MAX_REPLIES_PAGE), "default": REPLIES_PAGE},
                "replies in one page",
            ),
            READER,
        ),
        errors=(404, 422),
    ),
    Route(
        "PATCH",
        "/v1/items/{id}",
        items.edit_item,
        "edit an item; while it is claimed only the holder, with its token",
        ITEM,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "token": TOKEN,
                "title": TITLE,
                "body": text("the item's description"),
                "priority": PRIORITY,
                "labels": LABELS,
                "add_deps": ITEM_IDS,
                "remove_deps": ITEM_IDS,
                "add_checks": COMMANDS,
                "remove_checks": COMMANDS,
            },
            ("agent",),
            any_of=(
                *({"required": [name]} for name in ("title", "body", "priority", "labels")),
                *(
                    {"required": [name], "properties": {name: {"minItems": 1}}}
                    for name in ("add_deps", "remove_deps", "add_checks", "remove_checks")
                ),
            ),
        ),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/cancel",
        claims.cancel,
        "cancel an item, with the reason; by its creator, the holder of a live claim (with "
        "its token) or a human listed in the board's config (403 not_permitted otherwise)",
        ITEM,
        write=True,
        body=Body(
            {"agent": AGENT, "token": TOKEN, "reason": text("why", required=True)},
            ("agent", "reason"),
        ),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/reopen",
        items.reopen,
        "a cancelled item back to pending, with the reason; by its creator or a human listed "
        "in the board's config (403 not_permitted); 409 not_cancelled (a done item stays done)",
        ITEM,
        write=True,
        body=Body({"agent": AGENT, "reason": text("why", required=True)}, ("agent", "reason")),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/claim",
        claims.claim,
        "claim an item: exactly one concurrent caller wins",
        CLAIM,
        write=True,
        body=Body({"agent": AGENT, "lease_seconds": LEASE, "worktree": WORKTREE}, ("agent",)),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/claim-next",
        claims.claim_next,
        "claim the best ready item (priority, then age); 404 nothing_ready, with open (how "
        "many items are open) and held_back (how many of them each reason holds back: "
        "claimed, needs_human, landing, waiting_on_dependencies, files_held, "
        "reserved_in_document, reserved_for_you, first_refusal, yours), and reserved (the "
        "first packages a design document holds back: id, ref, reserved_for). With count: up "
        "to count items whose files overlap neither each other nor anything held, as "
        '{"items": [claim, ...]}',
        {"anyOf": [CLAIM, {**listing("items", CLAIM), "required": ["items"]}]},
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "lease_seconds": LEASE,
                "kind": KIND,
                "label": {"type": "string"},
                "count": {"type": "integer", "minimum": 1, "maximum": model.MAX_BATCH},
                "worktree": WORKTREE,
            },
            ("agent",),
        ),
        errors=(404, 422),
        hot=True,
    ),
    Route(
        "POST",
        "/v1/items/{id}/heartbeat",
        claims.heartbeat,
        "extend the lease; 409 lease_lost for a stale token",
        CLAIM,
        write=True,
        body=Body({"agent": AGENT, "token": TOKEN, "lease_seconds": LEASE}, ("agent", "token")),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/release",
        claims.release,
        "give the item back to pending; 409 lease_lost for a stale token",
        ITEM,
        write=True,
        body=_END_CLAIM,
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/done",
        claims.done,
        "close the item; 409 lease_lost for a stale token. An item with checks needs evidence "
        "that each passed (409 checks_required / checks_failed, the failed run recorded), or "
        "skip_checks: the reason, recorded",
        ITEM,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "token": TOKEN,
                "summary": text("what was done"),
                "evidence": CHECK_RUNS,
                "skip_checks": text("why the checks are skipped", required=True),
            },
            ("agent", "token"),
        ),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/escalate",
        claims.escalate,
        "ask a human: the item becomes needs_human; the holder keeps claim and files until an "
        "answer, up to the board's escalation bound (asking again renews it)",
        ITEM,
        write=True,
        body=Body(
            {"agent": AGENT, "token": TOKEN, "question": text("the question", required=True)},
            ("agent", "token", "question"),
        ),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/answer",
        claims.answer,
        "answer a needs_human item: back to its holder with a fresh lease; the answer is a "
        "reply and reaches the holder's inbox; 409 not_waiting",
        ITEM,
        write=True,
        body=Body({"agent": AGENT, "text": text("the answer", required=True)}, ("agent", "text")),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/spec:import",
        items.import_spec,
        "bring the board in step with a design document's work packages (parsed by the "
        "caller), in one transaction: all or nothing",
        SPEC_IMPORTED,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "spec": DOCUMENT_PATH,
                "packages": PACKAGES,
                "escalate_to": {
                    "type": "string",
                    "description": "who answers its questions: a name or a contact, as the "
                    "document's `Escalate to:` line says it",
                },
                "prefix": {
                    "type": "string",
                    "pattern": r"^([A-Za-z][A-Za-z0-9_.:-]{0,31})?$",
                    "description": "prepended to every package id (empty: none)",
                },
                "adopt": ADOPT,
                "dry_run": {
                    "type": "boolean",
                    "description": "answer what the import would do, change nothing",
                },
            },
            ("agent", "spec", "packages"),
        ),
        errors=(404, 409, 422),
        max_body=MAX_IMPORT_REQUEST_BYTES,
    ),
    Route(
        "POST",
        "/v1/items/{id}/replies",
        items.reply,
        "reply on the item's thread; @name mentions reach that agent's inbox",
        ANY_OBJECT,
        status=201,
        write=True,
        body=Body({"agent": AGENT, "body": text("the reply", required=True)}, ("agent", "body")),
        errors=(404, 422),
    ),
    Route(
        "POST",
        "/v1/messages",
        items.send,
        "a direct message to an agent: a note addressed to `to`, which reaches its inbox",
        ITEM,
        status=201,
        write=True,
        body=Body(
            {"agent": AGENT, "to": AGENT, "text": text("the message", required=True)},
            ("agent", "to", "text"),
        ),
        errors=(422,),
    ),
    Route(
        "POST",
        "/v1/items/{id}/ack",
        items.ack,
        "acknowledge the item",
        ANY_OBJECT,
        write=True,
        body=Body({"agent": AGENT}, ("agent",)),
        errors=(404, 422),
    ),
    Route(
        "POST",
        "/v1/inbox",
        events.inbox,
        "what others said to the agent or did to its items since it last looked (marks them "
        "seen unless peek)",
        listing("events", ref("Event")),
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "peek": {"type": "boolean"},
                "limit": {
                    **integer(1, "at most this many events; the rest stay unread", MAX_INBOX_PAGE),
                    "default": INBOX_PAGE,
                },
            },
            ("agent",),
        ),
    ),
    Route(
        "GET",
        "/v1/status",
        status.status,
        "the daemon (version, pid) and the board at a glance: counts by state, active agents, "
        "claims near or past their lease's end, items waiting on a human",
        status.ANSWER_SCHEMA,
    ),
)

ROUTES += events.ROUTES  # the log, the agents, files others changed, shutdown
ROUTES += stream.ROUTES  # the live event stream
ROUTES += reservations.ROUTES  # files: reservations and who holds a path
ROUTES += codes.ROUTES  # the live page's codes and session
ROUTES += landing.ROUTES  # a worktree item's way to main
ROUTES += waiting.ROUTES  # the fair wait, and asking a holder (issue 26)
ROUTES += tokens.ROUTES  # people's and machines' tokens

# answered without the token (the 401's message names them)
PUBLIC_PATHS = tuple(route.path for route in ROUTES if route.public)
