"""What is wrong with a work-package document: ``lint``.

``lint`` returns the parse problems plus these, sorted by line; every ``code`` is stable:

* ``duplicate_id`` — a package id used again (reported at each later use);
* ``unknown_dependency`` — a dependency that is no package of the document;
* ``cycle`` — packages that depend on each other in a circle (one report per cycle);
* ``done_with_open_dependency`` — a ticked package with an unticked dependency;
* ``reservation_on_done`` / ``reservation_on_missing`` — a reservation of a ticked package,
  or of an id the document does not have;
* ``conflicting_reservations`` — one package reserved twice (by two lines, or by a track
  marker and another user's line), or different users holding overlapping files. A track
  marker holds every unticked package of its track and the track's files;
* ``stale_reservation`` — with ``repo_root``: a committed reservation line older than
  ``stale_days`` (its landing by ``coord.spec.age``, the clock ``coord git reap`` uses too;
  skipped when git or the file's history is unavailable);
* ``no_files`` — an unticked package that names no files and whose track owns none;
* ``bare_name_at_root`` — with ``repo_root``: a bare file name (``util.py``) is read as the
  repository-root path, which does not exist, while the repository has files of that name
  only deeper: the author may have meant one of those (write its path) or every depth
  (write ``**/util.py``). Before this reading a bare name meant every depth.

Who holds what (and so what conflicts) is the protocol's rule, ``coord.spec.protocol``, which
also says what is claimable; cycles are found by ``coord.spec.graph``.
"""

from __future__ import annotations

import time
from pathlib import Path

from coord.errors import GitError
from coord.fast.git import Git
from coord.spec import age, graph
from coord.spec.document import Package, Problem, SpecDocument
from coord.spec.protocol import FileIndex, Hold, IsDir, Rules, first_of_each_id, working_tree

_DAY = 86400.0


def lint(
    doc: SpecDocument,
    *,
    repo_root: Path | None = None,
    stale_days: float = 14,
    now: float | None = None,
) -> list[Problem]:
    """Every problem of ``doc``, sorted by line (see the module docstring for the codes)."""
    packages = first_of_each_id(doc.packages)
    problems = list(doc.problems)
    problems += _duplicates(doc.packages)
    problems += _dependency_problems(doc.packages, packages)
    problems += _cycles(packages)
    problems += _reservation_problems(doc, packages)
    # the board's reading of the repository's tree when there is one (a literal names one
    # file unless it is a directory there), else the safe reading
    is_dir = working_tree(repo_root) if repo_root is not None else None
    problems += _conflicts(Rules(doc, is_dir).holds, is_dir)
    if repo_root is not None:
        current = time.time() if now is None else now
        problems += _stale(doc, Path(repo_root), stale_days, current)
        problems += _bare_names_deeper(doc, Path(repo_root))
    problems += [
        Problem(
            "no_files",
            p.line,
            f"{p.id} names no files and its track owns none: add a `Primary files:` bullet "
            "so agents know what it may touch and which packages can run beside it",
            p.id,
        )
        for p in packages.values()
        if not p.done and not p.files
    ]
    return sorted(problems, key=lambda problem: problem.line)


def _duplicates(all_packages: list[Package]) -> list[Problem]:
    seen: dict[str, Package] = {}
    problems = []
    for package in all_packages:
        first = seen.setdefault(package.id, package)
        if first is not package:
            problems.append(
                Problem(
                    "duplicate_id",
                    package.line,
                    f"{package.id} is already the id of the package on line {first.line}: "
                    "give this package another id",
                    package.id,
                )
            )
    return problems


def _dependency_problems(
    all_packages: list[Package], packages: dict[str, Package]
) -> list[Problem]:
    problems = []
    for package in all_packages:
        for dep in package.dependencies:
            if dep not in packages:
                problems.append(
                    Problem(
                        "unknown_dependency",
                        package.line,
                        f"{package.id} depends on {dep}, which is no package of this document: "
                        "fix the id or add the package",
                        package.id,
                    )
                )
            elif package.done and not packages[dep].done:
                problems.append(
                    Problem(
                        "done_with_open_dependency",
                        package.line,
                        f"{package.id} is ticked but its dependency {dep} (line "
                        f"{packages[dep].line}) is not: tick {dep} or untick {package.id}",
                        package.id,
                    )
                )
    return problems


def _cycles(packages: dict[str, Package]) -> list[Problem]:
    """One problem per knot of packages that depend on each other (``coord.spec.graph``): it
    names the shortest cycle through the knot's first package."""
    dependencies = {
        p.id: [dep for dep in p.dependencies if dep in packages] for p in packages.values()
    }
    problems = []
    for knot in graph.knots(dependencies):
        first = knot.members[0]
        others = [member for member in knot.members if member not in knot.cycle]
        also = f" (tangled with it: {', '.join(others)})" if others else ""
        problems.append(
            Problem(
                "cycle",
                packages[first].line,
                f"dependency cycle {' → '.join(knot.closed)}{also}: none of these packages can "
                "ever start; remove one of these dependencies",
                first,
            )
        )
    return problems


def reservations_on_done(doc: SpecDocument) -> list[Problem]:
    """The ``reservation_on_done`` problems alone: the lines ``coord spec sync`` names as left
    to remove once it has ticked boxes (it writes no reservation: ``sync`` in
    docs/design-documents.md)."""
    found = _reservation_problems(doc, first_of_each_id(doc.packages))
    return [problem for problem in found if problem.code == "reservation_on_done"]


def _reservation_problems(doc: SpecDocument, packages: dict[str, Package]) -> list[Problem]:
    problems = []
    for reservation in doc.reservations:
        package_id = reservation.package
        if package_id is None:
            continue
        package = packages.get(package_id)
        if package is None:
            problems.append(
                Problem(
                    "reservation_on_missing",
                    reservation.line,
                    f"@{reservation.user} reserves {package_id}, which is no package of this "
                    "document: fix the id or remove the reservation",
                    package_id,
                )
            )
        elif package.done:
            problems.append(
                Problem(
                    "reservation_on_done",
                    reservation.line,
                    f"@{reservation.user} still reserves {package_id}, which is ticked as done: "
                    "remove the reservation",
                    package_id,
                )
            )
    return problems


def _conflicts(holds: list[Hold], is_dir: IsDir | None) -> list[Problem]:
    indexes = [FileIndex(((f, None) for f in hold.files), is_dir) for hold in holds]
    problems = []
    for later_index, later in enumerate(holds):
        for earlier_index, earlier in enumerate(holds[:later_index]):
            a, b = earlier.reservation, later.reservation
            same_package = {p.id for p in earlier.packages} & {p.id for p in later.packages}
            both_lines = a.package is not None and b.package is not None
            if same_package and (a.user != b.user or both_lines):
                what = f"{', '.join(sorted(same_package))} is reserved twice"
            elif a.user != b.user and indexes[earlier_index].overlaps_any(later.files):
                what = f"the files of {later.name} overlap those of {earlier.name}"
            else:
                continue
            problems.append(
                Problem(
                    "conflicting_reservations",
                    b.line,
                    f"{what}: @{b.user} on line {b.line} and @{a.user} on line {a.line}; "
                    "keep the reservation that landed first and remove the other",
                    b.package,
                )
            )
    return problems


def _bare_names_deeper(doc: SpecDocument, repo_root: Path) -> list[Problem]:
    """Bare names read as root paths that the repository has only deeper (the reading of a
    bare name narrowed from every depth to the root: say where that may not be meant)."""
    wanted = {name.rstrip("/") for _, name in doc.root_names}
    wanted = {name for name in wanted if not (repo_root / name).exists()}
    if not wanted:
        return []
    try:  # tracked and untracked files, without the ignored ones (build output, .venv)
        listed = Git(repo_root).out("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except GitError:
        return []  # a hint, not a gate
    deeper: dict[str, list[str]] = {}
    for path in sorted(set(listed.split("\0"))):
        parts = path.split("/")
        for depth, part in enumerate(parts[1:], start=1):
            if part in wanted:  # a file of that name, or a directory on the way to one
                hit = "/".join(parts[: depth + 1]) + ("/" if depth < len(parts) - 1 else "")
                if hit not in deeper.setdefault(part, []):
                    deeper[part].append(hit)
    problems = []
    for line, name in doc.root_names:
        found = deeper.get(name.rstrip("/"))
        if not found:
            continue
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        problems.append(
            Problem(
                "bare_name_at_root",
                line,
                f"`{name}` is read as the repository-root path `{name}`, which does not exist; "
                f"the repository has `{found[0]}`{more}. Write `{found[0]}` if you mean that, "
                f"or `**/{name}` for every depth; keep `{name}` if the package creates it at "
                "the root",
            )
        )
    return problems


def _stale(doc: SpecDocument, repo_root: Path, stale_days: float, now: float) -> list[Problem]:
    """Each reservation line's age, on the one clock of ``coord.spec.age``."""
    try:
        landed = age.landings(Git(repo_root), doc)
    except GitError:
        return []  # git is missing or hangs: staleness is a hint, not a gate
    problems = []
    for reservation in doc.reservations:
        landing = landed.get(age.written_at(reservation, doc))
        if landing is None:
            continue
        age_days = landing.age(now) / _DAY
        if age_days <= stale_days:
            continue
        what = reservation.package or f"track {reservation.track}"
        problems.append(
            Problem(
                "stale_reservation",
                reservation.line,
                f"the reservation of {what} by @{reservation.user} was committed "
                f"{age_days:.0f} days ago (the limit is {stale_days:g}): remove it, or renew it "
                "with a fresh commit if the work is still going on",
                reservation.package,
            )
        )
    return problems
