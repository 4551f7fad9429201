"""``coord spec lint DOC --git BASE..HEAD``: does a change to the document keep the protocol?

For CI: the range is the change (a pull request: ``origin/main..HEAD``; a push: the old and
the new tip; ``BASE...HEAD`` means from their merge base). Each commit on the first-parent
line of the range is compared with its first parent, the document read with its progress
file (``coord.spec.progress``); the commit that creates the document is its first state, not a
change. Problems, with stable codes:

* ``multiple_reservations`` — one commit adds more than one reservation (a reservation must
  land alone);
* ``reservation_mixed`` — a commit adds a reservation and changes anything else: another
  file, another line of the document (a tick, a removed reservation, prose), or a tick in
  the progress file. Blank lines and the new progress file's header are allowed;
* ``reservation_not_claimable`` — a commit adds a reservation of a package that was not
  claimable (``coord.spec.lint.claimable``) at BASE, or at the commit's own parent;
* ``tick_checks_failed`` — the range ticks a box (``[ ]`` → ``[x]``, a ``- [x] ID`` line in
  the progress file, or a new package already ticked) and one of that package's ``Checks:``
  fails at HEAD. The checks run in the working tree when it is at HEAD (CI's checkout),
  else in a temporary worktree of HEAD that is removed afterwards.

Every problem carries the line of the package in the document at HEAD (or where the commit
put it) and names the commit.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coord.client import checks
from coord.errors import GitError, InvalidInput
from coord.fast.git import Git
from coord.gitmode.settings import repository
from coord.spec import progress
from coord.spec.document import Problem, SpecDocument
from coord.spec.parse import parse
from coord.spec.progress import parse_progress, progress_name
from coord.spec.protocol import claimable

_ZERO = "0" * 40


@dataclass(slots=True)
class _Version:
    """The document (with progress) at one commit; an absent document has no packages."""

    doc_text: str | None
    progress_text: str | None
    merged: SpecDocument

    def done(self) -> set[str]:
        return {p.id for p in self.merged.packages if p.done}

    def line_of(self, package_id: str | None) -> int:
        package = self.merged.package(package_id) if package_id else None
        return package.line if package else 1


def lint_range(doc: Path, rev_range: str) -> list[Problem]:
    """The protocol problems of the changes to ``doc`` in ``rev_range`` (sorted by line)."""
    git = repository(doc.resolve().parent)
    rel = _relative(git, doc)
    progress_rel = progress_name(rel)
    base, head = _range(git, rev_range)
    reader = _Reader(git, rel, progress_rel)
    at_base = reader.at(base)
    base_claimable = set(claimable(at_base.merged))
    problems: list[Problem] = []
    ticked: dict[str, str] = {}  # package id -> the commit that ticked it
    commits = git.out("rev-list", "--reverse", "--first-parent", f"{base}..{head}").split()
    for commit in commits:
        parent = git.out("rev-parse", "--verify", "--quiet", f"{commit}^1", check=False) or None
        changed = _changed_files(git, parent, commit)
        if rel not in changed and progress_rel not in changed:
            continue
        before = reader.at(parent)
        after = reader.at(commit)
        if before.doc_text is None:
            continue  # the document arrives: its lines are its first state, not changes
        name = f"{commit[:12]} ({git.out('log', '-1', '--format=%s', commit)})"
        problems += _reservation_problems(
            before, after, changed, rel, progress_rel, base_claimable, base, name
        )
        for package_id in sorted(after.done() - before.done()):
            ticked[package_id] = name
        for package_id in before.done() - after.done():
            ticked.pop(package_id, None)  # unticked again later in the range
    if ticked:
        problems += _tick_problems(git, reader.at(head), head, ticked)
    return sorted(problems, key=lambda problem: problem.line)


def _reservation_problems(
    before: _Version,
    after: _Version,
    changed: set[str],
    rel: str,
    progress_rel: str,
    base_claimable: set[str],
    base: str,
    name: str,
) -> list[Problem]:
    keys_before = Counter(_keys(before.merged))
    keys_after = Counter(_keys(after.merged))
    added = list((keys_after - keys_before).elements())
    if not added:
        return []
    problems = []
    first_line = after.line_of(added[0][0])
    if len(added) > 1:
        listed = ", ".join(
            f"{package or 'track ' + str(track)} by @{user}" for package, track, user in added
        )
        problems.append(
            Problem(
                "multiple_reservations",
                first_line,
                f"commit {name} adds {len(added)} reservations ({listed}): each reservation "
                "lands alone, one commit per package",
                added[0][0],
            )
        )
    other_edits = sorted(changed - {rel, progress_rel})
    if _document_edited(before.doc_text, after.doc_text):
        other_edits.append(f"{rel} (lines other than the reservation)")
    if _progress_edited(before, after, progress_rel):
        other_edits.append(f"{progress_rel} (ticks)")
    if other_edits:
        problems.append(
            Problem(
                "reservation_mixed",
                first_line,
                f"commit {name} adds a reservation and also changes {', '.join(other_edits)}: "
                "land the reservation alone (`coord git reserve ID` does), then the rest",
                added[0][0],
            )
        )
    claimable_before = set(claimable(before.merged))
    for package_id, _, user in added:
        if package_id is None:
            continue
        where = None
        if package_id not in base_claimable:
            where = f"at {base[:12]} (the base of the range)"
        elif package_id not in claimable_before:
            where = "at the commit's parent"
        if where is not None:
            problems.append(
                Problem(
                    "reservation_not_claimable",
                    after.line_of(package_id),
                    f"commit {name} reserves {package_id} for @{user}, which was not claimable "
                    f"{where}: its box was ticked, a dependency was open, or it or an "
                    "overlapping file was reserved. Remove the reservation and choose again",
                    package_id,
                )
            )
    return problems


def _keys(doc: SpecDocument) -> list[tuple[str | None, str | None, str]]:
    return [(r.package, r.track, r.user) for r in doc.reservations]


def _document_edited(before: str | None, after: str | None) -> bool:
    """Did the document change other than by reservation lines and blank lines?"""
    if before == after:
        return False
    old = (before or "").split("\n")
    new = (after or "").split("\n")
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if not all(_reservation_or_blank(line) for line in [*old[i1:i2], *new[j1:j2]]):
            return True
    return False


def _reservation_or_blank(line: str) -> bool:
    if not line.strip():
        return True
    return "reserved" in line.casefold() and bool(parse(line).reservations)


def _progress_edited(before: _Version, after: _Version, progress_rel: str) -> bool:
    """Ticks changed in the progress file (its prose may change freely)."""
    if before.progress_text == after.progress_text:
        return False
    ticks_before = _ticks(before.progress_text, progress_rel)
    ticks_after = _ticks(after.progress_text, progress_rel)
    return ticks_before != ticks_after


def _ticks(text: str | None, path: str) -> Counter[str]:
    if text is None:
        return Counter()
    return Counter(package_id for package_id, _ in parse_progress(text, path).done)


def _tick_problems(git: Git, at_head: _Version, head: str, ticked: dict[str, str]) -> list[Problem]:
    packages = {p.id: p for p in reversed(at_head.merged.packages)}  # the first of each id
    wanted = {pid: packages[pid] for pid in ticked if pid in packages and packages[pid].checks}
    if not wanted:
        return []
    commands = list(dict.fromkeys(c for p in wanted.values() for c in p.checks))
    runs = {run["command"]: run for run in _run_at(git, head, commands)}
    problems = []
    for package_id, package in wanted.items():
        failed = [runs[c] for c in package.checks if runs[c]["exit_code"] != 0]
        if not failed:
            continue
        listed = "; ".join(f"`{r['command']}` exited {r['exit_code']}" for r in failed)
        tail = failed[0]["output_tail"].strip().splitlines()[-1:] or [""]
        problems.append(
            Problem(
                "tick_checks_failed",
                package.line,
                f"commit {ticked[package_id]} ticks {package_id}, but at {head[:12]} {listed}"
                + (f" ({tail[0].strip()[:200]})" if tail[0].strip() else "")
                + ": fix the work or untick the box",
                package_id,
            )
        )
    return problems


def _run_at(git: Git, head: str, commands: list[str]) -> list[dict[str, Any]]:
    """Run the checks in the working tree if it is at ``head``, else in a temporary one."""
    current = git.out("rev-parse", "--verify", "--quiet", "HEAD", check=False)
    if current == head:
        return checks.run(commands, git.cwd)
    tmp = Path(tempfile.mkdtemp(prefix="coord-lint-"))
    tree = tmp / "tree"
    try:
        git.run("worktree", "add", "--detach", "--quiet", str(tree), head)
        try:
            return checks.run(commands, tree)
        finally:
            git.run("worktree", "remove", "--force", str(tree), check=False)
            git.run("worktree", "prune", check=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _Reader:
    def __init__(self, git: Git, rel: str, progress_rel: str) -> None:
        self.git = git
        self.rel = rel
        self.progress_rel = progress_rel
        self.cache: dict[str | None, _Version] = {}

    def at(self, commit: str | None) -> _Version:
        if commit not in self.cache:
            doc_text = self._blob(commit, self.rel)
            progress_text = self._blob(commit, self.progress_rel)
            merged = progress.read(doc_text or "", self.rel, progress_text, self.progress_rel)
            self.cache[commit] = _Version(doc_text, progress_text, merged)
        return self.cache[commit]

    def _blob(self, commit: str | None, path: str) -> str | None:
        if commit is None:
            return None
        done = self.git.run("cat-file", "blob", f"{commit}:{path}", check=False)
        if done.returncode != 0:
            return None
        return done.stdout.decode("utf-8", "replace")


def _changed_files(git: Git, parent: str | None, commit: str) -> set[str]:
    args = ["diff-tree", "-r", "--no-commit-id", "--name-only", "-z", "--no-renames"]
    listing = git.run(*args, parent or "--root", commit).stdout.decode("utf-8", "replace")
    return set(filter(None, listing.split("\0")))


def _range(git: Git, rev_range: str) -> tuple[str, str]:
    symmetric = "..." in rev_range
    base, sep, head = rev_range.partition("..." if symmetric else "..")
    head = head or "HEAD"  # as git reads "BASE.."
    if not sep or not base:
        raise InvalidInput(
            f"--git {rev_range!r}: give a range BASE..HEAD (e.g. origin/main..HEAD, or the old "
            "and new tips of a push)"
        )
    resolved = []
    for rev in (base, head):
        sha = git.out("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if not sha or sha == _ZERO:
            raise InvalidInput(
                f"--git {rev_range}: {rev!r} is no commit here (fetch it first, e.g. "
                "`git fetch origin main`; a shallow CI clone needs fetch-depth: 0)"
            )
        resolved.append(sha)
    if symmetric:
        merge_base = git.out("merge-base", resolved[0], resolved[1], check=False)
        if not merge_base:
            raise InvalidInput(f"--git {rev_range}: the two commits share no history")
        resolved[0] = merge_base
    return resolved[0], resolved[1]


def _relative(git: Git, doc: Path) -> str:
    absolute = os.path.realpath(doc if doc.is_absolute() else Path.cwd() / doc)
    relative = os.path.relpath(absolute, os.path.realpath(git.cwd))
    if relative.startswith(".."):
        raise GitError(f"{doc} is not inside the repository {git.cwd}")
    return Path(relative).as_posix()
