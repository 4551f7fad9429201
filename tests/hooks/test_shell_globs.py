"""A glob a shell command writes is judged by what it could match (issue 22): as a pattern
against the held ones, for what it matches itself and all beneath what it matches. Commit
0b1d0a3 made ``src/*.py/**`` meet no file ``src/a.py`` (rightly, for reservations), and the
guard had judged a glob only by what lies beneath it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from coord.fast import guard, patterns


@dataclass
class Hold:
    pattern: str
    agent: str = "alice"
    exclusive: bool = True
    item_id: int | None = None
    expires_at: float = 0.0
    rule: int = patterns.RULE


FILES = {"src/a.py", "src/lib/x.py", "README.md"}
DIRS = {"src", "src/lib"}


def blocked(target: str, held: str) -> bool:
    found = guard.blockers(
        target, [Hold(held)], "bob", is_file=FILES.__contains__, is_dir=DIRS.__contains__
    )
    return bool(found)


@pytest.mark.parametrize(
    ("target", "held"),
    [
        ("src/*.py", "src/a.py"),  # what the glob matches: the regression
        ("src/**/a.py", "src/a.py"),  # find src -name a.py -delete
        ("src/?.py", "src/a.py"),
        ("src/*", "src/lib/x.py"),  # rm -rf src/*: beneath a directory it matches
        ("*.md", "README.md"),
        ("src/*.py", "src/*.py"),
    ],
)
def test_a_glob_target_meets_what_it_matches_and_what_lies_beneath(target: str, held: str) -> None:
    assert blocked(target, held)


@pytest.mark.parametrize(
    ("target", "held"),
    [("src/*.py", "src/b.txt"), ("lib/*.py", "src/a.py"), ("src/*.txt", "src/lib/x.py")],
)
def test_a_glob_target_leaves_what_it_cannot_reach(target: str, held: str) -> None:
    assert not blocked(target, held)


def test_the_reservation_rule_is_as_it_was() -> None:
    """The fix is the guard's: two reservations still overlap as 0b1d0a3 says."""
    assert not patterns.overlaps("src/*.py/**", "src/a.py", is_dir=DIRS.__contains__)
    assert not patterns.overlaps("h", "*/**", is_dir=DIRS.__contains__)
