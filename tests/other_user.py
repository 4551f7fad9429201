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

import json
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

    def squat(self, port: int) -> tuple[subprocess.Popen[str], Path]:
        """A stranger's server bound to 127.0.0.1:``port`` as this user (once it is free),
        and the file it writes each request it gets to (``requests_seen`` reads it)."""
        seen = self.home / f"seen-{port}.jsonl"
        process = self.python(SQUATTER, str(port), str(seen), stdout=subprocess.PIPE)
        assert process.stdout is not None and process.stdout.readline().strip() == "bound"
        return process, seen


def requests_seen(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# Not coord: a plain HTTP server that answers every request with 200 and JSON shaped like
# the daemon's (a made-up proof among it), and writes down each request, headers and body.
SQUATTER = r"""
import json, socket, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

port, seen_path = int(sys.argv[1]), sys.argv[2]
seen = open(seen_path, "a", buffering=1)

class Answer(BaseHTTPRequestHandler):
    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace") if length else ""
        seen.write(json.dumps({"method": self.command, "path": self.path,
                               "headers": {k.lower(): v for k, v in self.headers.items()},
                               "body": body}) + "\n")
        payload = json.dumps({"proof": "0" * 64, "instance": "f" * 32, "items": [],
                              "events": [], "agents": [], "reservations": [], "next": None,
                              "last_seq": 0, "as": "alice", "server_now": time.time(),
                              "board": {"counts": {}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, *args):
        pass

class Server(HTTPServer):
    allow_reuse_address = True

deadline = time.monotonic() + 20
while True:
    try:
        server = Server(("127.0.0.1", port), Answer)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.01)
print("bound", flush=True)
server.serve_forever()
"""


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
