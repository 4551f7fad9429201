"""coord.spec.parse: the real harness-v2 document, and small documents for each rule."""

from __future__ import annotations

import sys
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from coord.errors import InvalidInput
from coord.spec import edit
from coord.spec.document import DocReservation, SpecDocument
from coord.spec.parse import parse, parse_file
from coord.spec.protocol import claimable

SPECS = Path(__file__).resolve().parent / "specs"
FIXTURE = SPECS / "harness-v2.md"  # a real design document, kept byte for byte as it was given
# The document's SHA-256 when it was copied in: an edit to the fixture (an editor's trailing
# whitespace, a line-ending change) would quietly change what the tests below read.
FIXTURE_SHA256 = "812e582758b151e96d77ef2cf5416522be2e9b54627eee327ea5b30a0e132724"

# ---------------------------------------------------------------------------------------------
# the real document: every package, written down from reading section 20

AGENT = "packages/agent"
HARNESS = f"{AGENT}/src/harness"
AGENT_HARNESS = f"{HARNESS}/agent-harness.ts"
TEST_MATRIX = f"{AGENT}/docs/harness-v2-test-matrix.md"
JSONL = [f"{HARNESS}/session/jsonl/**", f"{AGENT}/test/harness/session/jsonl*.test.ts"]
AGENT_LOOP = f"{AGENT}/src/agent-loop.ts"
REDUCER = [f"{HARNESS}/reducer.ts", f"{AGENT}/test/harness/reducer.test.ts"]

# id: (line, done, dependencies, track, files, files_from_track)
EXPECTED: dict[str, tuple[int, bool, list[str], str, list[str], bool]] = {
    "F0": (
        3165,
        True,
        [],
        "F",
        [AGENT_HARNESS, f"{AGENT}/test/harness/agent-harness-scaffold.test.ts"],
        False,
    ),
    "QA1": (3200, True, [], "QA", [TEST_MATRIX], True),
    "QA2": (3204, True, ["QA1", "R0"], "QA", [TEST_MATRIX], True),
    "QA3": (3208, False, ["QA2", "J6", "O2"], "QA", [TEST_MATRIX], True),
    "R0": (
        3216,
        True,
        [],
        "R",
        [
            f"{HARNESS}/session/types.ts",
            f"{HARNESS}/session/session.ts",
            f"{HARNESS}/session/memory.ts",
        ],
        False,
    ),
    "R1": (3222, True, ["R0"], "R", REDUCER, False),
    "R2": (3227, True, ["R1"], "R", REDUCER, False),
    "R3": (3233, False, ["F0", "R2"], "R", [AGENT_HARNESS], False),
    "J0": (3244, True, ["R0"], "J", JSONL, True),  # its files bullet has no backticked path
    "J1": (3248, True, ["J0"], "J", JSONL, True),
    "J2": (3252, True, ["J1"], "J", JSONL, True),
    "J3": (3255, False, ["J2"], "J", JSONL, True),
    "J4": (3258, False, ["J3"], "J", JSONL, True),
    "J5": (3262, False, ["J4"], "J", JSONL, True),
    "J6": (3266, False, ["J5"], "J", JSONL, True),
    "I0": (
        3274,
        True,
        [],
        "I",
        [
            "packages/telemetry/src/index.ts",
            "packages/telemetry/src/memory.ts",
            "packages/telemetry/src/testing/",
            f"{HARNESS}/telemetry.ts",
            f"{AGENT}/src/index.ts",
            f"{AGENT}/scripts/generate-telemetry-docs.ts",
            f"{AGENT}/docs/telemetry-schema.md",
            # not agent-harness.ts: the bullet says "Do not edit `agent-harness.ts`"
        ],
        False,
    ),
    "I1": (
        3282,
        False,
        [],
        "I",
        [f"{HARNESS}/hooks.ts", f"{AGENT}/test/harness/hooks.test.ts"],
        False,
    ),
    "I2": (
        3286,
        False,
        [],
        "I",
        [f"{HARNESS}/events.ts", f"{AGENT}/test/harness/events.test.ts"],
        False,
    ),
    "I3": (3290, False, ["R2"], "I", [f"{HARNESS}/lane-runtime.ts"], False),
    "I4": (3294, False, ["I0", "I1", "I3", "L3"], "I", [f"{HARNESS}/effects.ts"], False),
    "I5": (3298, False, ["I4"], "I", [f"{HARNESS}/gated-effects.ts"], False),
    "L1": (3309, False, ["I0"], "L", [AGENT_LOOP], True),
    "L2": (3312, False, ["L1"], "L", [AGENT_LOOP], True),
    "L3": (3315, False, ["L2"], "L", [AGENT_LOOP], True),
    "H0": (3323, False, ["R3", "I2", "I5"], "H", [], False),
    "H1": (3326, False, ["H0", "L3", "I1"], "H", [], False),
    "H2": (3330, False, ["H1"], "H", [], False),
    "H3": (3333, False, ["H2"], "H", [], False),
    "H4": (3336, False, ["H3"], "H", [], False),
    "H5": (3339, False, ["H4"], "H", [], False),
    "H6": (3342, False, ["H5"], "H", [], False),
    "H7": (3345, False, ["H6"], "H", [], False),
    "H8": (3348, False, ["H7"], "H", [], False),
    "C1": (3357, False, ["H8"], "C/N", [AGENT_HARNESS], True),
    "C2": (3360, False, ["C1", "H4"], "C/N", [AGENT_HARNESS], True),
    "C3": (3363, False, ["C2", "H2"], "C/N", [AGENT_HARNESS], True),
    "N1": (3366, False, ["C3"], "C/N", [AGENT_HARNESS], True),
    "O1": (3374, False, ["N1", "I2"], "O", [], False),
    "O2": (3377, False, ["O1", "I0"], "O", [], False),
    "O3": (3380, False, ["O2", "QA3"], "O", [], False),
    "O4": (3383, False, ["J6", "O3"], "O", [], False),
}


@pytest.fixture(scope="module")
def harness() -> SpecDocument:
    return parse_file(FIXTURE)


def test_the_fixture_is_the_document_as_it_was_given() -> None:
    import hashlib

    assert hashlib.sha256(FIXTURE.read_bytes()).hexdigest() == FIXTURE_SHA256


def test_every_package_of_the_document_in_order(harness: SpecDocument) -> None:
    assert [p.id for p in harness.packages] == list(EXPECTED)
    assert len(harness.packages) == 41


@pytest.mark.parametrize("package_id", list(EXPECTED))
def test_package_fields(harness: SpecDocument, package_id: str) -> None:
    line, done, dependencies, track, files, from_track = EXPECTED[package_id]
    package = harness.package(package_id)
    assert package is not None
    assert (package.line, package.done, package.dependencies) == (line, done, dependencies)
    assert (package.track, package.files, package.files_from_track) == (track, files, from_track)
    assert package.checks == []  # the document has no `Checks:` bullets


def test_titles_lose_their_period(harness: SpecDocument) -> None:
    titles = {p.id: p.title for p in harness.packages}
    assert titles["F0"] == "harden the scaffold"
    assert titles["I4"] == "automatic `Effects` implementation"
    assert titles["O4"] == "backend parity and final core audit"


def test_description_and_acceptance(harness: SpecDocument) -> None:
    f0 = harness.package("F0")
    assert f0 is not None
    assert f0.acceptance == (
        "a table-driven scaffold test covers every public method and proves no unfinished "
        "method reports plausible success."
    )
    lines = f0.description.split("\n")
    assert len(lines) == 2
    assert lines[0].startswith("- Inventory every public method.")
    assert lines[1].startswith("- Before R3, `AgentHarness.create()` may open only")
    assert "Primary files" not in f0.description and "Acceptance" not in f0.description

    i0 = harness.package("I0")
    assert i0 is not None
    # the files bullet's "Do not edit" clause is kept for the reader, as description
    assert i0.description.startswith("- Do not edit `agent-harness.ts`; its canonical context")
    assert "\n- Landed coverage: focused tests exercise" in i0.description
    assert i0.acceptance == ""


def test_reservations(harness: SpecDocument) -> None:
    assert harness.reservations == [
        DocReservation(user="davidbrai", line=3240, package=None, track="J"),
        DocReservation(user="cristinaponcela", line=3307, package="L1", track=None),
    ]  # the `**Reserved: <package-id> by @<username>.**` template on line 3154 is quoted


def test_tracks(harness: SpecDocument) -> None:
    tracks = {t.id: t for t in harness.tracks}
    assert [(t.id, t.line) for t in harness.tracks] == [
        ("F", 3163),
        ("QA", 3196),
        ("R", 3212),
        ("J", 3238),
        ("I", 3270),
        ("L", 3303),
        ("H", 3319),
        ("C/N", 3353),
        ("O", 3370),
    ]
    assert tracks["C/N"].title == "structural operations"
    assert tracks["QA"].files == [TEST_MATRIX]  # "The QA track alone owns ..."
    assert tracks["J"].files == JSONL  # not `JsonlSessionRepo`
    assert tracks["L"].files == [AGENT_LOOP]
    assert tracks["C/N"].files == [AGENT_HARNESS]  # `agent-harness.ts`: one path has that name
    assert tracks["R"].files == []  # "R3 is the first package ... that owns" is about R3
    assert tracks["I"].files == []  # "does not edit `agent-harness.ts`"
    assert tracks["O"].files == []  # "may not modify `packages/coding-agent/**`"
    assert tracks["F"].files == tracks["H"].files == []


def test_ownership_table(harness: SpecDocument) -> None:
    assert harness.ownership == [
        ("scaffold-safe `name`, `getLeafId`, record-free create, runtime settings", ["F0"]),
        ("`AgentHarness.create()` restore and `suspended` inventory", ["R3"]),
        ("`lane`, `createLane`, `lanes`, lane facades, lane-bound session reads", ["H0"]),
        ("resources, stream/retry/compaction settings, queue modes", ["F0"]),
        ("tool registry plus persisted active-tool selection", ["H4"]),
        ("`prompt`, `skill`, `promptFromTemplate`", ["H1"]),
        ("run `resume`, retries, terminal failure", ["H2"]),
        ("`steer`, `followUp`, `nextRun`, `cancelQueued`", ["H3"]),
        ("persisted model/thinking/active-tools, lane-view writes, `recordUsage`", ["H4"]),
        ("`abort`, `waitForIdle`, `runWhenIdle`, close settlement", ["H5"]),
        ("live tools and tool events", ["H6"]),
        ("tool recovery through `resume`", ["H7"]),
        ("deferred-handle `resume` and cancellation", ["H8"]),
        ("`compact` and compaction resume", ["C1", "C2", "C3"]),
        ("`navigateTree` and navigation resume", ["N1"]),
        ("`peekAction`, `executeAction`, `runToCompletion` primitives/integration", ["I5", "H0"]),
        ("hooks/events registration primitives and harness wiring", ["I1", "I2", "H0"]),
        ("`watch`, `watchSession`, complete snapshots", ["O1"]),
    ]  # the telemetry table ("owner / method") names no packages and is not read


def test_merge_orders(harness: SpecDocument) -> None:
    r_lane = ["R0", "R1", "R2", "R3"]
    runtime = [f"H{n}" for n in range(9)] + ["C1", "C2", "C3", "N1", "O1", "O2", "QA3", "O3", "O4"]
    assert harness.merge_orders == [
        r_lane,
        ["J0", "J1", "J2", "J3", "J4", "J5", "J6"],
        ["I3", "I4", "I5"],
        ["L1", "L2", "L3"],
        ["C1", "C2", "C3", "N1"],
        ["O1", "O2", "O3", "O4"],
        # the summary section
        ["R0", "J0", "J1", "J2", "J3", "J4", "J5", "J6"],
        r_lane,
        ["I0", "L1", "L2", "L3"],
        ["R2", "I3", "I4", "I5"],
        runtime,
    ]  # not `length → length`, `main→c`, nor the mermaid `Harness --> Lanes`
    tracks = {t.id: t for t in harness.tracks}
    assert tracks["R"].merge_order == [r_lane]
    assert tracks["C/N"].merge_order == [["C1", "C2", "C3", "N1"]]
    assert tracks["H"].merge_order == []  # "H0–H8 then merge strictly in order" has no arrows


def test_no_problems_and_no_escalation(harness: SpecDocument) -> None:
    assert harness.problems == []
    assert harness.escalate_to is None


def test_claimable(harness: SpecDocument) -> None:
    # ticked: F0 QA1 QA2 R0 R1 R2 J0 J1 J2 I0. J3 is held by the track J marker, L1 is
    # reserved; R3 (F0, R2), I1, I2 (no dependencies) and I3 (R2) have all dependencies done.
    assert claimable(harness) == ["R3", "I1", "I2", "I3"]


# ---------------------------------------------------------------------------------------------
# small documents


def doc(text: str) -> SpecDocument:
    return parse(dedent(text).lstrip("\n"), "plan.md")


def test_crlf_line_endings_count_lines_like_lf() -> None:
    text = (
        "# Plan\r\n"
        "\r\n"
        "- [ ] **A1 — first.** Dependencies: none.\r\n"
        "  - Files: `src/a.py`, `b.py`.\r\n"
        "  - Checks: `pytest -q`\r\n"
        "\r\n"
        "**Reserved: A2 by @ann.**\r\n"
        "- [x] **A2 — second.** Dependencies: A1.\r\n"
    )
    document = parse(text)
    a1, a2 = document.packages
    assert (a1.line, a1.title, a1.files, a1.checks) == (
        3,
        "first",
        ["src/a.py", "src/b.py"],
        ["pytest -q"],
    )
    assert (a2.line, a2.done, a2.dependencies) == (8, True, ["A1"])
    assert document.reservations == [DocReservation("ann", 7, "A2")]
    assert parse(text.replace("\r\n", "\n")).packages == document.packages


def test_dashes_and_missing_periods() -> None:
    document = doc(
        """
        - [ ] **A1 - hyphen.** Dependencies: none
        - [ ] **A2 – en dash** Dependencies: A1
        - [X] **A3—em dash, no spaces.** dependencies: A1 and A2.
        - [ ] **A4 — lists.** Dependencies: A1, A2, and A3.
        - [ ] **A5 — a range.** Dependencies: A1–A3
        - [ ] **A6 — none in capitals.** Dependencies: None.
        """
    )
    assert [(p.id, p.title, p.done) for p in document.packages] == [
        ("A1", "hyphen", False),
        ("A2", "en dash", False),
        ("A3", "em dash, no spaces", True),
        ("A4", "lists", False),
        ("A5", "a range", False),
        ("A6", "none in capitals", False),
    ]
    deps = {p.id: p.dependencies for p in document.packages}
    assert deps["A1"] == []
    assert deps["A2"] == ["A1"]
    assert deps["A3"] == ["A1", "A2"]
    assert deps["A4"] == ["A1", "A2", "A3"]
    assert deps["A6"] == []
    assert deps["A5"] == ["A1", "A2", "A3"]
    assert document.problems == []


def test_missing_blank_lines_keep_bullets_with_their_package() -> None:
    document = doc(
        """
        ### Track A — alpha
        These packages own `src/alpha/**`.
        - [ ] **A1 — one.** Dependencies: none.
          - Files: `src/one.py`
        - [ ] **A2 — two.** Dependencies: A1.
          - Acceptance: two works.
        Some prose right after, not a bullet of A2.
        - [ ] **A3 — three.** Dependencies: A2.
        """
    )
    a1, a2, a3 = document.packages
    assert (a1.files, a1.files_from_track) == (["src/one.py"], False)
    assert (a2.files, a2.files_from_track, a2.acceptance) == (["src/alpha/**"], True, "two works.")
    assert a2.description == ""
    assert (a3.line, a3.dependencies, a3.track) == (8, ["A2"], "A")


def test_tabs_and_four_space_indentation() -> None:
    document = parse(
        "- [ ] **T1 — tabs.** Dependencies: none.\n"
        "\t- Files: `src/t1.py`\n"
        "\t- Acceptance: tabs work.\n"
        "\t\t- a nested detail of the acceptance\n"
        "- [ ] **T2 — four spaces.** Dependencies: T1.\n"
        "    - Files: `src/t2.py`   \n"
        "    - Keep it small.\n"
        "        - nested note\n"
    )
    t1, t2 = document.packages
    assert t1.files == ["src/t1.py"]
    assert t1.acceptance == "tabs work.\n    - a nested detail of the acceptance"
    assert t2.files == ["src/t2.py"]
    assert t2.description == "- Keep it small.\n    - nested note"


def test_one_track_split_by_other_headings() -> None:
    document = doc(
        """
        ## Work

        ### Track A — alpha

        These packages own `src/alpha/**`.

        - [ ] **A1 — one.** Dependencies: none.

        #### Notes on alpha

        - [ ] **A2 — two.** Dependencies: A1.

        ### Interlude

        - [ ] **X1 — outside.** Dependencies: none.

        ### Track A — alpha, continued

        - [ ] **A3 — three.** Dependencies: A2.

        ## Appendix

        - [ ] **Z1 — after the tracks.** Dependencies: none.
        """
    )
    tracks = {p.id: p.track for p in document.packages}
    assert tracks == {"A1": "A", "A2": "A", "X1": None, "A3": "A", "Z1": None}
    assert [(t.id, t.line, t.files) for t in document.tracks] == [("A", 3, ["src/alpha/**"])]
    a3 = document.package("A3")
    assert a3 is not None and (a3.files, a3.files_from_track) == (["src/alpha/**"], True)


def test_bare_file_names() -> None:
    document = doc(
        """
        The code lives in `src/core/engine.py`, `src/core/util.py` and `lib/util.py`.

        - [ ] **B1 — relative to the previous path.** Dependencies: none.
          - Primary files: `src/api/routes.py`, `views.py`, `./docs/api.md`, `index.md`.
        - [ ] **B2 — unique and ambiguous basenames.** Dependencies: none.
          - Primary files: `engine.py`, `util.py`.
        - [ ] **B3 — no such path anywhere.** Dependencies: none.
          - Files: `setup.cfg`, `tests/*.py`, `src/api/routes.py`, `./src/api/routes.py`.
        - [ ] **B4 — not paths.** Dependencies: none.
          - Files: `npm run check`, `EngineRegistry`, `make()`, the SQLite files, `src/x/`.
        """
    )
    files = {p.id: p.files for p in document.packages}
    assert files["B1"] == ["src/api/routes.py", "src/api/views.py", "docs/api.md", "docs/index.md"]
    # engine.py: one path has that name; util.py: two do; then util.py follows engine.py's dir
    assert files["B2"] == ["src/core/engine.py", "src/core/util.py"]
    # no path of the document has that name: the repository-root file, not every depth
    assert files["B3"] == ["setup.cfg", "tests/*.py", "src/api/routes.py"]
    assert files["B4"] == ["src/x/"]
    assert document.root_names == [(8, "setup.cfg")]


def test_a_bare_name_without_a_previous_path_and_two_candidates_is_the_root_file() -> None:
    document = doc(
        """
        Both `src/core/util.py` and `lib/util.py` exist.

        - [ ] **B1 — ambiguous.** Dependencies: none.
          - Files: `util.py`, `**/conftest.py`
        """
    )
    # never every depth unless written so
    assert document.packages[0].files == ["util.py", "**/conftest.py"]
    assert document.root_names == [(4, "util.py")]


def test_two_packages_naming_new_root_files_name_different_files() -> None:
    document = doc(
        """
        ### Track A — new files

        These packages own `notes.md`.

        - [ ] **A1 — one.** Dependencies: none.
          - Files: `a.py`
        - [ ] **A2 — two.** Dependencies: none.
          - Files: `b.py`
        """
    )
    assert [p.files for p in document.packages] == [["a.py"], ["b.py"]]
    assert document.tracks[0].files == ["notes.md"]
    assert document.root_names == [(3, "notes.md"), (6, "a.py"), (8, "b.py")]


def test_files_bullet_negated_clause_is_description() -> None:
    document = doc(
        """
        - [ ] **N1 — careful.** Dependencies: none.
          - Primary files: `src/a.py`; never touch `src/b.py`. Tests in `tests/`.
          - Why: because.
        """
    )
    package = document.packages[0]
    assert package.files == ["src/a.py"]
    assert package.description == ("- never touch `src/b.py`. Tests in `tests/`.\n- Why: because.")


def test_coord_dialect() -> None:
    document = doc(
        """
        # Plan

        **Escalate to:** @mario on Discord.
        Escalate to: someone else (only the first counts)

        - [ ] **D1 — dialect.** Dependencies: none.
          - Files: `src/d1.py`
            - `src/d1_helpers.py`
          - Checks: `pytest -q tests/test_d1.py`, then `ruff check src`
          - Acceptance: checks pass.
        """
    )
    assert document.escalate_to == "@mario on Discord"
    package = document.packages[0]
    assert package.files == ["src/d1.py", "src/d1_helpers.py"]
    assert package.checks == ["pytest -q tests/test_d1.py", "ruff check src"]
    assert package.acceptance == "checks pass."


def test_escalate_to_as_a_bold_list_item() -> None:
    document = doc("- **Escalate to: the release manager.**\n")
    assert document.escalate_to == "the release manager"


def test_malformed_entries_and_bad_dependencies_are_reported_and_parsing_goes_on() -> None:
    document = doc(
        """
        - [ ] **M1 — fine.** Dependencies: none.
        - [ ] **R9** no dash and no title
          - Files: `src/orphan.py`
        - [ ] **R10 — never closed. Dependencies: none.
        - [ ] **M2 — prose dependencies.** Dependencies: after M1 lands.
          - Files: `src/m2.py`
        - [ ] R11 — not bold. Dependencies: none.
        - [ ] **M3 — still read.** Dependencies: M1, M2.
        """
    )
    assert [p.id for p in document.packages] == ["M1", "M2", "M3"]
    assert [(p.code, p.line, p.package) for p in document.problems] == [
        ("malformed_entry", 2, None),
        ("malformed_entry", 4, None),
        ("bad_dependencies", 5, "M2"),
        ("malformed_entry", 7, None),
    ]
    malformed, _, bad, _ = document.problems
    assert "line 2" in malformed.message and "**ID — title.**" in malformed.message
    assert "after M1 lands" in bad.message and "Dependencies: A, B." in bad.message
    m2 = document.package("M2")
    assert m2 is not None and (m2.dependencies, m2.files) == ([], ["src/m2.py"])
    m3 = document.package("M3")
    assert m3 is not None and m3.dependencies == ["M1", "M2"]


def test_plain_task_lists_are_ignored() -> None:
    document = doc(
        """
        Shopping:

        - [ ] buy milk
        - [x] call **Bob** — about the car
        - [ ] **Important:** water the plants
        """
    )
    assert document.packages == [] and document.problems == []


def test_fenced_code_is_not_read() -> None:
    document = doc(
        """
        ```markdown
        - [ ] **E1 — an example.** Dependencies: none.
        **Reserved: E1 by @nobody.**
        ```
        - [ ] **P1 — real.** Dependencies: none.
          - Files: `src/p1.py`
          - Example:
            ```sh
            - [ ] **E2 — inside the bullet.** Dependencies: none.
            ```
          - Acceptance: done.
        """
    )
    assert [p.id for p in document.packages] == ["P1"]
    assert document.reservations == []
    package = document.packages[0]
    assert package.acceptance == "done."
    assert "E2 — inside the bullet" in package.description


def test_a_package_in_an_html_comment_is_no_package() -> None:
    document = doc(
        """
        <!--
        - [ ] **H1 — commented out.** Dependencies: none.
          - Files: `src/h1.py`
        **Reserved: P1 by @nobody.**
        -->
        - [ ] **P1 — real.** Dependencies: none.
          - Files: `src/p1.py` <!-- , `src/secret.py` -->
          - Acceptance: done. <!-- **Reserved: P1 by @nobody.** -->

        <!-- - [ ] **H2 — on one line.** Dependencies: none. -->After it, `<!--` is quoted:
        - [ ] **P2 — after a quoted opener.** Dependencies: P1.
          - Files: `src/p2.py`
        """
    )
    assert [p.id for p in document.packages] == ["P1", "P2"]
    assert document.reservations == [] and document.problems == []
    p1 = document.packages[0]
    assert (p1.files, p1.acceptance) == (["src/p1.py"], "done.")


def test_a_package_in_an_indented_code_block_is_no_package() -> None:
    document = doc(
        """
        The template, to copy:

            - [ ] **ID — title.** Dependencies: A, B.
              - Files: `src/example.py`
            **Reserved: ID by @user.**

        - [ ] **P1 — real.** Dependencies: none.
          - Files: `src/p1.py`
          - Example:

                - [ ] **E1 — code inside the bullet.** Dependencies: none.

          - Acceptance: done.

              indented under the acceptance: its own text, not code
        """
    )
    assert [p.id for p in document.packages] == ["P1"]
    assert document.reservations == [] and document.problems == []
    p1 = document.packages[0]
    assert p1.files == ["src/p1.py"]
    assert "E1 — code inside the bullet" in p1.description
    assert p1.acceptance == "done.\n    indented under the acceptance: its own text, not code"


def test_a_tick_or_reservation_in_code_or_a_comment_of_the_progress_file_counts_not(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.md"
    plan.write_text(
        "- [ ] **A1 — one.** Dependencies: none.\n  - Files: `a1.py`\n"
        "- [ ] **A2 — two.** Dependencies: none.\n  - Files: `a2.py`\n",
        encoding="utf-8",
    )
    (tmp_path / "plan.progress.md").write_text(
        "# Progress\n"
        "\n"
        "How to write a tick (a fence of four holds one of three):\n"
        "\n"
        "````markdown\n"
        "```\n"
        "- [x] A1\n"
        "```\n"
        "- [x] A2\n"
        "````\n"
        "\n"
        "<!-- - [x] A2 -->\n"
        "<!--\n"
        "**Reserved: A1 by @nobody.**\n"
        "-->\n",
        encoding="utf-8",
    )
    document = parse_file(plan)
    assert [(p.id, p.done) for p in document.packages] == [("A1", False), ("A2", False)]
    assert document.reservations == [] and document.problems == []


def test_track_ownership_sentences() -> None:
    document = doc(
        """
        Elsewhere: `src/shared/config.py`.

        ### Track K — keys

        K2 is the first package in this track that owns `src/k/special.py`. These packages
        also own `src/k/**` and `config.py`, and merge K1 → K2. The track does not own
        `src/other/**`. Ownership of `docs/k.md` is shared. The owner of `src/owner.py` is Ann.

        - [ ] **K1 — first.** Dependencies: none.
        - [ ] **K2 — second.** Dependencies: K1.
          - Files: `src/k/special.py`

        ### Track M — more

        Track M packages own `src/m/`; they may not modify `src/k/**`.

        - [ ] **M1 — first.** Dependencies: none.
        """
    )
    tracks = {t.id: t for t in document.tracks}
    assert tracks["K"].files == ["src/k/**", "src/shared/config.py"]
    assert tracks["K"].merge_order == [["K1", "K2"]]
    assert tracks["M"].files == ["src/m/"]
    k1, k2, m1 = document.packages
    assert (k1.files, k1.files_from_track) == (["src/k/**", "src/shared/config.py"], True)
    assert (k2.files, k2.files_from_track) == (["src/k/special.py"], False)
    assert (m1.files, m1.files_from_track) == (["src/m/"], True)


def test_reservation_lines() -> None:
    document = doc(
        """
        To reserve, add `**Reserved: <id> by @<you>.**` above the entry.

        ### Track A — alpha

        **Reserved: @carol.** Nobody else picks A packages.

        **Reserved: A1, A2 by @bob.** Until Friday.
        - [ ] **A1 — one.** Dependencies: none.
        - [ ] **A2 — two.** Dependencies: none.

        ### Track B — beta

        **In progress and reserved: @dave.**

        **Reserved: B1 by @erin.**
        - [ ] **B1 — one.** Dependencies: none.
        **Reserved: the next one by @frank.**
        """
    )
    assert document.reservations == [
        DocReservation("carol", 5, track="A"),
        DocReservation("bob", 7, "A1"),
        DocReservation("bob", 7, "A2"),
        DocReservation("dave", 13, track="B"),
        DocReservation("erin", 15, "B1"),
    ]
    assert [(p.code, p.line) for p in document.problems] == [("malformed_reservation", 17)]


def test_ownership_table_ranges_and_lists() -> None:
    document = doc(
        """
        | Surface | Owning package | Notes |
        |:--|:--:|---|
        | `run` | P1-P3 | hyphen range |
        | `stop`, `kill` | Q2, R1 and S1 | a list |
        | `watch` | T1/U2 | a slash list |
        | `misc` | to be decided | not ids: skipped |

        | owner | what |
        |---|---|
        | P1 | not an ownership table: the owner column comes first |
        """
    )
    assert document.ownership == [
        ("`run`", ["P1", "P2", "P3"]),
        ("`stop`, `kill`", ["Q2", "R1", "S1"]),
        ("`watch`", ["T1", "U2"]),
    ]


def test_merge_chains() -> None:
    document = doc(
        """
        ### Track A — alpha

        Merge **A1 → A2 → A3**, then A3 -> B1.

        - [ ] **A1 — one.** Dependencies: none.
          - Lands after X1 → X2.

        Not chains: `parse → lint`, main→c, t1→u, Idle --> Running.
        """
    )
    assert document.merge_orders == [["A1", "A2", "A3"], ["A3", "B1"], ["X1", "X2"]]
    assert document.tracks[0].merge_order == [["A1", "A2", "A3"], ["A3", "B1"]]


def test_parse_file_refuses_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("- [ ] **A1 - café.** Dependencies: none.\n".encode("latin-1"))
    with pytest.raises(InvalidInput) as raised:
        parse_file(path)
    assert str(path) in raised.value.message and "UTF-8" in raised.value.message


def test_parse_file_reads_utf8_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes("\ufeff- [ ] **A1 — café.** Dependencies: none.\n".encode())
    document = parse_file(path)
    assert (document.path, document.packages[0].title) == (str(path), "café")


def _many_packages(tracks: int) -> str:
    parts = []
    for track in range(tracks):
        parts.append(
            f"### Track T{track} — track {track}\n\nThese packages own `src/t{track}/**`.\n"
        )
        for n in range(50):
            dependency = f"T{track}P{n - 1}" if n else "none"
            parts.append(
                f"- [ ] **T{track}P{n} — package {n}.** Dependencies: {dependency}.\n"
                f"  - Primary files: `src/t{track}/p{n}/a.py`, `b.py`, `common.py`.\n"
                f"  - Acceptance: it works.\n"
            )
    return "\n".join(parts)


def _lines_run_parsing(text: str) -> tuple[SpecDocument, int]:
    """The document, and how many lines of coord's spec code ran to read it: a count, not a
    time, so a loaded machine cannot fail it (the seconds are bench/run.py spec's)."""
    counted = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal counted
        if "coord/spec/" not in frame.f_code.co_filename:
            return None
        if event == "line":
            counted += 1
        return tracer

    sys.settrace(tracer)
    try:
        document = parse(text)
    finally:
        sys.settrace(None)
    return document, counted


def test_two_thousand_packages_parse_in_linear_work() -> None:
    small, small_work = _lines_run_parsing(_many_packages(4))  # 200 packages
    document, work = _lines_run_parsing(_many_packages(40))  # 2,000
    assert len(small.packages) == 200 and len(document.packages) == 2000
    assert document.packages[-1].files[-1] == "src/t39/p49/common.py"
    # ten times the document, about ten times the work: nothing quadratic in the parser
    assert work <= 12 * small_work, (work, small_work)


# ---------------------------------------------------------------------------------------------
# the one box-ticker (`coord spec sync` and `coord git done`)


def test_tick_changes_only_the_box_and_keeps_crlf_and_the_byte_order_mark() -> None:
    text = (
        "\ufeff- [ ] **A1 — one [ ] box.** Dependencies: none.\r\n"
        "- [ ] **A2 — two.** Dependencies: A1.\r\n"
    )
    ticked = edit.tick(text, [(1, "A1"), (2, "A2")])
    assert ticked == text.replace("- [ ] **", "- [x] **")
    assert [p.done for p in parse(ticked).packages] == [True, True]


def test_tick_refuses_a_line_that_is_not_that_package_s_unticked_entry() -> None:
    text = "- [ ] **A10 — ten.** Dependencies: none.\n- [x] **A2 — two.** Dependencies: none.\n"
    for entry in [(1, "A1"), (2, "A2"), (3, "A3")]:  # A1 is only a prefix of A10's id
        with pytest.raises(InvalidInput) as refused:
            edit.tick(text, [entry])
        assert refused.value.details == {"line": entry[0], "package": entry[1]}


def test_spec_sync_ticks_the_line_the_parser_counted(tmp_path: Path) -> None:
    """A stray carriage return inside a line is no line end to the parser, so it is none to
    the ticker: `coord spec sync` ticks the entry the parser read, not a line further on."""
    from coord.cli.spec_cmd import _ticked

    path = tmp_path / "plan.md"
    path.write_bytes(
        b"Intro with a stray \r carriage return.\n"
        b"- [ ] **A1 - one.** Dependencies: none.\n"
        b"- [ ] **A2 - two.** Dependencies: none.\n"
    )
    a1 = parse_file(path).package("A1")
    assert a1 is not None and a1.line == 2
    before, after = _ticked(path, [(a1.line, "A1")])
    assert before.encode() == path.read_bytes()
    assert after.encode() == (
        b"Intro with a stray \r carriage return.\n"
        b"- [x] **A1 - one.** Dependencies: none.\n"
        b"- [ ] **A2 - two.** Dependencies: none.\n"
    )
