"""What is wrong with a work-package document, and which packages can be claimed now.

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
  ``stale_days`` (``git blame``; skipped when git or the file's history is unavailable);
* ``no_files`` — an unticked package that names no files and whose track owns none.

``claimable`` is the protocol's rule: unticked, every dependency present and ticked, not
reserved (by line or track marker), and no file overlapping an unticked reserved package.
"""

from __future__ import annotations

import bisect
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from coord.fast.patterns import literal_prefix, overlaps
from coord.spec.document import DocReservation, Package, Problem, SpecDocument

_DAY = 86400.0


def lint(
    doc: SpecDocument,
    *,
    repo_root: Path | None = None,
    stale_days: float = 14,
    now: float | None = None,
) -> list[Problem]:
    """Every problem of ``doc``, sorted by line (see the module docstring for the codes)."""
    packages = _first_of_each_id(doc.packages)
    problems = list(doc.problems)
    problems += _duplicates(doc.packages)
    problems += _dependency_problems(doc.packages, packages)
    problems += _cycles(doc.packages, packages)
    problems += _reservation_problems(doc, packages)
    problems += _conflicts(doc, packages)
    if repo_root is not None:
        current = time.time() if now is None else now
        problems += _stale(doc, Path(repo_root), stale_days, current)
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


def claimable(doc: SpecDocument) -> list[str]:
    """Ids of the packages an agent may reserve now, in document order."""
    packages = _first_of_each_id(doc.packages)
    holds = _holds(doc, packages)
    reserved = {p.id for hold in holds for p in hold.packages}
    held = _FileIndex(f for hold in holds for f in hold.files)
    ready: list[str] = []
    for package in packages.values():
        if package.done or package.id in reserved:
            continue
        if not all(dep in packages and packages[dep].done for dep in package.dependencies):
            continue
        if held.overlaps_any(package.files):
            continue
        ready.append(package.id)
    return ready


class _FileIndex:
    """Held patterns by their literal prefix (the part before any glob). Two patterns can
    overlap only if one prefix is the other's ancestor (or equal), so a candidate is compared
    with the patterns along its own path and beneath it, not with every held file."""

    def __init__(self, files: Iterable[str]) -> None:
        self.by_prefix: dict[str, list[str]] = {}
        for pattern in {_canonical(f) for f in files}:
            self.by_prefix.setdefault(literal_prefix(pattern), []).append(pattern)
        self.prefixes = sorted(self.by_prefix)

    def overlaps_any(self, files: list[str]) -> bool:
        return any(
            overlaps(mine, other) for mine in map(_canonical, files) for other in self._near(mine)
        )

    def _near(self, pattern: str) -> Iterator[str]:
        prefix = literal_prefix(pattern)
        parts = prefix.split("/") if prefix else []
        for depth in range(len(parts) + 1):  # "" (starts with a glob), ancestors, itself
            yield from self.by_prefix.get("/".join(parts[:depth]), ())
        if not prefix:  # a glob from the top may meet anything
            for p in self.prefixes:
                if p:
                    yield from self.by_prefix[p]
            return
        start = bisect.bisect_left(self.prefixes, prefix + "/")
        for p in self.prefixes[start:]:
            if not p.startswith(prefix + "/"):
                break
            yield from self.by_prefix[p]


def _first_of_each_id(packages: Iterable[Package]) -> dict[str, Package]:
    first: dict[str, Package] = {}
    for package in packages:
        first.setdefault(package.id, package)
    return first


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


def _cycles(all_packages: list[Package], packages: dict[str, Package]) -> list[Problem]:
    """One problem per knot of packages that depend on each other (a strongly connected
    component): it names the shortest cycle through the knot's first package."""
    graph = {p.id: [dep for dep in p.dependencies if dep in packages] for p in packages.values()}
    problems = []
    for component in _strongly_connected(graph):
        first = min(component, key=lambda package_id: packages[package_id].line)
        if len(component) == 1 and first not in graph[first]:
            continue
        cycle = _cycle_through(first, graph, set(component))
        names = " → ".join([*cycle, first])
        others = sorted(
            set(component) - set(cycle), key=lambda package_id: packages[package_id].line
        )
        also = f" (tangled with it: {', '.join(others)})" if others else ""
        problems.append(
            Problem(
                "cycle",
                packages[first].line,
                f"dependency cycle {names}{also}: none of these packages can ever start; "
                "remove one of these dependencies",
                first,
            )
        )
    return problems


def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion (documents may chain thousands of packages)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, next_edge = work.pop()
            if next_edge == 0:
                index[node] = lowlink[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            edges = graph[node]
            if next_edge < len(edges):
                work.append((node, next_edge + 1))
                child = edges[next_edge]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    lowlink[node] = min(lowlink[node], index[child])
                continue
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
    return components


def _cycle_through(start: str, graph: dict[str, list[str]], component: set[str]) -> list[str]:
    """A path start → ... that returns to start, staying inside its component."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first: the shortest cycle reads best
        following = []
        for node in frontier:
            for child in graph[node]:
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return path[::-1]
                if child in component and child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return [start]


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


@dataclass(slots=True)
class _Hold:
    """What one reservation line holds: packages, and (for a track marker) the track's files."""

    reservation: DocReservation
    packages: list[Package]
    files: list[str]


def _holds(doc: SpecDocument, packages: dict[str, Package]) -> list[_Hold]:
    tracks = {track.id: track for track in doc.tracks}
    holds = []
    for reservation in doc.reservations:
        if reservation.package is not None:
            held = [packages[reservation.package]] if reservation.package in packages else []
            files = [f for p in held if not p.done for f in p.files]
        elif reservation.track is not None:
            held = [p for p in packages.values() if p.track == reservation.track]
            track = tracks.get(reservation.track)
            own = [f for p in held if not p.done for f in p.files]
            files = [*(track.files if track else []), *own]
        else:
            continue  # a marker outside any track holds nothing we can name
        holds.append(_Hold(reservation, held, files))
    return holds


def _conflicts(doc: SpecDocument, packages: dict[str, Package]) -> list[Problem]:
    holds = _holds(doc, packages)
    indexes = [_FileIndex(hold.files) for hold in holds]
    problems = []
    for later_index, later in enumerate(holds):
        for earlier_index, earlier in enumerate(holds[:later_index]):
            a, b = earlier.reservation, later.reservation
            same_package = {p.id for p in earlier.packages} & {p.id for p in later.packages}
            both_lines = a.package is not None and b.package is not None
            if same_package and (a.user != b.user or both_lines):
                what = f"{', '.join(sorted(same_package))} is reserved twice"
            elif a.user != b.user and indexes[earlier_index].overlaps_any(later.files):
                what = f"the files of {_held(later)} overlap those of {_held(earlier)}"
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


def _held(hold: _Hold) -> str:
    reservation = hold.reservation
    return reservation.package or f"track {reservation.track}"


def _canonical(pattern: str) -> str:
    """A document path in the canonical form ``patterns.overlaps`` expects."""
    pattern = pattern.rstrip("/")
    while pattern.endswith("/**"):
        pattern = pattern[:-3]
    return pattern or "**"


def _stale(doc: SpecDocument, repo_root: Path, stale_days: float, now: float) -> list[Problem]:
    """Each reservation line's age by git blame of the file it is written in (the document,
    or a progress file beside it)."""
    by_file: dict[str, set[int]] = {}
    for reservation in doc.reservations:
        path, line = reservation.source or (doc.path, reservation.line)
        by_file.setdefault(path, set()).add(line)
    committed: dict[tuple[str, int], float] = {}
    for path, lines in by_file.items():
        found = _document_path(repo_root, path)
        if found is not None:
            times = _blame_times(repo_root, found, sorted(lines))
            committed.update({(path, line): at for line, at in times.items()})
    problems = []
    for reservation in doc.reservations:
        added = committed.get(reservation.source or (doc.path, reservation.line))
        if added is None:
            continue
        age_days = (now - added) / _DAY
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


def _document_path(repo_root: Path, path: str) -> Path | None:
    """The document as a file: a relative path is tried from the working directory (where
    it was given), then from the repository root."""
    for candidate in (Path(path), repo_root / path):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _blame_times(repo_root: Path, path: Path, lines: list[int]) -> dict[int, float]:
    """Author time of the commit that last wrote each line; uncommitted lines are absent.

    Empty when git is missing or the file is not tracked: staleness is a hint, not a gate.
    """
    ranges = [arg for line in lines for arg in ("-L", f"{line},{line}")]
    try:
        result = subprocess.run(
            ["git", "blame", "--porcelain", *ranges, "--", str(path)],
            cwd=repo_root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    if result.returncode != 0:
        return {}
    return _parse_porcelain(result.stdout)


def _parse_porcelain(output: str) -> dict[int, float]:
    """``git blame --porcelain``: a header per line, commit details the first time only."""
    line_commit: dict[int, str] = {}
    author_time: dict[str, float] = {}
    commit = ""
    for row in output.splitlines():
        if row.startswith("\t"):
            continue  # the line's content
        fields = row.split(" ")
        if len(fields) >= 3 and len(fields[0]) in (40, 64) and fields[2].isdigit():
            commit = fields[0]
            line_commit[int(fields[2])] = commit
        elif fields[0] == "author-time" and len(fields) == 2:
            author_time[commit] = float(fields[1])
    return {
        line: author_time[commit]
        for line, commit in line_commit.items()
        if commit.strip("0") and commit in author_time  # all zeros: not committed yet
    }
