"""argparse types for coord's arguments: each says what a good value looks like.

No argparse at import: ``coord next`` reads its few options with these without building a
parser (``coord.cli.entry``); a bad value sends it to the full parser, which says what is wrong.
"""

from __future__ import annotations

from coord.limits import MAX_BATCH

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

KINDS = ["task", "bug", "note", "handoff"]


def _refuse(message: str) -> argparse.ArgumentTypeError:
    import argparse

    return argparse.ArgumentTypeError(message)


def item_id(text: str) -> int:
    value = text.lstrip("#")
    if not value.isdigit() or int(value) <= 0:
        raise _refuse(f"{text!r} is not an item id (a positive integer)")
    return int(value)


def item_ref(text: str) -> int | str:
    """An item id (12, #12) or a work-package key (R3)."""
    value = text.strip().lstrip("#")
    if value.isdigit() and int(value) > 0:
        return int(value)
    if value[:1].isalpha() and len(value) <= 64 and all(c.isalnum() or c in "_.:-" for c in value):
        return value
    raise _refuse(f"{text!r} is neither an item id (a positive integer) nor a package id (R3)")


def count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_BATCH:
        raise _refuse(f"{text!r}: count is 1 to {MAX_BATCH}")
    return int(text)


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
