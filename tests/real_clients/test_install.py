"""Each pinned client installs from the registry and starts: the tier's own precondition."""

from __future__ import annotations

import subprocess

import pytest

from real_clients.npm_clients import PINNED, client_executable


@pytest.mark.parametrize("package", sorted(PINNED))
def test_pinned_client_reports_its_version(package: str) -> None:
    executable = client_executable(package)
    done = subprocess.run(
        [str(executable), "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert PINNED[package][0] in done.stdout
