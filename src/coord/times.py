"""How coord writes a time: one formatter for every face (a noun: stdlib only, cheap to import).

Board times are seconds since the epoch on the board's clock; they travel as ISO 8601 UTC with
milliseconds and a "Z", and people read the time of day of a lease's end.
"""

from __future__ import annotations

import math
import time

# "YYYY-MM-DDTHH:MM:SS" of recent seconds: a claim's answer formats now, the lease's end
# and the item's creation, again and again. Emptied when full; a dict is thread-safe here.
_iso_seconds: dict[int, str] = {}


def iso(ts: float | None) -> str | None:
    """Board time (seconds since the epoch, daemon clock) as ISO 8601 UTC with milliseconds.

    The same text as ``datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")``
    with "Z" (tests/test_board.py checks that on random times) at a third of the cost: a
    claim's answer formats six times, nearly always within one second.
    """
    if ts is None:
        return None
    fraction, whole = math.modf(ts)
    micros = round(fraction * 1_000_000)  # half-even, as datetime rounds
    second = int(whole)
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    text = _iso_seconds.get(second)
    if text is None:
        if len(_iso_seconds) >= 1024:
            _iso_seconds.clear()
        text = _iso_seconds[second] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    return f"{text}.{micros // 1000:03d}Z"


def clock(ts: float) -> str:
    """The time of day in UTC, "14:05:00Z": how a lease's end reads in a one-line message."""
    return time.strftime("%H:%M:%SZ", time.gmtime(ts))


def clock_of_iso(value: str | None) -> str:
    """ "2026-11-30T04:08:05.929Z" -> "04:08:05Z" for a time that came as text; "-" for none."""
    return value[11:19] + "Z" if value else "-"


def day_and_clock_of_iso(value: str | None) -> str:
    """ "2026-12-08T04:08:05.929Z" -> "2026-12-08 04:08:05Z": for a time days away (an
    escalation's bound), where the time of day alone would read as today."""
    return f"{value[:10]} {value[11:19]}Z" if value else "-"
