"""Do two globs match a common word? Bounded: linear when both have stars, a counted search
when one has none. Used twice by ``coord.fast.patterns``: over the characters of one path
segment (``*`` the star) and over the segments of a path (``**`` the star).

Why linear: if both globs have a star, a common word exists exactly when their heads (the
items before the first star) agree item by item over the shorter one, and their tails (after
the last star) agree from the end. Take the longer head, then every middle block of both, then
the longer tail: each glob's first star eats the rest of the other's head and its own middles
up to where they are placed, and its last star eats up to its tail. When one glob has no star
it is a fixed-length word; the other's head and tail must fit its ends, and the middle blocks
are placed leftmost, one after the other (leftmost is never worse: a later block only needs
room after it).

The placement search is the one step that is not linear. Every comparison it makes counts
against ``Work.budget``; past it the answer is "they may meet" (safe for a reservation), and
only two globs get that far (a literal is matched by ``str`` and ``re`` at C speed).

Stdlib only: the edit guard imports it before every edit.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    T = TypeVar("T")

# A comparison costs ~0.3-0.5 us: one check, and all the checks of one request together,
# stay well inside the ~50 ms of the daemon's event loop one request may take (measured by
# bench/overlap.py on the largest accepted patterns)
STEP_BUDGET = 25_000
REQUEST_BUDGET = 50_000


class OverBudget(Exception):
    """The search ran past its budget of comparisons: the caller answers "may meet"."""


class Work:
    """Comparisons made since the last ``reset``: what the tests bound, never seconds.

    Class-level, not per thread: the board's checks run under its one writer, and a race
    could only make an answer more conservative, never let an overlap through."""

    steps = 0
    budget = STEP_BUDGET
    scoped = False  # inside ``one_request``: the checks share its budget

    @classmethod
    def reset(cls) -> None:
        if not cls.scoped:
            cls.steps = 0

    @classmethod
    def spend(cls, n: int = 1) -> None:
        cls.steps += n
        if cls.steps > cls.budget:
            raise OverBudget


class one_request:
    """``with one_request():`` every check inside shares ``REQUEST_BUDGET`` comparisons, so
    a request of many long patterns against many held ones is bounded as a whole; past it
    each remaining check answers "may meet" (the request is refused, never wrongly granted)."""

    def __enter__(self) -> None:
        Work.scoped, Work.steps, Work.budget = True, 0, REQUEST_BUDGET

    def __exit__(self, *exc: object) -> None:
        Work.scoped, Work.steps, Work.budget = False, 0, STEP_BUDGET


def blocks(items: Sequence[T], star: T) -> list[list[T]]:
    """The runs of non-star items between stars: k stars give k + 1 blocks (some empty)."""
    out: list[list[T]] = [[]]
    for item in items:
        if item == star:
            out.append([])
        else:
            out[-1].append(item)
    return out


def _agree(x: Sequence[T], y: Sequence[T], meet: Callable[[T, T], bool]) -> bool:
    n = min(len(x), len(y))
    Work.spend(n)
    return all(meet(x[k], y[k]) for k in range(n))


def _agree_at_end(x: Sequence[T], y: Sequence[T], meet: Callable[[T, T], bool]) -> bool:
    n = min(len(x), len(y))
    Work.spend(n)
    return all(meet(x[len(x) - 1 - k], y[len(y) - 1 - k]) for k in range(n))


def meet(x: Sequence[T], y: Sequence[T], star: T, items_meet: Callable[[T, T], bool]) -> bool:
    """Is there a word both globs (sequences with ``star`` items) match? ``items_meet`` says
    whether two non-star items can stand for one symbol (symmetric)."""
    xb, yb = blocks(x, star), blocks(y, star)
    if len(xb) > 1 and len(yb) > 1:
        return _agree(xb[0], yb[0], items_meet) and _agree_at_end(xb[-1], yb[-1], items_meet)
    if len(xb) == 1 and len(yb) == 1:
        return len(x) == len(y) and _agree(x, y, items_meet)
    word, glob = (xb[0], yb) if len(xb) == 1 else (yb[0], xb)
    return fits(word, glob, items_meet)


def fits(word: Sequence[T], glob: list[list[T]], items_meet: Callable[[T, T], bool]) -> bool:
    """Does the star-free ``word`` meet a glob given as its blocks (two or more)?"""
    head, tail = glob[0], glob[-1]
    end = len(word) - len(tail)
    if len(head) > end:
        return False
    if not (_agree(head, word, items_meet) and _agree_at_end(tail, word, items_meet)):
        return False
    at = len(head)
    for block in glob[1:-1]:
        found = _leftmost(block, word, at, end, items_meet)
        if found < 0:
            return False
        at = found + len(block)
    return True


def _leftmost(
    block: Sequence[T], word: Sequence[T], start: int, end: int, items_meet: Callable[[T, T], bool]
) -> int:
    """The first position from ``start`` where ``block`` meets ``word`` and ends by ``end``."""
    for at in range(start, end - len(block) + 1):
        k = 0
        while k < len(block) and items_meet(block[k], word[at + k]):
            k += 1
        Work.spend(k + 1)
        if k == len(block):
            return at
    return -1


def matches(
    glob: Sequence[T], word: Sequence[T], star: T, fits_item: Callable[[T, T], bool]
) -> bool:
    """Does ``glob`` match the star-free ``word``? ``fits_item(glob_item, word_item)``."""
    parts = blocks(glob, star)
    if len(parts) == 1:
        return len(glob) == len(word) and _agree(glob, word, fits_item)
    return fits(word, parts, fits_item)
