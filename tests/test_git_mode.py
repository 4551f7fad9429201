"""`coord git`: the design-document protocol with the remote's main as the lock, no daemon.

Every test works on a local bare repository ("the remote") and clones of it, with the real
git. Policy checked throughout: `coord git` never moves a local branch or HEAD, never writes
the working tree or the index, and a command that does not land leaves no commit (no object,
ref or reflog entry) behind; only `refs/remotes/origin/main` moves, as a fetch moves it.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import SOAK, Daemon, run_cli
from coord.cli.main import main
from coord.spec.parse import parse, parse_file

sys.path.insert(0, str(Path(__file__).resolve().parent / "gitmode"))
import race_worker  # beside the tests: found through the line above

FIXTURE = Path(__file__).resolve().parent / "specs" / "harness-v2.md"
MANY = 16

PLAN = (
    "# Plan\n"
    "\n"
    "### Track A — core\n"
    "\n"
    "These packages merge A1 → A2.\n"
    "\n"
    "- [x] **A1 — base.** Dependencies: none.\n"
    "  - Files: `src/a1.py`\n"
    "- [ ] **A2 — feature.** Dependencies: A1.\n"
    "  - Files: `src/a2.py`, `src/shared.py`\n"
    "  - Checks: `test -f src/a2.py`\n"
    "- [ ] **A3 — sibling.** Dependencies: A1.\n"
    "  - Files: `src/shared.py`, `src/a3.py`\n"
    "  - Checks: `true`\n"
    "- [ ] **A4 — later.** Dependencies: A2.\n"
    "  - Files: `src/a4.py`\n"
    "\n"
    "- [ ] **B1 — free.** Dependencies: none.\n"
    "  - Files: `src/b1.py`\n"
    "  - Checks: `false`\n"
    "\n"
    "### Track C — many small ones\n"
    "\n"
    + "".join(
        f"- [ ] **C{n} — part {n}.** Dependencies: none.\n  - Files: `src/c{n}.py`\n"
        for n in range(1, MANY + 1)
    )
)
CLAIMABLE = ["A2", "A3", "B1", *(f"C{n}" for n in range(1, MANY + 1))]


# --- a remote and its clones --------------------------------------------------------------


def git(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", **(env or {})},
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


@dataclass
class World:
    root: Path
    remote: Path
    seed: str  # the commit with the document

    def clone(self, name: str, user: str | None = None, **config: str) -> Path:
        path = self.root / name
        git(self.root, "clone", "-q", str(self.remote), name)
        git(path, "config", "user.name", user or name)
        git(path, "config", "user.email", f"{user or name}@example.com")
        git(path, "config", "coord.doc", "docs/plan.md")
        for key, value in config.items():
            git(path, "config", f"coord.{key}", value)
        return path

    def tip(self) -> str:
        return git(self.remote, "rev-parse", "main")

    def text(self, path: str = "docs/plan.md", rev: str = "main") -> str:
        return git_bytes(self.remote, "cat-file", "blob", f"{rev}:{path}").decode()

    def subjects(self) -> list[str]:
        """The commit subjects since the seed, oldest first."""
        found = git(self.remote, "log", "--reverse", "--format=%s", f"{self.seed}..main")
        return found.splitlines()


def git_bytes(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def make_world(root: Path, files: dict[str, str | bytes] | None = None) -> World:
    root.mkdir(parents=True, exist_ok=True)
    remote = root / "remote.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = root / "seed"
    git(root, "clone", "-q", str(remote), "seed")
    for path, content in (files or {"docs/plan.md": PLAN}).items():
        target = seed / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    git(seed, "add", ".")
    git(
        seed, "-c", "user.name=seed", "-c", "user.email=s@example.com", "commit", "-q", "-m", "plan"
    )
    git(seed, "push", "-q", "origin", "main")
    return World(root, remote, git(seed, "rev-parse", "HEAD"))


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No global git config, no coord settings from the environment."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("COORD_AGENT", "COORD_DIR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def coord(cwd: Path, *args: str) -> tuple[int, Any]:
    """The real CLI in this process (`--json`): (exit code, the JSON document)."""
    out = io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out):
        code = main([*args, "--json"])
    return code, json.loads(out.getvalue())


def coord_text(cwd: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def local_state(clone: Path) -> dict[str, Any]:
    """Everything of a clone `coord git` must leave exactly as it was."""
    index = clone / ".git" / "index"
    files = {
        str(p.relative_to(clone)): p.read_bytes()
        for p in sorted(clone.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(clone).parts
    }
    return {
        "index": index.read_bytes() if index.exists() else None,
        "heads": git(clone, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"),
        "head": git(clone, "rev-parse", "HEAD"),
        "symbolic": git(clone, "symbolic-ref", "-q", "HEAD", check=False),
        "status": git(clone, "status", "--porcelain=v1", "-uall"),
        "reflog": git(clone, "reflog", "--format=%H %gs"),
        "stash": git(clone, "stash", "list"),
        "worktrees": git(clone, "worktree", "list", "--porcelain"),
        "files": files,
    }


def no_stray_objects(clone: Path) -> None:
    unreachable = git(clone, "fsck", "--unreachable", "--no-reflogs", "--no-progress")
    assert unreachable == "", unreachable


def reservation_line(package: str, user: str) -> str:
    return f"**Reserved: {package} by @{user}.**"


def with_line_above(text: str, entry_start: str, line: str, newline: str = "\n") -> str:
    at = text.index(entry_start)
    return text[:at] + line + newline + text[at:]


# --- reserve, release, done, reap: round trips --------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_reserve_then_release_round_trip(tmp_path: Path, newline: str) -> None:
    plan = PLAN.replace("\n", newline)
    world = make_world(tmp_path, {"docs/plan.md": plan.encode()})
    alice = world.clone("alice")
    before = local_state(alice)

    code, reserved = coord(alice, "git", "reserve", "A2")
    assert code == 0, reserved
    assert reserved["changed"] is True and reserved["package"] == "A2"
    assert reserved["user"] == "alice" and reserved["parent"] == world.seed
    assert world.subjects() == ["docs(agent): reserve A2"]
    assert world.tip() == reserved["commit"]
    assert git(world.remote, "rev-parse", "main^") == world.seed  # one commit on the seed
    expected = with_line_above(plan, "- [ ] **A2", reservation_line("A2", "alice"), newline=newline)
    assert world.text() == expected  # exactly one line, directly above the entry
    assert git(world.remote, "diff-tree", "--numstat", "-r", "main").splitlines()[-1] == (
        "1\t0\tdocs/plan.md"
    )

    code, released = coord(alice, "git", "release", "A2")
    assert code == 0, released
    assert world.subjects() == ["docs(agent): reserve A2", "docs(agent): unreserve A2"]
    assert world.text() == plan  # byte for byte the seed's document
    assert local_state(alice) == before
    assert git(alice, "rev-parse", "origin/main") == world.tip()
    no_stray_objects(alice)


def test_done_runs_the_checks_then_unreserves_and_ticks_in_one_commit(world: World) -> None:
    alice = world.clone("alice")
    assert coord(alice, "git", "reserve", "A2")[0] == 0
    reserved_tip = world.tip()

    code, failed = coord(alice, "git", "done", "A2")  # `test -f src/a2.py`: not there yet
    assert code == 3, failed
    assert failed["error"] == "checks_failed"
    assert failed["runs"][0]["command"] == "test -f src/a2.py"
    assert failed["runs"][0]["exit_code"] != 0
    assert world.tip() == reserved_tip  # nothing pushed

    (alice / "src").mkdir()
    (alice / "src" / "a2.py").write_text("# the work\n")
    before = local_state(alice)
    code, finished = coord(alice, "git", "done", "A2")
    assert code == 0, finished
    assert finished["was_reserved"] is True
    assert [run["exit_code"] for run in finished["checks"]] == [0]
    assert world.subjects() == ["docs(agent): reserve A2", "docs(agent): done A2"]
    assert git(world.remote, "rev-parse", "main^") == reserved_tip
    ticked = PLAN.replace("- [ ] **A2", "- [x] **A2")
    assert world.text() == ticked  # the reservation gone, the box ticked, nothing else
    assert "Checks passed:" in git(world.remote, "log", "-1", "--format=%b", "main")
    assert local_state(alice) == before
    no_stray_objects(alice)

    code, again = coord(alice, "git", "done", "A2")
    assert code == 3 and again["error"] == "not_claimable"


def test_done_of_a_package_someone_else_holds_is_refused(world: World) -> None:
    alice, bob = world.clone("alice"), world.clone("bob")
    assert coord(alice, "git", "reserve", "A3")[0] == 0
    tip = world.tip()
    code, refused = coord(bob, "git", "done", "A3")
    assert code == 3 and refused["error"] == "already_claimed" and refused["holder"] == "alice"
    code, refused = coord(bob, "git", "release", "A3")
    assert code == 3 and refused["holder"] == "alice"
    assert world.tip() == tip


def test_done_with_skipped_checks_records_the_reason(world: World) -> None:
    alice = world.clone("alice")
    code, finished = coord(
        alice, "git", "done", "B1", "--skip-checks", "--reason", "the check is broken"
    )
    assert code == 0, finished
    assert finished["was_reserved"] is False
    assert world.subjects() == ["docs(agent): done B1"]
    assert world.text() == PLAN.replace("- [ ] **B1", "- [x] **B1")
    body = git(world.remote, "log", "-1", "--format=%b", "main")
    assert "Checks skipped by @alice: the check is broken" in body


def test_reap_removes_old_reservations_in_one_commit_that_names_each(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob, carol = world.clone("alice"), world.clone("bob"), world.clone("carol")
    old = "2020-01-01T00:00:00+0000"
    monkeypatch.setenv("GIT_COMMITTER_DATE", old)
    monkeypatch.setenv("GIT_AUTHOR_DATE", old)
    assert coord(alice, "git", "reserve", "A2")[0] == 0
    assert coord(bob, "git", "reserve", "C3")[0] == 0
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    assert coord(carol, "git", "reserve", "B1")[0] == 0
    before_reap = world.text()

    code, status = coord(carol, "git", "status")
    assert code == 0
    ages = {r["package"]: r["age_seconds"] for r in status["reservations"]}
    assert ages["A2"] > 365 * 86400 and ages["C3"] > 365 * 86400 and ages["B1"] < 3600

    code, preview = coord(carol, "git", "reap", "--older-than", "7d", "--dry-run")
    assert code == 0 and preview["changed"] is False
    assert [r["package"] for r in preview["reaped"]] == ["A2", "C3"]
    assert world.text() == before_reap

    before = local_state(carol)
    code, reaped = coord(carol, "git", "reap", "--older-than", "7d")
    assert code == 0, reaped
    assert [(r["package"], r["user"]) for r in reaped["reaped"]] == [("A2", "alice"), ("C3", "bob")]
    assert world.subjects()[-1] == "docs(agent): reap A2, C3"
    body = git(world.remote, "log", "-1", "--format=%b", "main")
    assert "- A2 by @alice, reserved" in body and "- C3 by @bob, reserved" in body
    expected = with_line_above(PLAN, "- [ ] **B1", reservation_line("B1", "carol"))
    assert world.text() == expected  # only the two old lines went
    assert local_state(carol) == before

    code, nothing = coord(carol, "git", "reap", "--older-than", "7d")
    assert code == 0 and nothing["changed"] is False and nothing["reaped"] == []


def test_a_rebased_reservation_is_as_old_to_spec_lint_as_to_git_reap(world: World) -> None:
    """One clock (``coord.spec.age``): a reservation counts from when it landed. Alice wrote
    hers on a branch a month ago and rebased it onto main today (old author time, new
    committer time): fresh to both. Carol's landed on main a month ago: stale to both."""
    alice, carol = world.clone("alice"), world.clone("carol")
    month_ago = int(time.time()) - 30 * 86400
    then = {"GIT_AUTHOR_DATE": f"@{month_ago} +0000", "GIT_COMMITTER_DATE": f"@{month_ago} +0000"}
    plan = alice / "docs" / "plan.md"

    git(alice, "switch", "-q", "-c", "reserve-a2")
    plan.write_text(with_line_above(PLAN, "- [ ] **A2", reservation_line("A2", "alice")))
    git(alice, "commit", "-q", "-am", "docs(agent): reserve A2", env=then)

    carols = carol / "docs" / "plan.md"
    carols.write_text(with_line_above(PLAN, "- [ ] **B1", reservation_line("B1", "carol")))
    git(carol, "commit", "-q", "-am", "docs(agent): reserve B1", env=then)
    git(carol, "push", "-q", "origin", "main")

    git(alice, "fetch", "-q", "origin")
    git(alice, "rebase", "-q", "origin/main")  # today: a new committer time
    git(alice, "push", "-q", "origin", "HEAD:main")
    author, committer = map(int, git(alice, "log", "-1", "--format=%at %ct").split())
    assert author == month_ago and committer > month_ago + 29 * 86400
    assert reservation_line("B1", "carol") in plan.read_text()

    _, linted = coord(alice, "spec", "lint", "docs/plan.md", "--stale-days", "14")
    stale_to_lint = [p["package"] for p in linted["problems"] if p["code"] == "stale_reservation"]
    code, reaped = coord(alice, "git", "reap", "--older-than", "14d", "--dry-run")
    assert code == 0, reaped
    assert stale_to_lint == [r["package"] for r in reaped["reaped"]] == ["B1"]
    code, status = coord(alice, "git", "status")
    ages = {r["package"]: r["age_seconds"] for r in status["reservations"]}
    assert ages["A2"] < 3600 and ages["B1"] > 29 * 86400


def test_reserve_again_is_a_no_op_and_release_of_nothing_too(world: World) -> None:
    alice = world.clone("alice")
    assert coord(alice, "git", "reserve", "B1")[0] == 0
    tip = world.tip()
    code, again = coord(alice, "git", "reserve", "B1")
    assert code == 0 and again["changed"] is False and again["commit"] is None
    code, released = coord(alice, "git", "release", "A3")
    assert code == 0 and released["changed"] is False
    assert world.tip() == tip


def test_the_human_text_names_the_commit_and_the_winner(world: World) -> None:
    alice, bob = world.clone("alice"), world.clone("bob")
    code, out, _ = coord_text(alice, "git", "reserve", "A2")
    assert code == 0
    assert f"reserved A2 for @alice: {world.tip()[:12]} is on origin/main" in out
    assert "git switch -c work/A2 origin/main" in out
    code, _, err = coord_text(bob, "git", "reserve", "A2")
    assert code == 3
    assert "A2 is reserved by @alice on origin/main" in err
    code, _, err = coord_text(bob, "git", "reserve", "A3")
    assert code == 3
    assert "overlap those of A2 reserved by @alice (`src/shared.py`)" in err
    code, out, _ = coord_text(bob, "git", "status")
    assert code == 0 and "A2" in out and "@alice" in out and "claimable now: B1 C1" in out


def test_the_command_as_a_process_and_status_without_the_network(world: World) -> None:
    alice, bob = world.clone("alice"), world.clone("bob")
    done = subprocess.run(
        [sys.executable, "-m", "coord", "git", "reserve", "A2", "--json"],
        cwd=alice,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commit"] == world.tip()
    code, stale = coord(bob, "git", "status", "--no-fetch")  # bob's origin/main: the seed
    assert code == 0 and stale["tip"] == world.seed and "A2" in stale["claimable"]
    code, fresh = coord(bob, "git", "status")
    assert code == 0 and fresh["tip"] == world.tip() and "A2" not in fresh["claimable"]


# --- who the user is, where the document is -----------------------------------------------


def test_user_from_flag_then_setting_then_git_user_name(world: World) -> None:
    clone = world.clone("someone")  # user.name someone
    git(clone, "config", "coord.user", "from-setting")
    assert coord(clone, "git", "reserve", "C1", "--as", "from-flag")[1]["user"] == "from-flag"
    assert coord(clone, "git", "reserve", "C2")[1]["user"] == "from-setting"
    git(clone, "config", "--unset", "coord.user")
    assert coord(clone, "git", "reserve", "C3")[1]["user"] == "someone"
    git(clone, "config", "user.name", "Some One")  # not a handle
    code, refused = coord(clone, "git", "reserve", "C4")
    assert code == 2 and "git config coord.user" in refused["message"]


def test_doc_from_flag_and_no_doc_at_all(world: World) -> None:
    clone = world.clone("alice")
    git(clone, "config", "--unset", "coord.doc")
    code, refused = coord(clone, "git", "reserve", "C1")
    assert code == 2 and "git config coord.doc" in refused["message"]
    code, done = coord(clone / "docs", "git", "reserve", "C1", "--doc", "plan.md")
    assert code == 0 and done["doc"] == "docs/plan.md"


# --- 16 processes, 16 clones, one package --------------------------------------------------


def race(world: World, argvs: list[list[str]]) -> list[tuple[Path, str, int, Any]]:
    """Each argv in its own spawned process and clone, released together by a barrier."""
    users = [f"agent{n:02d}" for n in range(len(argvs))]
    clones = [world.clone(f"w{n:02d}", user) for n, user in enumerate(users)]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(argvs))
    results = ctx.Queue()
    processes = [
        ctx.Process(
            target=race_worker.run_after_barrier,
            args=(results, barrier, str(clone), [*argv, "--json"]),
        )
        for clone, argv in zip(clones, argvs, strict=True)
    ]
    for process in processes:
        process.start()
    try:
        answers = {
            Path(clone): (code, doc)
            for clone, code, doc in (results.get(timeout=120) for _ in processes)
        }
    finally:
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.kill()
    return [(clone, user, *answers[clone]) for clone, user in zip(clones, users, strict=True)]


def assert_untouched(world: World, clones: list[Path], seed_state: dict[str, Any]) -> None:
    """Every clone: branches, HEAD, index, files as cloned; origin/main is the remote's tip;
    no object that no ref reaches."""
    tip = world.tip()
    for clone in clones:
        state = local_state(clone)
        assert state["heads"] == f"refs/heads/main {world.seed}", clone
        assert state["head"] == world.seed and state["symbolic"] == "refs/heads/main"
        assert state["status"] == "" and state["files"] == seed_state["files"]
        assert state["reflog"] == seed_state["reflog"]
        assert git(clone, "rev-parse", "refs/remotes/origin/main") == tip
        no_stray_objects(clone)


def test_16_processes_reserve_the_same_package_exactly_one_wins(world: World) -> None:
    seed_state = local_state(world.clone("reference"))
    started = time.monotonic()
    results = race(world, [["git", "reserve", "A2"]] * MANY)
    elapsed = time.monotonic() - started
    winners = [(user, doc) for _, user, code, doc in results if code == 0]
    assert len(winners) == 1, [(user, code, doc) for _, user, code, doc in results]
    ((winner, won),) = winners
    assert won["commit"] == world.tip()
    for _, user, code, doc in results:
        if user == winner:
            continue
        assert code == 3, doc
        assert doc["error"] == "already_claimed" and doc["holder"] == winner, doc
        assert f"@{winner}" in doc["message"]
    assert world.subjects() == ["docs(agent): reserve A2"]
    assert world.text() == with_line_above(PLAN, "- [ ] **A2", reservation_line("A2", winner))
    assert_untouched(world, [clone for clone, *_ in results], seed_state)
    print(f"16 racing reservations of one package: {elapsed:.1f} s")


def test_16_processes_reserve_two_packages_that_share_a_file_exactly_one_wins(
    world: World,
) -> None:
    seed_state = local_state(world.clone("reference"))
    argvs = [["git", "reserve", "A2" if n % 2 else "A3"] for n in range(MANY)]
    results = race(world, argvs)
    winners = [
        (user, argv[2])
        for (_, user, code, _), argv in zip(results, argvs, strict=True)
        if code == 0
    ]
    assert len(winners) == 1, [(user, code, doc) for _, user, code, doc in results]
    ((winner, package),) = winners
    for (_, user, code, doc), argv in zip(results, argvs, strict=True):
        if user == winner:
            continue
        assert code == 3, doc
        assert doc["holder"] == winner, doc
        expected = "already_claimed" if argv[2] == package else "files_reserved"
        assert doc["error"] == expected, doc
    assert world.subjects() == [f"docs(agent): reserve {package}"]
    document = parse(world.text())
    assert [(r.package, r.user) for r in document.reservations] == [(package, winner)]
    assert_untouched(world, [clone for clone, *_ in results], seed_state)


def test_16_processes_reserve_16_different_packages_all_win_after_retries(
    world: World,
) -> None:
    seed_state = local_state(world.clone("reference"))
    results = race(world, [["git", "reserve", f"C{n + 1}"] for n in range(MANY)])
    assert [code for *_, code, _ in results] == [0] * MANY, results
    retried = sum(doc["attempts"] - 1 for *_, doc in results)
    print(f"16 racing reservations of different packages: {retried} pushes lost and retried")
    assert sorted(world.subjects()) == sorted(f"docs(agent): reserve C{n}" for n in range(1, 17))
    for commit in git(world.remote, "rev-list", f"{world.seed}..main").split():
        assert git(world.remote, "diff-tree", "--numstat", "-r", commit).splitlines()[-1] == (
            "1\t0\tdocs/plan.md"
        )
    expected = PLAN
    for n, (_, user, _, _) in enumerate(results, start=1):
        expected = with_line_above(expected, f"- [ ] **C{n} ", reservation_line(f"C{n}", user))
    assert world.text() == expected
    tip = world.tip()
    for clone, _, _, _ in results:  # branches untouched; origin/main at least our commit
        state = local_state(clone)
        assert state["heads"] == f"refs/heads/main {world.seed}"
        assert state["files"] == seed_state["files"] and state["status"] == ""
        assert git(clone, "merge-base", "--is-ancestor", "origin/main", tip, check=False) == ""
        no_stray_objects(clone)


def land_between_fetch_and_push(
    monkeypatch: pytest.MonkeyPatch, other: Path, *args: str
) -> list[str]:
    """Run `coord git ARGS` in ``other`` right after our first read of the tip: our push then
    meets a branch that moved, deterministically."""
    from coord.gitmode import remote

    read = remote.Session.read
    tips: list[str] = []

    def read_then_interfere(session: remote.Session, tip: str) -> remote.State:
        if session.settings.root.name == other.name:
            return read(session, tip)  # the other clone's own command
        tips.append(tip)
        if len(tips) == 1:
            code, answer = coord(other, *args)
            assert code == 0, answer
        return read(session, tip)

    monkeypatch.setattr(remote.Session, "read", read_then_interfere)
    return tips


def test_a_push_refused_by_an_unrelated_commit_is_rebased_and_retried(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.clone("alice"), world.clone("bob")
    tips = land_between_fetch_and_push(monkeypatch, bob, "git", "reserve", "C5")
    code, reserved = coord(alice, "git", "reserve", "A2")
    assert code == 0, reserved
    assert reserved["attempts"] == 2 and len(tips) == 2 and tips[0] == world.seed
    assert world.subjects() == ["docs(agent): reserve C5", "docs(agent): reserve A2"]
    assert reserved["parent"] == tips[1] == git(world.remote, "rev-parse", "main^")
    expected = with_line_above(PLAN, "- [ ] **C5 ", reservation_line("C5", "bob"))
    expected = with_line_above(expected, "- [ ] **A2", reservation_line("A2", "alice"))
    assert world.text() == expected
    no_stray_objects(alice)  # the commit of the first attempt is gone


def test_a_push_refused_by_a_conflicting_reservation_loses_and_leaves_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.clone("alice"), world.clone("bob")
    before = local_state(alice)
    land_between_fetch_and_push(monkeypatch, bob, "git", "reserve", "A3")
    code, lost = coord(alice, "git", "reserve", "A2")
    assert code == 3, lost
    assert lost["error"] == "files_reserved" and lost["holder"] == "bob"
    assert lost["attempts"] == 2
    assert world.subjects() == ["docs(agent): reserve A3"]
    assert local_state(alice) == before
    assert git(alice, "rev-parse", "origin/main") == world.tip()
    no_stray_objects(alice)


@pytest.mark.soak
@pytest.mark.skipif(not SOAK, reason="set COORD_SOAK=1 for the long race")
def test_soak_many_rounds_of_16_racing_reservations(tmp_path: Path) -> None:
    for round_ in range(10):
        world = make_world(tmp_path / f"round{round_}")
        results = race(world, [["git", "reserve", "A2" if n % 3 else "A3"] for n in range(MANY)])
        assert sorted(code for _, _, code, _ in results) == [0] + [3] * (MANY - 1)
        assert len(parse(world.text()).reservations) == 1


# --- status agrees with the board's reading ------------------------------------------------


def test_git_status_and_spec_status_agree(world: World) -> None:
    alice, bob = world.clone("alice"), world.clone("bob")
    assert coord(alice, "git", "reserve", "A2")[0] == 0
    assert coord(bob, "git", "done", "C1", "--skip-checks", "--reason", "demo")[0] == 0
    git(bob, "merge", "-q", "--ff-only", "origin/main")
    code, by_git = coord(bob, "git", "status")
    assert code == 0
    code, by_spec = coord(bob, "spec", "status", "docs/plan.md")
    assert code == 0
    assert by_git["claimable"] == by_spec["claimable"]
    assert by_git["claimable"] == [p for p in CLAIMABLE if p not in ("A2", "A3", "C1")]
    assert [(r["package"], r["user"]) for r in by_git["reservations"]] == [("A2", "alice")]
    assert by_git["packages"] == by_spec["packages"]


def test_git_status_on_the_real_document_agrees_with_spec_status(tmp_path: Path) -> None:
    world = make_world(tmp_path, {"docs/harness-v2.md": FIXTURE.read_bytes()})
    clone = world.clone("alice")
    code, by_git = coord(clone, "git", "status", "--doc", "docs/harness-v2.md")
    assert code == 0, by_git
    code, by_spec = coord(clone, "spec", "status", "docs/harness-v2.md")
    assert code == 0
    assert by_git["claimable"] == by_spec["claimable"] and by_git["claimable"]
    holders = {(r["package"], r["track"], r["user"]) for r in by_git["reservations"]}
    assert ("L1", None, "cristinaponcela") in holders
    assert (None, "J", "davidbrai") in holders
    assert all(r["commit"] == world.seed for r in by_git["reservations"])


# --- the progress file -----------------------------------------------------------------------


def test_progress_layout_keeps_the_design_untouched(world: World) -> None:
    alice = world.clone("alice", progress="true")
    code, reserved = coord(alice, "git", "reserve", "A2")
    assert code == 0, reserved
    assert reserved["files"] == ["docs/plan.progress.md"]
    assert world.text() == PLAN
    progress = world.text("docs/plan.progress.md")
    assert progress.endswith("\n\n" + reservation_line("A2", "alice") + "\n")

    bob = world.clone("bob")  # no setting: the branch has a progress file, so bob uses it
    code, lost = coord(bob, "git", "reserve", "A3")
    assert code == 3 and lost["error"] == "files_reserved" and lost["holder"] == "alice"
    assert coord(bob, "git", "reserve", "B1")[0] == 0
    assert world.text() == PLAN

    (alice / "src").mkdir()
    (alice / "src" / "a2.py").write_text("")
    code, finished = coord(alice, "git", "done", "A2")
    assert code == 0, finished
    assert world.text() == PLAN
    progress = world.text("docs/plan.progress.md")
    assert reservation_line("A2", "alice") not in progress
    assert progress.endswith(reservation_line("B1", "bob") + "\n- [x] A2\n")

    # every reader sees both layouts: the parser, lint, status
    git(bob, "pull", "-q", "--ff-only")
    document = parse_file(bob / "docs" / "plan.md")
    assert document.package("A2").done  # type: ignore[union-attr]
    assert [(r.package, r.user) for r in document.reservations] == [("B1", "bob")]
    assert document.reservations[0].line == document.package("B1").line  # type: ignore[union-attr]
    code, by_spec = coord(bob, "spec", "status", "docs/plan.md")
    code, by_git = coord(bob, "git", "status")
    assert by_spec["claimable"] == by_git["claimable"]
    assert "A4" in by_spec["claimable"] and "B1" not in by_spec["claimable"]
    assert by_git["progress_file"] == "docs/plan.progress.md"
    assert [(r["package"], r["file"]) for r in by_git["reservations"]] == [
        ("B1", "docs/plan.progress.md")
    ]
    code, lint = coord(bob, "spec", "lint", "docs/plan.md")
    assert [p["code"] for p in lint["problems"]] == []

    assert coord(bob, "git", "release", "B1")[0] == 0
    assert reservation_line("B1", "bob") not in world.text("docs/plan.progress.md")


@pytest.mark.process  # git finds the repository: tests/tiers.py cannot see it
def test_progress_file_problems_are_reported_by_lint(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text(PLAN)
    (tmp_path / "plan.progress.md").write_text(
        "# Progress\n\n- [x] Z9\n**Reserved: A1 by @x.**\n**Reserved: Q7 by @y.**\n"
    )
    code, lint = coord(tmp_path, "spec", "lint", "plan.md", "--stale-days", "100000")
    assert code == 1
    codes = sorted(p["code"] for p in lint["problems"])
    assert codes == ["progress_on_missing", "reservation_on_done", "reservation_on_missing"]


def test_spec_import_reads_the_progress_file(daemon: Daemon) -> None:
    root = daemon.board_dir.parent
    (root / "plan.md").write_text(PLAN)
    (root / "plan.progress.md").write_text("- [x] B1\n**Reserved: A2 by @alice.**\n")
    done = run_cli("spec", "import", "plan.md", "--json", board_dir=daemon.board_dir, cwd=root)
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert imported["closed"] == ["A1", "B1"]
    assert [(r["package"], r["user"]) for r in imported["reservations"]] == [("A2", "alice")]


# --- CI lint over a range of commits --------------------------------------------------------


@pytest.fixture
def history(world: World) -> Iterator[tuple[World, Path]]:
    clone = world.clone("ci")
    yield world, clone


def commit_all(clone: Path, message: str) -> str:
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", message)
    return git(clone, "rev-parse", "HEAD")


def edit_plan(clone: Path, change: Any) -> None:
    path = clone / "docs" / "plan.md"
    path.write_text(change(path.read_text()))


def lint_codes(clone: Path, rev_range: str) -> list[str]:
    code, found = coord(clone, "spec", "lint", "docs/plan.md", "--git", rev_range)
    codes = [p["code"] for p in found["problems"]]
    assert code == (1 if codes else 0), found
    return codes


def test_lint_range_passes_what_coord_git_writes(history: tuple[World, Path]) -> None:
    world, clone = history
    assert coord(clone, "git", "reserve", "A2")[0] == 0
    assert coord(clone, "git", "reserve", "B1")[0] == 0
    assert coord(clone, "git", "release", "B1")[0] == 0
    (clone / "src").mkdir()
    (clone / "src" / "a2.py").write_text("")
    git(clone, "merge", "-q", "--ff-only", "origin/main")
    commit_all(clone, "the work of A2")
    git(clone, "push", "-q", "origin", "main")
    assert coord(clone, "git", "done", "A2")[0] == 0
    git(clone, "merge", "-q", "--ff-only", "origin/main")
    assert lint_codes(clone, f"{world.seed}..HEAD") == []


def test_lint_range_catches_each_forbidden_change(history: tuple[World, Path]) -> None:
    world, clone = history
    seed = world.seed

    def case(name: str) -> None:
        git(clone, "checkout", "-q", "-B", name, seed)

    case("two")
    edit_plan(
        clone,
        lambda t: with_line_above(
            with_line_above(t, "- [ ] **A2", reservation_line("A2", "x")),
            "- [ ] **B1",
            reservation_line("B1", "x"),
        ),
    )
    commit_all(clone, "docs(agent): reserve A2 and B1")
    assert lint_codes(clone, f"{seed}..HEAD") == ["multiple_reservations"]

    case("mixed-file")
    edit_plan(clone, lambda t: with_line_above(t, "- [ ] **A2", reservation_line("A2", "x")))
    (clone / "src").mkdir(exist_ok=True)
    (clone / "src" / "a2.py").write_text("work\n")
    commit_all(clone, "reserve A2 and start")
    assert lint_codes(clone, f"{seed}..HEAD") == ["reservation_mixed"]

    case("mixed-tick")
    edit_plan(
        clone,
        lambda t: with_line_above(t, "- [ ] **A3", reservation_line("A3", "x")).replace(
            "- [ ] **C1", "- [x] **C1"
        ),
    )
    commit_all(clone, "reserve A3, tick C1")
    assert lint_codes(clone, f"{seed}..HEAD") == ["reservation_mixed"]

    case("not-claimable")  # A4 waits on A2
    edit_plan(clone, lambda t: with_line_above(t, "- [ ] **A4", reservation_line("A4", "x")))
    commit_all(clone, "docs(agent): reserve A4")
    assert lint_codes(clone, f"{seed}..HEAD") == ["reservation_not_claimable"]

    case("overlap")  # A2 reserved at the base; A3 shares src/shared.py
    edit_plan(clone, lambda t: with_line_above(t, "- [ ] **A2", reservation_line("A2", "x")))
    base = commit_all(clone, "docs(agent): reserve A2")
    edit_plan(clone, lambda t: with_line_above(t, "- [ ] **A3", reservation_line("A3", "y")))
    commit_all(clone, "docs(agent): reserve A3")
    assert lint_codes(clone, f"{base}..HEAD") == ["reservation_not_claimable"]
    assert lint_codes(clone, f"{seed}..HEAD") == ["reservation_not_claimable"]  # at its parent

    case("tick-fails")  # B1's check is `false`
    edit_plan(clone, lambda t: t.replace("- [ ] **B1", "- [x] **B1"))
    commit_all(clone, "B1 is done")
    code, found = coord(clone, "spec", "lint", "docs/plan.md", "--git", f"{seed}..HEAD")
    assert code == 1
    (problem,) = found["problems"]
    assert problem["code"] == "tick_checks_failed" and problem["package"] == "B1"
    assert "`false` exited 1" in problem["message"]

    case("tick-passes")  # A2's check passes once src/a2.py exists at HEAD
    edit_plan(clone, lambda t: t.replace("- [ ] **A2", "- [x] **A2"))
    commit_all(clone, "A2 is done, without the work")
    assert lint_codes(clone, f"{seed}..HEAD") == ["tick_checks_failed"]
    (clone / "src").mkdir(exist_ok=True)
    (clone / "src" / "a2.py").write_text("work\n")
    commit_all(clone, "the work")
    assert lint_codes(clone, f"{seed}..HEAD") == []

    # the checks run at HEAD of the range even when the working tree is elsewhere
    failing = git(clone, "rev-parse", "tick-fails")
    git(clone, "checkout", "-q", "tick-passes")
    assert lint_codes(clone, f"{seed}..{failing}") == ["tick_checks_failed"]
    assert git(clone, "worktree", "list", "--porcelain").count("worktree ") == 1

    case("progress")  # ticks and reservations in the progress file count the same
    (clone / "docs" / "plan.progress.md").write_text("- [x] B1\n" + reservation_line("C2", "x"))
    commit_all(clone, "progress")
    assert sorted(lint_codes(clone, f"{seed}..HEAD")) == ["reservation_mixed", "tick_checks_failed"]

    # the commit that brings the document (reservations, ticks and all) is not a change
    git(clone, "checkout", "-q", "-B", "arrival", seed)
    (clone / "docs" / "harness-v2.md").write_bytes(FIXTURE.read_bytes())
    commit_all(clone, "add the harness design")
    code, found = coord(clone, "spec", "lint", "docs/harness-v2.md", "--git", f"{seed}..")
    assert code == 0 and found["problems"] == []

    code, bad = coord(clone, "spec", "lint", "docs/plan.md", "--git", "nope..HEAD")
    assert code == 2 and "is no commit" in bad["message"]


# --- bad situations: a clear message, an exit code, nothing changed -------------------------


def test_no_remote(world: World) -> None:
    clone = world.clone("alice")
    git(clone, "remote", "remove", "origin")
    before = local_state(clone)
    code, error = coord(clone, "git", "reserve", "A2")
    assert code == 1 and error["error"] == "git_error"
    assert "no git remote named 'origin'" in error["message"]
    assert "git remote add origin URL" in error["message"]
    assert local_state(clone) == before


@pytest.mark.process  # git is asked for the repository: tests/tiers.py cannot see it
def test_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    code, error = coord(tmp_path / "plain", "git", "status", "--doc", "x.md")
    assert code == 1 and "not inside a git working tree" in error["message"]


def test_remote_has_no_main(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    clone = world.clone("alice")
    code, error = coord(clone, "git", "reserve", "A2", "--branch", "trunk")
    assert code == 1 and "has no branch trunk" in error["message"]


def test_dirty_working_tree_and_staged_changes_stay_as_they_were(world: World) -> None:
    clone = world.clone("alice")
    plan = clone / "docs" / "plan.md"
    plan.write_text(plan.read_text() + "\nmy local notes\n")  # the document itself, unstaged
    (clone / "staged.txt").write_text("staged\n")
    git(clone, "add", "staged.txt")
    (clone / "untracked.txt").write_text("untracked\n")
    before = local_state(clone)
    code, reserved = coord(clone, "git", "reserve", "A2")
    assert code == 0, reserved
    assert any("uncommitted changes" in note for note in reserved["notes"])
    assert local_state(clone) == before
    assert world.text() == with_line_above(PLAN, "- [ ] **A2", reservation_line("A2", "alice"))


def test_detached_head_stays_detached(world: World) -> None:
    clone = world.clone("alice")
    git(clone, "checkout", "-q", "--detach")
    before = local_state(clone)
    code, reserved = coord(clone, "git", "reserve", "A2")
    assert code == 0, reserved
    assert any("detached" in note for note in reserved["notes"])
    assert local_state(clone) == before
    assert before["symbolic"] == ""


def test_document_missing_on_main_and_unknown_package(world: World) -> None:
    clone = world.clone("alice")
    (clone / "docs" / "local-only.md").write_text(PLAN)  # in the working tree, not on main
    before = local_state(clone)
    code, error = coord(clone, "git", "reserve", "A2", "--doc", "docs/local-only.md")
    assert code == 2 and "docs/local-only.md is not on origin/main" in error["message"]
    code, error = coord(clone, "git", "reserve", "Z9")
    assert code == 2 and "no package Z9 in docs/plan.md on origin/main" in error["message"]
    code, error = coord(clone, "git", "reserve")
    assert code == 2 and "needs a package id" in error["message"]
    assert local_state(clone) == before
    assert world.subjects() == []


def test_not_claimable_names_the_reason(world: World) -> None:
    clone = world.clone("alice")
    code, error = coord(clone, "git", "reserve", "A1")
    assert code == 3 and error["error"] == "not_claimable" and error["reason"] == "done"
    code, error = coord(clone, "git", "reserve", "A4")
    assert code == 3 and error["error"] == "not_ready" and error["waiting_on"] == ["A2"]
    assert world.subjects() == []
    no_stray_objects(clone)


def test_no_commit_identity(world: World) -> None:
    clone = world.clone("alice")
    git(clone, "config", "--unset", "user.email")
    git(clone, "config", "user.useConfigOnly", "true")
    git(clone, "config", "coord.user", "alice")
    code, error = coord(clone, "git", "reserve", "A2")
    assert code == 1 and "git config user.email" in error["message"]
    assert world.subjects() == []


def test_remote_unreachable(world: World) -> None:
    clone = world.clone("alice")
    git(clone, "remote", "set-url", "origin", str(world.root / "gone.git"))
    before = local_state(clone)
    code, error = coord(clone, "git", "reserve", "A2")
    assert code == 1 and "cannot fetch main from origin" in error["message"]
    assert local_state(clone) == before


def test_push_fails_but_fetch_works(world: World) -> None:
    clone = world.clone("alice")
    git(clone, "remote", "set-url", "--push", "origin", str(world.root / "gone.git"))
    before = local_state(clone)
    code, error = coord(clone, "git", "reserve", "A2")
    assert code == 1, error
    assert "the push to origin failed" in error["message"]
    assert "does not have it" in error["message"]
    assert local_state(clone) == before
    no_stray_objects(clone)
    assert world.subjects() == []


def install_hook(world: World, name: str, body: str) -> Path:
    """A one-shot hook in the remote: it runs once, while the flag file exists."""
    flag = world.root / f"{name}.armed"
    flag.write_text("")
    hook = world.remote / "hooks" / name
    hook.write_text(f'#!/bin/sh\nflag="{flag}"\n[ -f "$flag" ] || exit 0\n{body}\n')
    hook.chmod(0o755)
    return flag


def test_connection_drops_before_the_remote_updates_main(world: World) -> None:
    clone = world.clone("alice")
    flag = install_hook(world, "pre-receive", 'rm -f "$flag"\nkill -9 $PPID')
    before = local_state(clone)
    code, error = coord(clone, "git", "reserve", "A2")
    assert code == 1, error
    assert "failed" in error["message"] and "does not have it" in error["message"]
    assert not flag.exists()  # the hook did run
    assert world.subjects() == []
    assert local_state(clone) == before
    no_stray_objects(clone)
    assert coord(clone, "git", "reserve", "A2")[0] == 0  # the network is back
    assert world.subjects() == ["docs(agent): reserve A2"]


def test_connection_drops_after_the_remote_updated_main(world: World) -> None:
    clone = world.clone("alice")
    flag = install_hook(
        world,
        "reference-transaction",
        '[ "$1" = committed ] || exit 0\nrm -f "$flag"\nkill -9 $PPID',
    )
    before = local_state(clone)
    code, reserved = coord(clone, "git", "reserve", "A2")
    assert not flag.exists()  # the answer was lost
    assert code == 0, reserved  # ... and the fetch afterwards found our commit on main
    assert world.subjects() == ["docs(agent): reserve A2"]
    assert reserved["commit"] == world.tip()
    assert local_state(clone) == before
    assert git(clone, "rev-parse", "origin/main") == world.tip()
    assert git(clone, "cat-file", "-t", world.tip()) == "commit"  # its objects were kept
    no_stray_objects(clone)


def test_remote_refuses_for_another_reason(world: World) -> None:
    clone = world.clone("alice")
    install_hook(world, "pre-receive", 'echo "main is frozen" >&2; exit 1')
    before = local_state(clone)
    code, error = coord(clone, "git", "reserve", "A2")
    assert code == 1 and "origin refused the push to main" in error["message"]
    assert "pre-receive hook declined" in error["message"]
    assert local_state(clone) == before
    no_stray_objects(clone)
