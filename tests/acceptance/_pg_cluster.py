"""A private PostgreSQL server for the tests that stop and start one.

The shared server at 127.0.0.1:5432 serves every other test (and other people's runs): it is
never restarted. This one is made for the test with ``initdb`` in a temporary directory, on a
free port, and thrown away after it. Run as root (CI, containers), ``initdb`` refuses to run,
so the server runs as the ``postgres`` OS user (``runuser``) in a directory it owns.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BIN = Path(os.environ.get("COORD_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


class Cluster:
    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.data, self.log = root / "data", root / "server.log"
        self.admin_dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*_as_owner(), *command], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{command[0]} failed: {done.stdout}{done.stderr}\n{log}")

    def init(self) -> None:
        self._run(
            str(BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
        self._run(
            str(BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """``fast``: the server ends every session (clients see their connection close)."""
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def processes(self) -> list[int]:
        """The postmaster's pid, then its children's (every backend, the background workers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    # the field after the command's closing parenthesis: state, then ppid
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue  # ended meanwhile
                if int(fields[1]) == postmaster:
                    children.append(int(entry.name))
        return [postmaster, *children]

    def pause(self) -> None:
        """SIGSTOP every process of the server, the postmaster first (it forks no new backend
        meanwhile): connections stay open and the kernel still takes their bytes, but nothing
        answers. What a hung host or a partition that drops packets looks like to a client."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return self.dsn(name)


def _as_owner() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def unavailable() -> str | None:
    if not (BIN / "initdb").exists():
        return f"no PostgreSQL binaries in {BIN} (COORD_TEST_PG_BIN)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start the server as postgres"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A started server of its own; stopped and deleted afterwards. Skipped where it cannot
    run, failed under CI=true (as the rest of the PostgreSQL tier, ``pg_support``)."""
    from pg_support import require_postgres

    require_postgres()  # the driver, and the tier's rules
    reason = unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL tier must run under CI=true, but {reason}", pytrace=False)
        pytest.skip(f"private PostgreSQL server: {reason}")
    root = Path(tempfile.mkdtemp(prefix="coord-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    cluster = Cluster(root, _free_port())
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(OSError, ValueError):
            cluster.resume()  # a test that failed while it was paused
        if (cluster.data / "postmaster.pid").exists():
            try:
                cluster.stop("immediate")
            except (RuntimeError, subprocess.TimeoutExpired):
                time.sleep(0.5)
        shutil.rmtree(root, ignore_errors=True)
