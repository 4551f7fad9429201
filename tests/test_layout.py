"""The layout rule as data: which part of ``src/coord`` may import which (docs/development.md).

``MAY_IMPORT`` is the rule, one row per folder of ``coord/`` and per top-level module (as the
layout table of docs/development.md has them); ``test_every_import_keeps_the_layout`` judges
every import edge of the package against it, read with ast (nothing is imported):
module-level and inside functions, ``import a.b``, ``from a import b``, relative imports,
``from coord import X`` resolved through ``coord/__init__.py``'s lazy names, and the module
names ``cli/main.py`` hands to importlib. ``test_the_docs_table_is_the_rule`` keeps that
table's "may import" column and ``MAY_IMPORT`` the same.

A part may load another part that it may not import at module level only lazily, inside one
command's entry (so that CLI start-up stays cheap and a face stays thin): ``lazily`` in its row,
and each such import named in ``ENTRIES`` with its reason.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = SRC / "coord"


@dataclass(frozen=True)
class May:
    """What one part may import: at module level, and only inside a function (an entry)."""

    eager: frozenset[str]
    lazily: frozenset[str] = frozenset()


# The nouns are the leaf: plain data, errors, times and limits import only each other.
NOUNS = frozenset({"model.py", "errors.py", "times.py", "limits.py"})
_FLOOR = NOUNS | {"fast/"}
_SHARED = _FLOOR | {"spec/", "client/"}

MAY_IMPORT: dict[str, May] = {
    **{noun: May(NOUNS - {noun}) for noun in NOUNS},
    # the library face, `from coord import Board`: the core only when that name is asked for
    "__init__.py": May(NOUNS, lazily=frozenset({"core/"})),
    "__main__.py": May(frozenset({"cli/"})),  # `python -m coord`
    # what runs before every edit and CLI call: the standard library and the nouns
    "fast/": May(NOUNS),
    "spec/": May(_FLOOR),  # the document protocol, pure enough for every judge of a document
    "core/": May(_FLOOR | {"spec/", "storage/"}),  # every board rule, no face
    "storage/": May(_FLOOR),  # returns nouns, knows no rules
    "client/": May(_FLOOR | {"spec/"}),  # what the CLI, MCP, hooks and git mode share
    "landing/": May(_SHARED),
    "gitmode/": May(_SHARED),
    "server/": May(_SHARED | {"core/", "storage/"}, lazily=frozenset({"mcp/", "landing/"})),
    "mcp/": May(_SHARED | {"landing/"}),  # the claim tool makes a worktree as coord start
    "hooks/": May(_SHARED, lazily=frozenset({"landing/"})),
    "cli/": May(
        _SHARED | {"gitmode/", "landing/"},
        lazily=frozenset({"core/", "storage/", "server/", "mcp/", "hooks/", "wiring/"}),
    ),
    "wiring/": May(_FLOOR),
}

# (importer, imported package or module) -> why this lazy import is an entry, not a leak.
# Each must sit inside a function: the import runs only when that one command runs.
ENTRIES: dict[tuple[str, str], str] = {
    ("coord", "coord.core"): "the public Python API: `from coord import Board`",
    ("coord.cli.daemon_cmd", "coord.core"): "`coord init` creates the board before any daemon",
    ("coord.cli.daemon_cmd", "coord.server"): "`coord serve` runs the daemon in this process",
    ("coord.cli.daemon_cmd", "coord.storage.postgres"): (
        "`coord init --database`, `serve --database`, `stop` name a team board's database "
        "without its password (its driver's `describe`)"
    ),
    ("coord.cli.main", "coord.hooks"): "`coord hook CLIENT EVENT`",
    ("coord.cli.entry", "coord.hooks"): "`coord hook CLIENT EVENT`, before argparse loads",
    ("coord.cli.main", "coord.wiring"): "`coord init --claude …` and `coord uninstall`",
    ("coord.cli.doctor_cmd", "coord.wiring"): "`coord doctor` checks what `coord init` wired",
    ("coord.cli.doctor_cmd", "coord.storage.postgres"): (
        "`coord doctor` checks that a team board's database answers, at this release's schema"
    ),
    ("coord.cli.main", "coord.mcp"): "`coord mcp` serves the MCP face over stdio",
    ("coord.cli.entry", "coord.mcp"): (
        "`coord mcp`, before argparse loads: a client lists its tools as it spawns it"
    ),
    ("coord.hooks.worktree", "coord.landing"): (
        "Claude Code's WorktreeCreate and WorktreeRemove hooks make and remove coord worktrees "
        "(`coord start`, `coord worktree gc`)"
    ),
    ("coord.cli.migrate_cmd", "coord.storage"): "`coord migrate` copies a board between backends",
    ("coord.server.mcp_mount", "coord.mcp"): "the daemon mounts the MCP face at /mcp",
    ("coord.server.daemon", "coord.landing"): (
        "the daemon lands the queue on a thread of its own, only in a git repository"
    ),
}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    lazy: bool  # inside a function or method: runs only when that code runs
    typing: bool = False  # under `if TYPE_CHECKING:`: never runs, annotations only

    def __str__(self) -> str:
        where = "for typing" if self.typing else "lazy" if self.lazy else "at import"
        return f"{self.importer}:{self.line} imports {self.imported} ({where})"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _exists(module: str) -> bool:
    base = SRC.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _names_compared(test: ast.expr) -> list[str]:
    """``name == "Board"`` or ``name in ("Claim", "Event")``: the names one branch answers."""
    if not (isinstance(test, ast.Compare) and len(test.comparators) == 1):
        return []
    other = test.comparators[0]
    values = other.elts if isinstance(other, ast.Tuple | ast.List | ast.Set) else [other]
    return [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]


def _lazy_names() -> dict[str, str]:
    """The names ``coord/__init__.py``'s ``__getattr__`` loads -> the module each comes from."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    for function in ast.walk(tree):
        if not (isinstance(function, ast.FunctionDef) and function.name == "__getattr__"):
            continue
        for branch in ast.walk(function):
            if not isinstance(branch, ast.If):
                continue
            for node in branch.body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        sub = f"{node.module}.{alias.name}"
                        module = sub if _exists(sub) else node.module
                        names.update(dict.fromkeys(_names_compared(branch.test), module))
    return names


LAZY_NAMES = _lazy_names()


def _targets(node: ast.AST, package: str) -> list[str]:
    """The coord modules one import statement loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        parts = package.split(".")
        if node.level > len(parts):
            return []
        base = parts[: len(parts) - node.level + 1]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    targets = []
    for alias in node.names:
        sub = f"{module}.{alias.name}"
        if _exists(sub):
            targets.append(sub)
        elif module == "coord" and alias.name in LAZY_NAMES:
            targets.append(LAZY_NAMES[alias.name])
        else:
            targets.append(module)
    return targets


def _walk(
    node: ast.AST, lazy: bool = False, typing: bool = False
) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every node, with whether it sits inside a function (lazy) or under TYPE_CHECKING."""
    yield node, lazy, typing
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        lazy = True
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.body:
            yield from _walk(child, lazy, True)
        for child in node.orelse:
            yield from _walk(child, lazy, typing)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, lazy, typing)


def _edges() -> list[Edge]:
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        tree = _tree(path)
        nodes = list(_walk(tree))
        # `import coord` then `coord.Board`: the attribute is the import
        package_aliases = {
            alias.asname or "coord"
            for node, _, _ in nodes
            if isinstance(node, ast.Import)
            for alias in node.names
            if alias.name == "coord" or (alias.name.startswith("coord.") and not alias.asname)
        }
        for node, lazy, typing in nodes:
            targets = _targets(node, package)
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in package_aliases
                and node.attr in LAZY_NAMES
            ):
                targets = [LAZY_NAMES[node.attr]]
            # `coord.cli.main` names its heavier commands' modules as strings, loaded by
            # importlib when that command runs: a lazy import all the same
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith("coord.")
                and _exists(node.value)
            ):
                targets, lazy = [node.value], True
            for target in targets:
                if target == "coord" or target.startswith("coord."):
                    edges.append(Edge(importer, target, getattr(node, "lineno", 0), lazy, typing))
    return edges


# read when a test asks, not at collection: every pytest run collects this file
EDGES = functools.cache(_edges)


def _unit(module: str) -> str:
    """The row of the layout a module belongs to: 'cli/', 'model.py', '__init__.py', …"""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + "/"
    return parts[1] + ".py"


def _is_entry(edge: Edge) -> bool:
    return any(
        edge.importer == importer
        and (edge.imported == imported or edge.imported.startswith(imported + "."))
        for importer, imported in ENTRIES
    )


def _breach(edge: Edge) -> str | None:
    """Why this edge breaks the layout, or None when the rule allows it."""
    importer, imported = _unit(edge.importer), _unit(edge.imported)
    if importer == imported:
        return None
    if edge.imported == "coord":
        # the package's own eager names (`__version__`): `coord/__init__.py` has already run
        # before any module of coord runs, so naming them adds no dependency
        return None
    may = MAY_IMPORT[importer]
    if imported in may.eager:
        return None
    if imported not in may.lazily:
        return f"{importer} may not import {imported}"
    if edge.typing:
        return None
    if not edge.lazy:
        return f"{importer} may import {imported} only inside a function"
    if not _is_entry(edge):
        return f"{importer} -> {imported} is not named in ENTRIES"
    return None


def test_the_graph_is_read() -> None:
    """The rule below means something only if the reader sees the imports it judges."""
    pairs = {(_unit(e.importer), _unit(e.imported)) for e in EDGES()}
    assert ("core/", "storage/") in pairs
    assert ("cli/", "client/") in pairs
    assert ("fast/", "model.py") in pairs or ("fast/", "errors.py") in pairs
    assert ("model.py", "errors.py") in pairs
    assert ("__main__.py", "cli/") in pairs
    assert any(e.lazy for e in EDGES()) and any(not e.lazy for e in EDGES())
    assert any(e.typing for e in EDGES())
    # `from coord import Board` is read as the core, `from coord import Item` as the model
    assert LAZY_NAMES["Board"] == "coord.core.board"
    assert LAZY_NAMES["Item"] == "coord.model"
    assert LAZY_NAMES["CoordError"] == "coord.errors"


def test_every_part_has_a_row() -> None:
    on_disk = {
        p.name + "/" if p.is_dir() else p.name
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix == ".py"
    }
    assert on_disk == set(MAY_IMPORT)
    named = set().union(*(may.eager | may.lazily for may in MAY_IMPORT.values()))
    assert named <= set(MAY_IMPORT), named - set(MAY_IMPORT)


def test_every_import_keeps_the_layout() -> None:
    breaches = [f"{e}: {why}" for e in EDGES() if (why := _breach(e))]
    assert breaches == []


@pytest.mark.parametrize("entry", sorted(ENTRIES), ids=lambda e: f"{e[0]}->{e[1]}")
def test_each_named_entry_is_used_lazy_and_needed(entry: tuple[str, str]) -> None:
    """An entry nobody uses is a hole waiting for a leak; one used at import time is no
    entry; one the rule allows at module level anyway says nothing."""
    importer, imported = entry
    assert _unit(imported) in MAY_IMPORT[_unit(importer)].lazily
    used = [
        e
        for e in EDGES()
        if e.importer == importer
        and not e.typing
        and (e.imported == imported or e.imported.startswith(imported + "."))
    ]
    assert used, f"{importer} no longer imports {imported}: drop the entry"
    assert all(e.lazy for e in used), [str(e) for e in used if not e.lazy]


_UNIT_TOKEN = re.compile(r"`([A-Za-z_]+(?:/|\.py))`")


def _docs_rule() -> dict[str, May]:
    """The layout table of docs/development.md, read as ``MAY_IMPORT`` is written."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    header = "| folder | holds | may import |"
    assert header in text
    rows = text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    rule: dict[str, May] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cells) == 3, row
        units = _UNIT_TOKEN.findall(cells[0])
        assert units, row
        eager_text, _, lazy_text = cells[2].partition("lazily")
        for unit in units:

            def read(part: str, unit: str = unit, units: list[str] = units) -> frozenset[str]:
                named = set(_UNIT_TOKEN.findall(part))
                if "the nouns" in part:
                    named |= NOUNS
                if "each other" in part:
                    named |= set(units) - {unit}
                return frozenset(named)

            assert unit not in rule, f"{unit} has two rows"
            rule[unit] = May(read(eager_text), read(lazy_text))
    return rule


def test_the_docs_table_is_the_rule() -> None:
    documented = _docs_rule()
    assert set(documented) == set(MAY_IMPORT)
    differ = {
        u: (documented[u], MAY_IMPORT[u]) for u in MAY_IMPORT if documented[u] != MAY_IMPORT[u]
    }
    assert differ == {}


def _is_postgres_backend(module: str) -> bool:
    return module.startswith("coord.storage.postgres")


def test_the_postgresql_backend_loads_only_where_a_postgresql_board_is_opened() -> None:
    """Its driver is an optional extra (``coord[postgres]``) and costs tens of milliseconds to
    import: no module but the backend's own imports it, and the backend is imported only
    lazily, by the code that opens a PostgreSQL board."""
    leaks = [
        str(e)
        for e in EDGES()
        if _is_postgres_backend(e.imported)
        and not _is_postgres_backend(e.importer)
        and not e.lazy
        and not e.typing
    ]
    assert leaks == []
    drivers = ("psycopg", "psycopg_pool", "asyncpg")
    importers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(_tree(path)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n.split(".")[0] in drivers for n in names):
                importers.append(_module_name(path))
    assert importers and all(_is_postgres_backend(m) for m in importers), importers
