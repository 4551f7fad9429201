"""The hooks' JSON (``coord.fast.jsontext``) reads and writes exactly as ``json`` does.

An oracle that runs: every document of the corpus goes through both, and the value (or the
error, its type and message) must be the same. The corpus holds the hook inputs the clients
send and the spellings a hand-made or hostile input could take."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest

from coord.fast import jsontext

HOOK_INPUT = {
    "session_id": "4f1c2a9e-8b7d-4c3e-9f2a-1b2c3d4e5f60",
    "cwd": "/home/dev/src/caf\u00e9",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "sed -i 's/a/b/' src/*.py && echo \"done\"\n", "timeout": 120000},
    "tool_use_id": "toolu_01",
}
DOCUMENTS: list[str | bytes] = [
    json.dumps(HOOK_INPUT),
    json.dumps(HOOK_INPUT, indent=2),
    json.dumps(HOOK_INPUT, ensure_ascii=False),
    json.dumps(HOOK_INPUT, ensure_ascii=False).encode(),
    json.dumps(HOOK_INPUT).encode("utf-16"),
    json.dumps(HOOK_INPUT).encode("utf-32-le"),
    b"\xef\xbb\xbf" + json.dumps(HOOK_INPUT).encode(),
    "\ufeff" + json.dumps(HOOK_INPUT),
    '  {"a": 1}  \n',
    '{"a": 1} x',
    '{"a": 1}{"b": 2}',
    "",
    "   ",
    "{",
    '{"a": }',
    '{"a": 1,}',
    "[1, 2, 3]",
    '"just a string"',
    "12345678901234567890123456789",
    "1e400",
    "-0.0",
    "NaN",
    "[Infinity, -Infinity]",
    "nan",
    "true",
    "null",
    '"\\ud800"',
    '"\\ud83d\\ude00"',
    '"tab\there"',
    '"\\x41"',
    '{"a": 1, "a": 2}',
    '{"deep": ' + "[" * 50 + "]" * 50 + "}",
    b"\xff\xfe\x00\x00",
    b'{"a": "\xc3"}',
    b'{"a": "\xed\xa0\x80"}',
    '\x0c{"a": 1}',
    '{"a":1}\u00a0',
]
VALUES: list[Any] = [
    HOOK_INPUT,
    {
        "hookSpecificOutput": {
            "permissionDecision": "deny",
            "permissionDecisionReason": "caf\u00e9\n",
        }
    },
    {"b": 1, "a": [None, True, False, 1.5, -0.0, 10**30, "\ud800", "\U0001f600"]},
    {"z": {"y": 1}, "a": 2},
    [float("nan"), float("inf")],
    "top-level string",
    42,
    None,
    {1: "int key", 2.5: "float key", None: "null key", False: "bool key"},
    (1, 2),
]


def _outcome(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    try:
        value = call(*args, **kwargs)
    except Exception as err:  # the same failure, in the same words
        return ("error", f"{type(err).__name__}: {err}")
    return ("value", repr(value) if isinstance(value, str) else json.dumps(value, default=repr))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_a_document_reads_as_json_reads_it(document: str | bytes) -> None:
    assert _outcome(jsontext.loads, document) == _outcome(json.loads, document)


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("sort_keys", [False, True])
def test_a_value_writes_as_json_writes_it(value: Any, sort_keys: bool) -> None:
    assert _outcome(jsontext.dumps, value, sort_keys=sort_keys) == _outcome(
        json.dumps, value, sort_keys=sort_keys
    )


def test_what_json_cannot_write_fails_as_json_fails_or_takes_the_default() -> None:
    looped: list[Any] = []
    looped.append(looped)
    for value in ({"a": {1, 2}}, looped, {("a", "b"): 1}):
        assert _outcome(jsontext.dumps, value) == _outcome(json.dumps, value)
    assert jsontext.dumps({"a": {1}}, default=str) == json.dumps({"a": {1}}, default=str)
    assert math.isnan(jsontext.loads("NaN"))


def test_reading_a_hook_input_loads_no_json_package() -> None:
    """The point of the module: what the hooks pay to import."""
    code = (
        "import sys\nfrom coord.fast import jsontext\n"
        "jsontext.dumps(jsontext.loads(sys.stdin.read()))\n"
        "print(sorted(m for m in sys.modules if m == 'json' or m.startswith('json.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(HOOK_INPUT),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"
