"""coord.spec.lint: one small document per problem code, the real document, stale reservations
from a real git history, and the claimable set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

from coord.spec import graph
from coord.spec.document import SpecDocument
from coord.spec.lint import lint
from coord.spec.parse import parse, parse_file
from coord.spec.protocol import Rules, claimable
from coord.spec.status import status

FIXTURE = Path(__file__).resolve().parent / "specs" / "harness-v2.md"
DAY = 86400


def doc(text: str, path: str = "plan.md") -> SpecDocument:
    return parse(dedent(text).lstrip("\n"), path)


def found(
    document: SpecDocument, repo_root: Path | None = None, now: float | None = None
) -> list[tuple[str, str | None, int]]:
    return [(p.code, p.package, p.line) for p in lint(document, repo_root=repo_root, now=now)]


CLEAN = """
    # Plan

    Escalate to: @lead

    ### Track A — alpha

    - [x] **A1 — one.** Dependencies: none.
      - Files: `src/a1.py`
    - [ ] **A2 — two.** Dependencies: A1.
      - Files: `src/a2.py`

    **Reserved: A3 by @ann.**
    - [ ] **A3 — three.** Dependencies: A1.
      - Files: `src/a3.py`
    """


def test_a_clean_document_has_no_problems() -> None:
    document = doc(CLEAN)
    assert lint(document) == []
    assert claimable(document) == ["A2"]


def test_duplicate_id() -> None:
    document = doc(
        """
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        - [ ] **A1 — again.** Dependencies: none.
          - Files: `b.py`
        - [ ] **A1 — and again.** Dependencies: none.
          - Files: `c.py`
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [
        ("duplicate_id", "A1", 3),
        ("duplicate_id", "A1", 5),
    ]
    assert "line 1" in problems[0].message and "line 1" in problems[1].message


def test_unknown_dependency() -> None:
    document = doc(
        """
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        - [ ] **A2 — two.** Dependencies: A1, Z9.
          - Files: `b.py`
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [("unknown_dependency", "A2", 3)]
    assert "Z9" in problems[0].message
    assert claimable(document) == ["A1"]  # A2 waits on a package that does not exist


def test_each_cycle_is_reported_once() -> None:
    document = doc(
        """
        - [ ] **A1 — one.** Dependencies: A3.
          - Files: `a1.py`
        - [ ] **A2 — two.** Dependencies: A1.
          - Files: `a2.py`
        - [ ] **A3 — three.** Dependencies: A2.
          - Files: `a3.py`
        - [ ] **B1 — self.** Dependencies: B1.
          - Files: `b1.py`
        - [ ] **C1 — outside.** Dependencies: A1.
          - Files: `c1.py`
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [
        ("cycle", "A1", 1),
        ("cycle", "B1", 7),
    ]
    assert "A1 → A3 → A2 → A1" in problems[0].message
    assert "B1 → B1" in problems[1].message
    assert claimable(document) == []


def test_a_long_dependency_chain_is_no_cycle_and_does_not_recurse_deeply() -> None:
    entries = [
        f"- [ ] **P{n} — p.** Dependencies: {f'P{n - 1}' if n else 'none'}." for n in range(3000)
    ]
    document = parse("\n".join(entries))
    assert {p.code for p in lint(document)} == {"no_files"}
    looped = parse("\n".join(entries).replace("Dependencies: none", "Dependencies: P2999"))
    cycles = [p for p in lint(looped) if p.code == "cycle"]
    assert [(p.package, p.line) for p in cycles] == [("P0", 1)]


def test_done_with_open_dependency() -> None:
    document = doc(
        """
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        - [x] **A2 — two.** Dependencies: A1.
          - Files: `b.py`
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [
        ("done_with_open_dependency", "A2", 3)
    ]
    assert "A1" in problems[0].message


def test_reservation_on_done() -> None:
    document = doc(
        """
        **Reserved: A1 by @ann.**
        - [x] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        """
    )
    assert found(document) == [("reservation_on_done", "A1", 1)]


def test_reservation_on_missing() -> None:
    document = doc(
        """
        **Reserved: A9 by @ann.**
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [("reservation_on_missing", "A9", 1)]
    assert "@ann" in problems[0].message


def test_two_reservation_lines_on_one_package_conflict() -> None:
    document = doc(
        """
        **Reserved: A1 by @ann.**
        **Reserved: A1 by @bob.**
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [
        ("conflicting_reservations", "A1", 2)
    ]
    assert "@ann" in problems[0].message and "@bob" in problems[0].message


def test_overlapping_files_of_different_users_conflict() -> None:
    text = """
        **Reserved: A1 by @ann.**
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `src/core/**`
        **Reserved: A2 by @bob.**
        - [ ] **A2 — two.** Dependencies: none.
          - Files: `src/core/db.py`
        - [ ] **A3 — three.** Dependencies: none.
          - Files: `src/core/api.py`
        - [ ] **A4 — four.** Dependencies: none.
          - Files: `src/other.py`
        """
    assert found(doc(text)) == [("conflicting_reservations", "A2", 4)]
    # one person may hold overlapping packages
    assert found(doc(text.replace("@bob", "@ann"))) == []
    # A3's files lie under A1's reserved `src/core/**`
    assert claimable(doc(text)) == ["A4"]


def test_a_track_marker_holds_every_package_of_its_track() -> None:
    text = """
        ### Track T — tee

        **In progress and reserved: @ann.**

        **Reserved: T2 by @bob.**
        - [ ] **T1 — one.** Dependencies: none.
          - Files: `src/t1.py`
        - [ ] **T2 — two.** Dependencies: none.
          - Files: `src/t2.py`
        """
    assert found(doc(text)) == [("conflicting_reservations", "T2", 5)]
    assert found(doc(text.replace("@bob", "@ann"))) == []
    assert claimable(doc(text)) == []


def test_a_track_marker_holds_the_track_files() -> None:
    document = doc(
        """
        ### Track T — tee

        **Reserved: @ann.** These packages own `src/t/**`.

        - [ ] **T1 — one.** Dependencies: none.

        ### Track U — you

        **Reserved: U1 by @bob.**
        - [ ] **U1 — one.** Dependencies: none.
          - Files: `src/t/u.py`
        - [ ] **U2 — two.** Dependencies: none.
          - Files: `src/t/v.py`
        - [ ] **U3 — three.** Dependencies: none.
          - Files: `src/u/w.py`
        """
    )
    assert found(document) == [("conflicting_reservations", "U1", 9)]
    assert claimable(document) == ["U3"]


def test_no_files() -> None:
    document = doc(
        """
        - [ ] **A1 — one.** Dependencies: none.
          - Acceptance: something.
        - [x] **A2 — done, needs no files.** Dependencies: none.
        - [ ] **A3 — prose files only.** Dependencies: none.
          - Primary files: the parser and its tests.
        """
    )
    problems = lint(document)
    assert [(p.code, p.package, p.line) for p in problems] == [
        ("no_files", "A1", 1),
        ("no_files", "A3", 4),
    ]
    assert "Primary files:" in problems[0].message


def test_parse_problems_come_first_by_line() -> None:
    document = doc(
        """
        - [ ] **A1 — one.** Dependencies: Z1.
          - Files: `a.py`
        - [ ] **R9** no title
        - [ ] **A2 — two.** Dependencies: whenever A1 is done.
          - Files: `b.py`
        """
    )
    assert found(document) == [
        ("unknown_dependency", "A1", 1),
        ("malformed_entry", None, 3),
        ("bad_dependencies", "A2", 4),
    ]


def test_the_real_document() -> None:
    document = parse_file(FIXTURE)
    # unticked packages with no files of their own and a track that owns none: tracks H and O
    # ("H0 converges ... into `agent-harness.ts`" and "may not modify" are not ownership)
    expected = [
        (f"H{n}", line)
        for n, line in enumerate([3323, 3326, 3330, 3333, 3336, 3339, 3342, 3345, 3348])
    ]
    expected += [("O1", 3374), ("O2", 3377), ("O3", 3380), ("O4", 3383)]
    assert found(document) == [("no_files", package, line) for package, line in expected]


def test_what_the_board_keeps_from_others_is_what_makes_a_package_unclaimable() -> None:
    """``kept_for`` (recorded by an import) and the open dependencies together say exactly
    which packages are claimable: the board's predicate and the document's are one."""
    document = parse_file(FIXTURE)
    rules = Rules(document)
    kept = rules.kept_for()
    assert kept["L1"] == "cristinaponcela" and kept["J3"] == "davidbrai"
    free = [
        v.package.id
        for v in rules.verdicts()
        if not v.package.done and not v.waiting_on and v.package.id not in kept
    ]
    assert free == claimable(document) == ["R3", "I1", "I2", "I3"]


def test_claimable_needs_existing_done_dependencies_and_free_files() -> None:
    document = doc(
        """
        - [x] **A1 — done.** Dependencies: none.
          - Files: `src/a1.py`
        - [ ] **A2 — ready.** Dependencies: A1.
          - Files: `src/a2.py`
        - [ ] **A3 — waits on A2.** Dependencies: A1, A2.
          - Files: `src/a3.py`
        - [ ] **A4 — waits on a ghost.** Dependencies: Z1.
          - Files: `src/a4.py`

        **Reserved: A1 by @ann.**
        - [ ] **A5 — shares a file with done A1 only.** Dependencies: none.
          - Files: `src/a1.py`

        **Reserved: A6 by @bob.**
        - [ ] **A6 — reserved.** Dependencies: none.
          - Files: `src/a6/**`
        - [ ] **A7 — under A6's files.** Dependencies: none.
          - Files: `src/a6/x.py`
        - [ ] **A8 — no files.** Dependencies: none.
        """
    )
    # a ticked package holds no files even while a stale reservation names it
    assert claimable(document) == ["A2", "A5", "A8"]


def test_each_reason_a_package_is_not_claimable() -> None:
    document = doc(
        """
        - [x] **A1 — done.** Dependencies: none.
          - Files: `src/a1.py`
        - [ ] **A2 — free.** Dependencies: A1.
          - Files: `src/a2.py`

        **Reserved: A3 by @ann.**
        - [ ] **A3 — reserved.** Dependencies: A1.
          - Files: `src/shared/**`
        - [ ] **A4 — in A3's files.** Dependencies: none.
          - Files: `src/a4.py`, `src/shared/x.py`
        - [ ] **A5 — waits.** Dependencies: A2, Z9.
          - Files: `src/a5.py`
        - [ ] **A6 — in A3's files, and waits.** Dependencies: A2.
          - Files: `src/shared/`
        """
    )
    reasons = {v.package.id: v.reasons() for v in Rules(document).verdicts()}
    clash = {"held": "A3", "holder": "ann", "theirs": "src/shared/**"}
    assert reasons == {
        "A1": [{"reason": "done"}],
        "A2": [],
        "A3": [{"reason": "reserved", "holders": ["ann"]}],
        "A4": [{"reason": "files_reserved", "conflicts": [{**clash, "mine": "src/shared/x.py"}]}],
        "A5": [{"reason": "dependencies", "waiting_on": ["A2", "Z9"]}],
        "A6": [
            {"reason": "files_reserved", "conflicts": [{**clash, "mine": "src/shared/"}]},
            {"reason": "dependencies", "waiting_on": ["A2"]},
        ],
    }
    assert claimable(document) == ["A2"]


def test_the_quick_claimable_set_is_the_one_the_reasons_give() -> None:
    for document in (parse_file(FIXTURE), doc(CLEAN)):
        rules = Rules(document)
        assert rules.claimable() == [v.package.id for v in rules.verdicts() if v.claimable]


def test_status_shows_ownership_tables_merge_orders_tracks_and_reasons() -> None:
    shown = status(parse_file(FIXTURE), None, "harness-v2.md")
    json.dumps(shown)  # as `coord spec status --json` prints it
    assert len(shown["ownership"]) == 18
    assert shown["ownership"][13] == {
        "surface": "`compact` and compaction resume",
        "packages": ["C1", "C2", "C3"],
    }
    assert shown["merge_orders"][0] == ["R0", "R1", "R2", "R3"]
    tracks = {t["id"]: t for t in shown["tracks"]}
    assert tracks["R"]["merge_order"] == [["R0", "R1", "R2", "R3"]]
    assert tracks["J"]["files"] == [
        "packages/agent/src/harness/session/jsonl/**",
        "packages/agent/test/harness/session/jsonl*.test.ts",
    ]
    entries = {p["id"]: p for p in shown["packages"]}
    assert shown["claimable"] == [pid for pid, p in entries.items() if not p["blocked_by"]]
    assert entries["F0"]["blocked_by"] == [{"reason": "done"}]


def test_status_with_the_board_adds_the_board_s_reason() -> None:
    document = doc(CLEAN)
    board = {
        "A2": {"id": 7, "state": "claimed", "claimed_by": "bob", "ready": False},
        "A3": {"id": 8, "state": "done", "claimed_by": None, "ready": False},
    }
    shown = status(document, board, "plan.md")
    entries = {p["id"]: p for p in shown["packages"]}
    assert entries["A2"]["blocked_by"] == [{"reason": "board", "state": "claimed"}]
    assert entries["A2"]["board"]["claimed_by"] == "bob"
    assert entries["A3"]["done"] is True and entries["A3"]["blocked_by"][0] == {"reason": "done"}
    assert shown["claimable"] == [] and shown["imported"] is True


def test_coord_spec_status_json_without_a_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from coord.cli.main import main

    (tmp_path / "plan.md").write_text(dedent(CLEAN).lstrip("\n"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COORD_DIR", raising=False)
    assert main(["spec", "status", "plan.md", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["imported"] is False and shown["claimable"] == ["A2"]
    assert shown["tracks"] == [
        {"id": "A", "title": "alpha", "line": 5, "files": [], "merge_order": []}
    ]
    assert shown["ownership"] == [] and shown["merge_orders"] == []


# ---------------------------------------------------------------------------------------------
# the one cycle search (coord.spec.graph): lint, the board's import and its dependency edges


def test_a_shortest_path_asks_for_one_level_at_a_time() -> None:
    edges = {1: [2, 3], 2: [4], 3: [4, 5], 4: [6], 5: [6], 6: []}
    asked: list[list[int]] = []

    def expand(frontier: list[int]) -> dict[int, list[int]]:
        asked.append(sorted(frontier))
        return {node: edges[node] for node in frontier}

    assert graph.shortest_path(1, 6, expand) == [1, 2, 4, 6]
    assert asked == [[1], [2, 3], [4, 5]]
    assert graph.shortest_path(6, 1, expand) is None
    assert graph.shortest_path(3, 3, expand) == [3]


def test_knots_ignore_edges_out_of_the_graph_and_name_the_shortest_cycle() -> None:
    dependencies = {"A": ["B", "GHOST"], "B": ["C", "A"], "C": ["A"], "D": ["D"], "E": ["A"]}
    knots = graph.knots(dependencies)
    assert [(k.members, k.closed) for k in knots] == [
        (["A", "B", "C"], ["A", "B", "A"]),
        (["D"], ["D", "D"]),
    ]


# ---------------------------------------------------------------------------------------------
# stale reservations from git history

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PLAN = """\
# Plan

**Reserved: A1 by @ann.**
- [ ] **A1 — one.** Dependencies: none.
  - Files: `src/a1.py`
- [ ] **A2 — two.** Dependencies: none.
  - Files: `src/a2.py`
"""
JANUARY = 1_704_067_200  # 2024-01-01T00:00:00Z


def git(repo: Path, *args: str, when: float | None = None) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{int(when)} +0000"
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", *identity, *args], cwd=repo, env=env, check=True, capture_output=True)


def commit(repo: Path, text: str, when: float) -> Path:
    path = repo / "docs" / "plan.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(repo, "add", "docs/plan.md")
    git(repo, "commit", "-q", "-m", "plan", when=when)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root


@needs_git
def test_an_old_reservation_is_stale(repo: Path) -> None:
    path = commit(repo, PLAN, JANUARY)
    document = parse_file(path)
    problems = lint(document, repo_root=repo, now=JANUARY + 30 * DAY)
    assert [(p.code, p.package, p.line) for p in problems] == [("stale_reservation", "A1", 3)]
    assert "30 days" in problems[0].message and "remove" in problems[0].message
    assert lint(document, repo_root=repo, now=JANUARY + 30 * DAY, stale_days=45) == []
    assert lint(document, now=JANUARY + 30 * DAY) == []  # no repository: no history to read


@needs_git
def test_a_fresh_reservation_is_not_stale(repo: Path) -> None:
    path = commit(repo, PLAN, JANUARY)
    assert lint(parse_file(path), repo_root=repo, now=JANUARY + 3 * DAY) == []


@needs_git
def test_a_recent_commit_renews_only_its_own_line(repo: Path) -> None:
    commit(repo, PLAN, JANUARY)
    renewed = PLAN.replace("- [ ] **A2", "**Reserved: A2 by @bob.**\n- [ ] **A2")
    path = commit(repo, renewed, JANUARY + 25 * DAY)
    document = parse_file(path)
    assert [(r.line, r.user) for r in document.reservations] == [(3, "ann"), (6, "bob")]
    problems = lint(document, repo_root=repo, now=JANUARY + 30 * DAY)
    assert [(p.code, p.package, p.line) for p in problems] == [("stale_reservation", "A1", 3)]


@needs_git
def test_an_uncommitted_reservation_is_not_stale(repo: Path) -> None:
    path = commit(repo, PLAN.replace("**Reserved: A1 by @ann.**\n", ""), JANUARY)
    path.write_text(PLAN, encoding="utf-8")  # the reservation line is not committed yet
    document = parse_file(path)
    assert lint(document, repo_root=repo, now=JANUARY + 300 * DAY) == []


@needs_git
def test_an_untracked_document_is_skipped(repo: Path) -> None:
    commit(repo, "# other\n", JANUARY)
    path = repo / "untracked.md"
    path.write_text(PLAN, encoding="utf-8")
    assert lint(parse_file(path), repo_root=repo, now=JANUARY + 300 * DAY) == []


@needs_git
def test_a_relative_document_path_is_read_from_the_repository(repo: Path) -> None:
    commit(repo, PLAN, JANUARY)
    document = parse(PLAN, "docs/plan.md")
    assert found(document, repo_root=repo, now=JANUARY + 30 * DAY) == [
        ("stale_reservation", "A1", 3)
    ]


@pytest.mark.process  # git blame is asked: tests/tiers.py cannot see it
def test_no_git_repository_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    path.write_text(PLAN, encoding="utf-8")
    assert lint(parse_file(path), repo_root=tmp_path, now=JANUARY + 300 * DAY) == []


@needs_git
def test_a_progress_file_reservation_is_aged_by_its_own_line(repo: Path) -> None:
    # the design's entry lines are old; the progress file's reservation is recent
    path = commit(repo, PLAN.replace("**Reserved: A1 by @ann.**\n", ""), JANUARY)
    progress = repo / "docs" / "plan.progress.md"
    progress.write_text("# Progress\n\n**Reserved: A2 by @bob.**\n", encoding="utf-8")
    git(repo, "add", "docs/plan.progress.md")
    git(repo, "commit", "-q", "-m", "reserve A2", when=JANUARY + 40 * DAY)
    document = parse_file(path)
    assert [(r.package, r.user, r.source) for r in document.reservations] == [
        ("A2", "bob", (str(progress), 3))
    ]
    assert lint(document, repo_root=repo, now=JANUARY + 42 * DAY) == []
    stale = lint(document, repo_root=repo, now=JANUARY + 60 * DAY)
    assert [(p.code, p.package) for p in stale] == [("stale_reservation", "A2")]
    assert "20 days" in stale[0].message


@needs_git
def test_a_bare_name_the_repository_has_only_deeper_is_warned_with_what_to_write(
    repo: Path,
) -> None:
    for path in ("src/core/util.py", "lib/util.py", "README.md", "pkg/sub/x.py", "out/gen.py"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("")
    (repo / ".gitignore").write_text("out/\n")
    git(repo, "add", "src", "lib", "README.md", ".gitignore")
    git(repo, "commit", "-q", "-m", "code")
    document = doc(
        """
        - [ ] **A1 — util.** Dependencies: none.
          - Files: `util.py`, `README.md`
        - [ ] **A2 — new files.** Dependencies: none.
          - Files: `new.py`, `gen.py`, `sub/`
        """
    )
    files = [p.files for p in document.packages]
    assert files == [["util.py", "README.md"], ["new.py", "gen.py", "sub/"]]
    problems = lint(document, repo_root=repo)
    # README.md exists at the root, new.py nowhere, gen.py only in ignored output
    assert [(p.code, p.line) for p in problems] == [("bare_name_at_root", n) for n in (2, 4)]
    util, sub = (p.message for p in problems)
    assert "`util.py` is read as the repository-root path" in util
    assert "`lib/util.py` and 1 more" in util and "`**/util.py` for every depth" in util
    assert "`pkg/sub/`" in sub  # an untracked directory deeper counts too
    assert found(document) == []  # without the repository, nothing to compare with
