"""A scratch repository where another agent holds files, and a command judged and then run in it.

``tests/hooks/test_shell_*.py`` use it: ``alice`` holds ``src/a.py`` (a file), ``lib/``
(a directory, with ``lib/core.py``) and ``docs/*.md`` (a glob); ``bob`` asks. ``verdict``
asks the shell guard about a command as bob; ``run`` runs it with bash in the repository
and says whether alice's files changed: a refusal must be of a command that would change
them, an allowed command must leave them alone.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

from conftest import init_board_dir
from coord.core.board import Board
from coord.hooks import shell_guard

HELD = ("src/a.py", "lib/core.py")

PATCH = """\
--- a/src/a.py
+++ b/src/a.py
@@ -1 +1 @@
-A = 1
+A = 2
"""


def make_repo(root: Path) -> Path:
    """The repository with its board and alice's holds; returns the board directory."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    board_dir = init_board_dir(root)
    for name, text in {
        "src/a.py": "A = 1\n",
        "src/b.py": "B = 1\n",
        "lib/core.py": "CORE = 1\n",
        "free/notes.txt": "notes\n",
        "docs/guide.md": "guide\n",
        "fix.patch": PATCH,
        "scripts/clean.sh": "#!/bin/sh\nrm -f src/a.py\n",
        "scripts/hello.sh": "#!/bin/sh\necho hello\n",
        "scripts/gen.py": "open('src/a.py', 'w').write('A = 3\\n')\n",
        "cmds.txt": "rm src/a.py\n",
        "names.txt": "src/a.py\n",
        "Makefile": "OUT = free\n\nhello:\n\t@echo hello > $(OUT)/hello.txt\n\n"
        "clean: hello\n\trm -f src/a.py\n",
        "package.json": '{"scripts": {"wipe": "rm -f lib/core.py", "hi": "echo hi"}}\n',
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        (root / name).chmod(0o644)  # whatever umask an earlier test left (chmod cases rely on it)
    (root / "free/link.py").symlink_to("../src/a.py")  # a held file under a free name
    (root / "scripts/clean.sh").chmod(0o755)
    (root / "scripts/hello.sh").chmod(0o755)
    with tarfile.open(root / "a.tgz", "w:gz") as tar:
        data = b"A = 9\n"
        info = tarfile.TarInfo("src/a.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(root / "a.zip", "w") as z:
        z.writestr("src/a.py", "A = 8\n")
    (root / "src/a.py.gz").write_bytes(gzip.compress(b"A = 7\n"))
    board = Board.open(board_dir)
    try:
        board.reserve(["src/a.py", "lib/", "docs/*.md"], agent="alice")
    finally:
        board.close()
    return board_dir


def fingerprint(root: Path) -> dict[str, tuple[int, str] | None]:
    """Each held file's mode and content hash (None: gone), and every file in the held
    directory ``lib/`` (a file created there is a change to what alice holds)."""
    out: dict[str, tuple[int, str] | None] = {}
    lib = [str(p.relative_to(root)) for p in (root / "lib").rglob("*")]
    docs = [str(p.relative_to(root)) for p in (root / "docs").glob("*.md")]
    for name in sorted({*HELD, *lib, *docs}):
        path = root / name
        try:
            out[name] = (path.stat().st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            out[name] = None
    return out


def verdict(board_dir: Path, command: str, cwd: Path | None = None) -> str | None:
    """The shell guard's refusal of ``command`` for bob, or None."""
    root = board_dir.parent
    return shell_guard.refusal(str(board_dir), command, "bob", str(cwd or root))


def run(root: Path, command: str) -> bool:
    """Run ``command`` with bash in ``root``; did alice's files change?"""
    before = fingerprint(root)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "free"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    subprocess.run(
        ["bash", "-c", command],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=20,
        check=False,
    )
    return fingerprint(root) != before
