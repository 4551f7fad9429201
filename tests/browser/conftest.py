"""The browser tier: the live board's page in Debian's Chromium, driven by Playwright.

Marked ``browser``; ``make test`` leaves it out, ``make test-browser`` runs it and so does CI
(``.ci/run``, which installs Chromium). Playwright comes from npm's ``playwright-core`` (cached
like the real clients); the browser is never one a tool downloads. Under ``CI=true`` a
missing Chromium or Playwright fails the test with the reason; elsewhere it is skipped.

Each test gets a fresh board served on a fixed port (so a restarted daemon keeps the page's
origin) and a fresh browser profile; ``Browser`` sends one JSON command a line to
``driver.cjs``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Daemon, init_board_dir, run_cli

from real_clients.npm_clients import ClientUnavailable, install

PLAYWRIGHT_VERSION = "1.64.1"
HERE = Path(__file__).parent
CHROMIUM = "/usr/bin/chromium"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run under CI: {reason}")
    pytest.skip(f"browser tests skipped: {reason}")


@pytest.fixture(scope="session")
def playwright_core() -> Path:
    chromium = shutil.which("chromium") or CHROMIUM
    if not Path(chromium).exists():
        _unavailable("no Chromium (apt-get install chromium)")
    if shutil.which("node") is None:
        _unavailable("no Node.js on PATH")
    try:
        executable = install("playwright-core", PLAYWRIGHT_VERSION, "playwright-core")
    except ClientUnavailable as err:
        _unavailable(f"playwright-core from npm: {err}")
    return executable.parent.parent / "playwright-core"


class BrowserError(AssertionError):
    pass


class Browser:
    """One Chromium with a fresh profile, one page."""

    def __init__(self, package: Path, profile: Path) -> None:
        profile.mkdir()
        self.process = subprocess.Popen(
            ["node", str(HERE / "driver.cjs")],
            env={
                **os.environ,
                "PLAYWRIGHT_CORE": str(package),
                "CHROMIUM": shutil.which("chromium") or CHROMIUM,
                "PROFILE": str(profile),
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def do(self, op: str, **args: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise BrowserError(f"the browser driver ended (exit {self.process.wait(5)})")
        answer = json.loads(line)
        if not answer["ok"]:
            raise BrowserError(answer["error"])
        return answer["value"]

    def wait(self, expr: str, timeout: float = 15.0) -> Any:
        """Wait until the JavaScript expression is truthy in the page; its value."""
        return self.do("wait", expr=expr, timeout=int(timeout * 1000))

    def eval(self, expr: str) -> Any:
        return self.do("eval", expr=expr)

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            try:
                self.process.stdin.write(json.dumps({"op": "close"}) + "\n")
                self.process.stdin.close()
                self.process.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture
def browser(playwright_core: Path, tmp_path: Path) -> Iterator[Browser]:
    b = Browser(playwright_core, tmp_path / "profile")
    yield b
    b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Daemon]:
    """A fresh board's daemon on a fixed port of its own."""
    daemon = Daemon(init_board_dir(tmp_path / "repo"), port=free_port()).start()
    yield daemon
    daemon.stop()


def cli(daemon: Daemon, *args: str, agent: str | None = None) -> Any:
    """The real `coord` command with --json; its answer."""
    done = run_cli(*args, "--json", board_dir=daemon.board_dir, agent=agent)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def open_page(daemon: Daemon, browser: Browser, name: str = "alice") -> str:
    """`coord open` and the browser at its link, until the page is loaded and live."""
    link = cli(daemon, "open", "--as", name, "--no-browser")["url"]
    landed = browser.do("goto", url=link)
    browser.wait("document.body.dataset.ready === '1'")
    browser.wait("document.getElementById('link').dataset.state === 'live'")
    return str(landed["url"])


def card(column: str, item_id: int) -> str:
    """A JavaScript expression: the card of the item in the column, or null."""
    return f"document.querySelector('#col-{column} .card[data-id=\"{item_id}\"]')"


@pytest.fixture
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $COORD_TEST_ARTIFACTS, or a temporary directory (printed)."""
    chosen = os.environ.get("COORD_TEST_ARTIFACTS")
    where = Path(chosen) if chosen else tmp_path_factory.mktemp("artifacts")
    where.mkdir(parents=True, exist_ok=True)
    return where
