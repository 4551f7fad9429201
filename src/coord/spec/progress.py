"""Progress kept beside the design: ``docs/plan.progress.md`` next to ``docs/plan.md``.

A design document should be stable; "who works on what" changes every day. A team that wants
the two apart keeps reservations and ticks in a progress file beside the document (``coord
git`` writes there when ``git config coord.progress true``). Every reader (``coord spec
lint|status|import``, ``coord git``) merges it in, so both layouts read the same::

    # Progress of plan.md

    **Reserved: A2 by @alice.**
    - [x] A1

* ``**Reserved: ID by @user.**`` (``**Reserved: A, B by @user.**``) reserves packages, exactly
  as in the document;
* ``- [x] ID`` ticks the package ``ID`` (the document's box may stay empty);
* anything else is prose and is ignored; text in backticks never counts.

Merged, a ticked line makes the package done, and a reservation counts as if it stood above
the entry: it carries the line of the package's entry in the document (messages read
``plan.md:LINE``), or line 1 for an id the document does not have (lint reports
``reservation_on_missing``). A tick of an unknown id is the parse problem
``progress_on_missing``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from coord.spec import blocks
from coord.spec.document import DocReservation, Problem, SpecDocument

SUFFIX = ".progress"
_TICK = re.compile(
    r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+\[[xX]\][ \t]+(?:\*\*)?"
    r"(?P<id>[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)(?:\*\*)?(?:[ \t.,:—–].*)?"
)


def progress_path(doc: str | Path) -> Path:
    """``docs/plan.md`` → ``docs/plan.progress.md``."""
    doc = Path(doc)
    return doc.with_name(doc.stem + SUFFIX + doc.suffix)


def progress_name(doc: str) -> str:
    """The same for a repository path written with ``/`` (git's paths)."""
    directory, name = posixpath.split(doc)
    stem, dot, suffix = name.rpartition(".")
    base = f"{stem}{SUFFIX}.{suffix}" if dot and stem else f"{name}{SUFFIX}"
    return posixpath.join(directory, base) if directory else base


def header(doc_name: str) -> str:
    """The first lines of a new progress file."""
    return (
        f"# Progress of {doc_name}\n"
        "\n"
        f"Reservations and finished packages of [{doc_name}]({doc_name}), kept apart from the "
        "design (written by `coord git`).\n"
        "\n"
    )


@dataclass(slots=True)
class Progress:
    """A parsed progress file. Lines are the progress file's own."""

    path: str
    done: list[tuple[str, int]] = field(default_factory=list)  # (package id, line)
    reservations: list[DocReservation] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def parse_progress(text: str, path: str = "<progress>") -> Progress:
    from coord.spec.parse import parse  # reservations read exactly as in a document

    found = parse(text, path)
    progress = Progress(path=path)
    progress.reservations = [r for r in found.reservations if r.package is not None]
    progress.problems = [
        Problem(p.code, 1, f"{path}: {p.message}", p.package)
        for p in found.problems
        if p.code == "malformed_reservation"
    ]
    for line in blocks.lines(text):  # a tick in code or in a comment is no tick
        if line.kind != blocks.TEXT:
            continue
        tick = _TICK.fullmatch(line.text)
        if tick is not None:
            progress.done.append((tick["id"], line.number))
    return progress


def read(
    doc_text: str, doc_path: str, progress_text: str | None, shown_path: str | None = None
) -> SpecDocument:
    """The document as every reader sees it: parsed, with its progress file merged in.

    ``progress_text``: the progress file's text, None when there is none; ``shown_path``: its
    path for messages and blame (default ``progress_name(doc_path)``)."""
    from coord.spec.parse import parse

    doc = parse(doc_text, doc_path)
    if progress_text is not None:
        merge(doc, parse_progress(progress_text, shown_path or progress_name(doc_path)))
    return doc


def merge(doc: SpecDocument, progress: Progress) -> SpecDocument:
    """``doc`` with the progress file's ticks and reservations added (in place; returned)."""
    first: dict[str, int] = {}
    for index, package in enumerate(doc.packages):
        first.setdefault(package.id, index)
    for package_id, line in progress.done:
        if package_id in first:
            doc.packages[first[package_id]].done = True
        else:
            doc.problems.append(
                Problem(
                    "progress_on_missing",
                    1,
                    f"{progress.path}:{line} ticks {package_id}, which is no package of this "
                    "document: fix the id or remove the line",
                    package_id,
                )
            )
    for reservation in progress.reservations:
        found = first.get(reservation.package or "")
        line = doc.packages[found].line if found is not None else 1
        doc.reservations.append(
            DocReservation(
                reservation.user,
                line,
                reservation.package,
                source=(progress.path, reservation.line),
            )
        )
    doc.problems.extend(progress.problems)
    return doc
