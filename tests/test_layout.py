"""The architecture's never-rules, read from the import graph of ``src/coord`` (ast, no imports).

The folders say what depends on what (README, "Layout"): the nouns (``coord.model``,
``coord.errors``) are the leaf; ``fast/`` is what runs before every edit and CLI call and needs
only the standard library and the nouns; ``spec/`` is the document protocol on top of ``fast/``;
``core/`` holds every board rule; ``storage/`` knows no rules; the faces (``server``, ``cli``,
``mcp``, ``hooks``, ``wiring``) translate and call. A face may load another face or the core only
lazily, inside one command's entry, and each such entry is named in ``ENTRIES`` with its reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "coord"

NOUNS = {"coord.model", "coord.errors", "coord.times", "coord.limits"}
FACES = ("server", "cli", "mcp", "hooks", "wiring")

# (importer, imported package or module) -> why this lazy import is an entry, not a leak.
# Each must sit inside a function: the import runs only when that one command runs.
ENTRIES: dict[tuple[str, str], str] = {
    ("coord", "coord.core"): "the public Python API: `from coord import Board`",
    ("coord.cli.commands", "coord.core"): "`coord init` creates the board before any daemon",
    ("coord.cli.commands", "coord.server"): "`coord serve` runs the daemon in this process",
    ("coord.cli.commands", "coord.storage.postgres"): (
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
    ("coord.cli.migrate_cmd", "coord.storage"): "`coord migrate` copies a board between backends",
    ("coord.server.mcp_mount", "coord.mcp"): "the daemon mounts the MCP face at /mcp",
}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    lazy: bool  # inside a function or method: runs only when that code runs

    def __str__(self) -> str:
        where = "lazy" if self.lazy else "at import"
        return f"{self.importer}:{self.line} imports {self.imported} ({where})"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _exists(module: str) -> bool:
    base = SRC.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _edges() -> list[Edge]:
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lazy_nodes = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for inner in ast.walk(node)
        }
        # `if TYPE_CHECKING:` imports never run: annotations only, not dependencies
        typing_nodes = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_nodes:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.append(sub if _exists(sub) else module)
            lazy = id(node) in lazy_nodes
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
                    edges.append(Edge(importer, target, node.lineno, lazy))
    return edges


EDGES = _edges()


def _layer(module: str) -> str:
    """The folder a module belongs to: 'nouns', 'fast', 'core', …; 'coord' for the package."""
    if module in NOUNS:
        return "nouns"
    if module == "coord.__main__":
        return "cli"  # `python -m coord` is the command line
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "coord"


def _is_entry(edge: Edge) -> bool:
    for (importer, imported), _why in ENTRIES.items():
        if edge.importer == importer and (
            edge.imported == imported or edge.imported.startswith(imported + ".")
        ):
            return edge.lazy
    return False


def _violations(rule) -> list[str]:
    return [str(e) for e in EDGES if rule(_layer(e.importer), _layer(e.imported), e)]


def test_the_graph_is_read() -> None:
    """The rules below mean something only if the reader sees the imports they judge."""
    layers = {(_layer(e.importer), _layer(e.imported)) for e in EDGES}
    assert ("core", "storage") in layers
    assert ("cli", "client") in layers
    assert ("fast", "nouns") in layers
    assert any(e.lazy for e in EDGES) and any(not e.lazy for e in EDGES)


def test_the_nouns_import_only_each_other() -> None:
    assert _violations(lambda a, b, e: a == "nouns" and b != "nouns") == []


def test_fast_imports_only_the_standard_library_and_the_nouns() -> None:
    assert _violations(lambda a, b, e: a == "fast" and b not in ("fast", "nouns")) == []


def test_spec_imports_only_fast_and_the_nouns() -> None:
    assert _violations(lambda a, b, e: a == "spec" and b not in ("spec", "fast", "nouns")) == []


def test_client_imports_only_what_the_clients_share() -> None:
    allowed = ("client", "fast", "spec", "nouns")
    assert _violations(lambda a, b, e: a == "client" and b not in allowed) == []


def test_landing_imports_only_client_spec_fast_and_the_nouns() -> None:
    allowed = ("landing", "client", "fast", "spec", "nouns")
    assert _violations(lambda a, b, e: a == "landing" and b not in allowed) == []


def test_core_and_storage_import_no_face() -> None:
    assert _violations(lambda a, b, e: a in ("core", "storage") and b in FACES) == []


def test_storage_knows_no_rules() -> None:
    assert _violations(lambda a, b, e: a == "storage" and b == "core") == []


def test_mcp_does_not_borrow_from_the_cli() -> None:
    assert _violations(lambda a, b, e: a == "mcp" and b == "cli") == []


def test_hooks_and_cli_reach_the_board_only_through_named_entries() -> None:
    assert (
        _violations(
            lambda a, b, e: a in ("hooks", "cli") and b in ("core", "storage") and not _is_entry(e)
        )
        == []
    )


def test_only_named_entries_reach_a_face() -> None:
    """A face is loaded by its own folder, or lazily by the one command that serves it."""
    assert _violations(lambda a, b, e: b in FACES and a != b and not _is_entry(e)) == []


@pytest.mark.parametrize("entry", sorted(ENTRIES), ids=lambda e: f"{e[0]}->{e[1]}")
def test_each_named_entry_is_used_and_lazy(entry: tuple[str, str]) -> None:
    """An entry nobody uses is a hole waiting for a leak; one used at import time is no entry."""
    importer, imported = entry
    used = [
        e
        for e in EDGES
        if e.importer == importer
        and (e.imported == imported or e.imported.startswith(imported + "."))
    ]
    assert used, f"{importer} no longer imports {imported}: drop the entry"
    assert all(e.lazy for e in used), [str(e) for e in used if not e.lazy]


def _is_postgres_backend(module: str) -> bool:
    return module.startswith("coord.storage.postgres")


def test_the_postgresql_backend_loads_only_where_a_postgresql_board_is_opened() -> None:
    """Its driver is an optional extra (``coord[postgres]``) and costs tens of milliseconds to
    import: no module but the backend's own imports it, and the backend is imported only
    lazily, by the code that opens a PostgreSQL board."""
    leaks = [
        str(e)
        for e in EDGES
        if _is_postgres_backend(e.imported) and not _is_postgres_backend(e.importer) and not e.lazy
    ]
    assert leaks == []
    drivers = ("psycopg", "psycopg_pool", "asyncpg")
    importers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
