"""The in-process tier: ``make test-fast`` (``pytest --in-process``) runs only the tests that
start no process and need no PostgreSQL.

A test is marked ``process``, and left out of that tier, when it needs PostgreSQL (``postgres``),
sits in a tier of processes (``acceptance/``, ``real_clients/``, ``browser/``), or its own code
names what starts a process: its body, the fixtures it asks for (wherever they are defined) and
the functions and classes they use in the test modules, followed to the end, read with ast.
So the ``daemon`` fixture, ``run_cli`` and ``subprocess.run(["git", ...])`` mark a test without a
list of files to keep. What that reading cannot see is the code under test starting one (git
run by a worktree rule, a daemon started on demand): under ``--in-process`` every process start
fails the test that made it, with the advice to mark it ``@pytest.mark.process``, so the fast
tier cannot silently grow slow again.
"""

from __future__ import annotations

import ast
import functools
import inspect
import multiprocessing.process
import os
import subprocess
from pathlib import Path
from typing import Any

import hypothesis
import pytest

TESTS = Path(__file__).resolve().parent
# directories whose every test drives separate processes
PROCESS_TIERS = tuple(TESTS / name for name in ("acceptance", "real_clients", "browser"))
# a name that, used by a test's code, starts a process
STARTERS = frozenset(
    {"subprocess", "multiprocessing", "Popen", "fork", "forkpty", "posix_spawn", "spawnv"}
)
STARTERS_OF_OS = frozenset({"system", "popen", "execv", "execvp", "execve"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--in-process",
        action="store_true",
        help="run only the tests that start no process and need no PostgreSQL (make test-fast)",
    )
    parser.addoption(
        "--shard",
        default="0/1",
        help="K/N: run every N-th test from the K-th (make test-fast runs one share per core)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "process: starts a process (the daemon, the CLI, git, a worker) or needs PostgreSQL; "
        "`make test-fast` leaves it out (tests/tiers.py marks most by reading the test)",
    )


class _Module:
    """One Python file's top-level names, read to find which of them start a process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.defs: dict[str, ast.AST] = {}
        self.imported: dict[str, tuple[Path, str]] = {}  # name -> (test helper file, its name)
        self.helpers: dict[str, Path] = {}  # module alias -> test helper file
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defs[node.name] = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.defs[target.id] = node
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    helper = _helper_file(path, alias.name)
                    if helper is not None:  # `import guard_oracle as oracle`
                        self.helpers[alias.asname or alias.name] = helper
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                helper = _helper_file(path, node.module)
                if helper is not None:
                    for alias in node.names:
                        self.imported[alias.asname or alias.name] = (helper, alias.name)
        self.classes = {n: d for n, d in self.defs.items() if isinstance(d, ast.ClassDef)}


def _helper_file(importer: Path, module: str) -> Path | None:
    """A module of the tests themselves (conftest, guard_scene, pg_support, ...), or None."""
    for folder in (importer.parent, TESTS):
        candidate = folder.joinpath(*module.split(".")).with_suffix(".py")
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _module(path: Path) -> _Module:
    return _Module(path)


def _names(node: ast.AST) -> frozenset[str]:
    """The names a piece of code uses; ``helper.name`` is also read as ``helper.name``."""
    found = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            found.add(inner.id)
        elif isinstance(inner, ast.Attribute):
            found.add(inner.attr)
            if isinstance(inner.value, ast.Name):
                found.add(f"{inner.value.id}.{inner.attr}")
                if inner.value.id == "os" and inner.attr in STARTERS_OF_OS:
                    found.add("subprocess")
    return frozenset(found)


_READING: set[tuple[Path, str]] = set()  # the definitions being read: a cycle reads as no


@functools.cache
def _def_starts(path: Path, name: str) -> bool:
    """Whether the top-level definition ``name`` of ``path`` starts a process."""
    module = _module(path)
    if name in module.imported:
        return _def_starts(*module.imported[name])
    if name not in module.defs or (path, name) in _READING:
        return False
    _READING.add((path, name))
    try:
        return _node_starts(path, module.defs[name])
    finally:
        _READING.discard((path, name))


def _node_starts(path: Path, node: ast.AST) -> bool:
    names = _names(node)
    if names & STARTERS:
        return True
    module = _module(path)
    for name in names:
        alias, dot, attr = name.partition(".")
        if dot and alias in module.helpers:
            if _def_starts(module.helpers[alias], attr):
                return True
        elif (name in module.defs or name in module.imported) and _def_starts(path, name):
            return True
    return False


@functools.cache
def _code_starts(path: Path, qualname: str) -> bool:
    """Whether the function or class ``qualname`` of ``path`` starts a process."""
    parts = qualname.split(".")
    node = _module(path).defs.get(parts[0])
    for part in parts[1:]:
        if not isinstance(node, ast.ClassDef):
            return False
        node = next((n for n in node.body if getattr(n, "name", None) == part), None)
    return node is not None and _node_starts(path, node)


@functools.cache
def _fixture_starts(func: Any) -> bool:
    func = inspect.unwrap(func)
    try:
        source = Path(inspect.getsourcefile(func) or "").resolve()
    except TypeError:
        return False
    if not source.is_relative_to(TESTS) or source == Path(__file__).resolve():
        return False  # pytest's own (tmp_path, monkeypatch) and the guard below
    return _code_starts(source, func.__qualname__)


def _starts_a_process(item: pytest.Item) -> bool:
    path = Path(str(item.fspath)).resolve()
    if any(path.is_relative_to(tier) for tier in PROCESS_TIERS):
        return True
    function = getattr(item, "function", None)
    if function is not None and _code_starts(path, function.__qualname__):
        return True
    cls = getattr(item, "cls", None)
    # a class's setup methods and helpers are its tests' code too
    if cls is not None and _code_starts(path, cls.__qualname__):
        return True
    info = getattr(item, "_fixtureinfo", None)
    return any(
        _fixture_starts(fixture.func)
        for name in getattr(item, "fixturenames", ())
        for fixture in (info.name2fixturedefs.get(name, ()) if info else ())
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("postgres") or _starts_a_process(item):
            item.add_marker(pytest.mark.process)
    if not config.getoption("in_process"):
        return
    left_out = [item for item in items if item.get_closest_marker("process")]
    items[:] = [item for item in items if not item.get_closest_marker("process")]
    shard, shards = (int(n) for n in config.getoption("shard").split("/"))
    if shards > 1:
        # every N-th test, in collection order: the shares come out even in time, which whole
        # files did not (a few files hold most of the slow tests); a module-scoped fixture is
        # then built once in each process that runs a test of its module
        left_out += [item for i, item in enumerate(items) if i % shards != shard]
        items[:] = items[shard::shards]
    config.hook.pytest_deselected(items=left_out)
    for item in items:
        _fewer_examples(getattr(item, "obj", None))


# the inner loop tries a fifth of each property test's examples; `make test` tries them all
FAST_EXAMPLES = 5


def _fewer_examples(test: Any) -> None:
    if not getattr(test, "is_hypothesis_test", False):
        return
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if current is None or getattr(test, "_coord_fast_examples", False):
        return
    wanted = max(10, current.max_examples // FAST_EXAMPLES)
    test._hypothesis_internal_use_settings = hypothesis.settings(current, max_examples=wanted)
    test._coord_fast_examples = True


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        shown = args[1] if len(args) > 1 and what == "subprocess" else what
        pytest.fail(
            f"this test starts a process ({shown!r}) under `make test-fast`, the in-process "
            "tier: mark it @pytest.mark.process (tests/tiers.py)",
            pytrace=False,
        )

    return refuse


_GUARD = pytest.MonkeyPatch()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``--in-process`` no process starts for the whole session: a fixture of any scope
    that starts one fails the tests that ask for it."""
    if not session.config.getoption("in_process"):
        return
    _GUARD.setattr(subprocess.Popen, "_execute_child", _refuse("subprocess"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            _GUARD.setattr(os, name, _refuse(f"os.{name}"))
    _GUARD.setattr(multiprocessing.process.BaseProcess, "start", _refuse("multiprocessing"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    _GUARD.undo()


def main(argv: list[str]) -> int:
    """``make test-fast``: the in-process tier, one pytest per core, and how long it took."""
    import sys
    import tempfile
    import time

    jobs = max(1, min(int(os.environ.get("FAST_JOBS", "0")) or os.cpu_count() or 1, 8))
    # the inner loop runs again and again: keep the bytecode and pytest's rewritten asserts
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    started = time.monotonic()
    # Boards are SQLite files and every test makes one: on a RAM file system their fsyncs
    # cost nothing (about 22 ms a board instead of 70 here), and the tests' own temporary
    # files go there too, so that no rename crosses file systems
    memory = Path("/dev/shm")
    ram = str(memory) if memory.is_dir() and os.access(memory, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="coord-test-fast-", dir=ram) as scratch:
        env["TMPDIR"] = scratch
        runs = []
        for k in range(jobs):
            log = open(Path(scratch, f"shard-{k}.log"), "w+b")  # noqa: SIM115 (closed below)
            command = [
                sys.executable, "-m", "pytest", "-p", "no:schemathesis", "-p", "no:cacheprovider",
                "-q", "--in-process", f"--shard={k}/{jobs}", f"--basetemp={scratch}/tmp-{k}",
                *argv,
            ]  # fmt: skip
            runs.append((subprocess.Popen(command, env=env, stdout=log, stderr=log), log))
        codes = []
        for k, (run, log) in enumerate(runs):
            codes.append(run.wait())
            log.seek(0)
            print(f"--- test-fast shard {k + 1}/{jobs} (exit {codes[-1]})", flush=True)
            sys.stdout.buffer.write(log.read())
            log.close()
    elapsed = time.monotonic() - started
    print(f"make test-fast: {elapsed:.1f} s on {jobs} processes", flush=True)
    if all(code == 5 for code in codes):  # pytest's "no tests ran"
        print("make test-fast: no tests ran", file=sys.stderr)
        return 1
    return max((c for c in codes if c != 5), default=0)


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
