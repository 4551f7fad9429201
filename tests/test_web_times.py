"""One spelling of a length of time on every face: the live page's script (static/times.js)
writes what coord.times.duration_text writes, over a table around every unit's edges."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from coord.times import duration_text

STATIC = Path(__file__).parent.parent / "src" / "coord" / "server" / "web" / "static"

TABLE = [
    0, 0.4, 0.999, 1, 9.9, 59, 59.999, 60, 61, 119.5, 243, 599, 3599, 3599.9, 3600, 3601,
    3659, 3660, 5400, 7500, 86399, 86400, 86401, 90000, 604799, 604800, 1e6, 1e7, 123456789,
    -0.5, -1, -3600,
]  # fmt: skip


def test_the_table_is_the_rule_people_read() -> None:
    # what the issue asked for: the escalation's hold reads as `coord watch` spells it
    assert [duration_text(s) for s in (45, 243, 5400, 604799, -5)] == [
        "45s",
        "4m03s",
        "1h30m",
        "6d23h",
        "0s",
    ]


def test_the_page_spells_a_duration_as_the_cli_does() -> None:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no Node.js on PATH")
        pytest.skip("no Node.js on PATH")
    script = (
        f"require({json.dumps(str(STATIC / 'times.js'))});"
        "const table = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(table.map(globalThis.coordTimes.durationText)));"
    )
    done = subprocess.run(
        [node, "-e", script], input=json.dumps(TABLE), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [duration_text(s) for s in TABLE]
