"""What each field of a request holds, and what each answer looks like, as JSON Schema.

Limits come from ``coord.limits`` (and the core's own lists of the fields a nested object
takes), so the document states the numbers the board enforces, counted the way it counts
them: characters for titles, labels and patterns, bytes of UTF-8 for free text.
"""

from __future__ import annotations

from coord import limits, model
from coord.core import adoption, evidence, packages, rules
from coord.server.table import Schema, closed


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def listing(name: str, schema: Schema) -> Schema:
    """An answer that is one list: {"items": [...]}, {"events": [...]} ..."""
    return {"type": "object", "properties": {name: {"type": "array", "items": schema}}}


def paged_listing(name: str, schema: Schema) -> Schema:
    """One page of a list, and where the next one starts: {"items": [...], "next": 12}."""
    page = listing(name, schema)
    page["properties"]["next"] = {"type": ["integer", "null"]}
    page["required"] = [name, "next"]
    return page


# Some character Python's str.strip() keeps: the board strips free text, titles and labels,
# and refuses what is left empty. Spelled out because JSON Schema's \s (ECMA) and Python's
# whitespace differ on \x1c-\x1f and \x85.
NOT_BLANK = r"[^\s\x1c-\x1f\x85]"


def text(description: str, *, required: bool = False) -> Schema:
    """Free text. JSON Schema counts characters; the board counts bytes of UTF-8, so the
    limit is stated as ``x-maxBytes`` (an OpenAPI extension) and in words."""
    schema: Schema = {
        "type": "string",
        "x-maxBytes": limits.MAX_BODY,
        "description": f"{description} (at most {limits.MAX_BODY} bytes of UTF-8)",
    }
    if required:
        schema["pattern"] = NOT_BLANK  # some text: not empty, not only spaces
    return schema


def integer(minimum: int, description: str = "", maximum: int = limits.MAX_INTEGER) -> Schema:
    """An integer the board can store: SQLite's are 64-bit."""
    schema: Schema = {"type": "integer", "minimum": minimum, "maximum": maximum}
    if description:
        schema["description"] = description
    return schema


AGENT: Schema = {
    "type": "string",
    "pattern": model.AGENT_PATTERN,
    "description": "the acting agent's name: 1-64 letters, digits or ._@:+- starting with a "
    "letter or digit",
}
TOKEN: Schema = integer(1, "the fencing token the claim returned")
ITEM_ID: Schema = integer(1, "an item id")
PACKAGE_ID: Schema = {"type": "string", "pattern": model.KEY_PATTERN}
LEASE: Schema = {
    "type": "number",
    "minimum": limits.MIN_LEASE_SECONDS,
    "maximum": limits.MAX_LEASE_SECONDS,
    "description": "lease length in seconds (default: the board's setting)",
}
TITLE: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": limits.MAX_TITLE,
    "pattern": NOT_BLANK,
}
KIND: Schema = {"enum": list(model.KINDS)}
PRIORITY: Schema = {
    "type": "integer",
    "minimum": model.PRIORITY_HIGHEST,
    "maximum": model.PRIORITY_LOWEST,
    "description": f"{model.PRIORITY_HIGHEST} is the highest",
}
LABEL: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": limits.MAX_LABEL,
    "pattern": r"^[^\s\x1c-\x1f\x85,][^,]*$",  # NOT_BLANK, and no comma anywhere
}
LABELS: Schema = {
    "type": "array",
    "maxItems": limits.MAX_LABELS,
    "items": LABEL,
    "description": "labels: no commas",
}
ITEM_IDS: Schema = {"type": "array", "maxItems": limits.MAX_DEPS, "items": ITEM_ID}
# A path or pattern as the board reads it (coord.fast.patterns.normalize): some text, no NUL,
# no blank at either end, within the board's length limit. What else the board refuses
# depends on the repository (a path outside it, inside .git) or on the whole pattern (a
# negation, more than MAX_PATTERN_WILDCARDS wildcards): a 422 naming the pattern. A narrower
# regex here refused `.github/**`, `docs/My File.md` and `src/[ab].py`, which the board reads.
_PATH_END = r"[^\s\x1c-\x1f\x85\x00]"
PATH_PATTERN: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": limits.MAX_PATTERN,
    "pattern": rf"^{_PATH_END}([^\x00]*{_PATH_END})?$",
    "description": "a repository-relative path or gitignore-style pattern (`src/auth/**`, "
    "`.github/`, `src/[ab].py`); absolute paths inside the repository and `..` are read too. "
    "Refused with 422: a path outside the repository or inside .git, a negation (`!x`), more "
    f"than {limits.MAX_PATTERN_WILDCARDS} wildcards",
}
DOCUMENT_PATH: Schema = {
    "type": "string",
    "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$",
    "description": "the design document's path, relative to the repository root",
}
PATTERNS: Schema = {
    "type": "array",
    "maxItems": limits.MAX_FILES,
    "items": PATH_PATTERN,
    "description": "repository-relative paths or gitignore-style patterns",
}
COMMANDS: Schema = {
    "type": "array",
    "maxItems": limits.MAX_CHECKS,
    "items": {
        "type": "string",
        "minLength": 1,
        "maxLength": limits.MAX_PATTERN,
        "pattern": rf"^[^\n]*{NOT_BLANK}[^\n]*$",
    },
    "description": "one-line shell commands that must pass before the item is done",
}
ITEM_REF: Schema = {
    "anyOf": [ITEM_ID, PACKAGE_ID],
    "description": "an item id, or the work-package id it was imported as (R3)",
}

# The fields of a new item, by name; the core's list says which of them an import entry
# takes (``rules.IMPORT_FIELDS``), and ``POST /v1/items`` takes those but ``ref``.
_ITEM_FIELD_TYPES: dict[str, Schema] = {
    "title": TITLE,
    "kind": {**KIND, "default": "task"},
    "priority": {**PRIORITY, "default": model.PRIORITY_DEFAULT},
    "labels": LABELS,
    "deps": {
        "type": "array",
        "maxItems": limits.MAX_DEPS,
        "items": {
            "type": ["integer", "string"],
            "anyOf": [ITEM_ID, {"type": "string", "minLength": 1}],
        },
        "description": "item ids, or (in an import) refs of other entries of the same import",
    },
    "body": text("the item's description"),
    "to": {**AGENT, "description": "the agent it is addressed to"},
    "ref": {
        "type": "string",
        "minLength": 1,
        "description": "a name the deps of other entries of the same import can use",
    },
    "files": {**PATTERNS, "description": "paths or patterns the item owns; claiming reserves them"},
    "key": {**PACKAGE_ID, "description": "a work-package id to name the item by (R3)"},
    "checks": COMMANDS,
}
IMPORT_ENTRY = closed(_ITEM_FIELD_TYPES, rules.IMPORT_FIELDS, required=["title"])
IMPORT_ITEMS: Schema = {
    "type": "array",
    "minItems": 1,
    "maxItems": limits.MAX_IMPORT,
    "items": IMPORT_ENTRY,
}
# POST /v1/items takes an import entry's fields but ref; its deps are item ids only
NEW_ITEM_FIELDS: dict[str, Schema] = {
    **{name: schema for name, schema in IMPORT_ENTRY["properties"].items() if name != "ref"},
    "deps": {**ITEM_IDS, "description": "item ids"},
}

_RUN_FIELD_TYPES: dict[str, Schema] = {
    "command": {"type": "string"},
    "exit_code": {"type": "integer"},
    "duration_s": {"type": "number", "minimum": 0, "exclusiveMaximum": 1e9},
    "head": {"type": ["string", "null"], "description": "git HEAD where the check ran"},
    "output_tail": {"type": ["string", "null"], "description": "the last lines of its output"},
}
CHECK_RUNS: Schema = {
    "type": "array",
    "maxItems": evidence.MAX_RUNS,
    "items": closed(_RUN_FIELD_TYPES, evidence.RUN_FIELDS, required=["command", "exit_code"]),
}

_PACKAGE_FIELD_TYPES: dict[str, Schema] = {
    "id": {**PACKAGE_ID, "description": "the package id (R3)"},
    "title": TITLE,
    "done": {"type": "boolean", "description": "its box is ticked"},
    "line": {"type": "integer", "minimum": 1},
    "dependencies": {"type": "array", "items": PACKAGE_ID},
    "files": PATTERNS,
    "checks": COMMANDS,
    "description": {"type": "string"},
    "acceptance": {"type": "string"},
    "track": {"type": "string"},
    "reserved_by": {
        **AGENT,
        "description": "who the document reserves it for (its line or its track's marker): "
        "the board hands it to no one else",
    },
}
_ADOPT_FIELD_TYPES: dict[str, Schema] = {
    "package": PACKAGE_ID,
    "track": {"type": "string"},
    "user": AGENT,
    "line": {"type": "integer"},
    "files": {"type": "array", "items": {"type": "string"}},
}
PACKAGES: Schema = {
    "type": "array",
    "maxItems": packages.MAX_PACKAGES,
    "items": closed(
        _PACKAGE_FIELD_TYPES, packages.PACKAGE_FIELDS, required=["id", "title", "line"]
    ),
    "description": "the document's work packages, as the caller parsed them",
}
ADOPT: Schema = {
    "type": "array",
    "items": closed(_ADOPT_FIELD_TYPES, adoption.ADOPT_FIELDS, required=["user"]),
    "description": "the document's reservation lines, to turn into claims and holds",
}


# --- answers ---------------------------------------------------------------------------------

SPEC_IMPORTED: Schema = {
    "type": "object",
    "properties": {
        "spec": {"type": "string"},
        **{
            name: {"type": "array", "items": {"type": "string"}, "description": "package ids"}
            for name in ("created", "updated", "unchanged", "removed", "closed")
        },
        "conflicts": {"type": "array", "description": "ticked packages someone holds"},
        "adopted": {"type": "array"},
        "not_adopted": {"type": "array"},
        "dry_run": {"type": "boolean", "description": "nothing was changed"},
    },
}
WHO: Schema = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "holders": {"type": "array", "items": ref("Reservation")},
        "may_edit": {"type": "boolean"},
        "blocked_by": {"type": "array", "items": ref("Reservation")},
    },
}

_STRING_OR_NULL: Schema = {"type": ["string", "null"]}
COMPONENTS: dict[str, Schema] = {
    "Error": {
        "type": "object",
        "required": ["error", "message"],
        "properties": {
            "error": {"type": "string", "description": "a stable machine code"},
            "message": {"type": "string", "description": "what happened and what to do"},
            "holder": _STRING_OR_NULL,
            "lease_expires_at": _STRING_OR_NULL,
            "next": {
                "type": "object",
                "description": "what to do next, on a refused claim or reservation: the "
                "options that apply, in the order worth trying (docs/next-steps.md)",
                "properties": {
                    "wait": {
                        "type": "object",
                        "description": "wait your turn: command, holder, alive, "
                        "lease_expires_at, place, waiting",
                    },
                    "other_work": {
                        "type": "object",
                        "description": "ready items you could claim now, best first: "
                        "command, items (id, ref, title, priority, files)",
                    },
                    "ask_holder": {
                        "type": "object",
                        "description": "ask the holder to let go: holder, command",
                    },
                    "escalate": {"type": "object", "description": "ask a human: command"},
                },
            },
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
            "state": {"enum": list(model.SHOWN_STATES)},
            "key": _STRING_OR_NULL,
            "spec": {**_STRING_OR_NULL, "description": "document:line"},
            "checks": {"type": "array", "items": {"type": "string"}},
            "evidence": {"type": ["object", "null"]},
            "question": _STRING_OR_NULL,
            "question_stale": {
                "type": "boolean",
                "description": "the question waited past the escalation bound: the item can "
                "be taken over and its files are free",
            },
            "escalate_to": _STRING_OR_NULL,
            "reserved_for": {
                **_STRING_OR_NULL,
                "description": "who the design document reserves it for; ready for no one else",
            },
            "branch": {
                **_STRING_OR_NULL,
                "description": "a worktree item: its claim's branch, named after the item and "
                "the claim's fencing token",
            },
            "base_commit": {**_STRING_OR_NULL, "description": "main's tip the worktree began at"},
            "worktree": {**_STRING_OR_NULL, "description": "the worktree's path"},
            "submitted_head": {
                **_STRING_OR_NULL,
                "description": "the branch head handed to the landing queue (queued)",
            },
            "submitted_at": _STRING_OR_NULL,
            "merged_commit": {
                **_STRING_OR_NULL,
                "description": "main's commit that contains it (merged)",
            },
            "rework": {
                "type": ["object", "null"],
                "description": "why landing sent it back (needs_rework): reason (conflict, "
                "check_failed, head_moved, files_held), files, check_output, main_commit, at",
            },
            "rework_for": {
                **_STRING_OR_NULL,
                "description": "its last holder, who alone may claim it until rework_until",
            },
            "rework_until": _STRING_OR_NULL,
            "created_by": {"type": "string"},
            "to": _STRING_OR_NULL,
            "claimed_by": _STRING_OR_NULL,
            "fencing_token": {
                "type": ["integer", "null"],
                "description": "the claim's fencing token, shown to its holder alone (null "
                "for every other reader of a claimed item)",
            },
            "lease_expires_at": _STRING_OR_NULL,
            "lease_expired": {"type": "boolean"},
            "deps": {"type": "array", "items": {"type": "integer"}},
            "blocked_by": {"type": "array", "items": {"type": "integer"}},
            "files": {"type": "array", "items": {"type": "string"}},
            "files_held_by": {"type": "array", "items": ref("Reservation")},
            "ready": {"type": "boolean"},
            "created_at": {"type": "string"},
            "updated_at": {"type": "string"},
            "closed_at": _STRING_OR_NULL,
        },
    },
    "Claim": {
        "type": "object",
        "required": ["id", "agent", "token", "lease_expires_at"],
        "properties": {
            "id": {"type": "integer"},
            "title": {"type": "string"},
            "kind": {"type": "string"},
            "agent": {"type": "string"},
            "token": {"type": "integer"},
            "lease_expires_at": {"type": "string"},
            "takeover_from": _STRING_OR_NULL,
            "item": ref("Item"),
        },
    },
    "Reservation": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "agent": {"type": "string"},
            "pattern": {"type": "string"},
            "exclusive": {"type": "boolean"},
            "item": {"type": ["integer", "null"], "description": "the item's id"},
            "reason": {"type": "string"},
            "created_at": {"type": "string"},
            "expires_at": {"type": "string"},
        },
    },
    "Reply": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "item_id": {"type": "integer"},
            "author": {"type": "string"},
            "body": {"type": "string"},
            "created_at": {"type": "string"},
        },
    },
    "Event": {
        "type": "object",
        "properties": {
            "seq": {"type": "integer"},
            "at": {"type": "string"},
            "agent": _STRING_OR_NULL,
            "item_id": {"type": ["integer", "null"]},
            "item_key": {
                "type": ["string", "null"],
                "description": "the item's package id, where it has one",
            },
            "kind": {"type": "string"},
            "details": {"type": "object"},
            "provenance": {
                "type": ["object", "null"],
                "description": "who made it, as the board knew it: verified (a token issued "
                "for the name) or only asserted, via (board_token, person_token, "
                "machine_token, page, library), machine, checkout, client and session where "
                "known; null for events logged before provenance was recorded",
                "properties": {
                    "verified": {"type": "boolean"},
                    "via": {"type": "string"},
                    "machine": {"type": "string"},
                    "checkout": {"type": "string"},
                    "client": {"type": "string"},
                    "session": {"type": "string"},
                },
            },
        },
    },
}
