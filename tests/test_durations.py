"""One grammar for a length of time a person gives, one spelling for one coord shows (issue
28 item 4): `coord agents --prune --older-than` and `coord git reap --older-than` took
different sets (`1e3`, `1_000s` were accepted by one and refused by the other), and 5,400 s
read `1h30m` in `coord status` but `1.5h` in `coord git status`."""

from __future__ import annotations

import argparse

import pytest

from coord import times
from coord.cli import argtypes, git_cmd, render
from coord.errors import InvalidInput
from coord.gitmode import protocol

GIVEN = {
    "600": 600.0,
    "90m": 5400.0,
    "1.5h": 5400.0,
    "7d": 604800.0,
    "2w": 1209600.0,
    " 12H ": 43200.0,
    "30 m": 1800.0,
}
REFUSED = ("1e3", "1_000s", "-5m", "7 days", "inf", "nan", "", "m", "5y", "0x10")


def both(text: str) -> tuple[float | None, float | None]:
    """What `coord agents --older-than` and `coord git reap --older-than` read ``text`` as."""
    try:
        agents: float | None = argtypes.duration(text)
    except argparse.ArgumentTypeError:
        agents = None
    try:
        git: float | None = git_cmd.parse_age(text)
    except InvalidInput:
        git = None
    return agents, git


@pytest.mark.parametrize("text", sorted(GIVEN))
def test_a_duration_reads_the_same_everywhere(text: str) -> None:
    assert both(text) == (GIVEN[text], GIVEN[text]) == (times.parse_duration(text),) * 2


@pytest.mark.parametrize("text", REFUSED)
def test_what_is_no_duration_is_refused_everywhere(text: str) -> None:
    assert both(text) == (None, None) and times.parse_duration(text) is None


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(45, "45s"), (243, "4m03s"), (5400, "1h30m"), (7500, "2h05m"), (604740, "6d23h")],
)
def test_a_length_of_time_is_spelled_one_way(seconds: int, shown: str) -> None:
    assert render.duration(seconds) == protocol.human_age(seconds) == shown
