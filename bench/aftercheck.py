"""The guard with the after-tool check, as fresh processes, on a tree of 1,000 held files.

Before the tripwire the guard's cost was the PreToolUse hook alone; now every allowed call
also pays a snapshot of the held files in the PreToolUse hook and a comparison in the
PostToolUse hook (``coord.hooks.aftercheck``). Both printed beside ``python -c pass``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from pathlib import Path

from common import PYTHON, log, median, new_board_dir, print_beside_python, temp_dir, verdict
from coord.core.board import Board

HOLDERS = 200  # agents; each holds 5 files: 1,000 held files in the tree
FILE_BYTES = 2048
SESSION = "4f1c2a9e-8b7d-4c3e-9f2a-1b2c3d4e5f60"  # the agent claude-4f1c2a9e, holding nothing
FREE_PATH = "src/free/mod.py"
# the same interpreter and imports for each variant: run_hook called from `python -c`; the
# "guard only" variant has the snapshot step replaced by nothing (as before the tripwire)
_RUN = "import sys\nfrom coord.hooks import run_hook\nsys.exit(run_hook('claude', {event!r}))"
_NO_SNAPSHOT = (
    "import sys\nstub = type(sys)('coord.hooks.aftercheck')\nstub.snapshot = lambda *a: None\n"
    "sys.modules['coord.hooks.aftercheck'] = stub\n"
)


def held_tree(board_dir: Path) -> int:
    """1,000 existing files held by 200 other agents: half by a directory each, half by five
    literal paths each. Returns the number of held files."""
    root = board_dir.parent
    board = Board.open(board_dir)
    count = 0
    try:
        for n in range(HOLDERS):
            folder = root / f"src/pkg{n}"
            folder.mkdir(parents=True)
            names = [f"src/pkg{n}/mod{k}.py" for k in range(5)]
            for name in names:
                (root / name).write_bytes(os.urandom(FILE_BYTES // 2).hex().encode())
                count += 1
            patterns = [f"src/pkg{n}/"] if n % 2 else names
            board.reserve(patterns, agent=f"agent-{n}", lease_seconds=3600)
    finally:
        board.close()
    (root / FREE_PATH).parent.mkdir(parents=True)
    (root / FREE_PATH).write_text("TIMEOUT = 30\n")
    return count


def payload(root: Path, event: str, tool: str, call: int) -> bytes:
    tool_input: dict[str, object]
    if tool == "Bash":
        tool_input = {"command": "ls src", "description": "list"}
    else:
        tool_input = {
            "file_path": str(root / FREE_PATH),
            "old_string": "TIMEOUT = 30",
            "new_string": "TIMEOUT = 30",
        }
    data: dict[str, object] = {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/-bench/{SESSION}.jsonl",
        "cwd": str(root),
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_bench_{call}",
    }
    if event == "PostToolUse":
        data["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
    return json.dumps(data).encode()


def bench_after_tool(runs: int) -> None:
    board_dir = new_board_dir("after-tool")
    began = time.perf_counter()
    held = held_tree(board_dir)
    log(f"after-tool: {held} held files in {time.perf_counter() - began:.1f}s")
    root = board_dir.parent
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
    guard_only = [PYTHON, "-c", _NO_SNAPSHOT + _RUN.format(event="PreToolUse")]
    pre = [PYTHON, "-c", _RUN.format(event="PreToolUse")]
    post = [PYTHON, "-c", _RUN.format(event="PostToolUse")]
    # what `coord init` wires: the venv's `coord` console script (no runpy, unlike -m)
    entry_pre = [str(Path(PYTHON).parent / "coord"), "hook", "claude", "PreToolUse"]
    names = ["python -c pass"]
    for tool in ("Bash", "Edit"):
        names += [
            f"{tool}: guard only (before)",
            f"{tool}: guard + snapshot (pre)",
            f"{tool}: compare (post)",
            f"{tool}: pre + post",
            f"{tool}: coord hook claude PreToolUse",
        ]
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    first, _ = _timed(pre, env, root, payload(root, "PreToolUse", "Bash", -1))  # copies 1,000
    _timed(post, env, root, payload(root, "PostToolUse", "Bash", -1))
    log(f"after-tool: the first snapshot (copying every held file) took {first * 1000:.0f} ms")
    log(f"after-tool: {runs} runs of each, interleaved, after 3 warm-up runs")
    call = 0
    for n in range(runs + 3):
        sample = {"python -c pass": _timed([PYTHON, "-c", "pass"], env, root, b"")}
        for tool in ("Bash", "Edit"):
            call += 1
            sample[f"{tool}: guard only (before)"] = _timed(
                guard_only, env, root, payload(root, "PreToolUse", tool, call)
            )
            call += 1
            took_pre = _timed(pre, env, root, payload(root, "PreToolUse", tool, call))
            took_post = _timed(post, env, root, payload(root, "PostToolUse", tool, call))
            sample[f"{tool}: guard + snapshot (pre)"] = took_pre
            sample[f"{tool}: compare (post)"] = took_post
            sample[f"{tool}: pre + post"] = (took_pre[0] + took_post[0], took_pre[1] + took_post[1])
            call += 1
            sample[f"{tool}: coord hook claude PreToolUse"] = _timed(
                entry_pre, env, root, payload(root, "PreToolUse", tool, call)
            )
            _timed(post, env, root, payload(root, "PostToolUse", tool, call))  # its snapshot
        if n >= 3:
            for name, (took, used) in sample.items():
                times[name].append(took)
                cpu[name].append(used)
    base = median(times["python -c pass"])
    print(
        f"\n== after-tool: the guard before and after the tripwire, fresh processes, median of "
        f"{runs}; {held} existing files held by {HOLDERS} other agents (half by directory, half "
        "as literal paths), no daemon, bytecode cached"
    )
    print(
        "   Bash = `ls src` (allowed), Edit = Edit of a free file (allowed); guard only = the "
        "PreToolUse hook without the snapshot, as before; pre = with it; post = PostToolUse, "
        "nothing changed (stat only)"
    )
    print_beside_python(times, base)
    cpu_base = median(cpu["python -c pass"])
    print("   the same, in CPU time (user + system of each process: less at the mercy of load):")
    print_beside_python(cpu, cpu_base)
    for tool in ("Bash", "Edit"):
        ratios = []
        for table, reference in ((times, base), (cpu, cpu_base)):
            pre_ratio = median(table[f"{tool}: guard + snapshot (pre)"]) / reference
            post_ratio = median(table[f"{tool}: compare (post)"]) / reference
            ratios.append((pre_ratio, post_ratio))
        extra = (
            median(cpu[f"{tool}: guard + snapshot (pre)"])
            - median(cpu[f"{tool}: guard only (before)"])
        ) * 1000
        (wall_pre, wall_post), (cpu_pre, cpu_post) = ratios
        print(
            f"   target: {tool} pre <= 3x python -c pass ... {wall_pre:.2f}x wall, {cpu_pre:.2f}x "
            f"CPU {verdict(wall_pre <= 3)}; post <= 3x ... {wall_post:.2f}x wall, "
            f"{cpu_post:.2f}x CPU {verdict(wall_post <= 3)}; the snapshot adds {extra:.1f} ms "
            "of CPU to the guard"
        )


def _timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process that must allow in silence."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, input=stdin, capture_output=True, timeout=60)
    took = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode != 0 or done.stdout:
        raise RuntimeError(f"{argv[:3]} exited {done.returncode}: {done.stdout!r} {done.stderr!r}")
    return took, used
