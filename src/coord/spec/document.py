"""What a work-package document says, as data: packages, reservation lines, problems.

The parser (``coord.spec.parse``) fills these from Markdown; lint (``coord.spec.lint``),
``coord spec status`` and ``coord spec import`` read them. Nothing here touches the board.
Lines are 1-based line numbers in the document, for messages of the form ``file:line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Package:
    """One work package: ``- [ ] **ID — title.** Dependencies: A, B.`` and its bullets."""

    id: str
    title: str
    done: bool
    line: int
    dependencies: list[str] = field(default_factory=list)
    # repository-relative paths and globs as written (bare names resolved); may be inherited
    files: list[str] = field(default_factory=list)
    files_from_track: bool = False  # the package names no files; these are its track's
    checks: list[str] = field(default_factory=list)  # shell commands from `Checks:`
    description: str = ""  # the package's bullets other than files/checks, as Markdown
    acceptance: str = ""
    track: str | None = None  # e.g. "R" from "### Track R — recovery ..."


@dataclass(slots=True)
class DocReservation:
    """A reservation line: ``**Reserved: ID by @user.**`` (package) or a track marker such
    as ``**In progress and reserved: @user.**`` (``package`` is None, ``track`` is set)."""

    user: str
    line: int
    package: str | None = None
    track: str | None = None
    # where the line itself is written when not in the document (a progress file): its path
    # and line, for its age by git blame
    source: tuple[str, int] | None = None


@dataclass(slots=True)
class Track:
    """``### Track X — title``: its packages, and files its prose says the packages own."""

    id: str
    title: str
    line: int
    files: list[str] = field(default_factory=list)
    merge_order: list[list[str]] = field(default_factory=list)  # "merge A → B → C" chains


@dataclass(slots=True)
class Problem:
    """Something wrong in the document. ``code`` is stable (scripts rely on it)."""

    code: str
    line: int
    message: str
    package: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "package": self.package,
            "line": self.line,
            "message": self.message,
        }


@dataclass(slots=True)
class SpecDocument:
    path: str  # as given, for messages
    packages: list[Package] = field(default_factory=list)
    reservations: list[DocReservation] = field(default_factory=list)
    tracks: list[Track] = field(default_factory=list)
    # ownership tables: (surface, [package ids]) with ranges like C1–C3 expanded
    ownership: list[tuple[str, list[str]]] = field(default_factory=list)
    merge_orders: list[list[str]] = field(default_factory=list)  # every "A → B → C" chain
    escalate_to: str | None = None  # `Escalate to: ...` (coord's dialect)
    problems: list[Problem] = field(default_factory=list)  # parse problems only
    # (line, name) of each bare file name read as the repository-root path ``name``: lint
    # warns where the repository has that name only deeper
    root_names: list[tuple[int, str]] = field(default_factory=list)

    def package(self, package_id: str) -> Package | None:
        return next((p for p in self.packages if p.id == package_id), None)
