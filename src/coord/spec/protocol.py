"""The protocol's rules, written once: who holds what, and what may be claimed now and why not.

A design document's protocol (``tests/specs/harness-v2.md``, "Claiming and completing a
package"): a package may be claimed when its box is empty, every dependency is ticked, and no
reservation holds it or files overlapping its own. Every reader asks here: ``coord spec lint``
(conflicts), ``coord spec status`` and the MCP tool ``spec_status`` (the claimable set and the
reasons), ``coord git reserve|done`` (the decision on the remote's tip, and the error that
names the holder), ``coord spec lint --git`` (was a reservation allowed when it landed).

**Who holds what.** A reservation line ``**Reserved: ID by @user.**`` holds package ID and,
while ID is unticked, its files. A track marker (``**In progress and reserved: @user.**``)
holds every package of its track, the unticked ones' files and the files the track's prose
says it owns. A marker outside any track holds nothing that can be named. Where one id is used
twice, the first package with it counts (lint reports the others).

**Files** overlap by the one rule of ``coord.fast.patterns.overlaps``; document paths are
brought to its canonical form by ``canonical``.

**The board** asks the same question after ``coord spec import``: the import records on each
package whom ``Rules.kept_for`` keeps it for (``items.reserved_for``), and the board's ready
predicate refuses such a package to everyone else while the line stands. So ``coord spec
status`` and ``coord ls --ready`` list the same packages; a re-import without the line frees
it, and ``--adopt`` turns the line into a claim with a lease.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from coord.fast.patterns import overlaps
from coord.fast.prefix_index import PrefixIndex
from coord.fast.tree import WorkingTree
from coord.spec.document import DocReservation, Package, SpecDocument

IsDir = Callable[[str], bool]


@dataclass(slots=True)
class Hold:
    """What one reservation line holds."""

    reservation: DocReservation
    packages: list[Package]  # a track marker: every package of its track, ticked or not
    files: list[str]  # as written in the document

    @property
    def user(self) -> str:
        return self.reservation.user

    @property
    def name(self) -> str:
        """``R3``, or ``track R`` for a track marker."""
        return self.reservation.package or f"track {self.reservation.track}"


@dataclass(slots=True)
class FileClash:
    """A file of the package overlaps one that a reservation holds."""

    held: str  # what holds it: a package id or "track X"
    holder: str
    theirs: str
    mine: str

    def to_dict(self) -> dict[str, str]:
        return {"held": self.held, "holder": self.holder, "theirs": self.theirs, "mine": self.mine}


@dataclass(slots=True)
class Verdict:
    """May this package be claimed now? Every reason it may not, in the order a person acts
    on them: done, reserved, files held, dependencies open."""

    package: Package
    holds: list[Hold] = field(default_factory=list)  # the reservations holding the package
    clashes: list[FileClash] = field(default_factory=list)  # others' holds on its files
    waiting_on: list[str] = field(default_factory=list)  # dependencies unticked or missing

    @property
    def claimable(self) -> bool:
        return not (self.package.done or self.holds or self.clashes or self.waiting_on)

    @property
    def reserved_by(self) -> list[str]:
        """The holders' names: reservation lines first, then track markers, no repeats."""
        lines = [h.user for h in self.holds if h.reservation.package is not None]
        markers = [h.user for h in self.holds if h.reservation.package is None]
        return list(dict.fromkeys([*lines, *markers]))

    def reasons(self) -> list[dict[str, Any]]:
        """Why not, as data (``[]`` when claimable); ``reason`` names each as ``coord git``'s
        errors do."""
        found: list[dict[str, Any]] = []
        if self.package.done:
            found.append({"reason": "done"})
        if self.holds:
            found.append({"reason": "reserved", "holders": self.reserved_by})
        if self.clashes:
            conflicts = [clash.to_dict() for clash in self.clashes]
            found.append({"reason": "files_reserved", "conflicts": conflicts})
        if self.waiting_on:
            found.append({"reason": "dependencies", "waiting_on": list(self.waiting_on)})
        return found


class Rules:
    """The protocol evaluated on one document: read its holds once, ask about any package."""

    def __init__(self, doc: SpecDocument, is_dir: IsDir | None = None) -> None:
        """``is_dir``: which literal paths are directories of the repository's working tree
        (``working_tree``), as the board judges its own files; None when the tree is not
        known (git mode judges a remote tip): then any literal might be a directory."""
        self.doc = doc
        self.is_dir = is_dir
        self.packages = first_of_each_id(doc.packages)
        self.holds = _holds(doc, self.packages)
        self.holding: dict[str, list[int]] = {}  # package id -> the holds naming it
        for number, hold in enumerate(self.holds):
            for package in hold.packages:
                self.holding.setdefault(package.id, []).append(number)
        self.files = FileIndex(
            ((f, number) for number, h in enumerate(self.holds) for f in h.files), is_dir
        )

    def verdict(self, package: Package) -> Verdict:
        own = self.holding.get(package.id, [])
        verdict = Verdict(package, [self.holds[number] for number in own])
        verdict.waiting_on = self._waiting_on(package)
        if package.done:
            return verdict  # a ticked package holds and wants no files
        clashing = sorted(self.files.owners_overlapping(package.files) - set(own))
        verdict.clashes = [
            _first_clash(package, self.holds[number], self.is_dir) for number in clashing
        ]
        return verdict

    def verdicts(self) -> list[Verdict]:
        """One per package id, in document order."""
        return [self.verdict(package) for package in self.packages.values()]

    def claimable(self) -> list[str]:
        """``[v.package.id for v in verdicts() if v.claimable]``, without looking for the
        reasons of a package once one is found (the files last: they cost the most)."""
        return [
            package.id
            for package in self.packages.values()
            if not package.done
            and package.id not in self.holding
            and not self._waiting_on(package)
            and not self.files.overlaps_any(package.files)
        ]

    def reserved_by(self) -> dict[str, str]:
        """Who each package is reserved for: its own line, else its track's marker (which
        holds only the track's unticked packages). An id the document lacks keeps its line's
        user."""
        markers: dict[str, str] = {}
        lines: dict[str, str] = {}
        for hold in self.holds:
            package_id = hold.reservation.package
            if package_id is not None:
                lines[package_id] = hold.user
            else:
                markers.update({p.id: hold.user for p in hold.packages if not p.done})
        return {**markers, **lines}

    def kept_for(self) -> dict[str, str]:
        """Who the document keeps each package for, as the board records it on import
        (``reserved_for``): its reservation (``reserved_by``), else, for an unticked package
        whose files overlap what a line holds, that line's user. Everyone else is refused
        it, as this protocol refuses them (``Verdict``'s ``reserved`` and
        ``files_reserved``), so the board's ready set is the claimable one."""
        kept = self.reserved_by()
        for package in self.packages.values():
            if package.done or package.id in kept:
                continue
            owners = self.files.owners_overlapping(package.files)
            if owners:
                kept[package.id] = self.holds[min(owners)].user
        return kept

    def _waiting_on(self, package: Package) -> list[str]:
        packages = self.packages
        return [d for d in package.dependencies if d not in packages or not packages[d].done]


def claimable(doc: SpecDocument, is_dir: IsDir | None = None) -> list[str]:
    """Ids of the packages an agent may reserve now, in document order."""
    return Rules(doc, is_dir).claimable()


def reserved_by(doc: SpecDocument) -> dict[str, str]:
    """Who each package is reserved for (``Rules.reserved_by``)."""
    return Rules(doc).reserved_by()


def kept_for(doc: SpecDocument, is_dir: IsDir | None = None) -> dict[str, str]:
    """Who the document keeps each package for (``Rules.kept_for``)."""
    return Rules(doc, is_dir).kept_for()


def working_tree(repo_root: str | os.PathLike[str]) -> IsDir:
    """``is_dir`` for a repository's working tree: the board's own reading of its files
    (``coord.fast.tree.WorkingTree``), so the document and the board judge the same paths
    the same way."""
    return WorkingTree(os.fspath(repo_root)).is_dir


def first_of_each_id(packages: Iterable[Package]) -> dict[str, Package]:
    first: dict[str, Package] = {}
    for package in packages:
        first.setdefault(package.id, package)
    return first


def canonical(pattern: str) -> str:
    """A document path in the canonical form ``patterns.overlaps`` expects (as
    ``patterns.normalize`` stores it): a directory written ``src/`` or ``src/**`` is
    ``src/**``, everything beneath it."""
    written_as_dir = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    while pattern.endswith("/**"):
        pattern, written_as_dir = pattern[:-3], True
    if not pattern:
        return "**"
    return f"{pattern}/**" if written_as_dir else pattern


def _holds(doc: SpecDocument, packages: dict[str, Package]) -> list[Hold]:
    tracks = {track.id: track for track in doc.tracks}
    in_track: dict[str, list[Package]] = {}
    for package in packages.values():
        if package.track is not None:
            in_track.setdefault(package.track, []).append(package)
    holds = []
    for reservation in doc.reservations:
        if reservation.package is not None:
            held = [packages[reservation.package]] if reservation.package in packages else []
            files = [f for p in held if not p.done for f in p.files]
        elif reservation.track is not None:
            held = in_track.get(reservation.track, [])
            track = tracks.get(reservation.track)
            own = [f for p in held if not p.done for f in p.files]
            files = [*(track.files if track else []), *own]
        else:
            continue  # a marker outside any track holds nothing we can name
        holds.append(Hold(reservation, held, files))
    return holds


def _first_clash(package: Package, hold: Hold, is_dir: IsDir | None) -> FileClash:
    """The first of the package's files (in its order) that meets one of the hold's."""
    for mine in package.files:
        for theirs in hold.files:
            if overlaps(canonical(mine), canonical(theirs), is_dir=is_dir):
                return FileClash(hold.name, hold.user, theirs, mine)
    raise AssertionError("the index found an overlap that is not there")


class FileIndex:
    """Held patterns (each with its owner), read by the overlap rule: which owners' files
    overlap a package's (``coord.fast.prefix_index`` narrows what is compared)."""

    def __init__(self, entries: Iterable[tuple[str, Any]], is_dir: IsDir | None = None) -> None:
        self.is_dir = is_dir
        self.index: PrefixIndex[tuple[str, Any]] = PrefixIndex(
            (pattern, (pattern, owner))
            for pattern, owner in dict.fromkeys((canonical(f), o) for f, o in entries)
        )

    def overlaps_any(self, files: Iterable[str]) -> bool:
        return any(
            overlaps(mine, other, is_dir=self.is_dir)
            for mine in map(canonical, files)
            for other, _ in self.index.near(mine)
        )

    def owners_overlapping(self, files: Iterable[str]) -> set[Any]:
        found: set[Any] = set()
        for mine in map(canonical, files):
            for other, owner in self.index.near(mine):
                if owner not in found and overlaps(mine, other, is_dir=self.is_dir):
                    found.add(owner)
        return found
