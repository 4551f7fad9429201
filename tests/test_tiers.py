"""The in-process tier's reading (tests/tiers.py) tells a test that starts a process from one
that does not, through its body, its fixtures and the helpers they use."""

from __future__ import annotations

from pathlib import Path

import conftest
import tiers

TESTS = Path(__file__).resolve().parent


def test_a_fixture_that_starts_the_daemon_starts_a_process() -> None:
    assert tiers._fixture_starts(conftest.daemon)
    assert not tiers._fixture_starts(conftest.board)  # a board is files and SQLite, in process


def test_a_helper_of_the_tests_that_runs_the_cli_is_followed() -> None:
    # cli_json is test_cli's own helper around conftest.run_cli, which is subprocess.run
    assert tiers._code_starts(TESTS / "test_cli.py", "cli_json")
    assert tiers._def_starts(TESTS / "conftest.py", "run_cli")


def test_a_test_of_plain_code_starts_none() -> None:
    assert not tiers._code_starts(TESTS / "test_model.py", "test_iso_of_nothing_is_nothing")
    assert not tiers._code_starts(TESTS / "test_layout.py", "test_every_import_keeps_the_layout")


def test_a_module_helper_imported_as_a_name_is_followed() -> None:
    # `import guard_oracle as oracle`, then `oracle.run_corpus(...)` in a module fixture
    assert tiers._code_starts(TESTS / "test_guard_corpus.py", "corpus")
