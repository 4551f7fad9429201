"""Every third-party module ``src/coord`` imports is declared in ``pyproject.toml``.

A module that arrives only as another package's dependency (``anyio`` and ``pydantic`` through
the MCP SDK, once) works until that package stops needing it, and then coord breaks on a clean
install. Read with ast, every import of the package counts (at module level or inside a
function); which distribution provides a module is asked of the installed metadata. The
PostgreSQL backend's own modules may import what the ``postgres`` extra declares.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "coord"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# the standard library's private modules of the Pythons coord supports other than this one:
# the fast path's builtin hash is `_sha256` before 3.12 and `_sha2` from 3.12 on
OTHER_PYTHONS_STDLIB = frozenset({"_sha2", "_sha256"})


def _distribution(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


@functools.cache
def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the coord modules importing it."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "coord" or top in sys.stdlib_module_names or top in OTHER_PYTHONS_STDLIB:
                    continue
                found.setdefault(top, set()).add(importer)
    return found


def test_the_imports_are_read() -> None:
    imports = _third_party_imports()
    assert {"starlette", "uvicorn", "mcp", "psycopg"} <= set(imports)
    assert imports["psycopg"] and all("postgres" in m for m in imports["psycopg"])


def test_every_third_party_import_is_declared() -> None:
    provided_by = packages_distributions()
    declared = {_distribution(r) for r in PROJECT["dependencies"]}
    postgres = {_distribution(r) for r in PROJECT["optional-dependencies"]["postgres"]}
    undeclared = []
    for module, importers in sorted(_third_party_imports().items()):
        distributions = {_distribution(d) for d in provided_by.get(module, [])}
        allowed = declared
        if all(m.startswith("coord.storage.postgres") for m in importers):
            allowed = declared | postgres  # the team backend, `pip install coord[postgres]`
        if not distributions & allowed:
            provider = ", ".join(sorted(distributions)) or "no installed distribution"
            undeclared.append(f"{module} (from {provider}), imported by {sorted(importers)}")
    assert undeclared == []
