"""Checks nobody planted unseen (issue 14, item 3): `coord done` shows each command before any
runs, and a design document's checks come from its committed text, not the working tree.

The real CLI and daemon as processes, on a real git repository.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, run_cli
from coord.client import flow
from coord.errors import ChecksRequired
from test_spec_cli import coord, git, repo

PLAN = """# Plan

- [ ] **A1 — first.** Dependencies: none.
  - Checks: `true`
- [ ] **A2 — second.** Dependencies: none.
"""


def commit_plan(daemon: Daemon, text: str = PLAN) -> Path:
    root = repo(daemon)
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".coord/\n")
    (root / "plan.md").write_text(text)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "plan")
    return root


def test_spec_import_takes_checks_from_the_committed_document(daemon: Daemon) -> None:
    root = commit_plan(daemon)
    # an uncommitted edit plants a command and renames the package
    planted = PLAN.replace("`true`", "`touch planted`").replace("first.", "first, renamed.")
    (root / "plan.md").write_text(
        planted.replace(
            "second.** Dependencies: none.",
            "second.** Dependencies: none.\n  - Checks: `touch also-planted`",
        )
    )
    code, result, _ = coord(daemon, "spec", "import", "plan.md", agent="planner")
    assert code == 0, result
    code, a1, _ = coord(daemon, "show", "A1")
    code, a2, _ = coord(daemon, "show", "A2")
    assert a1["checks"] == ["true"] and a2["checks"] == []
    assert a1["title"] == "first, renamed"  # the rest of the plan is the working tree's
    warned = {w["package"]: w for w in result["warnings"] if w["code"] == "uncommitted_checks"}
    assert set(warned) == {"A1", "A2"}
    assert "`true`" in warned["A1"]["message"] and "no checks" in warned["A2"]["message"]
    # committed, the same checks are imported
    git(root, "commit", "-q", "-am", "checks")
    code, result, _ = coord(daemon, "spec", "import", "plan.md", agent="planner")
    code, a1, _ = coord(daemon, "show", "A1")
    assert a1["checks"] == ["touch planted"]
    assert not [w for w in result["warnings"] if w["code"] == "uncommitted_checks"]


def test_a_document_never_committed_imports_no_checks(daemon: Daemon) -> None:
    root = repo(daemon)
    git(root, "init", "-q")
    (root / "plan.md").write_text(PLAN)
    code, result, _ = coord(daemon, "spec", "import", "plan.md", agent="planner")
    assert code == 0, result
    code, a1, _ = coord(daemon, "show", "A1")
    assert a1["checks"] == []
    assert [w["package"] for w in result["warnings"] if w["code"] == "uncommitted_checks"] == ["A1"]


def _claimed_item_with_check(daemon: Daemon, command: str) -> str:
    status, item = daemon.request(
        "POST", "/v1/items", {"agent": "planner", "title": "t", "checks": [command]}
    )
    assert status == 201, item
    claimed = run_cli("claim", str(item["id"]), board_dir=daemon.board_dir, agent="worker")
    assert claimed.returncode == 0, claimed.stderr
    return str(item["id"])


def test_done_shows_each_command_before_running_it(daemon: Daemon) -> None:
    command = "echo ran > ran.txt"
    ref = _claimed_item_with_check(daemon, command)
    where = repo(daemon)
    done = run_cli("done", ref, board_dir=daemon.board_dir, agent="worker", cwd=where)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"coord: running 1 check(s) of {ref} in {where}:"
    assert lines[1] == f"  $ {command}"
    assert (where / "ran.txt").read_text() == "ran\n"


def test_done_json_names_the_commands_before_and_after(daemon: Daemon) -> None:
    command = "true"
    ref = _claimed_item_with_check(daemon, command)
    where = repo(daemon)
    done = run_cli("done", ref, "--json", board_dir=daemon.board_dir, agent="worker", cwd=where)
    assert done.returncode == 0, done.stderr
    announced = json.loads(done.stderr.splitlines()[0])
    assert announced == {"about_to_run": [command], "item": int(ref), "cwd": str(where)}
    assert json.loads(done.stdout)["checks_run"] == [command]


class _AsksForChecks:
    """A daemon that wants checks run: the first done is refused with them, the second
    (with evidence) closes the item."""

    def __init__(self, commands: list[str]) -> None:
        self.commands = commands
        self.calls: list[Any] = []

    def call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        self.calls.append(body)
        if "evidence" not in body:
            raise ChecksRequired("run them", checks=self.commands)
        return {"id": 1, "state": "done"}


@pytest.mark.process  # the checks run in a shell: tests/tiers.py cannot see it
def test_the_commands_are_shown_before_any_of_them_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    transport = _AsksForChecks([f"touch {marker}"])
    session = flow.Session(tmp_path / ".coord", transport, local=True)
    seen: list[tuple[list[str], str, bool]] = []

    def before_checks(commands: list[str], workdir: str) -> None:
        seen.append((commands, workdir, marker.exists()))

    flow.done(session, "worker", 1, token=1, before_checks=before_checks)
    assert seen == [([f"touch {marker}"], str(tmp_path), False)]
    assert marker.exists()
