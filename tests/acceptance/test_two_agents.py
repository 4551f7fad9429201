"""The end-to-end scenario of examples/two_agents.py, run as a person would run it.

Two agents at once on a 10-task board whose files overlap: one through MCP (the SDK's stdio
client and `coord mcp`), one through the CLI with Claude Code's edit hook before each edit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_agents.py"


def test_two_agents_work_a_shared_board_to_the_end() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--json"], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert sorted(report["done"].values()) == [1] * 10  # every task done exactly once
    assert report["overlapping_edits"] == 0  # no file edited by both at the same time
    assert report["edits"]["mcp-agent"] > 0 and report["edits"]["cli-agent"] > 0
    assert report["let_through"] == 0  # the hook let no edit of a held file through
