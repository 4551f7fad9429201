"""The route table: every endpoint of the daemon, once.

The Starlette routes (app.py), the hot path (hot.py), the body checks (pipeline.py) and the
OpenAPI document at /openapi.json (openapi.py) are all made from ``ROUTES``.
"""

from __future__ import annotations

from coord import model
from coord.core.tripwire import CHANGES as HELD_CHANGES
from coord.core.tripwire import FIELDS as HELD_CHANGE_FIELDS
from coord.limits import (
    INBOX_PAGE,
    MAX_ANSWER_BYTES,
    MAX_EVENTS_ANSWER_BYTES,
    MAX_INBOX_PAGE,
    MAX_INTEGER,
    MAX_PATTERN,
    MAX_REPLIES_PAGE,
    MAX_REPORTED_FILES,
    MAX_STREAM_BEHIND,
    MIN_PRUNE_AGE,
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
    ITEM_ID,
    ITEM_IDS,
    ITEM_REF,
    KIND,
    LABELS,
    LEASE,
    NEW_ITEM_FIELDS,
    PACKAGES,
    PATH_PATTERN,
    PATTERNS,
    PRIORITY,
    SPEC_IMPORTED,
    TITLE,
    TOKEN,
    WHO,
    integer,
    listing,
    paged_listing,
    ref,
    text,
)
from coord.server.table import MAX_IMPORT_REQUEST_BYTES, Body, Param, Route, closed
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
        "POST",
        "/v1/held-files:changed",
        events.held_files_changed,
        "an agent's tool call changed files other agents hold (the after-tool hooks saw it): "
        "one held_files_changed event naming the agent, the command or tool, and each file "
        "with its holder, whether coord put it back and the SHA-256 of the overwritten "
        "version it kept; every holder is mentioned, so it reaches their inboxes",
        {
            "type": "object",
            "required": ["seq", "kind", "agent", "details"],
            "properties": {
                "seq": {"type": "integer"},
                "kind": {"type": "string"},
                "agent": {"type": "string"},
                "details": ANY_OBJECT,
            },
        },
        status=201,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "changed": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_REPORTED_FILES,
                    "description": "the held files the call changed",
                    "items": closed(
                        {
                            "path": {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN},
                            "holder": AGENT,
                            "change": {"enum": list(HELD_CHANGES)},
                            "restored": {"type": "boolean"},
                            "kept": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                            "why": {"type": "string", "maxLength": MAX_PATTERN},
                        },
                        HELD_CHANGE_FIELDS,
                        required=("path", "holder", "change"),
                    ),
                },
                "command": text("the shell command that changed them"),
                "tool": {"type": "string", "maxLength": MAX_PATTERN},
                "more_files": integer(0, "changed held files past those listed"),
            },
            ("agent", "changed"),
        ),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/agents",
        events.agents,
        "agents, when last seen, whether active (seen within the board's window) and what "
        "each holds; an agent is a name that claimed, reserved or read its inbox (role "
        "agent); ?all=true lists the people who only added, answered or replied too (role "
        "person)",
        listing("agents", ANY_OBJECT),
        params=(Param("all", {"type": "boolean"}, "people too, not only agents"),),
    ),
    Route(
        "POST",
        "/v1/agents:prune",
        events.prune_agents,
        "forget the names not seen for older_than_seconds that would lose nothing: no claim "
        "(a lapsed one included), no live reservation, nothing unread in their inbox that "
        "came after they were last seen; the rest are kept, each with why. The log keeps "
        "what they did (one agents_pruned event)",
        {
            "type": "object",
            "required": ["pruned", "kept", "older_than_seconds"],
            "properties": {
                "pruned": {"type": "array", "items": {"type": "string"}},
                "kept": {"type": "array", "items": ANY_OBJECT},
                "older_than_seconds": {"type": "number"},
            },
        },
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "older_than_seconds": {
                    "type": "number",
                    "minimum": MIN_PRUNE_AGE,
                    "maximum": MAX_INTEGER,
                    "default": events.DEFAULT_PRUNE_AGE,
                    "description": "seconds unseen (at least an hour; default a week)",
                },
            },
            ("agent",),
        ),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/status",
        status.status,
        "the daemon (version, pid) and the board at a glance: counts by state, active agents, "
        "claims near or past their lease's end, items waiting on a human",
        status.ANSWER_SCHEMA,
    ),
    Route(
        "GET",
        "/v1/events",
        events.events,
        "the event log after a sequence number; wait long-polls; `last_seq` is the board's "
        "last event (page on from the page's last while it is before it); an `after` past "
        "it is 409 `cursor_past_end` with `last_seq`",
        {**listing("events", ref("Event")), "required": ["events", "last_seq"]},
        params=(
            Param("after", integer(0)),
            Param(
                "limit",
                integer(1, maximum=5000),
                f"at most this many events; fewer once they hold {MAX_EVENTS_ANSWER_BYTES} "
                "bytes of details",
            ),
            Param("item", ITEM_ID),
            Param(
                "wait",
                {"type": "number", "minimum": 0, "maximum": events.MAX_WAIT_SECONDS},
                "seconds to wait for new events when there are none",
            ),
        ),
        errors=(409, 422),
    ),
    Route(
        "GET",
        "/v1/events/stream",
        stream.events_stream,
        "the event log live, as Server-Sent Events: each event a message `id: <seq>`, `event: "
        "coord`, `data: <the event as JSON>`, in order, none missed or doubled across a "
        "reconnect (`Last-Event-ID` wins over `after`); a `: keep-alive` comment when quiet; "
        f"a reader more than {MAX_STREAM_BEHIND} events behind, or whose cursor is past the "
        'board\'s last event, gets `event: reload` (data `{"reason", "last_seq"}`) and the '
        "stream ends",
        {"type": "string", "description": "an endless text/event-stream"},
        params=(
            Param(
                "after",
                integer(0),
                "events after this sequence number (a Last-Event-ID header wins over it)",
            ),
            Param("item", ITEM_ID, "only this item's events"),
            Param(
                "keepalive",
                {
                    "type": "number",
                    "minimum": stream.MIN_KEEPALIVE,
                    "maximum": stream.MAX_KEEPALIVE,
                    "default": stream.KEEPALIVE_SECONDS,
                },
                "seconds between keep-alive comments when nothing happens",
            ),
        ),
        errors=(422,),
        media_type="text/event-stream",
    ),
    Route(
        "GET",
        "/v1/reservations",
        reservations.reservations,
        "live reservations (of one agent with ?agent=)",
        listing("reservations", ref("Reservation")),
        params=(Param("agent", AGENT),),
        errors=(422,),
    ),
    Route(
        "POST",
        "/v1/reservations",
        reservations.reserve,
        "reserve paths or patterns, all or none; 409 files_reserved names every conflicting "
        "holder, pattern, item and expiry",
        listing("reservations", ref("Reservation")),
        status=201,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "patterns": {**PATTERNS, "minItems": 1},
                "shared": {"type": "boolean", "default": False},
                "lease_seconds": LEASE,
                "item": {**ITEM_REF, "description": "the item the files are for: id or R3"},
                "reason": text("why"),
            },
            ("agent", "patterns"),
        ),
        errors=(404, 409, 422),
    ),
    Route(
        "POST",
        "/v1/reservations:release",
        reservations.unreserve,
        "free the agent's reservations of these patterns, or all of them",
        listing("freed", {"type": "string"}),
        write=True,
        body=Body(
            {"agent": AGENT, "patterns": PATTERNS, "all": {"type": "boolean"}},
            ("agent",),
            any_of=(
                {"required": ["patterns"], "properties": {"patterns": {"minItems": 1}}},
                {"required": ["all"], "properties": {"all": {"const": True}}},
            ),
        ),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/who",
        reservations.who,
        "who holds a path, and may the agent edit it",
        WHO,
        params=(Param("path", PATH_PATTERN, required=True), Param("agent", AGENT)),
        errors=(422,),
    ),
    Route(
        "POST",
        "/v1/web/codes",
        codes.issue_code,
        "a one-time code that opens the web page at / as this agent (a human the board lists "
        "in `humans`, when it lists any; 403 not_permitted otherwise): good once, with this "
        "daemon process, for expires_in seconds; the page trades it for its session "
        "(`coord open`). With file: true, also a page only this user may read that sends a "
        "browser on to the link (`file`)",
        codes.ANSWER_SCHEMA,
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
        codes.page_proof,
        "the daemon proves to the web page that it made the page's session, without the page "
        "sending it: an HMAC keyed by the session's signature over the page's nonce (open: no "
        "token, no session; the page asks before it sends its session anywhere)",
        codes.PROOF_SCHEMA,
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
        codes.page_session,
        "the web page's session (its X-Coord-Session header): whom it acts as, until when, "
        "and the board's clock and newest event (with the token: no person, as and "
        "expires_at null)",
        codes.SESSION_SCHEMA,
    ),
    Route(
        "POST",
        "/v1/mirror:refresh",
        reservations.refresh_mirror,
        "PostgreSQL board: rewrite this machine's mirror of the live reservations now (the "
        "guard asks when it finds the mirror stale); 409 on a SQLite board, 503 when the "
        "database cannot be read",
        {
            "type": "object",
            "required": ["refreshed", "reservations", "last_seq"],
            "properties": {
                "refreshed": {"type": "boolean"},
                "reservations": {"type": "integer"},
                "last_seq": {"type": "integer"},
            },
        },
        body=Body({}),
        errors=(409, 422, 503),
    ),
    Route(
        "POST",
        "/v1/shutdown",
        events.shutdown,
        "stop the daemon",
        ANY_OBJECT,
        write=True,
        body=Body({}),
        errors=(422,),
        page=False,
        board=False,
    ),
)

ROUTES += landing.ROUTES  # a worktree item's way to main
ROUTES += waiting.ROUTES  # the fair wait, and asking a holder (issue 26)
ROUTES += tokens.ROUTES  # people's and machines' tokens

# answered without the token (the 401's message names them)
PUBLIC_PATHS = tuple(route.path for route in ROUTES if route.public)
