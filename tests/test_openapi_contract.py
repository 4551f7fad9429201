"""The OpenAPI document and the server agree, field by field, limit by limit.

For every route with a body, on a real board file through the real app:
- each field the document lists is accepted, with a value the document allows (and each
  field of a listed object nested in a list: import entries, check runs, packages);
- a field it does not list is refused (422), and so is a body without a required field;
- each documented limit is where the server draws the line: a value at the limit is
  accepted, one past it refused. Characters are counted with "é" (two bytes in UTF-8), so a
  limit stated in characters where the board counts bytes, or the other way round, fails.

The values come from the tables below; every one is checked against the document's own
schema for the field first, so a value the server takes but the document excludes fails too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema  # installed with the mcp SDK, a dependency of coord
import pytest
from starlette.testclient import TestClient

from conftest import init_board_dir
from coord.core.board import Board
from coord.limits import MAX_INTEGER
from coord.model import WorktreeSpec
from coord.server.app import create_app
from coord.server.openapi import OPENAPI

TOKEN = "test-token"
ITEM = 2  # the item a scenario works on (package R3, label ui); item 1 is a spare, to depend on
SAMPLE_CONTEXT = {"<id>": ITEM, "<key>": "R3", "<dep>": 1, "<token>": 1, "<landing>": 1}
COMMIT = "0123456789abcdef0123456789abcdef01234567"
WORKTREE = {"base_commit": COMMIT, "path_root": "/srv/app/.worktrees"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True)
class Scenario:
    """A request that succeeds: its smallest body, and the board state it needs."""

    base: dict[str, Any]
    claimed: bool = False  # item 2 claimed by "a" (its token is <token>)
    escalated: bool = False  # ... and waiting on a human
    cancelled: bool = False  # item 2 cancelled by its creator
    worktree: bool = False  # item 2 claimed by "a" with a worktree
    queued: bool = False  # ... and submitted: queued to land
    landing: bool = False  # the runner "r" holds the landing lease (its token is <landing>)
    waited: bool = False  # wait 1: "b"'s place for item 1, granted at once (it was free)
    asked: bool = False  # item 2 claimed by "a", ask 1 by "b" of it, open
    held: bool = False  # "a" holds every path (**): an ask of any paths is "a"'s


_HOLDER = {"agent": "a", "token": "<token>"}
SCENARIOS: dict[tuple[str, str], Scenario] = {
    ("POST", "/v1/items"): Scenario({"agent": "h", "title": "t"}),
    ("POST", "/v1/items:import"): Scenario({"agent": "h", "items": [{"title": "t"}]}),
    ("PATCH", "/v1/items/{id}"): Scenario({**_HOLDER, "title": "new"}, claimed=True),
    ("POST", "/v1/items/{id}/cancel"): Scenario({**_HOLDER, "reason": "why"}, claimed=True),
    ("POST", "/v1/items/{id}/reopen"): Scenario({"agent": "a", "reason": "why"}, cancelled=True),
    ("POST", "/v1/items/{id}/claim"): Scenario({"agent": "a"}),
    ("POST", "/v1/claim-next"): Scenario({"agent": "a"}),
    ("POST", "/v1/items/{id}/heartbeat"): Scenario(_HOLDER, claimed=True),
    ("POST", "/v1/items/{id}/release"): Scenario(_HOLDER, claimed=True),
    ("POST", "/v1/items/{id}/done"): Scenario(_HOLDER, claimed=True),
    ("POST", "/v1/items/{id}/escalate"): Scenario({**_HOLDER, "question": "?"}, claimed=True),
    ("POST", "/v1/items/{id}/answer"): Scenario({"agent": "h", "text": "yes"}, escalated=True),
    ("POST", "/v1/spec:import"): Scenario(
        {"agent": "h", "spec": "docs/plan.md", "packages": [{"id": "A1", "title": "a", "line": 1}]}
    ),
    ("POST", "/v1/items/{id}/replies"): Scenario({"agent": "a", "body": "hello"}),
    ("POST", "/v1/items/{id}/ack"): Scenario({"agent": "a"}),
    ("POST", "/v1/messages"): Scenario({"agent": "a", "to": "b", "text": "hello"}),
    ("POST", "/v1/inbox"): Scenario({"agent": "a"}),
    ("POST", "/v1/agents:prune"): Scenario({"agent": "h"}),
    ("POST", "/v1/held-files:changed"): Scenario(
        {"agent": "b", "changed": [{"path": "src/a.py", "holder": "a", "change": "modified"}]}
    ),
    ("POST", "/v1/reservations"): Scenario({"agent": "a", "patterns": ["src/a.py"]}),
    ("POST", "/v1/reservations:release"): Scenario({"agent": "a", "all": True}),
    ("POST", "/v1/mirror:refresh"): Scenario({}),  # 409 on this SQLite board
    ("POST", "/v1/shutdown"): Scenario({}),
    ("POST", "/v1/web/codes"): Scenario({"agent": "h"}),
    ("POST", "/v1/tokens"): Scenario({"name": "carol"}),
    ("POST", "/v1/tokens:revoke"): Scenario({"which": "alice"}),  # every board has her token
    ("POST", "/v1/items/{id}/submit"): Scenario({**_HOLDER, "head": COMMIT}, worktree=True),
    ("POST", "/v1/items/{id}/abandon"): Scenario({"agent": "a", "reason": "why"}, queued=True),
    ("POST", "/v1/landing/acquire"): Scenario({"runner": "r"}),
    ("POST", "/v1/landing/renew"): Scenario({"runner": "r", "token": "<landing>"}, landing=True),
    ("POST", "/v1/landing/release"): Scenario({"runner": "r", "token": "<landing>"}, landing=True),
    ("POST", "/v1/items/{id}/merged"): Scenario(
        {"runner": "r", "landing_token": "<landing>", "item_token": "<token>", "commit": COMMIT},
        queued=True,
        landing=True,
    ),
    ("POST", "/v1/items/{id}/merged-outside"): Scenario(
        {"agent": "a", "commit": COMMIT, "found_by": "ancestry"}, worktree=True
    ),
    ("POST", "/v1/items/{id}/needs-rework"): Scenario(
        {
            "runner": "r",
            "landing_token": "<landing>",
            "item_token": "<token>",
            "facts": {"reason": "conflict"},
        },
        queued=True,
        landing=True,
    ),
    ("POST", "/v1/items/{id}/wait"): Scenario({"agent": "b"}),  # free: granted at once
    ("POST", "/v1/waits"): Scenario({"agent": "b", "patterns": ["src/a.py"]}),
    ("POST", "/v1/waits/{wait}/heartbeat"): Scenario({"agent": "b"}, waited=True),
    ("POST", "/v1/waits/{wait}/cancel"): Scenario({"agent": "b"}, waited=True),
    ("POST", "/v1/items/{id}/ask"): Scenario({"agent": "b", "reason": "why"}, claimed=True),
    ("POST", "/v1/asks"): Scenario(
        {"agent": "b", "patterns": ["src/a.py"], "reason": "why"}, held=True
    ),
    ("POST", "/v1/asks/{ask}/answer"): Scenario({"agent": "a", "answer": "release"}, asked=True),
    ("POST", "/v1/items/{id}/waiting"): Scenario(
        {
            "runner": "r",
            "landing_token": "<landing>",
            "item_token": "<token>",
            "wait": {"reason": "checkout_dirty"},
        },
        queued=True,
        landing=True,
    ),
}

# Values the server accepts, by field name (a field of the scenario's body is tried with its
# own value). <id>, <key>, <dep> and <token> are item 2's id and package id, item 1's id,
# and the claim's token.
SAMPLES: dict[str, list[Any]] = {
    "name": ["carol"],
    "machine": [True, False],
    "which": ["alice", 1],
    "title": ["a title"],
    "kind": ["task"],
    "priority": [0],
    "labels": [["ui", "db"]],
    "deps": [["<dep>"]],
    "body": ["some text, café"],
    "to": ["b"],
    "ref": ["mine"],
    "files": [["src/a.py", "docs/"]],
    "key": ["K9"],
    "checks": [["make test"]],
    "token": ["<token>"],
    "lease_seconds": [30, 1.5],
    "reason": ["because"],
    "add_deps": [["<dep>"]],
    "remove_deps": [["<dep>"]],
    "add_checks": [["make"]],
    "remove_checks": [["make"]],
    "summary": ["all done"],
    "evidence": [[{"command": "make", "exit_code": 0}]],
    "skip_checks": ["nothing to check"],
    "escalate_to": ["boss"],
    "prefix": ["P"],
    "packages": [[{"id": "A1", "title": "a", "line": 1}]],
    "adopt": [[{"user": "a", "package": "A1"}]],
    "dry_run": [True, False],
    "peek": [True],
    "file": [False],  # true needs a daemon with a board directory: test_web_access.py
    "older_than_seconds": [3600, 86400.5],
    "limit": [5],
    "patterns": [["src/**"]],
    "shared": [True],
    "item": ["<id>", "<key>"],  # a reservation for an item named by id or by package id
    "all": [True],
    "count": [1, 2],
    "label": ["ui"],
    "items": [[{"title": "a", "ref": "a"}, {"title": "b", "deps": ["a"]}]],
    "changed": [[{"path": "src/a.py", "holder": "a", "change": "deleted", "restored": True}]],
    "command": ["sed -i s/a/b/ src/a.py"],
    "tool": ["Bash"],
    "more_files": [0, 3],
    "worktree": [WORKTREE],
    "head": [COMMIT],
    "commit": [COMMIT, "0" * 64],
    "runner": ["r"],
    "landing_token": ["<landing>"],
    "item_token": ["<token>"],
    "found_by": ["ancestry", "patch_id", "tree"],
    "facts": [
        {"reason": "check_failed", "check_output": "FAILED", "main_commit": COMMIT},
        {"reason": "files_held", "files": ["src/a.py"]},
    ],
    "place_seconds": [30, 1.5],
    "wait_seconds": [0, 0.5],  # a granted place answers at once whatever it says
    "timeout_seconds": [60, 1.5],
    "answer": ["release"],  # defer needs until or for_seconds: tests/test_asks.py
    "until": [4102444800.0],  # 2100: a release leaves it be
    "for_seconds": [60],
    "wait": [
        {"reason": "main_moved", "message": "main kept moving", "main_commit": COMMIT},
        {"reason": "checkout_dirty", "files": ["src/a.py"]},
    ],
}
# Objects listed inside a field: the smallest one, the i-th of many, and values of their fields.
ELEMENTS: dict[str, Callable[[int], dict[str, Any]]] = {
    "items": lambda i: {"title": f"t{i}"},
    "evidence": lambda i: {"command": f"check {i}", "exit_code": 0},
    "packages": lambda i: {"id": f"A{i + 1}", "title": "a", "line": i + 1},
    "adopt": lambda i: {"user": "a", "package": "A1"},
    "changed": lambda i: {"path": f"src/f{i}.py", "holder": "a", "change": "modified"},
}
NESTED_SAMPLES: dict[str, dict[str, list[Any]]] = {
    "items": SAMPLES,
    "evidence": {
        "command": ["make"],
        "exit_code": [0, 2**70],
        "duration_s": [1.5],
        "head": ["0123abc", None],
        "output_tail": ["ok", None],
    },
    "packages": {
        "id": ["B2"],
        "title": ["b"],
        "done": [True, False],
        "line": [7],
        "dependencies": [[]],
        "files": [["src/b.py"]],
        "checks": [["make"]],
        "description": ["what"],
        "acceptance": ["how we know"],
        "track": ["api"],
        "reserved_by": ["alice"],
    },
    "changed": {
        "path": ["src/b.py"],
        "holder": ["alice"],
        "change": ["modified", "deleted"],
        "restored": [True, False],
        "kept": ["0" * 64],
        "why": ["its holder has a call running"],
    },
    "adopt": {
        "user": ["a"],
        "package": ["A1"],
        "track": ["api"],
        "line": [3],
        "files": [["src/t/"]],
    },
}


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in OPENAPI["paths"].items():
        for method, op in ops.items():
            yield method.upper(), path, op


def _body_schema(op: dict[str, Any]) -> dict[str, Any]:
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    if "oneOf" in schema:  # items:import takes a bare array too; the object lists the fields
        schema = next(s for s in schema["oneOf"] if "properties" in s)
    return schema


BODY_ROUTES = {(m, p): _body_schema(op) for m, p, op in _operations() if "requestBody" in op}


def _cases(make: Callable[[str, str, dict[str, Any]], Iterator[Any]]) -> list[Any]:
    return [case for (m, p), schema in BODY_ROUTES.items() for case in make(m, p, schema)]


class Site:
    """Fresh boards for one test, each with items 1 and 2 (package R3, label ui)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made = 0

    @contextmanager
    def board(self, scenario: Scenario, extra_items: int = 0) -> Iterator[tuple[Any, dict]]:
        self.made += 1
        board_dir = init_board_dir(self.root / f"b{self.made}")
        board = Board.open(board_dir)
        try:
            board.import_items(
                [{"title": "spare"}, {"title": "the one", "key": "R3", "labels": ["ui"]}]
                + [{"title": f"more {i}"} for i in range(extra_items)],
                # by the agent the scenarios act as: its items' checks are its to set
                created_by="a",
            )
            board.access.issue("alice")  # token 1, for /v1/tokens:revoke
            token = 1
            if scenario.claimed or scenario.escalated:
                token = board.claim(ITEM, agent="a").token
            if scenario.worktree or scenario.queued:
                spec = WorktreeSpec(WORKTREE["base_commit"], WORKTREE["path_root"])
                token = board.claim(ITEM, agent="a", worktree=spec).token
            if scenario.queued:
                board.landing.submit(ITEM, agent="a", token=token, head=COMMIT)
            landing = board.landing.acquire(runner="r").token if scenario.landing else 1
            if scenario.escalated:
                board.escalate(ITEM, agent="a", token=token, question="which one?")
            if scenario.cancelled:
                board.cancel(ITEM, agent="a", reason="not now")
            if scenario.waited:
                board.waiting.wait(agent="b", item=1)
            if scenario.asked:
                token = board.claim(ITEM, agent="a").token
                board.asks.ask(agent="b", item=ITEM, reason="may I?")
            if scenario.held:
                board.reserve(["**"], agent="a")
            context = {**SAMPLE_CONTEXT, "<token>": token, "<landing>": landing}
            app = create_app(board, TOKEN, on_shutdown=lambda: None)
            yield TestClient(app, base_url="http://127.0.0.1", headers=AUTH), context
        finally:
            board.close()

    def send(
        self, method: str, path: str, body: dict[str, Any], *, extra_items: int = 0
    ) -> tuple[int, Any]:
        scenario = SCENARIOS[(method, path)]
        with self.board(scenario, extra_items) as (client, context):
            response = client.request(
                method,
                url_of(path),
                json=resolve({**scenario.base, **body}, context),
                headers=AUTH,
            )
            return response.status_code, response.json()


def url_of(path: str) -> str:
    """A route's path with the scenario's item, wait and ask in it."""
    return path.replace("{id}", str(ITEM)).replace("{wait}", "1").replace("{ask}", "1")


def resolve(value: Any, context: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return context.get(value, value)
    if isinstance(value, list):
        return [resolve(v, context) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, context) for k, v in value.items()}
    return value


def _max_bytes(validator: Any, limit: int, value: Any, schema: Any) -> Iterator[Any]:
    if isinstance(value, str) and len(value.encode()) > limit:
        yield jsonschema.ValidationError(f"{len(value.encode())} bytes, over {limit}")


# JSON Schema counts characters; the document states byte limits as x-maxBytes
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"x-maxBytes": _max_bytes}
)


def allowed(schema: dict[str, Any], value: Any) -> bool:
    """Does the document's schema for a field allow this value?"""
    return bool(Validator(schema).is_valid(resolve(value, SAMPLE_CONTEXT)))


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


def test_every_route_with_a_body_has_a_scenario() -> None:
    assert set(BODY_ROUTES) == set(SCENARIOS)


def _field_cases(method: str, path: str, schema: dict[str, Any]) -> Iterator[Any]:
    for name in schema.get("properties", {}):
        yield pytest.param(method, path, name, id=f"{method} {path} {name}")


@pytest.mark.parametrize(("method", "path", "field"), _cases(_field_cases))
def test_each_documented_field_is_accepted(site: Site, method: str, path: str, field: str) -> None:
    schema = BODY_ROUTES[(method, path)]["properties"][field]
    base = SCENARIOS[(method, path)].base
    samples = SAMPLES.get(field, [base[field]] if field in base else [])
    assert samples, f"no sample value for {field}: add one to SAMPLES"
    for value in samples:
        assert allowed(schema, value), f"the document does not allow {field}={value!r}"
        status, answer = site.send(method, path, {field: value})
        assert status < 300, f"{field}={value!r} refused: {answer}"


def _nested_cases(method: str, path: str, schema: dict[str, Any]) -> Iterator[Any]:
    for name, field in schema.get("properties", {}).items():
        for nested in field.get("items", {}).get("properties", {}):
            yield pytest.param(method, path, name, nested, id=f"{method} {path} {name}.{nested}")


@pytest.mark.parametrize(("method", "path", "field", "nested"), _cases(_nested_cases))
def test_each_documented_field_of_a_listed_object_is_accepted(
    site: Site, method: str, path: str, field: str, nested: str
) -> None:
    item_schema = BODY_ROUTES[(method, path)]["properties"][field]["items"]
    samples = NESTED_SAMPLES[field].get(nested)
    assert samples, f"no sample value for {field}.{nested}: add one to NESTED_SAMPLES"
    for value in samples:
        element = {**ELEMENTS[field](0), nested: value}
        assert allowed(item_schema, element), f"the document does not allow {element!r}"
        status, answer = site.send(method, path, {field: [element]})
        assert status < 300, f"{field}: [{element!r}] refused: {answer}"


@pytest.mark.parametrize(("method", "path"), list(BODY_ROUTES))
def test_a_field_the_document_does_not_list_is_refused(site: Site, method: str, path: str) -> None:
    status, answer = site.send(method, path, {"colour": "blue"})
    assert (status, answer["error"]) == (422, "invalid_input"), answer
    assert "colour" in answer["message"]


def _listed_object_cases(method: str, path: str, schema: dict[str, Any]) -> Iterator[Any]:
    for name, field in schema.get("properties", {}).items():
        if "properties" in field.get("items", {}):
            yield pytest.param(method, path, name, id=f"{method} {path} {name}")


@pytest.mark.parametrize(("method", "path", "field"), _cases(_listed_object_cases))
def test_a_field_a_listed_object_does_not_list_is_refused(
    site: Site, method: str, path: str, field: str
) -> None:
    element = {**ELEMENTS[field](0), "colour": "blue"}
    assert not allowed(BODY_ROUTES[(method, path)]["properties"][field]["items"], element)
    status, answer = site.send(method, path, {field: [element]})
    assert status == 422, answer
    if field != "adopt":  # the core's message for a bad reservation line names no field
        assert "colour" in answer["message"], answer


def _required_cases(method: str, path: str, schema: dict[str, Any]) -> Iterator[Any]:
    for name in schema.get("required", []):
        yield pytest.param(method, path, name, id=f"{method} {path} {name}")


@pytest.mark.parametrize(("method", "path", "field"), _cases(_required_cases))
def test_a_body_without_a_required_field_is_refused(
    site: Site, method: str, path: str, field: str
) -> None:
    scenario = SCENARIOS[(method, path)]
    body = {k: v for k, v in scenario.base.items() if k != field}
    with site.board(scenario) as (client, context):
        response = client.request(method, url_of(path), json=resolve(body, context), headers=AUTH)
    assert response.status_code == 422, response.text


# --- limits ------------------------------------------------------------------------------------


def _element(field: str, schema: dict[str, Any], i: int) -> Any:
    """The i-th of many distinct valid elements of a listed field."""
    if field in ELEMENTS:
        return ELEMENTS[field](i)
    kind = schema.get("type")
    if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
        return i + 3  # an item id: items 3, 4 ... are made for it
    return f"e{i}"


def limits_of(field: str, schema: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(the limit, a value at it, a value just past it) for each limit the schema states."""
    if "maxLength" in schema:
        n = schema["maxLength"]
        yield f"maxLength {n} characters", "é" * n, "é" * (n + 1)
    if "x-maxBytes" in schema:
        n = schema["x-maxBytes"]
        yield f"x-maxBytes {n}", "é" * (n // 2), "é" * (n // 2) + "x" * (n % 2 + 1)
    if schema.get("minLength", 0) > 0:
        n = schema["minLength"]
        yield f"minLength {n}", "é" * n, "é" * (n - 1)
    step = 1 if schema.get("type") == "integer" else 0.5
    if "maximum" in schema:
        yield f"maximum {schema['maximum']}", schema["maximum"], schema["maximum"] + step
    if "exclusiveMaximum" in schema:
        n = schema["exclusiveMaximum"]
        yield f"exclusiveMaximum {n}", n - step, n
    if "minimum" in schema:
        yield f"minimum {schema['minimum']}", schema["minimum"], schema["minimum"] - step
    items = schema.get("items", {})
    if "maxItems" in schema:
        n = schema["maxItems"]
        many = [_element(field, items, i) for i in range(n + 1)]
        yield f"maxItems {n}", many[:n], many
    if schema.get("minItems", 0) > 0:
        n = schema["minItems"]
        few = [_element(field, items, i) for i in range(n)]
        yield f"minItems {n}", few, few[:-1]
    for what, at, past in limits_of(field, items) if items and "properties" not in items else ():
        yield f"each {what}", [at], [past]
    for name, nested in items.get("properties", {}).items():
        for what, at, past in limits_of(name, nested):
            first = ELEMENTS[field](0)
            yield f"{name}: {what}", [{**first, name: at}], [{**first, name: past}]


def _ids_needed(value: Any) -> int:
    """How many items a value's lists of item ids name (they must exist to be accepted)."""
    if isinstance(value, dict):
        return max(map(_ids_needed, value.values()), default=0)
    if isinstance(value, list):
        ids = len(value) + 1 if value and all(isinstance(v, int) for v in value) else 0
        return max([ids, *map(_ids_needed, value)])
    return 0


def _limit_cases(method: str, path: str, schema: dict[str, Any]) -> Iterator[Any]:
    for name, field in schema.get("properties", {}).items():
        # its one right value is the claim's (or the landing lease's): the fencing tests'
        if name in ("token", "landing_token", "item_token"):
            continue
        for what, _, _ in limits_of(name, field):
            yield pytest.param(method, path, name, what, id=f"{method} {path} {name} {what}")


@pytest.mark.parametrize(("method", "path", "field", "limit"), _cases(_limit_cases))
def test_each_documented_limit_is_where_the_server_draws_the_line(
    site: Site, method: str, path: str, field: str, limit: str
) -> None:
    schema = BODY_ROUTES[(method, path)]["properties"][field]
    at, past = next((a, p) for what, a, p in limits_of(field, schema) if what == limit)
    assert allowed(schema, at) and not allowed(schema, past)
    extra = _ids_needed(at)
    status, answer = site.send(method, path, {field: at}, extra_items=extra)
    # the largest id the board can store is well formed, and names no item here
    no_such_item = status == 404 and limit.endswith(f"maximum {MAX_INTEGER}")
    assert status < 300 or no_such_item, f"{field} at its documented {limit} refused: {answer}"
    status, answer = site.send(method, path, {field: past}, extra_items=extra)
    assert status in (413, 422), f"{field} past its documented {limit} accepted: {answer}"


def test_query_limits_are_where_the_server_draws_the_line(site: Site) -> None:
    with site.board(Scenario({})) as (client, _):
        for method, path, op in _operations():
            if method != "GET":
                continue
            for param in op.get("parameters", []):
                if param["in"] != "query":  # a path's ids: the fuzzing's (test_schema_fuzz.py)
                    continue
                schema = param["schema"]
                for what, at, past in limits_of(param["name"], schema):
                    url = url_of(path)
                    # a stream's 200 never ends (tests/test_event_stream.py takes its limits)
                    if "text/event-stream" not in op["responses"]["200"]["content"]:
                        at_answer = client.get(url, params={param["name"]: at})
                        # the largest cursor is well formed, and past this board's last event
                        past_end = at_answer.status_code == 409 and (
                            at_answer.json()["error"] == "cursor_past_end"
                        )
                        ok = at_answer.status_code == 200 or past_end
                        assert ok, (path, param["name"], what)
                    past_answer = client.get(url, params={param["name"]: past})
                    assert past_answer.status_code == 422, (path, param["name"], what)


def test_the_served_document_is_the_generated_one(site: Site) -> None:
    with site.board(Scenario({})) as (client, _):
        assert client.get("/openapi.json").json() == OPENAPI


def test_a_documented_status_for_each_refusal_of_the_pipeline() -> None:
    for method, path, op in _operations():
        statuses = set(op["responses"])
        assert "403" in statuses, (method, path)  # the host name check runs everywhere
        if "requestBody" in op:
            assert {"400", "413", "422"} <= statuses, (method, path)
        if op.get("security"):
            assert "401" in statuses, (method, path)


def test_paths_and_methods_match_the_route_pattern() -> None:
    for _, path, _ in _operations():
        assert re.fullmatch(r"/[a-z0-9/{}:._-]*", path), path


# --- types -------------------------------------------------------------------------------------

# One value of each JSON type: for every field, those its schema does not allow are tried.
WRONG_TYPES: list[Any] = ["abc", 265, 2.5, True, {"a": 1}, ["x"]]


def _events_and_holds(client: TestClient) -> tuple[Any, Any]:
    events = client.get("/v1/events", params={"limit": 1000}).json()["events"]
    holds = client.get("/v1/reservations").json()["reservations"]
    return events, holds


def _wrong_values(schema: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field, value) for each field of a body and of its listed objects, with each value of
    a type its schema does not allow."""
    for name, field in schema.get("properties", {}).items():
        for value in WRONG_TYPES:
            if not allowed(field, value):
                yield name, value
        for nested, nested_schema in field.get("items", {}).get("properties", {}).items():
            for value in WRONG_TYPES:
                if not allowed(nested_schema, value):
                    yield name, [{**ELEMENTS[name](0), nested: value}]


@pytest.mark.parametrize(("method", "path"), list(BODY_ROUTES))
def test_a_value_of_a_type_the_document_does_not_allow_is_refused_and_changes_nothing(
    site: Site, method: str, path: str
) -> None:
    """`{"patterns": "abc"}` freed `b` and `c` (each character read as a pattern), and
    `{"patterns": {"a": 1}}` freed `a`: every field is checked against its declared type
    before anything changes (issue 23, item 4)."""
    scenario = SCENARIOS[(method, path)]
    accepted = []
    with site.board(scenario) as (client, context):
        for pattern in ("a", "b", "c"):  # what a misread release would free
            held = {"agent": "a", "patterns": [pattern]}
            assert client.post("/v1/reservations", json=held).status_code == 201
        before = _events_and_holds(client)
        for field, value in _wrong_values(BODY_ROUTES[(method, path)]):
            body = resolve({**scenario.base, field: value}, context)
            response = client.request(method, url_of(path), json=body)
            answer = response.json()
            refused = response.status_code in (413, 422) and answer["error"] in (
                "invalid_input",
                "too_large",
            )
            if not refused or field not in answer["message"]:
                accepted.append((field, value, response.status_code, answer))
        after = _events_and_holds(client)
    assert not accepted, accepted
    assert after == before
