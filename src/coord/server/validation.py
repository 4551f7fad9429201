"""A request checked against the JSON Schema the OpenAPI document declares for it.

The document at /openapi.json and this check are made from the same schemas
(``coord.server.schemas``, the route table): a body field or query parameter is refused,
before the handler runs and so before anything changes, when it is not what the document
says. ``{"patterns": "abc"}`` is refused because a string is not an array, not read as the
patterns ``a``, ``b`` and ``c``.

A schema is compiled once (at import, with the route table) into a function, so a request
pays a few dictionary lookups per field, not a walk over the schema. Only the keywords the
table uses are known; an unknown one is a bug caught at import, never a rule silently
skipped. Patterns are read as JSON Schema reads them (ECMA-262): ``$`` is the end of the
text, not "before a final newline" as in Python.

A field the schema does not allow to be ``null`` but does not require either may be sent as
``null``, meaning "not given" (the CLI and MCP clients send it so); the handler never sees
it. A required field that is ``null`` is missing.

Refusals are the board's own: ``too_large`` (413) for a text or list over its limit,
``invalid_input`` (422) for anything else, each naming the field and what it must be.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from coord.errors import InvalidInput, TooLarge

Schema = dict[str, Any]
# a compiled schema: the value (nulls meaning "not given" taken out), or a refusal
Check = Callable[[Any, str], Any]

# keywords that say nothing a request is checked against
_NOTES = frozenset({"description", "default", "title", "examples"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def compile_schema(schema: Schema) -> Check:
    """The check of ``schema``; raises ``ValueError`` for a keyword it does not know."""
    known = {
        "type",
        "enum",
        "const",
        "pattern",
        "minLength",
        "maxLength",
        "x-maxBytes",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "additionalProperties",
        "anyOf",
        "not",
    }
    unknown = set(schema) - known - _NOTES
    if unknown:
        raise ValueError(f"the request check does not know the keywords {sorted(unknown)}")
    steps: list[Check] = []
    types = schema.get("type")
    if types is not None:
        steps.append(_type_step([types] if isinstance(types, str) else list(types)))
    if "enum" in schema or "const" in schema:
        steps.append(_enum_step(schema["enum"] if "enum" in schema else [schema["const"]]))
    if any(k in schema for k in ("pattern", "minLength", "maxLength", "x-maxBytes")):
        steps.append(_string_step(schema))
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        steps.append(_number_step(schema))
    if any(k in schema for k in ("items", "minItems", "maxItems")):
        steps.append(_array_step(schema))
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        steps.append(_object_step(schema))
    if "anyOf" in schema:
        steps.append(_any_of_step(schema["anyOf"]))
    if "not" in schema:
        steps.append(_not_step(schema["not"]))

    def check(value: Any, where: str) -> Any:
        for step in steps:
            value = step(value, where)
        return value

    return check


def nullable(schema: Schema) -> Schema:
    """``schema`` that also admits ``null`` (an optional field's "not given")."""
    if "type" in schema:
        types = schema["type"]
        listed = [types] if isinstance(types, str) else list(types)
        return schema if "null" in listed else {**schema, "type": [*listed, "null"]}
    if "enum" in schema:
        return schema if None in schema["enum"] else {**schema, "enum": [*schema["enum"], None]}
    if "anyOf" in schema:
        alternatives = schema["anyOf"]
        if {"type": "null"} in alternatives:
            return schema
        return {**schema, "anyOf": [*alternatives, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def what_it_is(value: Any) -> str:
    for name, test in _TYPES.items():
        if name != "integer" and test(value):
            return "an integer" if name == "number" and isinstance(value, int) else _NAMES[name]
    return type(value).__name__


# --- the steps -------------------------------------------------------------------------------


def _type_step(types: list[str]) -> Check:
    tests = [_TYPES[t] for t in types]
    # an optional field's null is "not given", not worth a word
    wanted = " or ".join(_NAMES[t] for t in types if t != "null" or len(types) == 1)

    def step(value: Any, where: str) -> Any:
        if any(test(value) for test in tests):
            return value
        hint = ""
        if "array" in types and isinstance(value, str):
            hint = f" (a list, even of one: [{_quoted(value)}])"
        raise InvalidInput(
            f"{where} must be {wanted}{hint}, not {what_it_is(value)}", field=_field(where)
        )

    return step


def _enum_step(allowed: list[Any]) -> Check:
    def step(value: Any, where: str) -> Any:
        # JSON has no booleans among its numbers: true is not 1
        if any(value == a and type(value) is type(a) for a in allowed):
            return value
        listed = ", ".join(_quoted(a) for a in allowed)
        raise InvalidInput(
            f"{where} must be {'one of ' if len(allowed) > 1 else ''}{listed}, not "
            f"{_quoted(value)}",
            field=_field(where),
        )

    return step


def _string_step(schema: Schema) -> Check:
    pattern = schema.get("pattern")
    found = re.compile(_ecma(pattern)).search if pattern is not None else None
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    max_bytes = schema.get("x-maxBytes")
    description = schema.get("description")

    def step(value: Any, where: str) -> Any:
        if not isinstance(value, str):
            return value
        if longest is not None and len(value) > longest:
            raise TooLarge(
                f"{where} is {len(value)} characters; the limit is {longest}", field=_field(where)
            )
        if max_bytes is not None and len(value) > max_bytes // 4:  # cheap for short text
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > max_bytes:
                raise TooLarge(
                    f"{where} is {size} bytes of UTF-8; the limit is {max_bytes}",
                    field=_field(where),
                )
        if shortest is not None and len(value) < shortest:
            raise InvalidInput(f"{where} must not be empty", field=_field(where))
        if found is not None and found(value) is None:
            shown = _quoted(value if len(value) <= 80 else value[:77] + "...")
            rule = f": {description}" if description else f" (the form {pattern})"
            raise InvalidInput(
                f"{where} {shown} is not in the expected form{rule}", field=_field(where)
            )
        return value

    return step


def _number_step(schema: Schema) -> Check:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")

    def step(value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        if (low is not None and value < low) or (above is not None and value <= above):
            bound = f"at least {low}" if low is not None else f"more than {above}"
            raise InvalidInput(f"{where} must be {bound}, not {value}", field=_field(where))
        if (high is not None and value > high) or (below is not None and value >= below):
            bound = f"at most {high}" if high is not None else f"less than {below}"
            raise InvalidInput(f"{where} must be {bound}, not {value}", field=_field(where))
        return value

    return step


def _array_step(schema: Schema) -> Check:
    each = compile_schema(schema["items"]) if "items" in schema else None
    shortest, longest = schema.get("minItems"), schema.get("maxItems")

    def step(value: Any, where: str) -> Any:
        if not isinstance(value, list):
            return value
        if longest is not None and len(value) > longest:
            raise TooLarge(
                f"{where} has {len(value)} entries; the limit is {longest}", field=_field(where)
            )
        if shortest is not None and len(value) < shortest:
            raise InvalidInput(
                f"{where} needs at least {shortest} entr{'y' if shortest == 1 else 'ies'}",
                field=_field(where),
            )
        if each is None:
            return value
        checked = []
        for index, entry in enumerate(value):
            try:
                checked.append(each(entry, f"{where}[{index}]"))
            except InvalidInput as refusal:  # which entry: the outermost list's says it last
                refusal.details["index"] = index
                raise
        return checked

    return step


def _object_step(schema: Schema) -> Check:
    properties: Mapping[str, Schema] = schema.get("properties", {})
    checks = {name: compile_schema(s) for name, s in properties.items()}
    required = tuple(schema.get("required", ()))
    closed = schema.get("additionalProperties") is False
    if schema.get("additionalProperties") not in (None, False):
        raise ValueError("additionalProperties: only false is known")

    def step(value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            return value
        inside = f"{where}." if where else ""
        if closed:
            unknown = sorted(set(value) - set(properties))
            if unknown:
                takes = ", ".join(sorted(properties)) or "no fields"
                raise InvalidInput(
                    f"unknown field {', '.join(inside + n for n in unknown)}; "
                    f"{where or 'this endpoint'} takes {takes}",
                    fields=unknown,
                )
        # an optional field's null is "not given": the handler never sees it
        given = {k: v for k, v in value.items() if v is not None or k in required}
        missing = [name for name in required if given.get(name) is None]
        if missing:
            what = properties.get(missing[0], {}).get("description")
            raise InvalidInput(
                f"missing required field {', '.join(inside + n for n in missing)}"
                + (f" ({what})" if what and len(missing) == 1 else ""),
                field=_field(inside + missing[0]),
            )
        for name, check in checks.items():
            if name in given:
                given[name] = check(given[name], inside + name)
        return given

    return step


def _any_of_step(alternatives: list[Schema]) -> Check:
    checks = [compile_schema(s) for s in alternatives]
    described = " or ".join(_describe(s) for s in alternatives)

    def step(value: Any, where: str) -> Any:
        first: InvalidInput | None = None
        for check in checks:
            try:
                return check(value, where)
            except InvalidInput as refusal:  # TooLarge is one too
                first = first or refusal
        if all("required" in s for s in alternatives):  # a rule about the body as a whole
            raise InvalidInput(f"{where or 'this request'} needs {described}")
        assert first is not None
        raise first

    return step


def _not_step(schema: Schema) -> Check:
    check = compile_schema(schema)

    def step(value: Any, where: str) -> Any:
        try:
            check(value, where)
        except InvalidInput:
            return value
        raise InvalidInput(f"{where} must not be {_describe_value(schema)}", field=_field(where))

    return step


def _describe_value(schema: Schema) -> str:
    types = schema.get("type")
    if isinstance(types, str):
        return _NAMES[types]
    return "this"


# --- words -----------------------------------------------------------------------------------


def _describe(schema: Schema) -> str:
    """An alternative of a body, for the refusal that none was met: "patterns (not empty)"."""
    words = []
    for name in schema.get("required", ()):
        rule = schema.get("properties", {}).get(name, {})
        if rule.get("minItems"):
            words.append(f"{name} (not empty)")
        elif "const" in rule:
            words.append(f"{name}: {_quoted(rule['const'])}")
        else:
            words.append(name)
    return " and ".join(words) or "something"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _quoted(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _field(where: str) -> str:
    return where.split(".", 1)[0].split("[", 1)[0]


def _ecma(pattern: str) -> str:
    """A JSON Schema (ECMA-262) pattern as Python reads it: an unescaped ``$`` outside a
    character class ends the text (Python's ``$`` also matches before a final newline)."""
    out, escaped, in_class = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append(r"\Z")
            continue
        out.append(char)
    return "".join(out)


# --- query parameters ------------------------------------------------------------------------

_INTEGER_TEXT = re.compile(r"-?[0-9]+")
_NUMBER_TEXT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def query_check(schema: Schema, name: str) -> Callable[[str], None]:
    """The check of a query parameter: its text read as the type the schema says (``3``,
    ``2.5``, ``true``), then checked like a body field."""
    check = compile_schema(schema)
    types = schema.get("type")
    listed = [types] if isinstance(types, str) else list(types or ["string"])

    def read(text: str) -> Any:
        if "integer" in listed and _INTEGER_TEXT.fullmatch(text):
            return int(text)
        if "number" in listed and _NUMBER_TEXT.fullmatch(text):
            value = float(text)
            return int(value) if value.is_integer() and abs(value) < 2**63 else value
        if "boolean" in listed and text in ("true", "false"):
            return text == "true"
        if "string" in listed:
            return text
        raise InvalidInput(
            f"query parameter {name} must be {' or '.join(_NAMES[t] for t in listed)}, not "
            f"{_quoted(text)}",
            field=name,
        )

    def run(text: str) -> None:
        try:
            check(read(text), name)
        except TooLarge as over:  # 413 is a body's answer: a parameter is simply invalid
            raise InvalidInput(over.message, field=name) from None

    return run
