"""`coord spec` end to end: a real git repository, a real daemon, the real CLI as processes.

import → next → done (a failing check, then a passing one, then an override) → status →
sync, and escalate → answer, on a design document in coord's dialect with CRLF line ends.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import Daemon, run_cli

PLAN = (
    "# Plan\r\n"
    "\r\n"
    "Escalate to: @lead on chat.\r\n"
    "\r\n"
    "### Track A — core\r\n"
    "\r\n"
    "- [x] **A1 — base.** Dependencies: none.\r\n"
    "  - Files: `src/a1.py`\r\n"
    "- [ ] **A2 — feature.** Dependencies: A1.\r\n"
    "  - Files: `src/a2.py`\r\n"
    "  - Checks: `test -f src/a2.py`\r\n"
    "- [ ] **A3 — more.** Dependencies: A1.\r\n"
    "  - Files: `src/a3.py`\r\n"
    "  - Checks: `test -f src/a3.py`, `true`\r\n"
    "- [ ] **B1 — last.** Dependencies: A2, A3.\r\n"
    "  - Files: `src/b1.py`\r\n"
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def coord(daemon: Daemon, *args: str, agent: str | None = None) -> Any:
    result = run_cli(*args, "--json", board_dir=daemon.board_dir, agent=agent, cwd=repo(daemon))
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


def repo(daemon: Daemon) -> Path:
    return daemon.board_dir.parent


def make_repo(daemon: Daemon) -> Path:
    root = repo(daemon)
    git(root, "init", "-q")
    (root / "docs").mkdir()
    (root / "docs" / "plan.md").write_bytes(PLAN.encode())
    (root / "src").mkdir()
    (root / ".gitignore").write_text(".coord/\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "plan")
    return root


def test_import_next_done_with_checks_and_sync(daemon: Daemon) -> None:
    root = make_repo(daemon)
    code, before, _ = coord(daemon, "spec", "status", "docs/plan.md")
    assert code == 0 and before["imported"] is False
    assert before["claimable"] == ["A2", "A3"]

    code, imported, _ = coord(daemon, "spec", "import", "docs/plan.md", agent="lead")
    assert code == 0, imported
    assert imported["created"] == ["A1", "A2", "A3", "B1"]
    assert imported["updated"] == imported["removed"] == []
    assert imported["closed"] == ["A1"]

    code, claim, _ = coord(daemon, "next", agent="w1")
    assert code == 0 and claim["item"]["key"] == "A2"

    # the check fails in this working tree: done is refused, the failed run is kept
    code, refused, _ = coord(daemon, "done", "A2", agent="w1")
    assert code == 3 and refused["error"] == "checks_failed"
    assert refused["failed"] == ["test -f src/a2.py"]
    _, shown, _ = coord(daemon, "show", "A2")
    assert shown["state"] == "claimed" and shown["evidence"]["passed"] is False

    (root / "src" / "a2.py").write_text("print('a2')\n")
    code, done, _ = coord(daemon, "done", "A2", agent="w1")
    assert code == 0 and done["state"] == "done"
    _, shown, _ = coord(daemon, "show", "A2")
    run = shown["evidence"]["runs"][0]
    assert (run["command"], run["exit_code"]) == ("test -f src/a2.py", 0)
    assert run["head"] == git(root, "rev-parse", "HEAD")

    coord(daemon, "claim", "A3", agent="w2")
    code, no_reason, _ = coord(daemon, "done", "A3", "--skip-checks", agent="w2")
    assert code == 2 and "--reason" in no_reason["message"]
    code, skipped, _ = coord(
        daemon, "done", "A3", "--skip-checks", "--reason", "tested by hand", agent="w2"
    )
    assert code == 0 and skipped["state"] == "done"
    _, shown, _ = coord(daemon, "show", "A3")
    assert shown["evidence"]["skipped"] == "tested by hand"
    assert shown["history"][-1]["details"]["checks_skipped"] == "tested by hand"

    code, status, _ = coord(daemon, "spec", "status", "docs/plan.md")
    assert status["imported"] is True and status["claimable"] == ["B1"]
    by_id = {p["id"]: p for p in status["packages"]}
    assert by_id["A2"]["done"] is True and by_id["A2"]["board"]["state"] == "done"

    code, shown_edit, _ = coord(daemon, "spec", "sync", "docs/plan.md", "--dry-run")
    assert code == 0 and shown_edit["ticked"] == ["A2", "A3"]
    removed = [ln for ln in shown_edit["diff"].splitlines() if ln.startswith("-- [ ]")]
    added = [ln for ln in shown_edit["diff"].splitlines() if ln.startswith("+- [x]")]
    assert [ln[9:11] for ln in removed] == [ln[9:11] for ln in added] == ["A2", "A3"]
    assert (root / "docs" / "plan.md").read_bytes() == PLAN.encode()  # nothing written
    code, synced, _ = coord(daemon, "spec", "sync", "docs/plan.md")
    assert code == 0 and synced["ticked"] == ["A2", "A3"]
    expected = PLAN.replace("- [ ] **A2", "- [x] **A2").replace("- [ ] **A3", "- [x] **A3")
    assert (root / "docs" / "plan.md").read_bytes() == expected.encode()  # CRLF kept
    diff = git(root, "diff", "--numstat")
    assert diff == "2\t2\tdocs/plan.md"
    _, again, _ = coord(daemon, "spec", "sync", "docs/plan.md")
    assert again["ticked"] == []

    code, reimported, _ = coord(daemon, "spec", "import", "docs/plan.md")
    assert reimported["unchanged"] == ["A1", "A2", "A3", "B1"] and reimported["closed"] == []


def test_escalate_and_answer_through_the_cli(daemon: Daemon) -> None:
    make_repo(daemon)
    coord(daemon, "spec", "import", "docs/plan.md")
    coord(daemon, "claim", "A2", agent="w1")
    code, waiting, _ = coord(daemon, "escalate", "A2", "which", "API?", agent="w1")
    assert code == 0 and waiting["state"] == "needs_human"
    assert waiting["escalate_to"] == "@lead on chat"
    _, listed, _ = coord(daemon, "ls", "--needs-human")
    assert [i["key"] for i in listed["items"]] == ["A2"]
    code, taken, _ = coord(daemon, "claim", "A2", agent="w2")
    assert code == 3 and taken["error"] == "already_claimed"
    coord(daemon, "inbox", agent="w1")
    code, answered, _ = coord(daemon, "answer", "A2", "use", "v2", agent="lead")
    assert code == 0 and answered["state"] == "claimed" and answered["claimed_by"] == "w1"
    _, inbox, _ = coord(daemon, "inbox", agent="w1")
    assert [(e["kind"], e["details"]["answer"]) for e in inbox["events"]] == [
        ("answered", "use v2")
    ]


def test_lint_exit_codes_and_refused_import_changes_nothing(daemon: Daemon) -> None:
    root = make_repo(daemon)
    bad = root / "docs" / "bad.md"
    bad.write_text(
        "- [ ] **X1 — one.** Dependencies: X9.\n"
        "- [ ] **X2 — two.** Dependencies: none.\n"
        "  - Files: `src/x2.py`\n"
    )
    code, lint, _ = coord(daemon, "spec", "lint", "docs/bad.md")
    assert code == 1
    assert {(p["code"], p["package"], p["line"]) for p in lint["problems"]} == {
        ("unknown_dependency", "X1", 1),
        ("no_files", "X1", 1),
    }
    code, clean, _ = coord(daemon, "spec", "lint", "docs/plan.md")
    assert code == 0 and clean == {"problems": []}
    _, before, _ = coord(daemon, "ls", "--all")
    code, refused, _ = coord(daemon, "spec", "import", "docs/bad.md")
    assert code == 2 and "docs/bad.md:1" in refused["message"]
    _, after, _ = coord(daemon, "ls", "--all")
    assert after == before


def test_the_real_document_imports_and_the_board_agrees_with_its_protocol(daemon: Daemon) -> None:
    root = make_repo(daemon)
    fixture = Path(__file__).parent / "specs" / "harness-v2.md"
    (root / "docs" / "harness-v2.md").write_bytes(fixture.read_bytes())
    _, alone, _ = coord(daemon, "spec", "status", "docs/harness-v2.md")
    assert alone["imported"] is False and alone["claimable"] == ["R3", "I1", "I2", "I3"]

    code, imported, _ = coord(daemon, "spec", "import", "docs/harness-v2.md", "--adopt")
    assert code == 0, imported
    assert len(imported["created"]) == 41
    assert sorted(imported["closed"]) == sorted(
        ["F0", "QA1", "QA2", "R0", "R1", "R2", "J0", "J1", "J2", "I0"]
    )
    adopted = {(a.get("package") or a.get("track"), a["user"]) for a in imported["adopted"]}
    assert adopted == {("L1", "cristinaponcela"), ("J", "davidbrai")}
    # the board now enforces what the document asked of people: the same four are ready
    _, ready, _ = coord(daemon, "ls", "--ready")
    assert sorted(i["key"] for i in ready["items"]) == ["I1", "I2", "I3", "R3"]
    _, status, _ = coord(daemon, "spec", "status", "docs/harness-v2.md")
    assert status["imported"] is True and status["claimable"] == ["R3", "I1", "I2", "I3"]
    code, refused, _ = coord(daemon, "claim", "J3", agent="intruder")
    # the document reserves track J for davidbrai (who also holds its files): refused as
    # `coord git reserve` refuses it, naming the holder
    assert code == 3 and refused["error"] == "already_claimed", refused
    assert refused["reason"] == "reserved" and refused["holder"] == "davidbrai"
    code, refused, _ = coord(daemon, "claim", "L1", agent="intruder")
    assert code == 3 and refused["error"] == "already_claimed"


def test_status_of_a_prefixed_import_sees_the_board_with_or_without_the_prefix(
    daemon: Daemon,
) -> None:
    make_repo(daemon)
    code, imported, _ = coord(daemon, "spec", "import", "docs/plan.md", "--prefix", "web.")
    assert code == 0 and imported["created"] == ["A1", "A2", "A3", "B1"]
    coord(daemon, "claim", "web.A2", agent="other")
    code, given, _ = coord(daemon, "spec", "status", "docs/plan.md", "--prefix", "web.")
    assert code == 0 and given["claimable"] == ["A3"]
    # without --prefix the prefix is read off the board's keys: A2 is still seen as held
    code, found, _ = coord(daemon, "spec", "status", "docs/plan.md")
    assert code == 0 and found == given
    by_id = {p["id"]: p for p in found["packages"]}
    assert by_id["A2"]["board"]["claimed_by"] == "other"


def test_the_import_prefix_is_read_off_the_keys() -> None:
    from coord.client.specs import imported_prefix

    ids = {"A1", "A11", "B2"}
    assert imported_prefix(["A1", "A11", "B2"], ids) == ""
    assert imported_prefix(["web.A1", "web.A11", "web.B2"], ids) == "web."
    # "web.A1" + "1" would be a key too if "1" were a package; most keys decide
    assert imported_prefix(["web.A1", "web.A11"], ids | {"1"}) == "web."
    assert imported_prefix(["other"], ids) == ""


def _real_document(daemon: Daemon) -> Path:
    root = make_repo(daemon)
    fixture = Path(__file__).parent / "specs" / "harness-v2.md"
    (root / "docs" / "harness-v2.md").write_bytes(fixture.read_bytes())
    return root


def test_a_plain_import_hands_out_no_package_the_document_reserves(daemon: Daemon) -> None:
    _real_document(daemon)
    code, imported, _ = coord(daemon, "spec", "import", "docs/harness-v2.md", agent="lead")
    assert code == 0 and imported["adopted"] == [], imported
    # L1 has its own `**Reserved:**` line; J3's track is "in progress and reserved"
    _, ready, _ = coord(daemon, "ls", "--ready")
    _, status, _ = coord(daemon, "spec", "status", "docs/harness-v2.md")
    assert sorted(i["key"] for i in ready["items"]) == sorted(status["claimable"])
    assert status["claimable"] == ["R3", "I1", "I2", "I3"]
    by_id = {p["id"]: p for p in status["packages"]}
    assert by_id["L1"]["board"]["ready"] is False and by_id["J3"]["board"]["ready"] is False
    code, handed, _ = coord(daemon, "next", "--count", "10", agent="w1")
    assert code == 0, handed
    assert sorted(i["item"]["key"] for i in handed["items"]) == ["I1", "I2", "I3", "R3"]
    code, _, _ = coord(daemon, "next", agent="w2")
    assert code == 4  # nothing else is ready: L1 and J3 wait for their reservations


def test_a_reimport_without_the_reservation_line_frees_the_package(daemon: Daemon) -> None:
    root = _real_document(daemon)
    coord(daemon, "spec", "import", "docs/harness-v2.md", agent="lead")
    doc = root / "docs" / "harness-v2.md"
    text = doc.read_text()
    line = next(x for x in text.splitlines() if x.startswith("**Reserved: L1"))
    doc.write_text(text.replace(line, ""))
    coord(daemon, "spec", "import", "docs/harness-v2.md", agent="lead")
    _, ready, _ = coord(daemon, "ls", "--ready")
    _, status, _ = coord(daemon, "spec", "status", "docs/harness-v2.md")
    assert "L1" in status["claimable"]
    assert sorted(i["key"] for i in ready["items"]) == sorted(status["claimable"])


def test_reimporting_the_unchanged_real_document_changes_nothing(daemon: Daemon) -> None:
    _real_document(daemon)
    code, first, _ = coord(daemon, "spec", "import", "docs/harness-v2.md", agent="lead")
    assert code == 0 and len(first["created"]) == 41
    _, log_before, _ = coord(daemon, "log")
    for _ in range(2):
        code, again, _ = coord(daemon, "spec", "import", "docs/harness-v2.md", agent="lead")
        assert code == 0
        assert again["updated"] == [] and again["created"] == []
        assert len(again["unchanged"]) == 41
    _, log_after, _ = coord(daemon, "log")
    assert log_after == log_before


NEW_FILES = """# Plan

- [ ] **N1 — parser.** Dependencies: none.
  - Files: `parser.py`
- [ ] **N2 — printer.** Dependencies: none.
  - Files: `printer.py`
"""


def test_two_packages_creating_new_root_files_run_side_by_side(daemon: Daemon) -> None:
    root = make_repo(daemon)
    (root / "docs" / "new.md").write_text(NEW_FILES)
    code, imported, _ = coord(daemon, "spec", "import", "docs/new.md", agent="lead")
    assert code == 0 and imported["created"] == ["N1", "N2"], imported
    _, shown, _ = coord(daemon, "show", "N1")
    assert shown["files"] == ["parser.py"]  # the root file, not `**/parser.py`
    code, first, _ = coord(daemon, "next", agent="w1")
    assert code == 0 and first["item"]["key"] == "N1"
    code, second, _ = coord(daemon, "next", agent="w2")
    assert code == 0 and second["item"]["key"] == "N2", second
    _, status, _ = coord(daemon, "spec", "status", "docs/new.md")
    assert status["claimable"] == []  # both taken, neither blocked by the other's files


def test_lint_says_where_a_bare_name_now_means_a_root_file(daemon: Daemon) -> None:
    root = make_repo(daemon)
    (root / "src" / "parser.py").write_text("")
    (root / "docs" / "new.md").write_text(NEW_FILES)
    code, found, _ = coord(daemon, "spec", "lint", "docs/new.md")
    assert code == 1
    assert [(p["code"], p["line"]) for p in found["problems"]] == [("bare_name_at_root", 4)]
    assert "write `src/parser.py`" in found["problems"][0]["message"].casefold()
    result = run_cli("spec", "lint", "docs/new.md", board_dir=daemon.board_dir, cwd=root)
    assert result.stdout.startswith("docs/new.md:4: bare_name_at_root: `parser.py`")


HELD_FILES = """# Plan

### Track T — tables

**In progress and reserved: @tess.**

These packages own `src/tables/`.

- [ ] **T1 — schema.** Dependencies: none.

### Track K — keys

- [ ] **K1 — key table.** Dependencies: none.
  - Files: `src/tables/keys.py`
- [ ] **K2 — elsewhere.** Dependencies: none.
  - Files: `src/keys.py`
"""


def test_a_package_whose_files_the_document_holds_is_not_ready_after_a_plain_import(
    daemon: Daemon,
) -> None:
    root = make_repo(daemon)
    (root / "docs" / "held.md").write_text(HELD_FILES)
    coord(daemon, "spec", "import", "docs/held.md", agent="lead")
    _, ready, _ = coord(daemon, "ls", "--ready")
    _, status, _ = coord(daemon, "spec", "status", "docs/held.md")
    assert status["claimable"] == ["K2"]  # T1 is tess's; K1's files lie in track T's
    assert sorted(i["key"] for i in ready["items"]) == ["K2"]
    code, refused, _ = coord(daemon, "claim", "K1", agent="w1")
    assert code == 3 and refused["holder"] == "tess"


KNOWN_FILE = """# Plan

**Reserved: M1 by @mia.** Other agents must not pick M1.

- [ ] **M1 — build.** Dependencies: none.
  - Files: `tools/build.sh`
- [ ] **D1 — docs.** Dependencies: none.
  - Files: `**/*.md`
"""


def test_the_document_and_the_board_read_the_repository_the_same_way(daemon: Daemon) -> None:
    """`tools/build.sh` is a file of the working tree, so it holds nothing beneath it and D1's
    `**/*.md` is free beside it. The board reads its tree; `spec status` and the import's
    `reserved_for` must read the same tree, not the unknown-tree reading (any literal might be
    a directory), or the document keeps D1 from everyone while the board's rule would not."""
    root = make_repo(daemon)
    (root / "tools").mkdir()
    (root / "tools" / "build.sh").write_text("make\n")
    (root / "docs" / "known.md").write_text(KNOWN_FILE)
    code, _, _ = coord(daemon, "spec", "import", "docs/known.md", agent="lead")
    assert code == 0
    _, status, _ = coord(daemon, "spec", "status", "docs/known.md")
    _, ready, _ = coord(daemon, "ls", "--ready")
    assert status["claimable"] == ["D1"], status["packages"]
    assert [i["key"] for i in ready["items"]] == ["D1"]


RESERVED = """# Plan

Escalate to: @lead on chat.

### Track A — core

**Reserved: A2 by @alice.** Other agents must not pick A2.

- [x] **A1 — base.** Dependencies: none.
  - Files: `src/a1.py`
- [ ] **A2 — feature.** Dependencies: A1.
  - Files: `src/a2.py`

### Track B — side

**In progress and reserved: @bob.**

- [ ] **B1 — side work.** Dependencies: none.
  - Files: `src/b1.py`
"""


def text_of(daemon: Daemon, *args: str, agent: str | None = None) -> Any:
    result = run_cli(*args, board_dir=daemon.board_dir, agent=agent, cwd=repo(daemon))
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_a_package_the_document_reserves_is_shown_as_reserved(daemon: Daemon) -> None:
    """`ls`, `show` and `next`'s refusal say what the board knows: the document keeps A2 for
    alice (its line) and B1 for bob (its track's marker). A2 once read as plain `pending`."""
    root = make_repo(daemon)
    (root / "docs" / "reserved.md").write_text(RESERVED)
    code, _, _ = coord(daemon, "spec", "import", "docs/reserved.md", agent="lead")
    assert code == 0
    rows = {
        line.split()[1]: line.split()
        for line in text_of(daemon, "ls").stdout.splitlines()[1:]
        if len(line.split()) > 1
    }
    assert rows["A2"][4:6] == ["reserved", "alice"], rows
    assert rows["B1"][4:6] == ["reserved", "bob"], rows

    shown = text_of(daemon, "show", "A2").stdout
    assert "reserved for alice in docs/reserved.md" in shown
    assert "escalate to @lead on chat" in shown
    assert "reserved for bob" in text_of(daemon, "show", "B1").stdout

    refused = text_of(daemon, "next", agent="w1")
    assert refused.returncode == 4
    assert "A2 for alice" in refused.stderr and "B1 for bob" in refused.stderr, refused.stderr
    code, as_json, _ = coord(daemon, "next", agent="w1")
    assert code == 4
    assert {(r["ref"], r["reserved_for"]) for r in as_json["reserved"]} == {
        ("A2", "alice"),
        ("B1", "bob"),
    }
    # for alice herself the refusal names the package she may claim by id
    mine = text_of(daemon, "next", agent="alice")
    assert mine.returncode == 4 and "yours to claim by id: A2" in mine.stderr, mine.stderr


def test_sync_says_which_reservation_lines_lint_will_refuse(daemon: Daemon) -> None:
    """Sync ticks A2's box and writes nothing else (the README: it never writes
    reservations), and names the `Reserved:` line left behind: exactly the lines `spec lint`
    then fails on (the oracle is lint itself, run on the synced document)."""
    root = make_repo(daemon)
    doc = root / "docs" / "reserved.md"
    doc.write_text(RESERVED)
    coord(daemon, "spec", "import", "docs/reserved.md", agent="lead")
    coord(daemon, "claim", "A2", agent="alice")
    code, _, _ = coord(daemon, "done", "A2", "--skip-checks", "--reason", "by hand", agent="alice")
    assert code == 0

    code, dry, _ = coord(daemon, "spec", "sync", "docs/reserved.md", "--dry-run")
    assert code == 0 and dry["ticked"] == ["A2"]
    assert [(r["package"], r["user"], r["line"]) for r in dry["reservations_left"]] == [
        ("A2", "alice", 7)
    ]
    assert doc.read_text() == RESERVED

    synced = text_of(daemon, "spec", "sync", "docs/reserved.md")
    assert synced.returncode == 0, synced.stderr
    assert doc.read_text() == RESERVED.replace("- [ ] **A2", "- [x] **A2")
    linted = text_of(daemon, "spec", "lint", "docs/reserved.md")
    assert linted.returncode == 1
    refused = [ln for ln in linted.stdout.splitlines() if "reservation_on_done" in ln]
    named = [ln for ln in synced.stdout.splitlines() if ln.startswith("  docs/reserved.md:")]
    assert [ln.split(":")[1] for ln in named] == [ln.split(":")[1] for ln in refused] == ["7"]
    assert "**Reserved: A2 by @alice.**" in named[0] and "remove" in synced.stdout

    code, again, _ = coord(daemon, "spec", "sync", "docs/reserved.md")
    assert again["ticked"] == [] and [r["line"] for r in again["reservations_left"]] == [7]
    doc.write_text(doc.read_text().replace(doc.read_text().splitlines()[6] + "\n", ""))
    code, clean, _ = coord(daemon, "spec", "sync", "docs/reserved.md")
    assert code == 0 and clean["reservations_left"] == []
    assert "left to remove" not in text_of(daemon, "spec", "sync", "docs/reserved.md").stdout


def test_the_log_and_the_feed_name_a_package_by_its_id_as_ls_does(daemon: Daemon) -> None:
    """Issue 25: `watch` said "claimed T3" beside "done #1". An event names its item the way
    `coord ls` does: the package id where it has one, in the text and as `item_key` in JSON."""
    make_repo(daemon)
    coord(daemon, "spec", "import", "docs/plan.md", agent="lead")
    code, claim, _ = coord(daemon, "claim", "A2", agent="w")
    assert code == 0, claim
    shown = run_cli("log", board_dir=daemon.board_dir, agent="w", cwd=repo(daemon))
    claimed = [line for line in shown.stdout.splitlines() if " claimed " in line]
    assert len(claimed) == 1 and " w claimed A2 until " in claimed[0], shown.stdout
    assert "#" not in claimed[0]
    code, log, _ = coord(daemon, "log", agent="w")
    keys = {(e["kind"], e["item_key"]) for e in log["events"] if e["item_id"] == claim["id"]}
    assert ("claimed", "A2") in keys and ("created", "A2") in keys
    # and `coord watch` names a dependency and a held file's item by package id too
    code, held, _ = coord(daemon, "reserve", "src/extra.py", "--item", "A2", agent="w")
    assert code == 0, held
    frame = run_cli("watch", "--once", board_dir=daemon.board_dir, agent="w", cwd=repo(daemon))
    assert frame.returncode == 0, frame.stderr
    assert "waits on A2 A3" in frame.stdout, frame.stdout
    held_row = next(line for line in frame.stdout.splitlines() if "src/extra.py" in line)
    assert " A2 " in held_row and "#" not in held_row, held_row
