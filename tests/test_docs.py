"""The docs cannot drift from the code: the reference pages are generated from it and checked
here, the README stays a short front page, and every link between the pages leads somewhere."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from coord.cli.main import COMMANDS
from coord.fast.board_files import CONFIG_KEYS
from coord.server.openapi import OPENAPI

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _generator() -> ModuleType:
    """scripts/gen_reference.py, loaded from its file: it is no part of the package."""
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "scripts" / "gen_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


gen = _generator()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {path.name: text for path, text in gen.generate().items()}


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_readme_starts_with_what_coord_is_how_to_install_it_and_the_two_clone_commands() -> None:
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    assert headings[:2] == ["Install it into your repository", "Working on coord itself"]
    clone = README.split("## Working on coord itself", 1)[1].split("## ", 1)[0]
    first_block = clone.split("```", 2)[1]
    assert "make serve" in first_block and "make test" in first_block


def test_the_readme_is_a_front_page() -> None:
    """Issue 28: the README was the whole manual (1,526 lines); the manual is docs/ now."""
    assert len(README.splitlines()) <= 200


def test_the_readme_says_which_test_tier_to_run_when() -> None:
    """Every test target of the Makefile has a row in the README's table, and no row names a
    target the Makefile lacks."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    tiers = set(re.findall(r"^(test(?:-[a-z]+)?):", makefile, re.M))
    clone = README.split("## Working on coord itself", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `make (test(?:-[a-z]+)?)`", clone, re.M))
    assert tiers == rows and "test-fast" in rows


def test_every_reference_page_is_what_the_code_says_now(pages: dict[str, str]) -> None:
    """A command, endpoint, tool or setting added or changed without `make docs` fails here."""
    stale = [name for name, text in pages.items() if page(f"reference/{name}") != text]
    assert not stale, f"docs/reference/{', '.join(stale)} differ from the code: run make docs"


def test_the_check_fails_on_a_page_edited_by_hand(
    pages: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test of the test: one changed line in a checked-in page is seen, by --check too."""
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(gen, "REFERENCE", tmp_path)
    monkeypatch.setattr(gen, "ROOT", tmp_path.parent)
    assert gen.main(["--check"]) == 0
    cli = tmp_path / "cli.md"
    cli.write_text(cli.read_text(encoding="utf-8").replace("## coord next\n", "## coord nxt\n"))
    assert gen.main(["--check"]) == 1


def test_the_pages_are_the_same_on_every_run(pages: dict[str, str]) -> None:
    """Sorted, no timestamp, a fixed width: a merge needs only `make docs` again."""
    assert {path.name: text for path, text in gen.generate().items()} == pages


def test_every_command_and_every_option_is_in_the_cli_reference(pages: dict[str, str]) -> None:
    """`coord ls --limit/--after`, `log --limit`, `serve --log-level` once went unlisted."""
    from coord.cli.main import build_parser

    cli = pages["cli.md"]
    sections = dict(re.findall(r"^## coord ([\w-]+)\n(.*?)(?=^## |\Z)", cli, flags=re.M | re.S))
    assert set(sections) == set(COMMANDS)
    missing = {}
    for name in COMMANDS:
        parser = build_parser(only=name).command_parsers[name]
        options = {
            option
            for action in parser._actions
            for option in action.option_strings
            if option.startswith("--") and option not in ("--help", "--json", "--as")
        }
        absent = sorted(o for o in options if f"`{o}" not in sections[name])
        if absent:
            missing[name] = absent
    assert not missing, missing


def test_every_endpoint_is_in_the_http_reference(pages: dict[str, str]) -> None:
    documented = set(re.findall(r"^## (GET|POST|PATCH|DELETE) (/\S+)$", pages["http.md"], re.M))
    served = {(method.upper(), path) for path, ops in OPENAPI["paths"].items() for method in ops}
    assert documented == served


def test_every_tool_is_in_the_mcp_reference(pages: dict[str, str]) -> None:
    from coord.mcp import manifest

    answers = manifest.load()
    tools = answers["versions"][answers["latest"]]["tools/list"]["tools"]
    documented = set(re.findall(r"^## (\w+)$", pages["mcp.md"], re.M)) - {"Resources"}
    assert documented == {tool["name"] for tool in tools}


def test_every_setting_and_variable_is_in_the_settings_reference(pages: dict[str, str]) -> None:
    settings = pages["settings.md"]
    for key in CONFIG_KEYS:
        assert re.search(rf"^\| `{key}` \|", settings, re.M), key
    variables = gen.read_variables()
    assert {"COORD_DIR", "COORD_AGENT"} <= set(variables)
    for variable in variables:
        assert re.search(rf"^\| `{variable}` \|", settings, re.M), variable


def test_a_setting_or_variable_without_words_stops_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A setting added to CONFIG_KEYS (or a COORD_* variable read) must be described: the
    generator refuses, naming it and where its words go."""
    monkeypatch.setattr("coord.fast.board_files.CONFIG_KEYS", (*CONFIG_KEYS, "new_setting"))
    with pytest.raises(SystemExit, match=r"new_setting.*SETTING_TEXTS"):
        gen.settings_page()
    monkeypatch.undo()
    monkeypatch.setattr(gen, "read_variables", lambda: ["COORD_DIR", "COORD_NEW"])
    with pytest.raises(SystemExit, match=r"COORD_NEW.*VARIABLE_TEXTS"):
        gen.settings_page()


def test_the_variables_are_read_from_the_source(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('x = os.environ.get("COORD_ONE")\nTEST = "COORD_TEST_GATE"\n')
    (tmp_path / "b.py").write_text("NAME = 'COORD_TWO'  # COORD_THREE in a comment is no read\n")
    assert gen.read_variables(tmp_path) == ["COORD_ONE", "COORD_TWO"]


def test_the_overlap_rule_in_the_docs_is_the_one_in_the_code() -> None:
    from coord.fast.patterns import OVERLAP_RULE

    assert " ".join(OVERLAP_RULE.split()) in " ".join(page("files-and-the-guard.md").split())


def test_the_commands_page_names_only_commands_that_exist() -> None:
    """The hand-written page says more than --help; a row for a command that is gone fails
    (a new command is in the generated reference at once, and should get a row here too)."""
    named = set(re.findall(r"^\| `coord ([\w-]+)", page("commands.md"), flags=re.M))
    assert named and named <= set(COMMANDS), named - set(COMMANDS)


def test_the_http_page_names_only_endpoints_that_exist() -> None:
    named = {
        (method.lower(), path.split("?")[0])
        for method, path in re.findall(
            r"^\| `(GET|POST|PATCH|DELETE) (/\S+?)`", page("http-api.md"), re.M
        )
    }
    served = {(method, path) for path, ops in OPENAPI["paths"].items() for method in ops}
    assert named and named <= served, named - served


# what other branches write in their own pages: linked before they arrive
PAGES_TO_COME = {"waiting.md", "next-steps.md", "live-board.md"}


def _links() -> list[tuple[Path, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if not re.match(r"[a-z]+:", target):
                found.append((path, target))
    return found


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for a page's headings."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_link_between_the_pages_leads_to_a_page_and_a_heading() -> None:
    broken = []
    for source, target in _links():
        file_part, _, anchor = target.partition("#")
        resolved = (source.parent / file_part).resolve() if file_part else source
        if resolved.name in PAGES_TO_COME and not resolved.exists():
            continue
        if not resolved.exists():
            broken.append(f"{source.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{source.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_the_link_check_sees_a_broken_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "README.md").write_text("[x](docs/nowhere.md) [y](docs/a.md#nothing)\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A title\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path / "docs")
    with pytest.raises(
        AssertionError, match=r"nowhere.md \(no such file\).*#nothing \(no such heading\)"
    ):
        test_every_link_between_the_pages_leads_to_a_page_and_a_heading()


def test_every_page_is_in_the_docs_index() -> None:
    index = page("README.md")
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"README.md"}
    assert {p for p in pages if f"]({p})" not in index} == set()


# The CHANGELOG: one section per version, for the people and scripts that use coord.

RELEASE_HEADING = re.compile(r"## (\d+)\.(\d+)\.(\d+) - \d{4}-\d{2}-\d{2}")
# What only coord's own test suite knows of: such a line is a note for contributors, not a change.
INTERNAL_WORDS = re.compile(r"tests/|seen failing", re.I)


def _project_version() -> str:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["version"])


def changelog_problems(text: str, version: str) -> list[str]:
    """What keeps a CHANGELOG from its shape: `## Unreleased` first, then `## X.Y.Z - DATE`
    headings, newest first, the newest being the version pyproject.toml releases; no internal
    notes."""
    problems = []
    headings = re.findall(r"^## .*$", text, flags=re.M)
    if not headings or headings[0] != "## Unreleased":
        problems.append(f"the first section must be '## Unreleased', not {headings[:1]}")
    released: list[tuple[int, ...]] = []
    for heading in headings[1:]:
        match = RELEASE_HEADING.fullmatch(heading)
        if match is None:
            problems.append(f"{heading!r} is not '## X.Y.Z - YYYY-MM-DD'")
        else:
            released.append(tuple(int(part) for part in match.groups()))
    if released != sorted(released, reverse=True) or len(set(released)) != len(released):
        problems.append(f"the versions are not newest first: {released}")
    if not released:
        problems.append("no released version")
    elif ".".join(map(str, released[0])) != version:
        newest = ".".join(map(str, released[0]))
        problems.append(f"the newest release is {newest}, pyproject.toml says {version}")
    for number, line in enumerate(text.splitlines(), 1):
        if INTERNAL_WORDS.search(line):
            problems.append(f"line {number} is an internal note: {line.strip()[:80]}")
    return problems


def test_the_changelog_has_one_section_per_version_and_no_internal_notes() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog_problems(text, _project_version()) == []


GOOD_CHANGELOG = """# Changelog

## Unreleased

Nothing yet.

## 0.2.0 - 2027-01-10

- `coord next` claims the best ready item.

## 0.1.0 - 2026-12-04

- The first release.
"""


def test_the_changelog_check_passes_a_good_one() -> None:
    assert changelog_problems(GOOD_CHANGELOG, "0.2.0") == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("## Unreleased\n\nNothing yet.\n\n", ""), "first section must be '## Unreleased'"),
        (("## 0.2.0 - 2027-01-10", "## Issue 28"), "'## Issue 28' is not"),
        (("## 0.2.0 - 2027-01-10", "## 0.2.0"), "'## 0.2.0' is not"),
        (("## 0.2.0 - 2027-01-10", "## 0.0.9 - 2027-01-10"), "not newest first"),
        (("## 0.2.0 - 2027-01-10", "## 0.10.0 - 2027-01-10"), "pyproject.toml says 0.2.0"),
        (("- The first release.", "- `tests/test_x.py` checks it."), "internal note"),
        (("- The first release.", "- A race, seen failing before the fix."), "internal note"),
    ],
)
def test_the_changelog_check_sees_each_violation(change: tuple[str, str], problem: str) -> None:
    old, new = change
    assert old in GOOD_CHANGELOG
    broken = GOOD_CHANGELOG.replace(old, new, 1)
    assert any(problem in found for found in changelog_problems(broken, "0.2.0"))
