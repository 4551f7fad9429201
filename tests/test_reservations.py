"""File reservations in the core: all-or-nothing, claimed with items, freed with them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Clock
from coord import errors
from coord.core.board import Board
from coord.errors import FilesReserved
from coord.storage.sqlite import SQLiteStorage


@pytest.fixture
def board(tmp_path: Path, clock: Clock) -> Iterator[Board]:
    repo = tmp_path / "repo"
    repo.mkdir()
    b = Board(
        SQLiteStorage(tmp_path / "board.db"), clock=clock, default_lease_seconds=60, repo_root=repo
    )
    yield b
    b.close()


def held(board: Board) -> list[tuple[str, str, bool]]:
    return [(r.agent, r.pattern, r.exclusive) for r in board.reservations()]


def test_exclusive_refuses_overlap_and_names_every_holder(board: Board) -> None:
    board.reserve(["src/auth/**"], agent="a", reason="refactor")
    board.reserve(["README.md"], agent="b")
    before = (held(board), board.last_seq())
    with pytest.raises(FilesReserved) as refused:
        board.reserve(["src/auth/login.py", "README.md", "docs/x.md"], agent="c")
    conflicts = refused.value.details["conflicts"]
    assert {(c["holder"], c["pattern"], c["requested"]) for c in conflicts} == {
        ("a", "src/auth/**", "src/auth/login.py"),
        ("b", "README.md", "README.md"),
    }
    assert all(c["expires_at"] for c in conflicts)
    assert "held by a" in refused.value.message and "held by b" in refused.value.message
    # all or nothing: docs/x.md, which was free, was not granted either
    assert (held(board), board.last_seq()) == before


def test_shared_conflicts_only_with_exclusive(board: Board) -> None:
    board.reserve(["docs/**"], agent="a", shared=True)
    board.reserve(["docs/api.md"], agent="b", shared=True)
    with pytest.raises(FilesReserved):
        board.reserve(["docs/api.md"], agent="c")
    board.reserve(["CHANGELOG.md"], agent="c")
    with pytest.raises(FilesReserved):
        board.reserve(["CHANGELOG.md"], agent="a", shared=True)


def test_an_agent_never_conflicts_with_itself_and_renews_in_place(
    board: Board, clock: Clock
) -> None:
    board.reserve(["src/**"], agent="a", lease_seconds=10)
    board.reserve(["src/a.py"], agent="a")
    clock.now += 5
    board.reserve(["src/**"], agent="a", lease_seconds=100)
    patterns = [r.pattern for r in board.reservations("a")]
    assert sorted(patterns) == ["src/**", "src/a.py"]
    renewed = next(r for r in board.reservations("a") if r.pattern == "src/**")
    assert renewed.expires_at == clock.now + 100


def test_expired_reservations_stop_counting_at_once(board: Board, clock: Clock) -> None:
    board.reserve(["src/a.py"], agent="a", lease_seconds=10)
    clock.now += 10
    assert board.reservations() == []
    board.reserve(["src/a.py"], agent="b")
    assert held(board) == [("b", "src/a.py", True)]


def test_unreserve_frees_named_patterns_or_all(board: Board) -> None:
    board.reserve(["a.py", "b.py", "c/**"], agent="a")
    assert board.unreserve(["./b.py"], agent="a") == ["b.py"]
    assert board.unreserve(["nothing.py"], agent="a") == []
    assert board.unreserve(agent="a", everything=True) == ["a.py", "c/**"]
    assert board.reservations() == []
    kinds = [e.kind for e in board.events()]
    assert kinds == ["reserved", "unreserved", "unreserved"]


def test_paths_are_normalised_and_escapes_refused(board: Board) -> None:
    board.reserve(["./src//x/../a.py/"], agent="a")  # written as a directory
    assert held(board) == [("a", "src/a.py/**", True)]
    assert board.repo_root is not None
    board.reserve([str(board.repo_root / "docs" / "b.md")], agent="a")
    for bad in ("../outside.py", "/etc/passwd", "!src/a.py"):
        with pytest.raises(errors.InvalidInput):
            board.reserve([bad], agent="b")
    assert len(board.reservations()) == 2


def test_claim_takes_the_items_files_in_the_same_transaction(board: Board) -> None:
    item = board.add("auth", created_by="h", files=["src/auth/**"])
    board.reserve(["src/auth/login.py"], agent="b")
    seq = board.last_seq()
    with pytest.raises(FilesReserved) as refused:
        board.claim(item.id, agent="a")
    assert refused.value.details["holders"] == ["b"]
    # neither the claim nor any file was taken
    assert board.get(item.id).state == "pending"
    assert held(board) == [("b", "src/auth/login.py", True)]
    assert board.last_seq() == seq
    board.unreserve(["src/auth/login.py"], agent="b")
    claim = board.claim(item.id, agent="a")
    assert held(board) == [("a", "src/auth/**", True)]
    assert board.reservations()[0].item_id == item.id
    assert claim.item.files == ("src/auth/**",)


def test_claim_is_granted_after_the_blocking_lease_expires(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h", files=["a.py"])
    board.reserve(["a.py"], agent="b", lease_seconds=30)
    with pytest.raises(FilesReserved):
        board.claim(item.id, agent="a")
    clock.now += 30
    assert board.claim(item.id, agent="a").token == 1


def test_heartbeat_extends_and_release_done_free_the_items_files(
    board: Board, clock: Clock
) -> None:
    first = board.add("one", created_by="h", files=["a.py"])
    second = board.add("two", created_by="h", files=["b.py"])
    c1 = board.claim(first.id, agent="a", lease_seconds=10)
    clock.now += 8
    board.heartbeat(first.id, agent="a", token=c1.token, lease_seconds=10)
    assert board.reservations()[0].expires_at == clock.now + 10
    board.release(first.id, agent="a", token=c1.token)
    c2 = board.claim(second.id, agent="a")
    board.done(second.id, agent="a", token=c2.token)
    assert board.reservations() == []


def test_expired_claim_frees_files_for_a_takeover(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h", files=["a.py"])
    board.claim(item.id, agent="crashed", lease_seconds=5)
    with pytest.raises(FilesReserved):
        board.reserve(["a.py"], agent="b")
    clock.now += 5
    taken = board.claim(item.id, agent="b")
    assert taken.takeover_from == "crashed"
    assert held(board) == [("b", "a.py", True)]


def test_claim_next_skips_items_whose_files_are_held(board: Board) -> None:
    blocked = board.add("blocked", created_by="h", priority=0, files=["src/a.py"])
    free = board.add("free", created_by="h", priority=3, files=["docs/**"])
    board.reserve(["src/*.py"], agent="b")
    assert [i.id for i in board.list_items(ready=True)] == [free.id]
    assert board.get(blocked.id).files_held_by[0].agent == "b"
    assert board.claim_next(agent="a").item.id == free.id
    with pytest.raises(errors.NothingReady):
        board.claim_next(agent="a")
    # b's own reservation does not stop b
    assert board.claim_next(agent="b").item.id == blocked.id


def test_batch_is_pairwise_disjoint_and_avoids_held_files(board: Board) -> None:
    a = board.add("a", created_by="h", priority=0, files=["src/**"])
    board.add("b", created_by="h", priority=1, files=["src/x.py"])  # overlaps a
    c = board.add("c", created_by="h", priority=2, files=["docs/**"])
    board.add("d", created_by="h", priority=2, files=["db/*.sql"])  # held by z
    e = board.add("e", created_by="h", priority=3)  # no files: disjoint from all
    f = board.add("f", created_by="h", priority=4, files=["README.md"])
    board.reserve(["db/schema.sql"], agent="z")
    batch = board.claim_batch(3, agent="orchestrator")
    assert [c_.item.id for c_ in batch] == [a.id, c.id, e.id]
    assert board.claim_batch(5, agent="o2")[0].item.id == f.id
    with pytest.raises(errors.InvalidInput):
        board.claim_batch(0, agent="o2")


def test_who_and_may_edit(board: Board) -> None:
    board.reserve(["src/**"], agent="a")
    board.reserve(["docs/api.md"], agent="b", shared=True)
    answer = board.who("src/pkg/mod.py", agent="b")
    assert answer["path"] == "src/pkg/mod.py"
    assert [h["agent"] for h in answer["holders"]] == ["a"]
    assert answer["may_edit"] is False
    assert board.who("src/pkg/mod.py", agent="a")["may_edit"] is True
    shared = board.who("docs/api.md", agent="c")
    assert shared["may_edit"] is True and shared["holders"][0]["exclusive"] is False
    assert board.who("free.txt")["holders"] == []


def test_item_files_are_normalised_and_validated(board: Board) -> None:
    item = board.add("x", created_by="h", files=["./src/a.py", "src/a.py", "*.sql"])
    assert item.files == ("**/*.sql", "src/a.py")
    with pytest.raises(errors.InvalidInput):
        board.add("y", created_by="h", files=["../escape"])
    with pytest.raises(errors.InvalidInput):
        board.import_items([{"title": "z", "files": "src/a.py"}], created_by="h")


# --- issue 12: the overlap rule judged against the working tree -------------------------------


def test_two_new_root_files_are_held_side_by_side(board: Board) -> None:
    """Neither file exists yet: each is one file to be created, not a possible directory."""
    board.reserve(["a.py", "**/x.py"], agent="w1")
    board.reserve(["b.py", "**/y.py"], agent="w2")  # no path ends in both x.py and y.py
    board.reserve(["src/c.py"], agent="w3")  # src/c.py is no directory that could hold them
    first = board.add("create a.py", created_by="h", files=["a.py"])
    second = board.add("create b.py", created_by="h", files=["b.py"])
    board.unreserve(agent="w1", everything=True)
    board.unreserve(agent="w2", everything=True)
    claims = board.claim_batch(2, agent="w4")
    assert sorted(c.item.id for c in claims) == [first.id, second.id]


def test_globs_cover_what_they_match_not_what_lies_beneath(board: Board) -> None:
    board.reserve(["**/a.py"], agent="w1")
    board.reserve(["src/b.py"], agent="w2")  # src/b.py is a file to be created
    board.reserve(["**/c.py"], agent="w3")  # no path ends in both a.py and c.py
    with pytest.raises(FilesReserved) as refused:
        board.reserve(["src/*.py"], agent="w4")  # src/b.py; src/a.py and src/c.py
    assert {c["holder"] for c in refused.value.details["conflicts"]} == {"w1", "w2", "w3"}
    board.unreserve(agent="w1", everything=True)
    board.unreserve(agent="w3", everything=True)
    with pytest.raises(FilesReserved, match="held by w2"):
        board.reserve(["src/*.py"], agent="w4")
    board.reserve(["docs/*.md"], agent="w4")


def test_an_existing_directory_or_a_trailing_slash_covers_what_lies_beneath(board: Board) -> None:
    assert board.repo_root is not None
    (board.repo_root / "lib").mkdir()
    board.reserve(["lib"], agent="w1")  # a directory of the tree
    board.reserve(["new/"], agent="w2")  # written as a directory: it will be one
    for taken, holder in (("lib/x.py", "w1"), ("new/x.py", "w2"), ("**/x.py", "w1")):
        with pytest.raises(FilesReserved, match=f"held by {holder}"):
            board.reserve([taken], agent="w3")
    board.reserve(["newer", "docs/x.md"], agent="w3")
    with pytest.raises(FilesReserved, match="held by w1"):
        board.reserve(["**/lib"], agent="w3")  # it names the directory lib itself


def test_a_pattern_with_too_many_wildcards_is_refused_naming_the_limit(board: Board) -> None:
    from coord.limits import MAX_PATTERN_WILDCARDS

    with pytest.raises(errors.InvalidInput, match=f"the limit is {MAX_PATTERN_WILDCARDS}"):
        board.reserve(["d/" + "*a" * (MAX_PATTERN_WILDCARDS + 1)], agent="w1")
    board.reserve(["d/" + "*a" * MAX_PATTERN_WILDCARDS], agent="w1")


def test_the_overlap_check_of_long_star_heavy_patterns_is_bounded_in_work() -> None:
    """Ten patterns of 1 KB against ten held once froze the daemon for 82 s; each check is
    now linear when both have stars, and every check stays within the step budget."""
    from coord.fast import globmeet, patterns
    from coord.limits import MAX_PATTERN, MAX_PATTERN_WILDCARDS

    stars = MAX_PATTERN_WILDCARDS // 2
    filler = "x" * ((MAX_PATTERN - 4 - 2 * stars) // stars)
    held = ["d/*" + filler + chr(97 + n) + ("*" + filler) * (stars - 1) for n in range(10)]
    ends = [chr(97 + n) for n in range(10)]
    asked = ["d/" + ("*" + filler + "q") * (stars - 1) + "*" + filler + end for end in ends]
    assert all(len(p) <= MAX_PATTERN for p in held + asked)
    worst = 0
    for a in asked:
        for b in held:
            patterns.overlaps(a, b)
            worst = max(worst, globmeet.Work.steps)
    # linear: a few passes over ~1,000 characters, far below the quadratic 10^6
    assert 0 < worst <= 4 * MAX_PATTERN
    # a star-free side is searched leftmost, and bounded by the budget whatever it costs
    word = "d/" + "a" * (MAX_PATTERN - 3)
    glob = "d/" + "*" + ("a" * 30 + "b*") * (MAX_PATTERN_WILDCARDS - 1)
    patterns.covers(glob, word)
    assert globmeet.Work.steps <= globmeet.STEP_BUDGET + MAX_PATTERN


def _schema_4_board_with_a_hold(db: Path, pattern: str) -> None:
    """A board as the release before issue 12 wrote it, with one live reservation."""
    import sqlite3

    from coord.storage.sqlite import SCHEMA_VERSION_TABLE, _migrations, _split_sql

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(SCHEMA_VERSION_TABLE)
    for version, name, sql in _migrations():
        if version <= 4:
            for statement in _split_sql(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    conn.execute(
        "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, reason, "
        "created_at, expires_at) VALUES ('old', ?, '', 1, NULL, 'before', 0, 1e12)",
        (pattern,),
    )
    conn.close()


def test_a_hold_stored_before_the_new_rule_keeps_its_old_meaning(
    tmp_path: Path, clock: Clock
) -> None:
    """Migration 0007 keeps the board's rows and marks them rule 1: never narrowed."""
    db = tmp_path / "board.db"
    repo = tmp_path / "repo"
    repo.mkdir()
    _schema_4_board_with_a_hold(db, "**/a.py")
    board = Board(SQLiteStorage(db), clock=clock, default_lease_seconds=60, repo_root=repo)
    try:
        (old,) = board.reservations()
        assert (old.agent, old.pattern, old.rule) == ("old", "**/a.py", 1)
        # under rule 1, src/b.py (not a file of the tree) might be a directory holding a.py
        with pytest.raises(FilesReserved, match="held by old"):
            board.reserve(["src/b.py"], agent="new")
        board.reserve(["docs/b.md"], agent="old")
        (fresh,) = [r for r in board.reservations() if r.pattern == "docs/b.md"]
        assert fresh.rule == 2
        # a plain file of the tree was never beneath it, under either rule
        (repo / "README.md").write_text("")
        board.reserve(["README.md"], agent="new")
    finally:
        board.close()


def test_the_guard_refuses_an_edit_beneath_a_planned_file_that_became_a_directory(
    tmp_path: Path,
) -> None:
    """The reservation check took ``src/new`` for a file to be created; when it turns out
    to be a directory, the guard (which sees the tree at edit time) still refuses beneath it."""
    from conftest import init_board_dir
    from coord.fast import guard

    board_dir = init_board_dir(tmp_path)
    held_by_w1 = Board.open(board_dir)
    try:
        held_by_w1.reserve(["src/new"], agent="w1")
        held_by_w1.reserve(["src/*.py"], agent="w1")
        held_by_w1.reserve(["src/other.txt"], agent="w2")  # beside it: a file, not beneath
    finally:
        held_by_w1.close()
    (tmp_path / "src" / "new").mkdir(parents=True)
    for path in ("src/new/x.py", "src/new", "src/a.py"):
        code, lines, _ = guard.check(board_dir, [path], "w2", cwd=str(tmp_path))
        assert code == 2 and "held by w1" in lines[0], (path, lines)
    # a glob covers what it matches, not beneath: src/lib/x.py is not src/*.py's
    for path in ("src/lib/x.py", "src/newer.txt"):
        assert guard.check(board_dir, [path], "w2", cwd=str(tmp_path))[0] == 0, path
    assert guard.check(board_dir, ["src/new/x.py"], "w1", cwd=str(tmp_path))[0] == 0


def test_one_request_of_many_long_patterns_is_bounded_as_a_whole() -> None:
    """Each check has its budget, and all the checks of one request share one too: past it
    the rest answer "overlap" (refused, never wrongly granted)."""
    from coord.core.reservations import find_conflicts
    from coord.fast import globmeet
    from coord.model import Reservation

    # a star-free 1 KB glob held, a long block to place leftmost in it asked: quadratic
    held_word = "d/?" + "a" * 1000 + "c"
    asked = ["d/*" + "a" * 470 + chr(98 + n) + "*c" for n in range(10)]
    held = [Reservation(n, f"h{n}", held_word, True, None, "", 0, 1e12) for n in range(10)]
    spent = []
    original = globmeet.Work.spend

    def counting(n: int = 1) -> None:
        original(n)
        spent.append(globmeet.Work.steps)

    globmeet.Work.spend = counting  # type: ignore[method-assign]
    try:
        conflicts = find_conflicts("asker", asked, True, held)
    finally:
        globmeet.Work.spend = original  # type: ignore[method-assign]
    assert len(conflicts) == 100  # every pair refused: too costly to tell, so the safe answer
    assert max(spent) <= globmeet.REQUEST_BUDGET + 1024
