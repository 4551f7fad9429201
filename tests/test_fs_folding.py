"""Issue 13 item 7: one file, two spellings. On a case-insensitive file system (macOS,
Windows) ``SRC/A.py`` is ``src/a.py``; on a normalising one (macOS) the NFD spelling of
``café.py`` is the NFC one. A hold on one spelling meets the other, for reservations, claims
and the guard.

This machine's file systems keep case and Unicode forms apart, so the case rule is tested by
recording the probe's answer for the board (``coord.fast.fsfold.record``), and once on a real
case-folding directory (ext4 ``casefold``) where the kernel allows it. NFC is compared on
every file system, so the Unicode tests need no injected answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from conftest import Daemon, init_board_dir, run_cli
from coord import Board
from coord.errors import FilesReserved
from coord.fast import board_files, fsfold, holds, patterns
from test_guard_cli import guard
from test_path_spellings import allowed_by_every_face, refused_by_every_face

CASE_FOLDING = {"case_insensitive": True, "unicode_normalising": True}
CASE_KEEPING = {"case_insensitive": False, "unicode_normalising": False}
NFC = "caf\u00e9.py"  # é as one code point
NFD = "cafe\u0301.py"  # e + combining acute: what macOS's HFS+ hands out


def board_on(tmp_path: Path, answer: dict[str, bool]) -> Path:
    """A board whose file system the probe found to be as ``answer`` says."""
    board_dir = init_board_dir(tmp_path)
    fsfold.record(board_dir, answer)
    return board_dir


def reserve(board_dir: Path, pattern: str, agent: str) -> None:
    with closing(Board.open(board_dir)) as board:
        board.reserve([pattern], agent=agent)


def refused(board_dir: Path, pattern: str, agent: str, holder: str) -> None:
    with closing(Board.open(board_dir)) as board:
        with pytest.raises(FilesReserved, match=f"held by {holder}"):
            board.reserve([pattern], agent=agent)
        assert {r.agent for r in board.reservations()} == {holder}  # board unchanged


# --- the probe ------------------------------------------------------------------------------


def test_the_probe_finds_this_file_system_keeps_case_and_forms_apart(tmp_path: Path) -> None:
    assert fsfold.probe(tmp_path) == CASE_KEEPING
    assert os.listdir(tmp_path) == []  # the probe's file is gone


def test_coord_init_records_the_file_system(tmp_path: Path) -> None:
    result = run_cli("init", board_dir=tmp_path / ".coord", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    kept = json.loads((tmp_path / ".coord" / fsfold.FS_FILENAME).read_text())
    assert kept == CASE_KEEPING


def test_daemon_start_probes_again(tmp_path: Path) -> None:
    """A board moved to another file system is probed again when its daemon starts."""
    board_dir = board_on(tmp_path, CASE_FOLDING)
    daemon = Daemon(board_dir).start()
    try:
        assert fsfold.recorded(board_dir) == CASE_KEEPING
    finally:
        daemon.stop()


def test_without_a_record_case_is_folded(tmp_path: Path) -> None:
    """No answer to trust (an older board, a broken record): refuse rather than let through."""
    assert fsfold.board_fold(tmp_path) is fsfold.caseless
    (tmp_path / fsfold.FS_FILENAME).write_text('{"case_insensitive": "no"}')
    assert fsfold.board_fold(tmp_path) is fsfold.caseless
    fsfold.record(tmp_path, CASE_KEEPING)
    assert fsfold.board_fold(tmp_path) is fsfold.nfc


def test_the_case_fold_keeps_each_character_one_character() -> None:
    """A glob's ``?`` stands for one character of the folded name too."""
    assert fsfold.caseless("STRASSE") == "strasse" and fsfold.caseless("Straße") == "straße"
    assert fsfold.caseless("\u0131") == fsfold.caseless("i")  # NTFS: both upcase to I
    assert fsfold.caseless(NFD.upper()) == NFC
    assert patterns.covers("stra?e.py", "STRAßE.py", fold=fsfold.caseless)


# --- the rule: patterns -----------------------------------------------------------------------


def test_case_meets_only_where_the_file_system_folds_it() -> None:
    assert patterns.overlaps("SRC/A.py", "src/a.py", is_dir=lambda _: False, fold=fsfold.caseless)
    assert patterns.covers("src/*.PY", "src/a.py", fold=fsfold.caseless)
    assert not patterns.overlaps("SRC/A.py", "src/a.py", is_dir=lambda _: False)
    assert not patterns.covers("src/*.PY", "src/a.py")


def test_unicode_forms_meet_on_every_file_system() -> None:
    assert patterns.covers(NFC, NFD) and patterns.covers(NFD, NFC)
    assert patterns.overlaps(f"src/{NFD}", "src/caf?.py", is_dir=lambda _: False)


# --- the board --------------------------------------------------------------------------------


@pytest.mark.parametrize("second", ["SRC/A.py", "src/A.PY", "src/*.PY", "SRC/**"])
def test_case_spellings_of_a_held_file_are_refused_where_case_folds(
    tmp_path: Path, second: str
) -> None:
    board_dir = board_on(tmp_path, CASE_FOLDING)
    reserve(board_dir, "src/a.py", "alice")
    refused(board_dir, second, "bob", "alice")


def test_case_spellings_are_independent_where_case_is_kept(tmp_path: Path) -> None:
    """Agents touching different files run side by side: ``SRC/A.py`` is its own file here."""
    board_dir = board_on(tmp_path, CASE_KEEPING)
    reserve(board_dir, "src/a.py", "alice")
    reserve(board_dir, "SRC/A.py", "bob")
    reserve(board_dir, "src/*.PY", "carol")
    result = guard(board_dir, "SRC/A.py", agent="carol")
    assert result.returncode == 2 and "held by bob" in result.stderr  # only bob, not alice
    allowed_by_every_face(tmp_path, board_dir, "SRC/B.py")


@pytest.mark.parametrize("answer", [CASE_FOLDING, CASE_KEEPING], ids=["folding", "keeping"])
@pytest.mark.parametrize(("first", "second"), [(NFC, NFD), (NFD, NFC)], ids=["nfc", "nfd"])
def test_unicode_spellings_of_a_held_file_are_refused(
    tmp_path: Path, answer: dict[str, bool], first: str, second: str
) -> None:
    board_dir = board_on(tmp_path, answer)
    reserve(board_dir, f"docs/{first}", "alice")
    refused(board_dir, f"docs/{second}", "bob", "alice")
    refused(board_dir, f"Docs/{second}" if answer["case_insensitive"] else "docs/*", "bob", "alice")


def test_claim_next_skips_an_item_whose_file_is_held_under_another_case(tmp_path: Path) -> None:
    board_dir = board_on(tmp_path, CASE_FOLDING)
    with closing(Board.open(board_dir)) as board:
        board.add("edit A", created_by="lead", files=["SRC/A.py"])
        free = board.add("edit B", created_by="lead", files=["src/b.py"])
        board.reserve(["src/a.py"], agent="alice")
        claim = board.claim_next(agent="bob")
        assert claim.item.id == free.id
        who = board.who("SRC/A.py", agent="bob")
        assert (who["path"], who["may_edit"]) == ("SRC/A.py", False)
        assert [h["agent"] for h in who["holders"]] == ["alice"]


def test_a_batch_claims_one_of_two_items_naming_one_file_in_two_cases(tmp_path: Path) -> None:
    board_dir = board_on(tmp_path, CASE_FOLDING)
    with closing(Board.open(board_dir)) as board:
        board.add("edit A", created_by="lead", files=["SRC/A.py"])
        board.add("edit a", created_by="lead", files=["src/a.py"])
        board.add("edit b", created_by="lead", files=["src/b.py"])
        claims = board.claim_batch(3, agent="bob")
        assert [c.item.title for c in claims] == ["edit A", "edit b"]


def test_renewing_and_freeing_by_another_spelling(tmp_path: Path) -> None:
    board_dir = board_on(tmp_path, CASE_FOLDING)
    with closing(Board.open(board_dir)) as board:
        board.reserve(["src/a.py"], agent="alice")
        board.reserve(["SRC/A.py"], agent="alice")  # the same file: renewed, not doubled
        assert [r.pattern for r in board.reservations()] == ["SRC/A.py"]
        assert board.unreserve(["src/A.py"], agent="alice") == ["SRC/A.py"]
        assert board.reservations() == []


# --- the guard, through every face -------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "held", "edited"),
    [
        (CASE_FOLDING, "src/a.py", "SRC/A.py"),
        (CASE_FOLDING, "src/a.py", "Src/a.PY"),
        (CASE_FOLDING, "src/*.PY", "src/a.py"),
        (CASE_KEEPING, NFC, NFD),
        (CASE_KEEPING, f"docs/{NFD}", f"docs/{NFC}"),
    ],
    ids=["upper", "mixed", "glob", "nfd-of-nfc", "nfc-of-nfd"],
)
def test_the_guard_refuses_another_spelling_of_a_held_file(
    board_dir: Path, answer: dict[str, bool], held: str, edited: str
) -> None:
    """``coord guard``, every client's edit tool and every shell tool."""
    fsfold.record(board_dir, answer)
    reserve(board_dir, held, "alice")
    refused_by_every_face(board_dir.parent, board_dir, edited, "alice")


def test_a_board_without_a_record_folds_case_in_the_guard(board_dir: Path) -> None:
    (board_dir / fsfold.FS_FILENAME).unlink(missing_ok=True)
    reserve(board_dir, "src/a.py", "alice")
    assert guard(board_dir, "SRC/A.py", agent="bob").returncode == 2


@pytest.mark.parametrize("held", ["src/Held.py", f"src/{NFD}"], ids=["case", "nfd"])
def test_an_existing_hard_link_to_a_held_file_of_any_spelling_is_refused(
    board_dir: Path, held: str
) -> None:
    """The guard finds a held file's other names by the literal holds; a hold whose stored
    search prefix is folded (mixed case, not ASCII) is one of them."""
    fsfold.record(board_dir, CASE_KEEPING)
    repo = board_dir.parent
    (repo / "src").mkdir()
    (repo / held).write_text("held\n")
    os.link(repo / held, repo / "b.py")
    reserve(board_dir, held, "alice")
    result = guard(board_dir, "b.py", agent="bob")
    assert result.returncode == 2 and "held by alice" in result.stderr, result.stderr


# --- the stored prefix -------------------------------------------------------------------------


def test_a_hold_stored_before_migration_8_is_found_by_every_spelling(tmp_path: Path) -> None:
    """Migration 8 folds the indexed prefix of the holds it finds, as the search now asks."""
    board_dir = board_on(tmp_path, CASE_FOLDING)
    reserve(board_dir, "SRC/Lib/a.py", "alice")
    reserve(board_dir, f"Docs/{NFD}", "alice")
    db = board_files.db_path(board_dir)
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:  # as release 7 stored them
        conn.execute("UPDATE reservations SET prefix = pattern")
        conn.execute("DELETE FROM schema_migrations WHERE version = 8")
    conn.close()
    refused(board_dir, "src/lib/A.py", "bob", "alice")
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        prefixes = sorted(row[0] for row in conn.execute("SELECT prefix FROM reservations"))
    conn.close()
    assert prefixes == ["", "src/lib/a.py"]  # non-ASCII: read by every search
    refused(board_dir, f"docs/{NFC}", "bob", "alice")


def test_the_guard_reads_a_board_its_old_daemon_has_not_migrated(board_dir: Path) -> None:
    """Upgraded while the old daemon runs: the guard reads the board read-only, prefixes as
    release 7 wrote them, and still finds a hold by its own spelling."""
    fsfold.record(board_dir, CASE_KEEPING)
    reserve(board_dir, "Src/Main.py", "alice")
    with contextlib.closing(sqlite3.connect(board_files.db_path(board_dir))) as conn, conn:
        conn.execute("UPDATE reservations SET prefix = pattern")
        conn.execute("DELETE FROM schema_migrations WHERE version = 8")
    conn.close()
    result = guard(board_dir, "Src/Main.py", agent="bob")
    assert result.returncode == 2 and "held by alice" in result.stderr, result.stderr


def test_a_storage_slice_of_mixed_case_files_still_searches_the_prefix_index(
    tmp_path: Path,
) -> None:
    """Each mixed-case pattern asks for two prefixes; a slice of them stays within what one
    query narrows by the index (past it, a query reads every live hold)."""
    board_dir = init_board_dir(tmp_path)
    step = holds.MAX_NEAR_PREFIXES // 2
    query = holds.select_live(1.0, near=[f"src/Components/M{n}.tsx" for n in range(step)])
    assert query is not None
    with contextlib.closing(sqlite3.connect(board_files.db_path(board_dir))) as conn, conn:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query[0], query[1])]
    conn.close()
    assert not any(row.startswith("SCAN reservations") for row in plan), plan


# --- real HTTP: a daemon and two agents ----------------------------------------------------


def test_two_agents_over_http_cannot_both_hold_two_forms_of_one_name(board_dir: Path) -> None:
    daemon = Daemon(board_dir).start()
    try:
        first = run_cli("reserve", NFC, board_dir=board_dir, agent="alice")
        assert first.returncode == 0, first.stderr
        second = run_cli("reserve", NFD, board_dir=board_dir, agent="bob")
        assert second.returncode == 3, (second.stdout, second.stderr)
        assert "held by alice" in second.stderr and "Traceback" not in second.stderr
        listed = run_cli("reservations", "--json", board_dir=board_dir, agent="bob")
        held = json.loads(listed.stdout)["reservations"]
        assert [(r["agent"], r["pattern"]) for r in held] == [("alice", NFC)]
        assert guard(board_dir, NFD, agent="bob").returncode == 2
    finally:
        daemon.stop()


# --- a real case-folding directory -------------------------------------------------------------


def test_the_probe_on_a_real_case_folding_directory(tmp_path: Path) -> None:
    """ext4's ``casefold`` on a loop-mounted image: needs root, a loop device, and a kernel
    built with CONFIG_UNICODE. Skipped, with what refused, where any of them is missing."""
    if os.geteuid() != 0 or not all(map(shutil.which, ("mkfs.ext4", "mount", "chattr"))):
        pytest.skip("a casefold mount needs root, mkfs.ext4, mount and chattr")
    image, mount = tmp_path / "casefold.img", tmp_path / "mnt"
    mount.mkdir()
    with image.open("wb") as out:
        out.truncate(8 * 1024 * 1024)
    made = _run("mkfs.ext4", "-q", "-F", "-O", "casefold", str(image))
    if made.returncode != 0:
        pytest.skip(f"mkfs.ext4 -O casefold refused: {made.stderr.strip()}")
    mounted = _run("mount", "-o", "loop", str(image), str(mount))
    if mounted.returncode != 0:
        reason = _kernel_says() or mounted.stderr.strip()
        pytest.skip(f"the kernel cannot mount a casefold ext4 image: {reason}")
    try:
        folding = mount / "repo"
        folding.mkdir()
        flagged = _run("chattr", "+F", str(folding))
        if flagged.returncode != 0:
            pytest.skip(f"chattr +F refused: {flagged.stderr.strip()}")
        board_dir = init_board_dir(folding)
        recorded = fsfold.record(board_dir)
        assert recorded is not None and recorded["case_insensitive"] is True
        reserve(board_dir, "src/a.py", "alice")
        refused(board_dir, "SRC/A.py", "bob", "alice")
        assert guard(board_dir, "SRC/A.py", agent="bob").returncode == 2
    finally:
        _run("umount", str(mount))


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def _kernel_says() -> str:
    """The kernel's last line about ext4, which says why a mount failed (when readable)."""
    log = _run("dmesg")
    lines = [line for line in log.stdout.splitlines() if "EXT4-fs" in line]
    return lines[-1].split("]", 1)[-1].strip() if lines else ""
