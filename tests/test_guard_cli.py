"""`coord guard`, `reserve`, `who` and `next --count` as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon, init_board_dir, run_cli
from coord.core.board import Board


def guard(
    board_dir: Path,
    *paths: str,
    agent: str | None = None,
    cwd: Path | None = None,
    extra: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COORD_DIR": str(board_dir)}
    env.pop("COORD_AGENT", None)
    if agent is not None:
        env["COORD_AGENT"] = agent
    return subprocess.run(
        [sys.executable, "-m", "coord", "guard", *extra, *paths],
        env=env,
        cwd=cwd or board_dir.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_guard_refuses_a_held_path_and_allows_the_holder_and_free_paths(board_dir: Path) -> None:
    board = Board.open(board_dir)
    board.reserve(["src/auth"], agent="alice", reason="session rework")
    board.reserve(["docs/shared.md"], agent="bob", shared=True)
    board.close()
    refused = guard(board_dir, "src/auth/login.py", agent="bob")
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert "src/auth/login.py is held by alice" in line and "until" in line
    assert "Traceback" not in refused.stderr
    assert guard(board_dir, "src/auth/login.py", agent="alice").returncode == 0
    assert guard(board_dir, "README.md", agent="bob").returncode == 0
    # a shared reservation does not stop an edit; nobody named means every hold binds
    assert guard(board_dir, "docs/shared.md", agent="carol").returncode == 0
    assert guard(board_dir, "src/auth/x.py").returncode == 2
    # no daemon was needed or started
    assert not (board_dir / "daemon.json").exists()


def test_guard_reports_every_refused_path_and_json(board_dir: Path) -> None:
    board = Board.open(board_dir)
    board.reserve(["a.py"], agent="alice")
    board.reserve(["b.py"], agent="bob")
    board.close()
    both = guard(board_dir, "a.py", "b.py", "c.py", agent="carol")
    assert both.returncode == 2
    assert len(both.stderr.strip().splitlines()) == 2
    as_json = guard(board_dir, "a.py", agent="carol", extra=("--json",))
    verdict = json.loads(as_json.stdout)
    assert verdict["may_edit"] is False
    assert verdict["refusals"][0]["holder"] == "alice"


def test_guard_resolves_paths_from_the_current_directory(board_dir: Path) -> None:
    board = Board.open(board_dir)
    board.reserve(["src/pkg/mod.py"], agent="alice")
    board.close()
    sub = board_dir.parent / "src" / "pkg"
    sub.mkdir(parents=True)
    assert guard(board_dir, "mod.py", agent="bob", cwd=sub).returncode == 2
    assert guard(board_dir, "./../pkg/mod.py", agent="bob", cwd=sub).returncode == 2
    assert guard(board_dir, str(sub / "mod.py"), agent="bob").returncode == 2
    assert guard(board_dir, "other.py", agent="bob", cwd=sub).returncode == 0


def test_guard_judges_a_path_where_it_leads_and_allows_what_no_board_holds(
    board_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The hooks' one rule (coord.fast.targets): outside every coord repository nobody holds
    a file, so it is allowed; a path that leads into the repository is judged there however
    it is spelled; .git is refused, --fail-open or not."""
    repo = board_dir.parent
    (repo / "src" / "auth").mkdir(parents=True)
    board = Board.open(board_dir)
    board.reserve(["src/auth"], agent="alice")
    board.close()
    outside = tmp_path_factory.mktemp("elsewhere")  # not under the repository
    (repo / "link").symlink_to(outside)
    (outside / "alias").symlink_to(repo / "src" / "auth")
    (outside / "stray" / ".coord").mkdir(parents=True)  # some other tool's: holds no board
    for path in (
        "../etc/passwd",
        "/etc/passwd",
        "link/file.py",
        "link/../src/auth/x.py",  # the '..' of outside/: beside it, not in the repository
        str(outside / "x.py"),
        str(outside / "stray" / "x.py"),
    ):
        result = guard(board_dir, path, agent="bob")
        assert (result.returncode, result.stderr) == (0, ""), path
    # each symlink followed before the '..' after it, as the OS does: link/alias/.. is src/
    for path in (str(outside / "alias" / "session.py"), "link/alias/../auth/x.py"):
        result = guard(board_dir, path, agent="bob")
        assert result.returncode == 2 and "is held by alice (src/auth)" in result.stderr, path
    for extra in ((), ("--fail-open",)):
        result = guard(board_dir, ".git/config", agent="bob", extra=extra)
        assert result.returncode == 2 and "inside .git" in result.stderr


def test_guard_reads_a_board_whose_path_has_uri_characters(tmp_path: Path) -> None:
    """SQLite reads the read-only board through a file: URI, where '#' and '?' end the path;
    before, a repository in ~/c#/app made the guard refuse every edit."""
    board_dir = init_board_dir(tmp_path / "c#" / "app?%41")
    board = Board.open(board_dir)
    board.reserve(["src/a.py"], agent="alice")
    board.close()
    held = guard(board_dir, "src/a.py", agent="bob")
    assert held.returncode == 2 and "src/a.py is held by alice" in held.stderr, held.stderr
    assert guard(board_dir, "src/b.py", agent="bob").returncode == 0


def test_guard_fails_closed_on_an_unreadable_board(tmp_path: Path) -> None:
    board_dir = tmp_path / ".coord"
    board_dir.mkdir()
    (board_dir / "board.db").write_bytes(b"this is not a database" * 100)
    refused = guard(board_dir, "a.py", agent="bob")
    assert refused.returncode == 2
    assert "refusing the edit" in refused.stderr
    allowed = guard(board_dir, "a.py", agent="bob", extra=("--fail-open",))
    assert allowed.returncode == 0 and "--fail-open" in allowed.stderr
    (tmp_path / "nothing").mkdir()
    missing = guard(tmp_path / "nothing" / ".coord", "a.py", agent="bob")
    assert missing.returncode == 2


def test_guard_staged_checks_what_git_would_commit(board_dir: Path) -> None:
    repo = board_dir.parent
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "held.py").write_text("x\n")
    (repo / "free.py").write_text("y\n")
    board = Board.open(board_dir)
    board.reserve(["held.py"], agent="alice")
    board.close()
    subprocess.run([*git, "add", "free.py"], cwd=repo, check=True)
    assert guard(board_dir, agent="bob", extra=("--staged",)).returncode == 0
    subprocess.run([*git, "add", "held.py"], cwd=repo, check=True)
    refused = guard(board_dir, agent="bob", extra=("--staged",))
    assert refused.returncode == 2 and "held.py is held by alice" in refused.stderr


def test_reserve_contract_and_who(daemon: Daemon) -> None:
    bd = daemon.board_dir
    granted = run_cli(
        "reserve", "src/**", "--json", "--reason", "refactor", board_dir=bd, agent="alice"
    )
    assert granted.returncode == 0, granted.stderr
    assert [r["pattern"] for r in json.loads(granted.stdout)["reservations"]] == ["src/**"]
    refused = run_cli("reserve", "src/a.py", "README.md", "--json", board_dir=bd, agent="bob")
    assert refused.returncode == 3
    body = json.loads(refused.stdout)
    assert body["error"] == "files_reserved" and body["holders"] == ["alice"]
    who = json.loads(run_cli("who", "src/a.py", "--json", board_dir=bd, agent="bob").stdout)
    assert who["may_edit"] is False and who["holders"][0]["agent"] == "alice"
    listed = json.loads(run_cli("reservations", "--json", board_dir=bd).stdout)
    assert [(r["agent"], r["pattern"]) for r in listed["reservations"]] == [("alice", "src/**")]
    freed = run_cli("unreserve", "--all", "--json", board_dir=bd, agent="alice")
    assert json.loads(freed.stdout) == {"freed": ["src/**"]}
    assert run_cli("reserve", "src/a.py", board_dir=bd, agent="bob").returncode == 0


def test_next_count_claims_pairwise_disjoint_items(daemon: Daemon) -> None:
    bd = daemon.board_dir
    for title, files in (
        ("a", ["src/**"]),
        ("b", ["src/x.py"]),
        ("c", ["docs"]),
        ("d", ["docs/api.md"]),
        ("e", ["db/schema.sql"]),
    ):
        args = ["add", title, *(arg for path in files for arg in ("--file", path))]
        assert run_cli(*args, board_dir=bd).returncode == 0
    result = run_cli("next", "--count", "3", "--json", board_dir=bd, agent="orchestrator")
    assert result.returncode == 0, result.stderr
    items = json.loads(result.stdout)["items"]
    assert [c["title"] for c in items] == ["a", "c", "e"]
    assert all({"id", "token", "lease_expires_at"} <= c.keys() for c in items)
    # the remaining two overlap what is now held: nothing ready for anyone else
    assert run_cli("next", board_dir=bd, agent="other").returncode == 4
    # the CLI remembered every token: done works for each
    for claim in items:
        assert run_cli("done", str(claim["id"]), board_dir=bd, agent="orchestrator").returncode == 0


def test_the_pre_commit_guard_reads_the_index_git_commits_from(board_dir: Path) -> None:
    """`git commit -a` (and `git commit PATH`) stage into a temporary index and name it to the
    pre-commit hook in GIT_INDEX_FILE: the guard must read that one, not .git/index."""
    repo = board_dir.parent
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "held.py").write_text("x\n")
    subprocess.run([*git, "add", "held.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=repo, check=True)
    board = Board.open(board_dir)
    board.reserve(["held.py"], agent="alice")
    board.close()
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        f"#!/bin/sh\nCOORD_DIR={board_dir} {sys.executable} -m coord guard --staged --as bob\n"
    )
    hook.chmod(0o755)
    (repo / "held.py").write_text("changed\n")  # not staged: `commit -a` stages it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for how in (["-a"], ["held.py"]):
        done = subprocess.run(
            [*git, "commit", "-qm", "edit", *how], cwd=repo, env=env, capture_output=True, text=True
        )
        assert done.returncode != 0, how
        assert "held.py is held by alice" in done.stderr, (how, done.stderr)
