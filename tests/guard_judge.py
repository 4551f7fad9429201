"""The clients' hooks for the guard's oracle (see tests/guard_oracle.py): each client's
documented shell-guard input, its answer read as the client reads it, and the drivers that
answer many inputs in one process per client.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard_scene import Sandbox, base_env

FIXTURES = Path(__file__).parent / "hooks"
CLIENTS = ("claude", "codex", "gemini", "cursor")
# each client's shell guard: the event and the documented input it is sent (tests/hooks/)
HOOKS = {
    "claude": ("PreToolUse", "claude/pre_tool_use_bash.json"),
    "codex": ("PreToolUse", "codex/pre_tool_use_bash.json"),
    "gemini": ("BeforeTool", "gemini/before_tool_run_shell_command.json"),
    "cursor": ("beforeShellExecution", "cursor/before_shell_execution.json"),
}


@dataclass(frozen=True)
class Verdict:
    refused: bool
    reason: str  # the refusal's text, or what was wrong with an answer that is neither


def hook_input(client: str, box: Sandbox, command: str, cwd: str = ".") -> dict[str, Any]:
    """The client's documented shell-guard input for ``command`` run in ``cwd`` (relative to
    the repository): its own fields, session id and way of saying where the command runs."""
    raw = (FIXTURES / HOOKS[client][1]).read_text().replace("/REPO", str(box.repo))
    data: dict[str, Any] = json.loads(raw)
    here = str(box.where(cwd))
    if client == "cursor":
        data["command"] = command
        data["cwd"] = here
    elif client == "gemini":  # the project's root, and the directory relative to it
        data["tool_input"]["command"] = command
        if cwd not in ("", "."):
            data["tool_input"]["dir_path"] = cwd
    else:
        data["tool_input"]["command"] = command
        data["cwd"] = here
    return data


def read_answer(client: str, returncode: int, stdout: str, stderr: str) -> Verdict:
    """What the client would do with the hook's answer: run the command, or refuse it."""
    if returncode == 2:
        return Verdict(True, stderr.strip())
    if returncode != 0:
        return Verdict(False, f"UNCLEAR: exit {returncode}: {stderr.strip()}")
    if not stdout.strip():
        return Verdict(False, "")
    try:
        answer = json.loads(stdout)
    except ValueError:
        return Verdict(False, f"UNCLEAR: stdout is not JSON: {stdout!r}")
    if client == "gemini":
        decision, reason = answer.get("decision"), answer.get("reason")
    elif client == "cursor":
        decision, reason = answer.get("permission"), answer.get("agent_message")
    else:
        out = answer.get("hookSpecificOutput", {})
        decision, reason = out.get("permissionDecision"), out.get("permissionDecisionReason")
    if decision == "deny":
        return Verdict(True, str(reason))
    return Verdict(False, f"UNCLEAR: an answer that neither refuses nor is silent: {stdout!r}")


def _coord_command() -> list[str]:
    """The `coord` a client's settings run: the installed script beside this Python."""
    script = Path(sys.executable).parent / "coord"
    return [str(script)] if script.exists() else [sys.executable, "-m", "coord"]


def verdict(box: Sandbox, command: str, client: str, cwd: str = ".") -> Verdict:
    """``command`` judged by the real ``coord hook CLIENT EVENT`` process, as the client runs
    it (in the project's directory, its JSON on stdin)."""
    done = subprocess.run(
        [*_coord_command(), "hook", client, HOOKS[client][0]],
        input=json.dumps(hook_input(client, box, box.spell(command), cwd)),
        cwd=box.repo,
        env=base_env(box.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return read_answer(client, done.returncode, done.stdout, done.stderr)


# One process per client answers hook after hook: each input is this process's stdin and its
# answer its stdout for one call of the entry `coord hook` calls.
_DRIVER = r"""
import io, json, os, sys
from coord.hooks import run_hook
requests, replies = sys.stdin, sys.stdout
for line in requests:
    ask = json.loads(line)
    os.chdir(ask["cwd"])
    out, err = io.BytesIO(), io.BytesIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(ask["input"].encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        code = run_hook(ask["client"], ask["event"])
    except BaseException as crash:
        code = -1
        sys.stderr.write(f"driver: run_hook raised {crash!r}")
    sys.stdout.flush(); sys.stderr.flush()
    answer = {"rc": code, "out": out.getvalue().decode(), "err": err.getvalue().decode()}
    sys.stdin, sys.stdout, sys.stderr = requests, replies, sys.__stderr__
    replies.write(json.dumps(answer) + "\n")
    replies.flush()
"""


class Judges:
    """One driver process per client (see the module's docstring); ``sample_every``: every
    Nth call per client is also made as a real ``coord hook`` process, and the two answers
    must agree (``disagreements`` lists those that did not)."""

    def __init__(self, home: Path, clients: Sequence[str] = CLIENTS, sample_every: int = 0):
        self.clients = tuple(clients)
        self.sample_every = sample_every
        self.disagreements: list[str] = []
        self.calls = 0
        self._home = home
        self._locks = {c: threading.Lock() for c in self.clients}
        self._count = dict.fromkeys(self.clients, 0)
        self._drivers: dict[str, subprocess.Popen[str]] = {}

    def __enter__(self) -> Judges:
        for client in self.clients:
            self._drivers[client] = subprocess.Popen(
                [sys.executable, "-c", _DRIVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=base_env(self._home),
                text=True,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self._drivers.values():
            assert proc.stdin is not None and proc.stdout is not None
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            proc.stdout.close()

    def judge(self, box: Sandbox, command: str, client: str, cwd: str = ".") -> Verdict:
        return self.judge_all(box, command, cwd, (client,))[client]

    def judge_all(
        self, box: Sandbox, command: str, cwd: str = ".", clients: Sequence[str] | None = None
    ) -> dict[str, Verdict]:
        """``command`` judged by every client's driver at once (each answers on its own)."""
        clients = tuple(clients or self.clients)
        spelled = box.spell(command)
        sampled: list[str] = []
        with contextlib.ExitStack() as held:
            for client in clients:  # always in the same order: no two callers deadlock
                held.enter_context(self._locks[client])
            for client in clients:
                ask = {
                    "client": client,
                    "event": HOOKS[client][0],
                    "cwd": str(box.repo),
                    "input": json.dumps(hook_input(client, box, spelled, cwd)),
                }
                proc = self._drivers[client]
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(ask) + "\n")
                proc.stdin.flush()
            lines = {}
            for client in clients:
                proc = self._drivers[client]
                assert proc.stdout is not None
                lines[client] = proc.stdout.readline()
                if not lines[client]:
                    raise RuntimeError(f"the {client} driver died (exit {proc.poll()})")
                self._count[client] += 1
                if self.sample_every and (self._count[client] - 1) % self.sample_every == 0:
                    sampled.append(client)
                self.calls += 1
        seen = {}
        for client, line in lines.items():
            reply = json.loads(line)
            seen[client] = read_answer(client, reply["rc"], reply["out"], reply["err"])
        for client in sampled:
            real = verdict(box, command, client, cwd)
            if real != seen[client]:
                self.disagreements.append(
                    f"{client}: {command!r}: driver {seen[client]}, `coord hook` process {real}"
                )
        return seen
