"""Another local user, made for one test: what coord must keep from someone on the same machine.

``useradd`` makes a system user with a unique name (no home, no login shell) and
``userdel`` removes it after the test, whether it passed or not. Creating users needs root:
elsewhere the tests that need one are skipped, but under ``CI=true`` (CI runs as root) they
fail instead, so they never go quietly unrun there.

``OtherUser.popen`` starts a process as that user (its uid and gid only, no supplementary
groups) with the system's Python and a bare environment: nothing of the test's own leaks to
it. ``OtherUser.home`` is a fresh directory that user owns, for what its processes write.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class OtherUser:
    name: str
    uid: int
    gid: int
    home: Path
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            args,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8"},
            cwd=self.home,
            text=True,
            **kwargs,
        )
        self.started.append(process)
        return process

    def python(self, script: str, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
        """The system's Python running ``script`` as this user (no venv: nothing of ours)."""
        return self.popen([SYSTEM_PYTHON, "-c", script, *args], **kwargs)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the other-user tests cannot run under CI: {reason}")
    pytest.skip(f"the other-user tests are skipped: {reason}")


@pytest.fixture
def other_user() -> Iterator[OtherUser]:
    if os.geteuid() != 0:
        _unavailable("they create a user, which needs root")
    for tool in ("useradd", "userdel"):
        if shutil.which(tool) is None:
            _unavailable(f"no {tool} on PATH")
    if not Path(SYSTEM_PYTHON).exists():
        _unavailable(f"no {SYSTEM_PYTHON}")
    name = f"coordt{secrets.token_hex(4)}"
    made = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        _unavailable(f"useradd failed: {made.stderr.strip()}")
    home = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    user = None
    try:
        import pwd

        entry = pwd.getpwnam(name)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        home.chmod(0o700)
        user = OtherUser(name, entry.pw_uid, entry.pw_gid, home)
        yield user
    finally:
        # the processes the test started as that user first: userdel refuses a user who
        # still runs one
        for process in user.started if user is not None else ():
            if process.poll() is None:
                process.kill()
            process.wait(10)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
