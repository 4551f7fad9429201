"""An oracle that executes: judge a shell command through each client's real hook, run it in a
scratch copy of the repository, and compare what happened to the files another agent holds.

Not a test file: tests/test_guard_corpus.py (and any corpus of its own, e.g. git's) use it.

The scene (``make_template``): a git repository with a coord board, where agent A
(``HOLDER``) holds ``HELD`` through the real board API, with committed content *and*
uncommitted work in those files (A's work a checkout or a stash would lose), an untracked
held file, an executable held script, a held directory, a symlink from a free name to a held
file, and B's free files beside them. Branches ``feature`` (changes a held file) and
``free-only`` (changes only free files) are there for git's commands. Agent B is the client's
session (the fixture's ``session_id``): nobody gives B a name, as in real use.

Every command gets its own copy (``Sandbox``) at its own path: the hooks judge it there with
the tree untouched, then bash runs it there (``unshare --net`` where the kernel lets us, HOME
and TMPDIR inside the sandbox, a timeout), and the held files are compared before and after.
``@REPO@``, ``@TMP@`` and ``@HOME@`` in a command are the sandbox's repository, its scratch
directory outside the repository, and its HOME: a corpus never names a path outside the
sandbox.

Judging 4 clients x 300 commands as fresh processes costs ~35 ms each (about 45 s on two
cores), so ``Judges`` keeps one driver process per client that feeds each hook input, as real
stdin, to the same entry the ``coord hook`` command calls (``coord.hooks.run_hook``); a sample
of the calls is also made as a real ``coord hook CLIENT EVENT`` process, and both answers must
agree (``verdict`` is that real process, for one command).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "hooks"
CLIENTS = ("claude", "codex", "gemini", "cursor")
# each client's shell guard: the event and the documented input it is sent (tests/hooks/)
HOOKS = {
    "claude": ("PreToolUse", "claude/pre_tool_use_bash.json"),
    "codex": ("PreToolUse", "codex/pre_tool_use_bash.json"),
    "gemini": ("BeforeTool", "gemini/before_tool_run_shell_command.json"),
    "cursor": ("beforeShellExecution", "cursor/before_shell_execution.json"),
}

HOLDER = "alice"  # agent A
# what A holds (coord patterns); ``is_held`` reads them the same way, independently of coord
HELD = ("src/a.py", "src/b.py", "docs/", "bin/run.sh", "tests/test_a*.py")
LEASE_SECONDS = 6 * 24 * 3600

# the committed tree: path -> (content, mode)
COMMITTED: dict[str, tuple[str, int]] = {
    "README.md": ("# demo\n\nA project two agents work on.\n", 0o644),
    "Makefile": (
        "test:\n\t@echo tests pass\n\nbuild:\n\tmkdir -p build && echo built > build/out.txt\n",
        0o644,
    ),
    "package.json": (
        '{"name": "demo", "version": "1.0.0", "private": true,\n'
        ' "scripts": {"test": "node -e \\"console.log(\'ok\')\\"", '
        '"lint": "node -e \\"\\""}}\n',
        0o644,
    ),
    "setup.cfg": ("[tool:pytest]\ntestpaths = tests\n", 0o644),
    "src/__init__.py": ("", 0o644),
    "src/a.py": ("def a():\n    return 1\n", 0o644),
    "src/b.py": ("def b():\n    return 2\n", 0o644),
    "src/c.py": ("def c():\n    return 3\n", 0o644),
    "src/free/__init__.py": ("", 0o644),
    "src/free/util.py": ("def util():\n    return 4\n", 0o644),
    "lib/free.py": ("VALUE = 1\n", 0o644),
    "docs/guide.md": ("# Guide\n\nHow to use it.\n", 0o644),
    "docs/api/index.md": ("# API\n", 0o644),
    "bin/run.sh": ("#!/bin/sh\necho run\n", 0o755),
    "bin/tool.sh": ("#!/bin/sh\necho tool\n", 0o755),
    "tests/test_free.py": ("def test_free():\n    assert 1 + 1 == 2\n", 0o644),
    "tests/test_a.py": ("from src.a import a\n\n\ndef test_a():\n    assert a() == 1\n", 0o644),
    "notes/todo.md": ("- [ ] write more\n", 0o644),
    "data/input.csv": ("id,value\n1,10\n2,20\n", 0o644),
}
SYMLINKS = {"lib/current.py": "../src/a.py"}  # a free name leading to a held file
# A's work in progress (and B's), not committed: what `git stash` or `reset --hard` would lose
UNCOMMITTED = {
    "src/a.py": "def a():\n    return 1  # A: work in progress\n",
    "src/b.py": "def b():\n    return 20 # A: work in progress, not yet formatted\n",
    "docs/guide.md": "# Guide\n\nHow to use it (A is rewriting this).\n",
    "lib/free.py": "VALUE = 2  # B's own change\n",
}
UNTRACKED = {
    "tests/test_a_wip.py": "# A's new test, not yet added\n",
    "docs/draft.md": "A's draft, not yet added\n",
    "notes/scratch.txt": "B's notes\n",
}
# branches for git's commands: one rewrites a held file, one only free files
BRANCHES = {
    "feature": {"src/a.py": "def a():\n    return 100\n", "lib/free.py": "VALUE = 100\n"},
    "free-only": {"lib/free.py": "VALUE = 3\n", "notes/todo.md": "- [x] write more\n"},
}

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# --- the scene --------------------------------------------------------------------------------


def is_held(rel: str) -> bool:
    """Is the repository path ``rel`` one of A's (``HELD``, read as coord documents it)?"""
    for pattern in HELD:
        if pattern.endswith("/"):
            if rel == pattern[:-1] or rel.startswith(pattern):
                return True
        elif set(pattern) & set("*?["):
            if rel.count("/") == pattern.count("/") and fnmatch.fnmatchcase(rel, pattern):
                return True
        elif rel == pattern:
            return True
    return False


def _git(repo: Path, *args: str, home: Path) -> None:
    subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**_base_env(home), **_GIT_ENV},
        check=True,
        capture_output=True,
        timeout=60,
    )


def _write(repo: Path, rel: str, text: str, mode: int | None = None) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)


def make_template(root: Path, prepare: Callable[[Path], None] | None = None) -> Path:
    """Build the scene in ``root/repo`` (returned); ``prepare(repo)`` may add to it before A
    reserves (another corpus's branches, stashes, ...). Copied per command by ``Sandbox``."""
    from coord.core.board import Board
    from coord.fast import board_files

    repo = root / "repo"
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main", home=home)
    for key, value in (("user.name", "Dev"), ("user.email", "dev@example.com")):
        _git(repo, "config", key, value, home=home)
    for rel, (text, mode) in COMMITTED.items():
        _write(repo, rel, text, mode)
    for rel, target in SYMLINKS.items():
        os.symlink(target, repo / rel)
    _git(repo, "add", "-A", home=home)
    _git(repo, "commit", "-q", "-m", "start", home=home)
    _git(repo, "tag", "v1", home=home)
    for branch, files in BRANCHES.items():
        _git(repo, "checkout", "-q", "-b", branch, home=home)
        for rel, text in files.items():
            _write(repo, rel, text)
        _git(repo, "commit", "-q", "-am", f"on {branch}", home=home)
        _git(repo, "checkout", "-q", "main", home=home)
    # fewer files to copy per command: objects in one pack, no sample hooks
    _git(repo, "gc", "-q", home=home)
    for sample in (repo / ".git" / "hooks").glob("*.sample"):
        sample.unlink()
    for rel, text in {**UNCOMMITTED, **UNTRACKED}.items():
        _write(repo, rel, text)
    if prepare is not None:
        prepare(repo)
    board_dir = repo / board_files.BOARD_DIRNAME
    board_files.init_board_files(board_dir)
    board = Board.open(board_dir, create=True)
    try:
        board.reserve(list(HELD), agent=HOLDER, lease_seconds=LEASE_SECONDS, reason="oracle")
    finally:
        board.close()
    return repo


@dataclass(frozen=True)
class Sandbox:
    """One command's own copy of the scene: ``root/{repo,home,tmp}``."""

    root: Path

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def spell(self, command: str) -> str:
        """The command with its placeholders filled in for this sandbox."""
        return (
            command.replace("@REPO@", str(self.repo))
            .replace("@TMP@", str(self.tmp))
            .replace("@HOME@", str(self.home))
        )

    def where(self, cwd: str) -> Path:
        return (self.repo / cwd).resolve() if cwd not in ("", ".") else self.repo


def sandbox(template: Path, root: Path) -> Sandbox:
    """A fresh copy of the scene built by ``make_template`` (``template`` is its repo)."""
    box = Sandbox(root)
    root.mkdir(parents=True)
    shutil.copytree(template, box.repo, symlinks=True)
    box.home.mkdir()
    box.tmp.mkdir()
    (box.tmp / "in.txt").write_text("replacement\n")  # something to copy in
    return box


# --- judging ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    refused: bool
    reason: str  # the refusal's text, or what was wrong with an answer that is neither


def hook_input(client: str, box: Sandbox, command: str, cwd: str = ".") -> dict[str, Any]:
    """The client's documented shell-guard input for ``command`` run in ``cwd`` (relative to
    the repository): its own fields, session id and way of saying where the command runs."""
    raw = (FIXTURES / HOOKS[client][1]).read_text().replace("/REPO", str(box.repo))
    data: dict[str, Any] = json.loads(raw)
    here = str(box.where(cwd))
    if client == "cursor":
        data["command"] = command
        data["cwd"] = here
    elif client == "gemini":  # the project's root, and the directory relative to it
        data["tool_input"]["command"] = command
        if cwd not in ("", "."):
            data["tool_input"]["dir_path"] = cwd
    else:
        data["tool_input"]["command"] = command
        data["cwd"] = here
    return data


def read_answer(client: str, returncode: int, stdout: str, stderr: str) -> Verdict:
    """What the client would do with the hook's answer: run the command, or refuse it."""
    if returncode == 2:
        return Verdict(True, stderr.strip())
    if returncode != 0:
        return Verdict(False, f"UNCLEAR: exit {returncode}: {stderr.strip()}")
    if not stdout.strip():
        return Verdict(False, "")
    try:
        answer = json.loads(stdout)
    except ValueError:
        return Verdict(False, f"UNCLEAR: stdout is not JSON: {stdout!r}")
    if client == "gemini":
        decision, reason = answer.get("decision"), answer.get("reason")
    elif client == "cursor":
        decision, reason = answer.get("permission"), answer.get("agent_message")
    else:
        out = answer.get("hookSpecificOutput", {})
        decision, reason = out.get("permissionDecision"), out.get("permissionDecisionReason")
    if decision == "deny":
        return Verdict(True, str(reason))
    return Verdict(False, f"UNCLEAR: an answer that neither refuses nor is silent: {stdout!r}")


def _base_env(home: Path) -> dict[str, str]:
    """The environment of a hook or a command: this Python's tools first, no COORD_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "GIT_"))}
    bin_dir = str(Path(sys.executable).parent)
    env.update(
        PATH=f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        HOME=str(home),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    for noisy in ("CLAUDE_ENV_FILE", "CODEX_THREAD_ID", "CODEX_ENV_FILE", "VIRTUAL_ENV"):
        env.pop(noisy, None)
    return env


def _coord_command() -> list[str]:
    """The `coord` a client's settings run: the installed script beside this Python."""
    script = Path(sys.executable).parent / "coord"
    return [str(script)] if script.exists() else [sys.executable, "-m", "coord"]


def verdict(box: Sandbox, command: str, client: str, cwd: str = ".") -> Verdict:
    """``command`` judged by the real ``coord hook CLIENT EVENT`` process, as the client runs
    it (in the project's directory, its JSON on stdin)."""
    done = subprocess.run(
        [*_coord_command(), "hook", client, HOOKS[client][0]],
        input=json.dumps(hook_input(client, box, box.spell(command), cwd)),
        cwd=box.repo,
        env=_base_env(box.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return read_answer(client, done.returncode, done.stdout, done.stderr)


# One process per client answers hook after hook: each input is this process's stdin and its
# answer its stdout for one call of the entry `coord hook` calls.
_DRIVER = r"""
import io, json, os, sys
from coord.hooks import run_hook
requests, replies = sys.stdin, sys.stdout
for line in requests:
    ask = json.loads(line)
    os.chdir(ask["cwd"])
    out, err = io.BytesIO(), io.BytesIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(ask["input"].encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        code = run_hook(ask["client"], ask["event"])
    except BaseException as crash:
        code = -1
        sys.stderr.write(f"driver: run_hook raised {crash!r}")
    sys.stdout.flush(); sys.stderr.flush()
    answer = {"rc": code, "out": out.getvalue().decode(), "err": err.getvalue().decode()}
    sys.stdin, sys.stdout, sys.stderr = requests, replies, sys.__stderr__
    replies.write(json.dumps(answer) + "\n")
    replies.flush()
"""


class Judges:
    """One driver process per client (see the module's docstring); ``sample_every``: every
    Nth call per client is also made as a real ``coord hook`` process, and the two answers
    must agree (``disagreements`` lists those that did not)."""

    def __init__(self, home: Path, clients: Sequence[str] = CLIENTS, sample_every: int = 0):
        self.clients = tuple(clients)
        self.sample_every = sample_every
        self.disagreements: list[str] = []
        self.calls = 0
        self._home = home
        self._locks = {c: threading.Lock() for c in self.clients}
        self._count = dict.fromkeys(self.clients, 0)
        self._drivers: dict[str, subprocess.Popen[str]] = {}

    def __enter__(self) -> Judges:
        for client in self.clients:
            self._drivers[client] = subprocess.Popen(
                [sys.executable, "-c", _DRIVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=_base_env(self._home),
                text=True,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self._drivers.values():
            assert proc.stdin is not None and proc.stdout is not None
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            proc.stdout.close()

    def judge(self, box: Sandbox, command: str, client: str, cwd: str = ".") -> Verdict:
        return self.judge_all(box, command, cwd, (client,))[client]

    def judge_all(
        self, box: Sandbox, command: str, cwd: str = ".", clients: Sequence[str] | None = None
    ) -> dict[str, Verdict]:
        """``command`` judged by every client's driver at once (each answers on its own)."""
        clients = tuple(clients or self.clients)
        spelled = box.spell(command)
        sampled: list[str] = []
        with contextlib.ExitStack() as held:
            for client in clients:  # always in the same order: no two callers deadlock
                held.enter_context(self._locks[client])
            for client in clients:
                ask = {
                    "client": client,
                    "event": HOOKS[client][0],
                    "cwd": str(box.repo),
                    "input": json.dumps(hook_input(client, box, spelled, cwd)),
                }
                proc = self._drivers[client]
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(ask) + "\n")
                proc.stdin.flush()
            lines = {}
            for client in clients:
                proc = self._drivers[client]
                assert proc.stdout is not None
                lines[client] = proc.stdout.readline()
                if not lines[client]:
                    raise RuntimeError(f"the {client} driver died (exit {proc.poll()})")
                self._count[client] += 1
                if self.sample_every and (self._count[client] - 1) % self.sample_every == 0:
                    sampled.append(client)
                self.calls += 1
        seen = {}
        for client, line in lines.items():
            reply = json.loads(line)
            seen[client] = read_answer(client, reply["rc"], reply["out"], reply["err"])
        for client in sampled:
            real = verdict(box, command, client, cwd)
            if real != seen[client]:
                self.disagreements.append(
                    f"{client}: {command!r}: driver {seen[client]}, `coord hook` process {real}"
                )
        return seen


# --- executing --------------------------------------------------------------------------------


def snapshot(repo: Path) -> dict[str, tuple[Any, ...]]:
    """Every path of the working tree (not .git, not the board) that ``is_held``: its type,
    mode, owner, content and a file's mtime (a directory's changes as its entries')."""
    seen: dict[str, tuple[Any, ...]] = {}
    for top, dirs, files in os.walk(repo):
        rel_top = os.path.relpath(top, repo)
        if rel_top == ".":
            dirs[:] = [d for d in dirs if d not in (".git", ".coord")]
        for name in dirs + files:
            rel = os.path.normpath(os.path.join(rel_top, name))
            if not is_held(rel):
                continue
            path = os.path.join(top, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("symlink", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = ("dir", oct(stat.S_IMODE(info.st_mode)), (info.st_uid, info.st_gid))
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()[:16]
                seen[rel] = (
                    "file",
                    oct(stat.S_IMODE(info.st_mode)),
                    digest,
                    info.st_mtime_ns,
                    (info.st_uid, info.st_gid),
                )
            else:
                seen[rel] = ("other", stat.S_IFMT(info.st_mode))
    return seen


def changed(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    """The held paths whose existence, type, mode, content or mtime differ."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


@dataclass
class Execution:
    changed: list[str]  # held paths the command changed (empty: A's files are as they were)
    returncode: int | None  # None: killed at the timeout
    output: str = ""
    seconds: float = 0.0


_NET_OFF: list[str] | None = None


def _no_network() -> list[str]:
    """A prefix that runs a command with no network, where the kernel allows one."""
    global _NET_OFF
    if _NET_OFF is None:
        _NET_OFF = []
        for prefix in (["unshare", "--net", "--"], ["unshare", "--user", "--net", "--"]):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode:
                    continue
                _NET_OFF = prefix
                break
    return _NET_OFF


def execute(box: Sandbox, command: str, cwd: str = ".", timeout: float = 20) -> Execution:
    """Run ``command`` with bash in the sandbox (``cwd`` as the hook was told) and say which
    held files it changed."""
    before = snapshot(box.repo)
    started = time.monotonic()
    env = {
        **_base_env(box.home),
        "TMPDIR": str(box.tmp),
        "TERM": "dumb",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "npm_config_update_notifier": "false",
        "npm_config_cache": str(box.home / ".npm"),
    }
    proc = subprocess.Popen(
        [*_no_network(), "bash", "-c", box.spell(command)],
        cwd=box.where(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
        out = b""
    # what the command left running (`coproc`, `&`) finishes or is ended with it
    deadline = time.monotonic() + (2 if code is not None else 0)
    while True:
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            break
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    if proc.returncode is None:
        proc.kill()
        proc.wait()
    text = out.decode(errors="replace")[-2000:]
    seconds = time.monotonic() - started
    return Execution(changed(before, snapshot(box.repo)), code, text, seconds)


def executes_harmlessly(box: Sandbox, command: str, cwd: str = ".") -> list[str]:
    """The held files ``command`` changed when run (empty: harmless to A)."""
    return execute(box, command, cwd).changed


# --- a corpus ---------------------------------------------------------------------------------

EXPECTATIONS = ("writes-held", "harmless", "free-write")


@dataclass(frozen=True)
class Entry:
    command: str
    expect: str  # one of EXPECTATIONS
    category: str
    cwd: str = "."
    needs: tuple[str, ...] = ()  # programs it runs (absent: skipped, failed under CI=true)
    line: int = 0


def load_corpus(path: Path) -> list[Entry]:
    """A corpus file: ``## category`` headings, then one entry a line:

        EXPECT[cwd=DIR,needs=PROG+PROG]: COMMAND

    (the brackets optional); lines indented by four spaces continue the command on a new line
    (heredocs); a line starting with ``#`` is a comment. A bad line raises ValueError naming
    it."""
    entries: list[Entry] = []
    category = ""
    pending: dict[str, Any] | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            entries.append(Entry(**pending))
            pending = None

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("    ") and pending is not None:
            pending["command"] += "\n" + line[4:]
            continue
        flush()
        if line.startswith("## "):
            category = line[3:].strip()
            continue
        if not line.strip() or line.startswith("#"):
            continue
        head, sep, command = line.partition(": ")
        expect, _, options = head.partition("[")
        if not sep or expect not in EXPECTATIONS or (options and not options.endswith("]")):
            raise ValueError(f"{path.name}:{number}: not `EXPECT[options]: COMMAND`: {line!r}")
        if not category:
            raise ValueError(f"{path.name}:{number}: an entry before any `## category`")
        pending = {"command": command, "expect": expect, "category": category, "line": number}
        for option in filter(None, options[:-1].split(",")):
            key, _, value = option.partition("=")
            if key == "cwd":
                pending["cwd"] = value
            elif key == "needs":
                pending["needs"] = tuple(value.split("+"))
            else:
                raise ValueError(f"{path.name}:{number}: unknown option {key!r}")
    flush()
    return entries


def missing_programs(entry: Entry) -> list[str]:
    return [p for p in entry.needs if p != "root" and shutil.which(p) is None] + (
        ["root"] if "root" in entry.needs and os.geteuid() != 0 else []
    )


@dataclass
class Outcome:
    entry: Entry
    verdicts: dict[str, Verdict]
    execution: Execution


@dataclass
class CorpusRun:
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[tuple[Entry, list[str]]] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def escapes(self) -> list[tuple[Outcome, str]]:
        """(outcome, client): allowed, and when run it changed a held file."""
        return [
            (o, c)
            for o in self.outcomes
            for c, v in o.verdicts.items()
            if not v.refused and o.execution.changed
        ]

    def false_refusals(self) -> list[tuple[Outcome, str]]:
        """(outcome, client): a command that changes no held file, refused."""
        return [
            (o, c)
            for o in self.outcomes
            for c, v in o.verdicts.items()
            if v.refused and o.entry.expect != "writes-held" and not o.execution.changed
        ]

    def unclear(self) -> list[tuple[Outcome, str]]:
        return [
            (o, c) for o in self.outcomes for c, v in o.verdicts.items() if "UNCLEAR" in v.reason
        ]

    def mislabelled(self) -> list[str]:
        """Entries whose run contradicts their label: the corpus is wrong, not the guard."""
        wrong = []
        for o in self.outcomes:
            e, x = o.entry, o.execution
            if x.returncode is None:
                wrong.append(f"line {e.line}: {e.command!r} timed out")
            elif e.expect == "writes-held" and not x.changed:
                wrong.append(
                    f"line {e.line}: {e.command!r} is labelled writes-held but changed no held"
                    f" file (exit {x.returncode}: {x.output.strip()[-300:]!r})"
                )
            elif e.expect != "writes-held" and x.changed:
                wrong.append(
                    f"line {e.line}: {e.command!r} is labelled {e.expect} but changed {x.changed}"
                )
        return wrong


def run_corpus(
    entries: Sequence[Entry],
    workdir: Path,
    *,
    clients: Sequence[str] = CLIENTS,
    samples: int = 15,
    workers: int = 2,
    prepare: Callable[[Path], None] | None = None,
) -> CorpusRun:
    """Judge every entry with every client (one sandbox per entry), then run it there;
    about ``samples`` calls per client are also made as real ``coord hook`` processes."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    template = make_template(workdir / "template", prepare)
    run = CorpusRun()
    runnable = []
    for entry in entries:
        missing = missing_programs(entry)
        if missing:
            run.skipped.append((entry, missing))
        else:
            runnable.append(entry)

    sample_every = max(1, len(runnable) // max(1, samples))
    with Judges(workdir / "template" / "home", clients, sample_every) as judges:

        def one(index_entry: tuple[int, Entry]) -> Outcome:
            index, entry = index_entry
            box = sandbox(template, workdir / f"cmd{index}")
            try:
                verdicts = judges.judge_all(box, entry.command, entry.cwd)
                return Outcome(entry, verdicts, execute(box, entry.command, entry.cwd))
            finally:
                _remove(box.root)

        with ThreadPoolExecutor(max(1, workers)) as pool:
            run.outcomes = list(pool.map(one, enumerate(runnable)))
        run.disagreements = list(judges.disagreements)
    run.seconds = time.monotonic() - started
    return run


def _remove(root: Path) -> None:
    def writable(func: Any, path: str, _exc: Any) -> None:  # a command may chmod -w a dir
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
        with contextlib.suppress(OSError):
            func(path)

    shutil.rmtree(root, onerror=writable)


def summary(run: CorpusRun) -> str:
    """Escapes per category and per client, and the false refusals, as text."""
    from collections import Counter

    escapes = run.escapes()
    by_category: Counter[str] = Counter()
    commands_by_category: dict[str, set[int]] = {}
    for o, _c in escapes:
        commands_by_category.setdefault(o.entry.category, set()).add(o.entry.line)
    for category, lines in commands_by_category.items():
        by_category[category] = len(lines)
    by_client = Counter(c for _o, c in escapes)
    writers = sum(1 for o in run.outcomes if o.execution.changed)
    escaped = len({o.entry.line for o, _ in escapes})
    lines = [
        f"{len(run.outcomes)} commands x {len(CLIENTS)} clients in {run.seconds:.1f} s; "
        f"{writers} change a held file when run; {escaped} of them allowed by some client",
        "escapes per client: " + ", ".join(f"{c} {by_client.get(c, 0)}" for c in CLIENTS),
        "escapes per category (commands):",
        *(f"  {cat}: {n}" for cat, n in sorted(by_category.items(), key=lambda x: -x[1])),
    ]
    return "\n".join(lines)


def _ram_disk() -> str | None:
    """/dev/shm where it is a writable tmpfs that runs programs: a copy of the scene there
    takes ~3 ms, on this machine's disk ~60 ms (300 copies: 1 s against 18 s)."""
    try:
        info = os.statvfs("/dev/shm")
    except OSError:
        return None
    if info.f_flag & (os.ST_NOEXEC | os.ST_RDONLY) or not os.access("/dev/shm", os.W_OK):
        return None
    return "/dev/shm"


@contextlib.contextmanager
def scratch(prefix: str = "guard-oracle-") -> Iterator[Path]:
    """A temporary directory for sandboxes (on a RAM disk where there is one), removed after."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix=prefix, dir=_ram_disk()))
    try:
        yield root
    finally:
        _remove(root)
