"""The README cannot drift from the code: commands, endpoints and settings are checked."""

from __future__ import annotations

import re
from pathlib import Path

from coord.cli.main import COMMANDS
from coord.fast.board_files import CONFIG_KEYS
from coord.server.openapi import OPENAPI

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_what_coord_is_how_to_install_it_and_the_two_clone_commands() -> None:
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    assert headings[:2] == ["Install it into your repository", "Working on coord itself"]
    clone = README.split("## Working on coord itself", 1)[1].split("## ", 1)[0]
    first_block = clone.split("```", 2)[1]
    assert "make serve" in first_block and "make test" in first_block


def test_every_command_is_in_the_readme_table_and_nothing_else() -> None:
    documented = set(re.findall(r"^\| `coord (\w+)", README, flags=re.M))
    assert documented == set(COMMANDS)


def test_every_endpoint_is_in_the_readme_and_the_readme_names_no_other() -> None:
    documented = {
        (method.lower(), path.split("?")[0])
        for method, path in re.findall(r"^\| `(GET|POST|PATCH|DELETE) (/\S+?)`", README, re.M)
    }
    served = {
        (method, path)
        for path, ops in OPENAPI["paths"].items()
        if path != "/openapi.json"
        for method in ops
    }
    assert documented == served


def test_every_setting_is_documented() -> None:
    settings = README.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    for key in CONFIG_KEYS:
        assert f"`.coord/config.json` `{key}`" in settings, key
    for variable in ("COORD_DIR", "COORD_AGENT"):
        assert f"`{variable}`" in README


def test_the_overlap_rule_in_the_readme_is_the_one_in_the_code() -> None:
    from coord.fast.patterns import OVERLAP_RULE

    assert " ".join(OVERLAP_RULE.split()) in " ".join(README.split())


# The layout table (every folder and top-level module, and what each may import) is checked
# against the rule in tests/test_layout.py.


def test_the_readme_command_table_names_every_option_of_every_command() -> None:
    """`coord ls --limit/--after`, `log --limit`, `serve --log-level` once went unlisted."""
    from coord.cli.main import build_parser

    table = README.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = {
        name: line for line in table.splitlines() for name in re.findall(r"^\| `coord (\w+)", line)
    }
    missing = {}
    for name in COMMANDS:
        parser = build_parser(only=name).command_parsers[name]
        options = {
            option
            for action in parser._actions
            for option in action.option_strings
            if option.startswith("--") and option not in ("--help", "--json", "--as")
        }
        absent = sorted(o for o in options if o not in rows[name])
        if absent:
            missing[name] = absent
    assert not missing, missing
