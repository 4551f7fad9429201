"""A check's run as a person watching ``coord done`` or ``coord git done`` sees it.

On stderr, which the agent and the person see: stdout holds the answer (one JSON document with
``--json``). Each line the check prints comes as it is printed, after ``  | ``, escaped for
the terminal (a check's output is anyone's bytes); then how it went, with the time it took.
A long silent check says it still runs now and then, on a terminal only: piped into a file
or a test, the output stays what the check printed.
"""

from __future__ import annotations

import sys

from coord.cli import render
from coord.client.checks import Watch

QUIET_SECONDS = 15.0  # on a terminal, a silent check says it still runs this often


class CheckProgress(Watch):
    """Prints what it hears."""

    def __init__(self) -> None:
        self.quiet_every: float | None = QUIET_SECONDS if sys.stderr.isatty() else None

    def started(self, command: str) -> None:
        _say(f"coord: $ {render.one_line(command)}")

    def line(self, text: str) -> None:
        _say(f"  | {render.for_terminal(text)}")  # one line already: tabs kept as tabs

    def quiet(self, command: str, elapsed: float) -> None:
        _say(f"coord: {render.one_line(command)}: still running ({elapsed:.0f} s)")

    def ended(self, command: str, outcome: str) -> None:
        _say(f"coord: {render.one_line(command)}: {outcome}")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
