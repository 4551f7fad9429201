"""Two agents work one board to the end: one through MCP, one through the CLI and hooks.

    python examples/two_agents.py [--tasks 10] [--json] [--keep]

A throwaway git repository gets a board of ten tasks whose files overlap (each task owns two of
six files, so tasks sharing a file cannot be worked at once). Then, at the same time:

* ``mcp-agent`` speaks MCP to ``coord mcp`` (the official SDK's stdio client): ``claim``,
  edit its files, ``done``;
* ``cli-agent`` runs ``coord next``, asks Claude Code's edit hook (``coord hook claude
  PreToolUse``, the JSON Claude Code sends) before every edit, edits, ``coord done``. Before
  each of its edits it also asks the hook about a file the other agent holds, if any: the
  hook must refuse.

Every edit is logged with its start and end. At the end it checks that every task was done
exactly once, that no file was being edited by both agents at the same time, and that the
hook refused every edit of a file the other agent held. Exit 0 when all of that holds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

FILES = [f"src/mod{n}.py" for n in range(6)]
EDIT_SECONDS = 0.05  # long enough that overlapping edits would show in the log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temporary repository")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="coord-two-agents-"))
    try:
        report = run(root, args.tasks)
    finally:
        _coord(root, "stop", check=False)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for line in report["lines"]:
            print(line)
    return 0 if report["ok"] else 1


def run(root: Path, tasks: int) -> dict[str, Any]:
    setup(root, tasks)
    log: list[dict[str, Any]] = []
    lock = threading.Lock()
    refusals: list[dict[str, Any]] = []
    cli = threading.Thread(target=cli_agent, args=(root, log, lock, refusals))
    cli.start()
    asyncio.run(mcp_agent(root, log, lock))
    cli.join(300)
    return check(root, log, refusals, tasks)


def setup(root: Path, tasks: int) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "src").mkdir()
    for name in FILES:
        (root / name).write_text("")
    _coord(root, "init")
    for n in range(tasks):
        owned = [FILES[n % 6], FILES[(n + 1) % 6]]
        _coord(root, "add", f"task {n}", *(arg for path in owned for arg in ("--file", path)))


def _edit(
    root: Path, agent: str, path: str, log: list[dict[str, Any]], lock: threading.Lock
) -> None:
    began = time.monotonic()
    with open(root / path, "a") as f:
        f.write(f"# {agent}\n")
    time.sleep(EDIT_SECONDS)
    with lock:
        log.append({"agent": agent, "file": path, "began": began, "ended": time.monotonic()})


async def mcp_agent(root: Path, log: list[dict[str, Any]], lock: threading.Lock) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coord", "mcp"],
        env={**os.environ, "COORD_AGENT": "mcp-agent", "COORD_DIR": str(root / ".coord")},
        cwd=str(root),
    )
    async with Client(params) as client:
        while True:
            won = await client.call_tool("claim", {})
            if won.is_error:
                if not _open_items(root):
                    return
                await asyncio.sleep(0.05)  # the rest is held or waits on held files
                continue
            for path in won.structured_content["files"]:
                await asyncio.to_thread(_edit, root, "mcp-agent", path, log, lock)
            done = await client.call_tool("done", {"item": str(won.structured_content["id"])})
            assert not done.is_error, done.structured_content


def cli_agent(
    root: Path, log: list[dict[str, Any]], lock: threading.Lock, refusals: list[dict[str, Any]]
) -> None:
    while True:
        answer = _coord(root, "next", "--json", agent="cli-agent", check=False)
        claim = json.loads(answer.stdout)
        if "error" in claim:
            if not _open_items(root):
                return
            time.sleep(0.05)
            continue
        mine = claim["item"]["files"]
        for path in mine:
            asked = time.time()  # from when we saw it held: it may be freed from then on
            other = _held_by_other(root, "cli-agent")
            if other:
                allowed, reason = _hook_allows(root, other, "cli-agent")
                refusals.append(
                    {
                        "file": other,
                        "allowed": allowed,
                        "reason": reason,
                        "asked": asked,
                        "answered": time.time(),
                    }
                )
            allowed, reason = _hook_allows(root, path, "cli-agent")
            if not allowed:
                raise RuntimeError(f"the hook refused cli-agent its own file {path}: {reason}")
            _edit(root, "cli-agent", path, log, lock)
        _coord(root, "done", str(claim["id"]), agent="cli-agent")


def _hook_allows(root: Path, path: str, agent: str) -> tuple[bool, str]:
    """Ask the edit hook as Claude Code would, with the JSON Claude Code sends."""
    event = {
        "session_id": "two-agents-demo",
        "transcript_path": str(root / "transcript.jsonl"),
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(root / path), "old_string": "", "new_string": "x"},
    }
    done = subprocess.run(
        [sys.executable, "-m", "coord", "hook", "claude", "PreToolUse"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "COORD_AGENT": agent, "COORD_DIR": str(root / ".coord")},
        timeout=60,
    )
    denied = done.returncode == 2
    if done.stdout.strip():
        decision = json.loads(done.stdout).get("hookSpecificOutput", {})
        denied = denied or decision.get("permissionDecision") == "deny"
    return not denied, (done.stderr or done.stdout).strip()


def _held_by_other(root: Path, agent: str) -> str | None:
    listed = json.loads(_coord(root, "reservations", "--json").stdout)["reservations"]
    return next((r["pattern"] for r in listed if r["agent"] != agent), None)


def _open_items(root: Path) -> int:
    return len(json.loads(_coord(root, "ls", "--json").stdout)["items"])


def check(
    root: Path, log: list[dict[str, Any]], refusals: list[dict[str, Any]], tasks: int
) -> dict[str, Any]:
    items = json.loads(_coord(root, "ls", "--all", "--json").stdout)["items"]
    events = json.loads(_coord(root, "log", "--limit", "5000", "--json").stdout)["events"]
    done_events: dict[int, int] = {}
    for event in events:
        if event["kind"] == "done":
            done_events[event["item_id"]] = done_events.get(event["item_id"], 0) + 1
    overlaps = [
        (a, b)
        for i, a in enumerate(log)
        for b in log[i + 1 :]
        if a["file"] == b["file"]
        and a["agent"] != b["agent"]
        and a["began"] < b["ended"]
        and b["began"] < a["ended"]
    ]
    by_agent = {
        name: sum(1 for e in log if e["agent"] == name) for name in ("mcp-agent", "cli-agent")
    }
    # An allowed edit is a fault only if the other agent still held the file: its claim may
    # have ended while the hook was being asked (the board's log says when).
    files_of = {i["id"]: i["files"] for i in items}
    let_through = [
        r for r in refusals if r["allowed"] and not _freed_meanwhile(r, events, files_of)
    ]
    ok = (
        len(items) == tasks
        and all(i["state"] == "done" for i in items)
        and sorted(done_events) == sorted(i["id"] for i in items)
        and all(n == 1 for n in done_events.values())
        and not overlaps
        and not let_through
    )
    lines = [
        f"{tasks} tasks over {len(FILES)} shared files, two agents at once",
        f"  done: {sum(1 for i in items if i['state'] == 'done')}/{tasks}, each exactly once: "
        f"{all(n == 1 for n in done_events.values())}",
        f"  edits: mcp-agent {by_agent['mcp-agent']}, cli-agent {by_agent['cli-agent']}; "
        f"overlapping edits of one file by both: {len(overlaps)}",
        f"  asked the hook {len(refusals)} times about a file the other agent held: refused "
        f"{sum(1 for r in refusals if not r['allowed'])}, allowed because the claim ended "
        f"meanwhile {sum(1 for r in refusals if r['allowed']) - len(let_through)}, let through "
        f"{len(let_through)}",
        "OK" if ok else "FAILED",
    ]
    return {
        "ok": ok,
        "tasks": tasks,
        "done": {str(k): v for k, v in done_events.items()},
        "edits": by_agent,
        "overlapping_edits": len(overlaps),
        "hook_asked": len(refusals),
        "hook_refused": sum(1 for r in refusals if not r["allowed"]),
        "let_through": len(let_through),
        "lines": lines,
    }


def _freed_meanwhile(
    asked: dict[str, Any], events: list[dict[str, Any]], files_of: dict[int, list[str]]
) -> bool:
    """Did the other agent close an item owning that file while the hook was asked?"""
    from datetime import datetime

    for event in events:
        if event["kind"] in ("done", "released") and event["agent"] != "cli-agent":
            at = datetime.fromisoformat(event["at"].replace("Z", "+00:00")).timestamp()
            in_window = asked["asked"] - 0.01 <= at <= asked["answered"] + 0.01
            if in_window and asked["file"] in files_of.get(event["item_id"], []):
                return True
    return False


def _coord(
    root: Path, *args: str, agent: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COORD_DIR": str(root / ".coord")}
    env.pop("COORD_AGENT", None)
    if agent:
        env["COORD_AGENT"] = agent
    done = subprocess.run(
        [sys.executable, "-m", "coord", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"coord {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


if __name__ == "__main__":
    raise SystemExit(main())
