"""The real agent clients, installed from the npm registry at the versions pinned here.

Each client is installed once per version into the user's cache directory
(``$XDG_CACHE_HOME/coord-test-clients`` or ``~/.cache/coord-test-clients``), so a second run
reuses it. Raise a version on purpose: the hook JSON each client sends is part of what the
tests prove, and a new release may change it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# package -> (version, the executable the package installs)
PINNED: dict[str, tuple[str, str]] = {
    "@anthropic-ai/claude-code": ("2.1.197", "claude"),
    "@openai/codex": ("0.171.0", "codex"),
    "@google/gemini-cli": ("0.61.0", "gemini"),
}


class ClientUnavailable(RuntimeError):
    """npm or the registry could not give us the client; the message says why."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coord-test-clients"


def installed(package: str) -> Path:
    """The path of the pinned client's executable, installing it first if needed."""
    version, binary = PINNED[package]
    return install(package, version, binary)


def install(package: str, version: str, binary: str) -> Path:
    """Any npm package at ``version`` in the cache (the browser tier's playwright-core too):
    the path of the executable it installs as ``binary``."""
    npm = shutil.which("npm")
    if npm is None:
        raise ClientUnavailable("npm is not on PATH (install Node.js 20 or newer)")
    prefix = cache_root() / f"{package.replace('/', '+')}@{version}"
    executable = prefix / "node_modules" / ".bin" / binary
    prefix.mkdir(parents=True, exist_ok=True)
    # Two test processes (or two CI jobs) may install the same client at once: one at a time.
    with (prefix / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (prefix / ".complete").exists() and executable.exists():
            return executable
        try:
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(prefix),
                    f"{package}@{version}",
                ],
                capture_output=True,
                text=True,
                timeout=900,
            )
        except subprocess.TimeoutExpired as err:
            raise ClientUnavailable(f"npm install {package}@{version} timed out") from err
        if done.returncode != 0 or not executable.exists():
            raise ClientUnavailable(
                f"npm install {package}@{version} failed (exit {done.returncode}):\n"
                f"{done.stderr[-2000:]}"
            )
        (prefix / ".complete").write_text(version + "\n")
        return executable


def client_executable(package: str) -> Path:
    """The client's executable; skipped outside CI, failed under CI, when it cannot be had."""
    try:
        return installed(package)
    except ClientUnavailable as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"real client {package} unavailable under CI: {err}")
        pytest.skip(f"real client {package} unavailable: {err}")
