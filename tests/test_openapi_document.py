"""The served document is a well-formed OpenAPI 3.1 document, and its answers' shapes are the
answers the board gives.

No OpenAPI validator is installed; this checks the rules of the specification a client
generator trips on: the version, operations with responses and descriptions, parameters
(path ones required and in the template), security schemes that exist, references that
resolve, unique operation ids, and every schema a valid JSON Schema 2020-12 (which is what
an OpenAPI 3.1 schema is).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema  # installed with the mcp SDK, a dependency of coord
import pytest
from starlette.testclient import TestClient

from coord.core.board import Board
from coord.server.app import create_app
from coord.server.openapi import OPENAPI

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in OPENAPI["paths"].items():
        for method, op in ops.items():
            yield method, path, op


def _schemas() -> Iterator[dict[str, Any]]:
    """Every schema in the document: components, bodies, answers, parameters."""
    yield from OPENAPI["components"]["schemas"].values()
    for _, _, op in _operations():
        for param in op.get("parameters", []):
            yield param["schema"]
        for media in op.get("requestBody", {}).get("content", {}).values():
            yield media["schema"]
        for answer in op["responses"].values():
            for media in answer.get("content", {}).values():
                yield media["schema"]


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_top_level_is_openapi_3_1() -> None:
    assert re.fullmatch(r"3\.1\.\d+", OPENAPI["openapi"])
    assert isinstance(OPENAPI["info"]["title"], str) and isinstance(OPENAPI["info"]["version"], str)
    assert set(OPENAPI) <= {"openapi", "info", "components", "paths", "servers", "tags"}
    assert all(path.startswith("/") for path in OPENAPI["paths"])


@pytest.mark.parametrize(
    ("method", "path", "op"), [pytest.param(*o, id=f"{o[0]} {o[1]}") for o in _operations()]
)
def test_each_operation_is_well_formed(method: str, path: str, op: dict[str, Any]) -> None:
    assert method in METHODS
    assert op["responses"], "an operation needs at least one response"
    for status, answer in op["responses"].items():
        assert re.fullmatch(r"[1-5]\d\d|default", status)
        assert isinstance(answer["description"], str) and answer["description"]
    names = re.findall(r"{([^}]+)}", path)
    params = op.get("parameters", [])
    assert len({(p["name"], p["in"]) for p in params}) == len(params), "a parameter twice"
    for param in params:
        assert param["in"] in ("query", "path", "header", "cookie")
        assert isinstance(param["name"], str) and "schema" in param
        if param["in"] == "path":
            assert param.get("required") is True and param["name"] in names
    assert sorted(p["name"] for p in params if p["in"] == "path") == sorted(names)
    if "requestBody" in op:
        assert set(op["requestBody"]["content"]) == {"application/json"}
    for requirement in op.get("security", []):
        assert set(requirement) <= set(OPENAPI["components"]["securitySchemes"])


def test_operation_ids_are_unique() -> None:
    ids = [op["operationId"] for _, _, op in _operations()]
    assert len(ids) == len(set(ids))


def test_every_reference_resolves() -> None:
    refs = set(_refs(OPENAPI))
    assert refs, "the answers refer to the component schemas"
    for ref in refs:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in OPENAPI["components"]["schemas"]


def test_every_schema_is_valid_json_schema_2020_12() -> None:
    for schema in _schemas():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_answers_shapes_name_the_fields_the_board_answers(board: Board) -> None:
    token = "t"
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(board, token), base_url="http://127.0.0.1", headers=auth) as client:
        client.post("/v1/items", json={"agent": "h", "title": "x", "files": ["a.py"]}, headers=auth)
        claim = client.post("/v1/items/1/claim", json={"agent": "a"}, headers=auth).json()
        reservation = client.get("/v1/reservations").json()["reservations"][0]
        event = client.get("/v1/events").json()["events"][0]
        error = client.post("/v1/items/1/claim", json={"agent": "b"}, headers=auth).json()
    components = OPENAPI["components"]["schemas"]
    for name, answer in (
        ("Claim", claim),
        ("Item", claim["item"]),
        ("Reservation", reservation),
        ("Event", event),
    ):
        assert set(components[name]["properties"]) == set(answer), name
    assert set(components["Error"]["properties"]) <= set(error)
