"""`coord mcp` as a client spawns it per session: from spawn to its tools listed."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from common import (
    PYTHON,
    log,
    median,
    new_board_dir,
    print_beside_python,
    start_daemon,
    temp_dir,
    verdict,
)

CLIENT = {"name": "bench", "version": "1"}
OPENING = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)
BOARD_CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "board", "arguments": {}},
    }
).encode()


# --- coord mcp's first answers ------------------------------------------------------------------


def bench_mcp_start(runs: int) -> None:
    warm_dir, cold_dir = new_board_dir("mcp-warm"), new_board_dir("mcp-cold")
    start_daemon(warm_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed coord has
    env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
    env["COORD_AGENT"] = "bench-agent"
    cases: dict[str, tuple[Path | None, str, bool]] = {"python -c pass": (None, "1", False)}
    for front, when in (("0", "before (SDK alone)"), ("1", "after (front)")):
        cases[f"{when}, daemon running"] = (warm_dir, front, False)
        cases[f"{when}, no daemon"] = (cold_dir, front, False)
        cases[f"{when}, daemon running: first call"] = (warm_dir, front, True)
    times: dict[str, list[float]] = {name: [] for name in cases}
    log(f"mcp-start: {runs} spawns of each case, interleaved, after 2 warm-up rounds")
    for n in range(runs + 2):
        for name, (board_dir, front, call) in cases.items():
            if board_dir is None:
                began = time.perf_counter()
                subprocess.run([PYTHON, "-c", "pass"], check=True)
                took = time.perf_counter() - began
            else:
                took = _spawn_to_answer(board_dir, {**env, "COORD_MCP_FRONT": front}, call)
            if n >= 2:
                times[name].append(took)

    base = median(times["python -c pass"])
    print(
        f"\n== mcp-start: `python -m coord mcp` spawned as a client does, initialize + "
        f"tools/list sent at once; spawn to the tools listed (first call: to the board tool's "
        f"answer), median of {runs}; bytecode cached"
    )
    print_beside_python(times, base, width=48)
    warm = median(times["after (front), daemon running"])
    cold = median(times["after (front), no daemon"])
    print(f"   target: tools listed <= 150 ms, daemon running ... {warm * 1000:.0f} ms  ", end="")
    print(verdict(warm <= 0.150))
    print(f"   target: tools listed <= 1.5 s, no daemon ... {cold * 1000:.0f} ms  ", end="")
    print(verdict(cold <= 1.5))


def _spawn_to_answer(board_dir: Path, env: dict[str, str], call: bool) -> float:
    began = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-m", "coord", "mcp"],
        env={**env, "COORD_DIR": str(board_dir)},
        cwd=board_dir.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(OPENING + (BOARD_CALL + b"\n" if call else b""))
    proc.stdin.flush()
    wanted = 3 if call else 2
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"coord mcp ended before answering request {wanted}")
        answer = json.loads(line)
        if answer.get("id") == wanted:
            took = time.perf_counter() - began
            break
    if wanted == 2 and len(answer["result"]["tools"]) != 15:
        raise RuntimeError(f"coord mcp listed {answer}")
    proc.stdin.close()
    proc.wait(60)
    return took
