"""`coord status` and `coord doctor` as fresh processes, beside `python -c pass` in the same run.

    python bench/status_doctor.py [--items N] [--runs N]

Not a test: it prints figures. The board holds ``--items`` items (default 200,000, some
claimed) so the status counts are measured where they could grow with the board; `coord next`
runs in the same loop as the reference the CLI's hot path is judged by.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_plan import _stop_autostarted
from common import (
    CLEANUP,
    PYTHON,
    log,
    median,
    new_board_dir,
    print_beside_python,
    seed,
    start_daemon,
    temp_dir,
)


def _timed(argv: list[str], env: dict[str, str], *, answers: bool) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    took = time.perf_counter() - began
    # doctor exits 1 on this bare board (no client wired); the answer must still be JSON
    if answers and (done.returncode not in (0, 1) or not done.stdout.startswith(b"{")):
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stdout!r} {done.stderr!r}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    board_dir = new_board_dir("status")
    log(f"seeding {args.items:,} items")
    seed(board_dir, args.items)
    daemon = start_daemon(board_dir)
    env = {**os.environ, "COORD_DIR": str(board_dir), "COORD_AGENT": "bench-status"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
    commands = {
        "python -c pass": [PYTHON, "-c", "pass"],
        "python -m coord next --json": [PYTHON, "-m", "coord", "next", "--json"],
        "python -m coord status --json": [PYTHON, "-m", "coord", "status", "--json"],
        "python -m coord doctor --json": [PYTHON, "-m", "coord", "doctor", "--json"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    log(f"{args.runs} runs of each command, interleaved, after 3 warm-up runs")
    try:
        for n in range(args.runs + 3):
            for name, argv in commands.items():
                took = _timed(argv, env, answers=name != "python -c pass")
                if n >= 3:
                    times[name].append(took)
    finally:
        daemon.stop()
        _stop_autostarted(board_dir, daemon.proc.pid)
        CLEANUP.run()
    print(
        f"\n== status and doctor: fresh process to answer, median of {args.runs} "
        f"({args.items:,} items, daemon up, bytecode cached)"
    )
    print_beside_python(times, median(times["python -c pass"]), 40)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
