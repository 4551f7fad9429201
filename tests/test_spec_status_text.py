"""`coord spec status` shows one pair of parentheses where it shows any (issue 15, item 16):
"claimable now (document only (not imported))" read as doubled. Every row state it shows
(done, claimable, waiting, reserved, held files, claimed, needs_human), with titles that
carry their own parentheses, with no board, with a board before the import and after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Daemon, run_cli

PLAN = """# Plan

### Track A — core (the base)

**Reserved: A3 by @alice.** Others must not pick A3.

- [x] **A1 — base (part 1).** Dependencies: none.
  - Files: `src/a1.py`
- [ ] **A2 — parser (v2).** Dependencies: A1.
  - Files: `src/a2.py`
- [ ] **A3 — reserved (by the document).** Dependencies: none.
  - Files: `src/a3.py`
- [ ] **A4 — shares A3's file.** Dependencies: none.
  - Files: `src/a3.py`
- [ ] **A5 — waits (on A2).** Dependencies: A2.
  - Files: `src/a5.py`
- [ ] **A6 — asks (a human).** Dependencies: none.
  - Files: `src/a6.py`
"""


def _repo(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "docs").mkdir()
    (root / "docs" / "plan.md").write_text(PLAN)
    return root


def _rows(text: str) -> dict[str, str]:
    return {line.split()[0]: line for line in text.splitlines() if line[:1] == "A"}


def _one_pair_at_most(text: str) -> None:
    assert "((" not in text and "))" not in text, text
    for line in text.splitlines():
        assert line.count("(") == line.count(")"), line


def test_status_without_a_board(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    shown = subprocess.run(
        [sys.executable, "-m", "coord", "spec", "status", "docs/plan.md"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    _one_pair_at_most(shown.stdout)
    assert "claimable now (document only, not imported): A2 A6" in shown.stdout
    rows = _rows(shown.stdout)
    assert rows["A1"].split()[1] == "done" and rows["A1"].endswith("base (part 1)")
    assert rows["A3"].split()[1:3] == ["reserved", "alice"]
    assert rows["A4"].split()[1:3] == ["held", "files"]
    assert rows["A5"].split()[1:3] == ["waiting", "A2"]


def test_status_with_a_board_before_and_after_the_import(daemon: Daemon) -> None:
    board = daemon.board_dir
    root = _repo(board.parent)

    def status() -> str:
        shown = run_cli("spec", "status", "docs/plan.md", board_dir=board, cwd=root)
        assert shown.returncode == 0, shown.stderr
        _one_pair_at_most(shown.stdout)
        return shown.stdout

    assert "claimable now (document only, not imported): A2 A6" in status()
    imported = run_cli("spec", "import", "docs/plan.md", board_dir=board, agent="lead", cwd=root)
    assert imported.returncode == 0, imported.stderr
    assert run_cli("claim", "A2", board_dir=board, agent="w1", cwd=root).returncode == 0
    assert run_cli("claim", "A6", board_dir=board, agent="w2", cwd=root).returncode == 0
    asked = run_cli("escalate", "A6", "which", "(a or b)?", board_dir=board, agent="w2", cwd=root)
    assert asked.returncode == 0, asked.stderr
    text = status()
    assert "claimable now (document and board): nothing" in text
    rows = _rows(text)
    assert rows["A2"].split()[1:3] == ["claimed", "w1"]
    assert rows["A6"].split()[1:3] == ["needs_human", "w2"]
    assert rows["A6"].endswith("asks (a human)")
