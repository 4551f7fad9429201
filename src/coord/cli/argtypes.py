"""argparse types for coord's arguments: each says what a good value looks like.

No argparse at import: ``coord next`` reads its few options with these without building a
parser (``coord.cli.entry``); a bad value sends it to the full parser, which says what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable

from coord.limits import MAX_BATCH, MAX_INTEGER
from coord.times import DURATION_EXAMPLES, parse_duration

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def _refuse(message: str) -> argparse.ArgumentTypeError:
    import argparse

    return argparse.ArgumentTypeError(message)


def _whole_number(text: str) -> int | None:
    """ASCII digits only (``str.isdigit`` says yes to '²'), and no more than the board can
    store: SQLite's integers are 64-bit."""
    if text.isascii() and text.isdigit() and int(text) <= MAX_INTEGER:
        return int(text)
    return None


def item_id(text: str) -> int:
    value = _whole_number(text.lstrip("#"))
    if not value:
        raise _refuse(f"{text!r} is not an item id (a positive integer up to {MAX_INTEGER})")
    return value


def item_ref(text: str) -> int | str:
    """An item id (12, #12) or a work-package key (R3)."""
    value = text.strip().lstrip("#")
    number = _whole_number(value)
    if number:
        return number
    if (
        value.isascii()
        and value[:1].isalpha()
        and len(value) <= 64
        and all(c.isalnum() or c in "_.:-" for c in value)
    ):
        return value
    raise _refuse(
        f"{text!r} is neither an item id (a positive integer up to {MAX_INTEGER}) nor a "
        "package id (R3)"
    )


def position(text: str) -> int:
    """--after: an id or sequence number to start after (0: from the start)."""
    value = _whole_number(text)
    if value is None:
        raise _refuse(f"{text!r} is not a position (0, or an id or sequence number)")
    return value


def page_size(maximum: int) -> Callable[[str], int]:
    """--limit: 1 to ``maximum``, the most the daemon answers in one page."""

    def limit(text: str) -> int:
        value = _whole_number(text)
        if value is None or not 1 <= value <= maximum:
            raise _refuse(f"{text!r}: the limit is 1 to {maximum}")
        return value

    return limit


def count(text: str) -> int:
    value = _whole_number(text)
    if value is None or not 1 <= value <= MAX_BATCH:
        raise _refuse(f"{text!r}: count is 1 to {MAX_BATCH}")
    return value


def priority(text: str) -> int:
    if text not in ("0", "1", "2", "3", "4"):
        raise _refuse(f"{text!r}: priority is 0 (highest) to 4")
    return int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _refuse(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise _refuse("must be more than 0 seconds")
    return value


def duration(text: str) -> float:
    """--older-than: a number of seconds, or one with a unit (``coord.times.parse_duration``)."""
    value = parse_duration(text)
    if value is None or not 0 <= value <= MAX_INTEGER:
        raise _refuse(f"{text!r} is not a duration: give {DURATION_EXAMPLES}")
    return value
