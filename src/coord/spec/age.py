"""How old a reservation is: when its line landed, read from ``git blame`` on one clock.

``coord spec lint`` (``stale_reservation``), ``coord git status`` and ``coord git reap`` all
ask here, so a reservation is stale to all of them or to none.

**The clock is the committer time** of the commit that last wrote the line. A reservation
counts from the moment it lands on the shared branch, and the committer time is when the
commit that carries the line was made *as it is in this history*: a reservation written on a
branch two weeks ago and rebased or cherry-picked onto main today has an author time of two
weeks ago and a committer time of today, and it has held its package since today. The author
time would call such a line stale the moment it lands (and a reap would remove it at once);
the committer time cannot be older than the line's place in this history. Renewing a
reservation is therefore any fresh commit of its line, amended or rebased alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coord.fast.git import Git
from coord.spec.document import DocReservation, SpecDocument


@dataclass(frozen=True, slots=True)
class Landing:
    """The commit that last wrote a reservation's line, and when it was committed."""

    commit: str
    committed_at: float  # committer time, seconds since the epoch

    def age(self, now: float) -> float:
        """Seconds since it landed (never negative: clocks of machines differ)."""
        return max(0.0, now - self.committed_at)


def written_at(reservation: DocReservation, doc: SpecDocument) -> tuple[str, int]:
    """The file and line a reservation is written on: the document's own line, or its line
    in the progress file beside the document (``coord.spec.progress``)."""
    return reservation.source or (doc.path, reservation.line)


def landings(
    git: Git, doc: SpecDocument, *, rev: str | None = None
) -> dict[tuple[str, int], Landing]:
    """``written_at`` of each reservation of ``doc`` → its ``Landing``.

    ``rev`` None: the files as committed at ``HEAD`` of the working tree around ``git.cwd``
    (a path is tried from the current directory, then from ``git.cwd``); a line not committed
    yet, or a file git does not track, has no landing. ``rev``: the files at that commit,
    their paths from the repository root. Raises ``GitError`` only when git cannot run."""
    lines_by_file: dict[str, set[int]] = {}
    for reservation in doc.reservations:
        path, line = written_at(reservation, doc)
        lines_by_file.setdefault(path, set()).add(line)
    found: dict[tuple[str, int], Landing] = {}
    for path, lines in sorted(lines_by_file.items()):
        target = path if rev is not None else _working_file(git.cwd, path)
        if target is None:
            continue
        ranges = [arg for line in sorted(lines) for arg in ("-L", f"{line},{line}")]
        revision = [rev] if rev is not None else []
        done = git.run("blame", "--porcelain", *ranges, *revision, "--", target, check=False)
        if done.returncode != 0:
            continue  # not tracked, not at that commit: staleness is a hint, not a gate
        blamed = parse_porcelain(done.stdout.decode("utf-8", "replace"))
        found.update({(path, line): landing for line, landing in blamed.items()})
    return found


def parse_porcelain(output: str) -> dict[int, Landing]:
    """``git blame --porcelain``: a header per line, a commit's details the first time only.

    Lines not committed yet (the all-zero commit) are left out."""
    line_commit: dict[int, str] = {}
    committed: dict[str, float] = {}
    commit = ""
    for row in output.splitlines():
        if row.startswith("\t"):
            continue  # the line's content
        fields = row.split(" ")
        if len(fields) >= 3 and len(fields[0]) in (40, 64) and fields[2].isdigit():
            commit = fields[0]
            line_commit[int(fields[2])] = commit
        elif fields[0] == "committer-time" and len(fields) == 2:
            committed[commit] = float(fields[1])
    return {
        line: Landing(commit, committed[commit])
        for line, commit in line_commit.items()
        if commit.strip("0") and commit in committed
    }


def _working_file(repo_root: Path, path: str) -> str | None:
    """The document as a file: a relative path is tried from the working directory (where
    it was given), then from the repository root."""
    for candidate in (Path(path), repo_root / path):
        if candidate.is_file():
            return str(candidate.resolve())
    return None
