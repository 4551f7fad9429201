"""A team board for the acceptance tier: several checkouts (machines), each with its own
``.coord/`` and its own real daemon, all on one PostgreSQL database.

Each checkout is made as a user makes it (``git init``, then ``coord init --database URL``)
and served by ``coord serve`` (``conftest.Daemon``), so the tests go through exactly what a
team runs: one daemon per machine, its own port and token, one database behind them all.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, stop_leftover_daemon
from test_pg_daemon import Checkout, url_of


@dataclass
class Team:
    """``checkouts[i]`` served by ``daemons[i]``; ``url`` is the shared database."""

    url: str
    checkouts: list[Checkout] = field(default_factory=list)
    daemons: list[Daemon] = field(default_factory=list)

    def endpoints(self, count: int) -> list[tuple[str, str]]:
        """``count`` (url, token) pairs spread over the daemons in turn (worker n talks to
        daemon n mod the number of daemons)."""
        return [
            (d.url, d.token) for d in (self.daemons[n % len(self.daemons)] for n in range(count))
        ]

    def stop(self) -> None:
        for daemon in self.daemons:
            daemon.stop()
        for checkout in self.checkouts:
            if checkout.board_dir.is_dir():
                stop_leftover_daemon(checkout.board_dir)


def checkout_on(root: Path, url: str) -> Checkout:
    """A new checkout whose board is the database at ``url`` (``coord init --database``)."""
    checkout = Checkout(root)
    made = checkout.ok("init", "--database", url)
    assert made["database"] == url, made
    return checkout


@contextlib.contextmanager
def team_on(dsn: str, root: Path, machines: int = 3) -> Iterator[Team]:
    """``machines`` checkouts under ``root`` on the database ``dsn``, each with its daemon
    started; all stopped afterwards."""
    team = Team(url_of(dsn))
    try:
        for n in range(machines):
            team.checkouts.append(checkout_on(root / f"machine-{n}", team.url))
        for checkout in team.checkouts:
            team.daemons.append(Daemon(checkout.board_dir).start())
        yield team
    finally:
        team.stop()


# --- a daemon whose clock is off -------------------------------------------------------------


def faketime_library() -> str | None:
    """Debian's libfaketime (``apt-get install faketime``), or None when it is missing."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    return found[0] if found else None


@contextlib.contextmanager
def skewed_clock(offset: str) -> Iterator[None]:
    """Processes started inside see the system clock moved by ``offset`` (faketime's syntax:
    "+10m", "-10m"): what ``faketime -f OFFSET command`` does, through the environment,
    because ``conftest.Daemon`` starts its own command. The monotonic clock is left alone
    (timeouts and the event loop keep real time, as on a machine whose wall clock is off)."""
    library = faketime_library()
    if library is None:
        reason = "faketime is not installed (apt-get install faketime; .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"must run under CI=true, but {reason}", pytrace=False)
        pytest.skip(reason)
    saved = {key: os.environ.get(key) for key in ("LD_PRELOAD", "FAKETIME", "DONT_FAKE_MONOTONIC")}
    os.environ.update(LD_PRELOAD=library, FAKETIME=offset, DONT_FAKE_MONOTONIC="1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def item_of(daemon: Daemon, item_id: int, reader: str = "") -> dict[str, Any]:
    """The item as ``reader`` reads it: a claim's token is shown to its holder alone."""
    status, item = daemon.request("GET", f"/v1/items/{item_id}?agent={reader or 'lead'}")
    assert status == 200, item
    return item
