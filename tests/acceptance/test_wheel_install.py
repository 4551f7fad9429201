"""A built wheel is a whole coord: every file the package reads is in it, and it installs with
the team-board extra into a fresh virtual environment the way the README says.

Issue 25: the README's team-board step `pip install 'coord[postgres]'` failed (coord is not on
a package index) and nothing had checked that a wheel carries the MCP manifest, the page's
static files and the migrations (an editable install reads them from the clone).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path | None = None, input: str | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, input=input, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_wheel_holds_every_file_of_the_package_and_installs_with_the_team_extra(
    tmp_path: Path,
) -> None:
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", ROOT)
    (wheel,) = (tmp_path / "dist").glob("coord-*.whl")
    packed = set(zipfile.ZipFile(wheel).namelist())
    # the oracle is the clone: every tracked file of the package but its tests
    tracked = _run("git", "ls-files", "src/coord", cwd=ROOT).split()
    wanted = {path.removeprefix("src/") for path in tracked}
    assert wanted - packed == set(), "files of the package missing from the wheel"

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    _run(venv / "bin" / "pip", "install", "-q", f"{wheel}[postgres]")  # the README's spelling
    assert _run(venv / "bin" / "coord", "--version").startswith("coord ")
    _run(venv / "bin" / "python", "-c", "import psycopg")  # the extra came with it
    # the installed MCP front reads its manifest from the wheel's files
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    board = tmp_path / "repo"
    board.mkdir()
    _run("git", "init", "-q", cwd=board)
    _run(venv / "bin" / "coord", "init", cwd=board)
    try:
        out = _run(
            venv / "bin" / "coord",
            "mcp",
            cwd=board,
            input="".join(json.dumps(m) + "\n" for m in (hello, listing)),
        )
    finally:
        subprocess.run([venv / "bin" / "coord", "stop"], cwd=board, capture_output=True)
    answers = {m.get("id"): m for m in map(json.loads, out.splitlines())}
    assert len(answers[2]["result"]["tools"]) == 15
