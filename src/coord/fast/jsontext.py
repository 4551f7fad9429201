"""JSON for the hooks: ``json``'s own C scanner and encoder, without the ``json`` package.

Every hook reads its input as JSON and most answer in JSON, before every tool call. The
``json`` package costs ~2 ms to import on top of the C accelerator ``_json`` that does the
actual work: it loads its pure-Python decoder, encoder and scanner modules around it. Here
the same C scanner and encoder are driven with ``json.loads``' and ``json.dumps``' defaults,
so a document reads and writes exactly as ``json`` would (``tests/test_jsontext.py``
compares the two over a corpus). Anything unusual — bytes that are not UTF-8 without a BOM,
a document that does not parse, an interpreter without ``_json`` — is handed to ``json``
itself, which gives its own answer or its own error.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every tool call
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"  # json's own: JSON allows no other space between tokens
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    _json = None  # type: ignore[assignment]


class _Options:
    """What ``json.JSONDecoder()`` gives its scanner: the defaults of ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__
    memo: dict[str, str] = {}  # noqa: RUF012 - the scanner's own, as in json.scanner


_scan: Callable[[str, int], tuple[Any, int]] | None = None
if _json is not None:  # the scanner reads its options off any object, as json.scanner's
    _scan = _json.make_scanner(_Options())  # type: ignore[arg-type]


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``."""
    if _scan is None or (isinstance(text, bytes) and text[:1] in (b"\xef", b"\xfe", b"\xff")):
        return _json_loads(text)
    try:
        # json.loads decodes UTF-8 bytes the same way; a NUL in the first bytes means a
        # UTF-16 or UTF-32 document, which json detects: left to it
        document = text.decode("utf-8", "surrogatepass") if isinstance(text, bytes) else text
        if "\x00" in document[:4]:
            return _json_loads(text)
        start = len(document) - len(document.lstrip(_WHITESPACE))
        value, end = _scan(document, start)
    except Exception:  # not JSON (StopIteration included): json says how, in its own words
        return _json_loads(text)
    if document[end:].strip(_WHITESPACE):
        return _json_loads(text)  # "Extra data"
    return value


def dumps(
    value: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> str:
    """``json.dumps(value, sort_keys=sort_keys, default=default)``."""
    if _json is None:
        return _json_dumps(value, sort_keys, default)
    encode = _json.make_encoder(
        {},  # markers: a value that contains itself is refused, as json.dumps does
        default or _unserialisable,
        _json.encode_basestring_ascii,
        None,
        ": ",
        ", ",
        sort_keys,
        False,
        True,
    )
    return "".join(encode(value, 0))


def _unserialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_loads(text: str | bytes) -> Any:
    import json

    return json.loads(text)


def _json_dumps(value: Any, sort_keys: bool, default: Callable[[Any], Any] | None) -> str:
    import json

    return json.dumps(value, sort_keys=sort_keys, default=default)
