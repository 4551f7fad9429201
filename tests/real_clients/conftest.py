"""The real-clients tier: Claude Code, Codex CLI and Gemini CLI run headless through their hooks.

Marked ``real_clients``; ``make test`` leaves it out, ``make test-clients`` runs it and CI runs
it too (``.ci/run``). Under ``CI=true`` a client that cannot be installed fails the test with the
reason; elsewhere the test is skipped with that reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.real_clients)
