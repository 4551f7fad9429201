"""How coord writes a time: one formatter for every face (a noun: stdlib only, cheap to import).

Board times are seconds since the epoch on the board's clock; they travel as ISO 8601 UTC with
milliseconds and a "Z", and people read the time of day of a lease's end, with its date when
that is not today. A length of time has one grammar where a person gives one
(``parse_duration``: ``600``, ``90m``, ``1.5h``, ``7d``, ``2w``) and one spelling where coord
shows one (``duration_text``: ``45s``, ``4m03s``, ``1h30m``, ``6d23h``): the CLI, ``coord
git`` and ``coord watch`` alike, and the live page's script writes the same.
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


def clock(ts: float, now: float | None = None) -> str:
    """When ``ts`` is, for a one-line message: "14:05:00Z" today (UTC), "2026-12-08 14:05:00Z"
    on any other day, so a lease or a reservation seven days away does not read as one that
    ran out this morning."""
    moment = time.gmtime(ts)
    today = time.gmtime(time.time() if now is None else now)
    if moment[:3] == today[:3]:
        return time.strftime("%H:%M:%SZ", moment)
    return time.strftime("%Y-%m-%d %H:%M:%SZ", moment)


def clock_of_iso(value: str | None, now: float | None = None) -> str:
    """ "2026-11-30T04:08:05.929Z" as ``clock`` writes it, for a time that came as text ("-"
    for none)."""
    if not value:
        return "-"
    today = time.strftime("%Y-%m-%d", time.gmtime(time.time() if now is None else now))
    clock_text = value[11:19] + "Z"
    return clock_text if value[:10] == today else f"{value[:10]} {clock_text}"


def epoch_of_iso(value: str) -> float:
    """ "2026-11-30T04:08:05.929Z" (as ``iso`` writes it) back to seconds since the epoch: a
    client that counts a lease down needs the board's times as numbers."""
    import calendar

    whole = calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S"))
    fraction = value[19:].rstrip("Z")
    return whole + (float(fraction) if fraction.startswith(".") else 0.0)


DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = r"(\d+(?:\.\d+)?)\s*([smhdw]?)"  # compiled where read: `re` stays off the hot path
DURATION_EXAMPLES = "600, 90m, 1.5h, 7d or 2w"


def parse_duration(text: str) -> float | None:
    """A length of time a person wrote: a number of seconds, or one with a unit (s, m, h, d,
    w); None for anything else (``1e3``, ``1_000s``, ``-5m``, ``7 days``)."""
    import re

    found = re.fullmatch(_DURATION, text.strip(), re.IGNORECASE)
    if found is None:
        return None
    return float(found[1]) * DURATION_UNITS[found[2].lower()]


def duration_text(seconds: float) -> str:
    """A length of time as a person reads it: 45s, 4m03s, 2h05m, 3d04h (fractions cut; a
    negative length, a clock's skew, reads 0s). The live page's static/times.js ports this
    rule; tests/test_web_times.py holds them to one table."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"
