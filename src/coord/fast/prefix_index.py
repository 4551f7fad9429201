"""Patterns indexed by their literal prefix: which of them could overlap a given pattern.

Two patterns can overlap only if one's literal prefix (the part before any glob,
``coord.fast.patterns.literal_prefix``) is an ancestor of the other's or equal to it. So a
pattern is compared with the indexed ones along its own path and beneath it, not with all of
them: the same narrowing the board's reservation query does with its indexed prefix column,
and by the same widest key (``coord.fast.patterns.search_prefix``: NFC, case folded), so that a
pattern meets every spelling a file system could take for it; the caller's overlap rule then
compares by the board's own fold. The board's claim-next batch and the design-document
protocol both use it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

from coord.fast.patterns import search_prefix

T = TypeVar("T")


class PrefixIndex(Generic[T]):
    """Values (whatever each pattern stands for) by their pattern's literal prefix."""

    def __init__(self, entries: Iterable[tuple[str, T]] = ()) -> None:
        self.count = 0
        self.by_prefix: dict[str, list[T]] = {}
        self.prefixes: list[str] = []  # sorted: what lies beneath a prefix is one range
        self.above: set[str] = set()  # every directory above an indexed prefix
        for pattern, value in entries:
            self.add(pattern, value)

    def add(self, pattern: str, value: T) -> None:
        prefix = search_prefix(pattern)
        if prefix not in self.by_prefix:
            bisect.insort(self.prefixes, prefix)
            self.above.update(prefix[:i] for i, c in enumerate(prefix) if c == "/")
        self.by_prefix.setdefault(prefix, []).append(value)
        self.count += 1

    def near(self, pattern: str) -> list[T]:
        """The values whose prefix is the pattern's, an ancestor of it, or beneath it."""
        prefix = search_prefix(pattern)
        by_prefix = self.by_prefix
        if not prefix:  # a glob from the top may meet anything
            return [value for p in self.prefixes for value in by_prefix[p]]
        found = list(by_prefix.get("", ()))  # patterns that start with a glob
        slash = prefix.find("/")
        while slash >= 0:  # the ancestors
            found += by_prefix.get(prefix[:slash], ())
            slash = prefix.find("/", slash + 1)
        found += by_prefix.get(prefix, ())
        if prefix in self.above:  # beneath it: a range of the sorted prefixes
            prefixes, beneath = self.prefixes, prefix + "/"
            index = bisect.bisect_left(prefixes, beneath)
            while index < len(prefixes) and prefixes[index].startswith(beneath):
                found += by_prefix[prefixes[index]]
                index += 1
        return found

    def near_any(self, patterns: Sequence[str]) -> list[T]:
        """``near`` of each pattern, each value once."""
        if not patterns or not self.count:
            return []
        found: dict[int, T] = {}
        for pattern in patterns:
            for value in self.near(pattern):
                found[id(value)] = value
        return list(found.values())
