"""The board's nouns: the time format every face prints, and what importing them costs."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from coord.times import iso


def _reference(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(st.floats(min_value=0, max_value=2**34, allow_nan=False, allow_infinity=False))
def test_iso_matches_datetime_everywhere(ts: float) -> None:
    assert iso(ts) == _reference(ts)


@given(st.integers(min_value=0, max_value=2**33), st.integers(min_value=0, max_value=999_999))
def test_iso_matches_datetime_at_second_and_rounding_edges(second: int, micros: int) -> None:
    # times near whole seconds are where rounding carries into the next second
    for ts in (second + micros / 1e6, second + 0.9999995, second - 5e-7, float(second)):
        if ts >= 0:
            assert iso(ts) == _reference(ts)


def test_iso_of_nothing_is_nothing() -> None:
    assert iso(None) is None
    assert iso(0.0) == "1970-01-01T00:00:00.000Z"


FAST = Path(__file__).resolve().parent.parent / "src" / "coord" / "fast"


def test_the_fast_path_does_not_load_the_model() -> None:
    """``coord.model`` (its dataclasses and validation) costs about twice all of the guard at
    import; what runs before every edit takes its limits from ``coord.limits`` instead."""
    modules = sorted(f"coord.fast.{p.stem}" for p in FAST.glob("*.py") if p.stem != "__init__")
    code = f"import sys, {', '.join(modules)}; print('coord.model' in sys.modules)"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert modules and loaded.stdout.strip() == "False"
