"""The words of the route table: a route, its body, its parameters.

One declaration serves twice: the request pipeline (``pipeline.py``) refuses a field a body
does not declare, and the OpenAPI document (``openapi.py``) lists exactly the declared fields
with their types and limits. So the document cannot list a field the server refuses, nor the
server take one the document does not list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coord.errors import InvalidInput
from coord.server.validation import compile_schema, nullable, query_check

Schema = dict[str, Any]
# A handler takes the request as a ``coord.server.context.Call`` and returns the JSON answer
# (sync, or async when it waits, as the events long-poll does).
Handler = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]

# 1 MiB for a request, 16 MiB for the two imports: the HTTP transport's own limits. The
# board's limits on what a request holds (titles, bodies, lists) are in ``coord.limits``.
MAX_REQUEST_BYTES = 1024 * 1024
MAX_IMPORT_REQUEST_BYTES = 16 * 1024 * 1024


def closed(
    types: Mapping[str, Schema], names: Iterable[str] | None = None, required: Iterable[str] = ()
) -> Schema:
    """A JSON object taking only these fields. ``names`` (the core's own list of what it
    accepts) picks from ``types``; a name without a type is a bug caught at import. A field
    that is not required may be ``null``: not given (``coord.server.validation``)."""
    chosen = dict(types) if names is None else {n: types[n] for n in sorted(names)}
    wanted = [n for n in required if n in chosen]
    chosen = {n: s if n in wanted else nullable(s) for n, s in chosen.items()}
    schema: Schema = {"type": "object", "properties": chosen, "additionalProperties": False}
    if wanted:
        schema["required"] = wanted
    return schema


@dataclass(frozen=True)
class Body:
    """A JSON-object request body: every field it takes, and which of them are required.

    The pipeline checks the body against this declaration's schema, the one the OpenAPI
    document shows (``coord.server.validation``), before the handler runs; the board checks
    the values again with its own rules (shared with the library and every face).
    """

    fields: Mapping[str, Schema]
    required: tuple[str, ...] = ()
    # A body that may also be a bare JSON array, read as {list_field: array} (items:import).
    list_field: str | None = None
    # What a body must also have, as JSON Schema alternatives, each a whole rule of the
    # board's (an edit changes something): the document says it, the board checks it.
    any_of: tuple[Schema, ...] = ()
    names: frozenset[str] = field(init=False)
    check: Callable[[Any, str], Any] = field(init=False, repr=False, compare=False)
    # a bare array: the agent comes from the query or a header (the route's parameters)
    check_bare: Callable[[Any, str], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(self.fields))
        missing = set(self.required) - self.names
        if missing or (self.list_field is not None and self.list_field not in self.names):
            raise ValueError(f"a required or list field is not declared: {missing}")
        object.__setattr__(self, "check", compile_schema(self.schema()))
        bare = closed(self.fields, required=[n for n in self.required if n != "agent"])
        object.__setattr__(self, "check_bare", compile_schema(bare))

    def take(self, payload: Any) -> dict[str, Any]:
        """The decoded body, if it is what the document declares (nulls of optional fields
        taken out); refused otherwise, naming the field."""
        if isinstance(payload, list) and self.list_field is not None:
            bare: dict[str, Any] = self.check_bare({self.list_field: payload}, "")
            return bare
        if not isinstance(payload, dict):
            shape = " (or an array of items)" if self.list_field is not None else ""
            raise InvalidInput(f"request body must be a JSON object{shape}")
        taken: dict[str, Any] = self.check(payload, "")
        return taken

    def schema(self) -> Schema:
        """The object form. A bare array (``list_field``) is read too, but it needs the agent
        from elsewhere (a query parameter or header), which a body schema cannot say: the
        document gives the form that stands on its own, and the description the other."""
        shape = closed(self.fields, required=self.required)
        if self.any_of:
            shape["anyOf"] = [_given(alternative) for alternative in self.any_of]
        if self.list_field is not None:
            shape["description"] = (
                f"or a bare array of {self.list_field}, with the agent as ?agent= or an "
                "X-Coord-Agent header"
            )
        return shape


def _given(alternative: Schema) -> Schema:
    """An alternative of a body's ``any_of`` whose required fields must be given: not
    ``null``, which an optional field may be and which means not given."""
    properties = dict(alternative.get("properties", {}))
    for name in alternative.get("required", ()):
        properties[name] = {**properties.get(name, {}), "not": {"type": "null"}}
    return {**alternative, "properties": properties}


@dataclass(frozen=True)
class Param:
    """A query (or path) parameter, as the document shows it. Unknown query parameters are
    ignored, as HTTP servers usually do; the handler reads the ones it declares."""

    name: str
    schema: Schema
    description: str = ""
    required: bool = False
    where: str = "query"

    check: Callable[[str], None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # refuses a value the document does not allow (the handler reads the string)
        object.__setattr__(self, "check", query_check(self.schema, self.name))

    def spec(self) -> Schema:
        out: Schema = {"name": self.name, "in": self.where, "schema": self.schema}
        if self.required or self.where == "path":
            out["required"] = True
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class Route:
    """One endpoint: what it is called, what it takes, what it answers."""

    method: str
    path: str
    handler: Handler
    summary: str
    answer: Schema  # the body of the success answer
    status: int = 200
    write: bool = False  # changes the board: wakes long-polling readers
    # answered without the bearer token: only what reveals nothing of the board (liveness,
    # the OpenAPI document, the daemon's identity proof); every other route needs it
    public: bool = False
    # the web page's session (X-Coord-Session) may call it, with its Origin checks; False:
    # only the board's token (minting page codes, stopping the daemon)
    page: bool = True
    body: Body | None = None
    params: tuple[Param, ...] = ()
    # what the handler (the board) may answer besides the pipeline's own refusals
    errors: tuple[int, ...] = ()
    max_body: int = MAX_REQUEST_BYTES
    # served by a bare-ASGI endpoint (hot.py) instead of through Starlette's routing
    hot: bool = False
    # what a success answers: JSON, but for the event stream
    media_type: str = "application/json"
    # reads or writes the board: on a PostgreSQL board it runs on a worker thread
    # (``coord.server.offload``); False for what the daemon answers from memory alone
    board: bool = True

    def error_statuses(self) -> list[int]:
        """Every error status this route can answer: the pipeline's, then the handler's."""
        statuses = {403}  # a foreign host name (when the daemon checks it)
        statuses.add(503)  # the board's file is gone, or another process holds its lock
        if not self.public:
            statuses.add(401)
        if self.write:
            statuses.add(507)  # the disk is full
        if self.body is not None:
            statuses |= {400, 413, 422}
        if self.params:
            statuses.add(422)  # a parameter the document does not allow
        return sorted(statuses | set(self.errors))
