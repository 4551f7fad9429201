"""The agents' edit hook as a fresh process: `coord hook claude PreToolUse`, JSON in, answer out."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from common import PYTHON, log, median, new_board_dir, print_beside_python, temp_dir, verdict
from reservations import FREE_PATH, HELD_PATH, HOLDERS, hold_reservations

SESSION = "4f1c2a9e-8b7d-4c3e-9f2a-1b2c3d4e5f60"  # the agent claude-4f1c2a9e, holding nothing


def edit_event(root: Path, path: str) -> bytes:
    """Claude Code's PreToolUse input for an Edit (https://code.claude.com/docs/en/hooks)."""
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": f"/home/dev/.claude/projects/-bench/{SESSION}.jsonl",
            "cwd": str(root),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {
                "file_path": str(root / path),
                "old_string": "TIMEOUT = 30",
                "new_string": "TIMEOUT = 60",
                "replace_all": False,
            },
            "tool_use_id": "toolu_01ABC123DEF456GHI789JKL0",
        }
    ).encode()


# --- 8. the agents' edit hook ------------------------------------------------------------------


def bench_hook(runs: int, importtime: bool) -> None:
    board_dir = new_board_dir("hook")
    log(f"hook: 1,000 reservations held in {hold_reservations(board_dir):.1f}s")
    root = board_dir.parent
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as in cli_plan.bench_cli
    env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
    script = Path(PYTHON).with_name("coord")
    hook = ("hook", "claude", "PreToolUse")
    # name -> (argv, stdin, expected: None allows in silence, else the holder in the deny)
    commands: dict[str, tuple[list[str], bytes, str | None]] = {
        "python -c pass": ([PYTHON, "-c", "pass"], b"", None)
    }
    for path, holder, what in ((FREE_PATH, None, "free"), (HELD_PATH, "agent-7", "held")):
        event = edit_event(root, path)
        commands[f"python -m coord hook <{what}>"] = ([PYTHON, "-m", "coord", *hook], event, holder)
        if script.exists():
            commands[f"{script.name} hook <{what}>"] = ([str(script), *hook], event, holder)
    times: dict[str, list[float]] = {name: [] for name in commands}
    log(f"hook: {runs} runs of each command, interleaved, after 3 warm-up runs")
    for n in range(runs + 3):
        for name, (argv, stdin, holder) in commands.items():
            took = _timed(argv, env, root, stdin, holder)
            if n >= 3:
                times[name].append(took)

    base = median(times["python -c pass"])
    print(
        f"\n== 8. hook: `coord hook claude PreToolUse` (an Edit, Claude Code's JSON on stdin), "
        f"fresh process, median of {runs}; 1,000 live reservations of {HOLDERS} other agents, "
        "no daemon, bytecode cached"
    )
    print(
        f"   <free> = Edit {FREE_PATH} (allowed: exit 0, no output), <held> = Edit {HELD_PATH} "
        "(denied: permissionDecision deny naming agent-7, exit 0)"
    )
    print_beside_python(times, base)
    worst = max(median(times[f"python -m coord hook <{w}>"]) for w in ("free", "held")) / base
    print(
        f"   target: python -m coord hook <= 3x python -c pass ... {worst:.2f}x (slower of "
        f"free/held)  {verdict(worst <= 3)}"
    )
    if importtime or worst > 3:
        _print_importtime(env, root, edit_event(root, HELD_PATH))


def _timed(
    argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes, holder: str | None
) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, input=stdin, capture_output=True, timeout=60)
    took = time.perf_counter() - began
    if holder is None:
        ok = done.returncode == 0 and done.stdout == b""
    else:
        answer = json.loads(done.stdout or b"{}").get("hookSpecificOutput", {})
        reason = answer.get("permissionDecisionReason", "")
        ok = done.returncode == 0 and answer.get("permissionDecision") == "deny"
        ok = ok and holder in reason
    if not ok:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stdout!r} {done.stderr!r}")
    return took


def _print_importtime(env: dict[str, str], cwd: Path, stdin: bytes) -> None:
    """The imports of the held-file decision not in `python -c pass`, by cumulative time."""

    def rows(argv: list[str]) -> list[tuple[int, int, str]]:
        done = subprocess.run(
            [PYTHON, "-X", "importtime", *argv],
            env=env,
            cwd=cwd,
            input=stdin,
            capture_output=True,
            timeout=60,
        )
        found = []
        for line in done.stderr.decode().splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                self_us, cumulative, name = line[len("import time:") :].split("|", 2)
                found.append((int(self_us), int(cumulative), name.rstrip()))
        return found

    hook = min(
        (rows(["-m", "coord", "hook", "claude", "PreToolUse"]) for _ in range(5)), key=_total
    )
    bare = min((rows(["-c", "pass"]) for _ in range(5)), key=_total)
    print(
        f"   imports (-X importtime): coord hook {_total(hook) / 1000:.1f} ms self total, "
        f"python -c pass {_total(bare) / 1000:.1f} ms; top 12 not in python -c pass (us):"
    )
    seen = {name.strip() for _, _, name in bare}
    top = sorted((r for r in hook if r[2].strip() not in seen), key=lambda r: -r[1])[:12]
    for self_us, cumulative, name in top:
        print(f"     {cumulative:8,} cumulative {self_us:8,} self  {name}")


def _total(rows: list[tuple[int, int, str]]) -> int:
    return sum(r[0] for r in rows)
