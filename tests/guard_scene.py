"""The scene of the guard's oracle (see tests/guard_oracle.py): a git repository with a coord
board where agent A holds files with uncommitted work, copied once per command (``Sandbox``),
and what a command did to A's files when run there (``execute``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOLDER = "alice"  # agent A
# what A holds (coord patterns); ``is_held`` reads them the same way, independently of coord
HELD = ("src/a.py", "src/b.py", "docs/", "bin/run.sh", "tests/test_a*.py")
# A's coord worktree, claimed with its item (the worktree corpus's scene makes it): every path
# in it is A's, held by the worktree rule rather than by a reservation
A_WORKTREE = ".worktrees/1-t1"
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
# branches for git's commands: one changes held files A is editing (git refuses to overwrite
# that work), one a held file A has not touched (a checkout or merge rewrites it), one only
# free files
BRANCHES = {
    "feature": {"src/a.py": "def a():\n    return 100\n", "lib/free.py": "VALUE = 100\n"},
    "docs-fix": {"docs/api/index.md": "# API\n\nFixed.\n"},
    "free-only": {"lib/free.py": "VALUE = 3\n", "notes/todo.md": "- [x] write more\n"},
}
# stash@{0}: an older change of a held file A has not touched since, and of a free one
STASHED = {"docs/api/index.md": "# API (stashed)\n", "notes/todo.md": "- [ ] stashed\n"}

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# --- the scene --------------------------------------------------------------------------------


def is_held(rel: str) -> bool:
    """Is the repository path ``rel`` one of A's (``HELD``, read as coord documents it, or in
    A's worktree)?"""
    if rel == A_WORKTREE or rel.startswith(A_WORKTREE + "/"):
        return True
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
        env={**base_env(home), **GIT_ENV},
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


def make_template(
    root: Path,
    prepare: Callable[[Path], None] | None = None,
    claim: Callable[[Any, Path], None] | None = None,
) -> Path:
    """Build the scene in ``root/repo`` (returned); ``prepare(repo)`` may add to it before A
    reserves (another corpus's branches, stashes, ...), ``claim(board, repo)`` after (A's
    claims). Copied per command by ``Sandbox``."""
    from coord.core.board import Board
    from coord.fast import board_files

    repo = root / "repo"
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main", home=home)
    for key, value in (
        ("user.name", "Dev"),
        ("user.email", "dev@example.com"),
        # a copy keeps sizes and mtimes, not inodes and ctimes: without these git would find
        # every file of a fresh sandbox "not uptodate", which no real repository is
        ("core.trustctime", "false"),
        ("core.checkStat", "minimal"),
    ):
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
    for rel, text in STASHED.items():
        _write(repo, rel, text)
    _git(repo, "stash", "-q", home=home)
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
        if claim is not None:
            claim(board, repo)
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
    _repair_worktrees(template, box.repo)
    box.home.mkdir()
    box.tmp.mkdir()
    (box.tmp / "in.txt").write_text("replacement\n")  # something to copy in
    return box


def _repair_worktrees(template: Path, repo: Path) -> None:
    """A linked worktree inside the copy still names the template's paths (its ``.git`` file
    and its record's ``gitdir`` are absolute): both are pointed at the copy, as ``git worktree
    repair`` does after a move (which, run here, would follow the ``.git`` file to the
    template's record and rewrite that instead)."""
    records = repo / ".git" / "worktrees"
    if not records.is_dir():
        return
    for record in sorted(records.iterdir()):
        old = Path((record / "gitdir").read_text().strip())  # <worktree>/.git
        moved = repo / old.relative_to(template)
        (record / "gitdir").write_text(f"{moved}\n")
        moved.write_text(f"gitdir: {record}\n")


def base_env(home: Path) -> dict[str, str]:
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
        **base_env(box.home),
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


def remove(root: Path) -> None:
    def writable(func: Any, path: str, _exc: Any) -> None:  # a command may chmod -w a dir
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
        with contextlib.suppress(OSError):
            func(path)

    if sys.version_info >= (3, 12):  # onerror is deprecated there
        shutil.rmtree(root, onexc=writable)
    else:
        shutil.rmtree(root, onerror=writable)


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
        remove(root)
