"""A design document's checks as committed: what `coord spec import` lets agents run.

A package's ``Checks:`` are shell commands that whoever finishes the package runs in their own
working tree. The document in the working tree is anyone's to edit, unseen; its committed
text has an author, a commit and a history. So ``coord spec import`` takes everything else
from the working tree (titles, files, dependencies: the plan as it is being written) but each
package's checks from the document's blob at ``HEAD`` of the repository it lives in (``git
cat-file blob HEAD:./NAME``, the same commit ``coord done`` records as evidence). A package
whose checks in the working tree differ from the committed ones gets the committed ones and
a warning (``uncommitted_checks``); a document with no committed version gives no checks.
"""

from __future__ import annotations

from pathlib import Path

from coord.errors import GitError
from coord.fast.git import Git
from coord.spec.document import Problem, SpecDocument
from coord.spec.parse import parse


def committed_text(doc: Path) -> str | None:
    """The document's text at ``HEAD`` of its repository; None when there is none (outside a
    repository, never committed, not UTF-8, or no git)."""
    try:
        found = Git(doc.resolve().parent).run(
            "cat-file", "blob", f"HEAD:./{doc.name}", check=False, timeout=30
        )
    except GitError:
        return None
    if found.returncode != 0:
        return None
    try:
        return found.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def committed_checks(doc: SpecDocument, path: Path) -> tuple[dict[str, list[str]], list[Problem]]:
    """Each package's checks as the committed document gives them (by package id), and an
    ``uncommitted_checks`` warning for each package whose working-tree checks differ."""
    text = committed_text(path)
    at_head = parse(text, doc.path) if text is not None else None
    checks: dict[str, list[str]] = {}
    problems: list[Problem] = []
    for package in doc.packages:
        committed = at_head.package(package.id) if at_head is not None else None
        kept = list(committed.checks) if committed is not None else []
        checks[package.id] = kept
        if list(package.checks) == kept:
            continue
        where = "are not committed" if at_head is None else "differ from the committed ones"
        problems.append(
            Problem(
                "uncommitted_checks",
                package.line,
                f"{package.id}: its checks {where}; the board gets "
                f"{_listed(kept)} (commit the document to import the others: checks run in "
                "other agents' working trees, so they come from git)",
                package.id,
            )
        )
    return checks, problems


def _listed(commands: list[str]) -> str:
    return ", ".join(f"`{c}`" for c in commands) if commands else "no checks"
