"""The shell guard and coord's own board verbs (issue 26): `coord wait src/a.py` while alice
holds src/a.py is the point of waiting, so its operands are not judged as writes; its
redirections are, and coord's commands that write files are judged as any unknown program."""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import make_repo, verdict


@pytest.fixture(scope="module")
def board_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("repo"))


@pytest.mark.parametrize(
    "command",
    [
        "coord wait src/a.py --timeout 60",
        "coord ask src/a.py --reason 'the fix needs it'",
        "coord who src/a.py",
        "coord answer-ask 1 release && coord wait src/a.py lib/core.py",
    ],
)
def test_the_board_verbs_naming_a_held_file_are_let_through(board_dir: Path, command: str) -> None:
    assert verdict(board_dir, command) is None


@pytest.mark.parametrize(
    "command",
    [
        "coord wait src/a.py > src/a.py",  # its redirection writes the held file
        "coord init src/a.py",  # not a board verb: judged as a program the guard does not know
        "coord --json wait src/a.py",  # an option first: not read as a board verb
    ],
)
def test_what_may_write_a_held_file_is_still_refused(board_dir: Path, command: str) -> None:
    refused = verdict(board_dir, command)
    assert refused is not None and "src/a.py" in refused
