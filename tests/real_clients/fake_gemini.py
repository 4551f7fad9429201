"""Gemini CLI driven headless by a scripted model: its own fake-responses mode.

Gemini CLI has a hidden flag, ``--fake-responses FILE``, that replaces the model API with a file
of JSON lines, one per model call in order: ``{"method": "generateContentStream", "response":
[GenerateContentResponse, ...]}`` (the chunks of one streamed answer). A chunk whose part is a
``functionCall`` makes the real client run that tool through its real scheduler, hooks included;
a text part ends the turn. The client's own integration tests drive it the same way
(google-gemini/gemini-cli ``integration-tests/*.responses``). Strict order: each model call
takes the next line and fails when that line is for another method; ``--model`` is fixed, as
with the default "auto" a routing call (``generateContent``) would take the first line.

Each run gets a temporary home (``HOME`` and ``GEMINI_CLI_HOME``): an API-key login with a
dummy key (never used: the fake answers), no usage statistics or update checks, and the
repository recorded as trusted in ``~/.gemini/trustedFolders.json`` unless ``trusted=False``
(folder trust is on by default; an untrusted folder's ``.gemini/settings.json``, so coord's
hooks, is ignored). ``-o stream-json`` prints one JSON event per line: ``init`` (with the
``session_id``), ``tool_use``, ``tool_result`` (``status``, and ``error.type``
``policy_violation`` when a hook refused the call), ``message``, ``result``.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from real_clients.npm_clients import client_executable

PACKAGE = "@google/gemini-cli"
MODEL = "gemini-2.5-flash"  # a fixed model: "auto" would first ask a routing model
RUN_SECONDS = 120  # a run takes seconds; a hung client must not hang the suite


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    """One model turn that calls the tool ``name`` with ``args``."""
    return _turn({"functionCall": {"name": name, "args": args}})


def say(text: str) -> dict[str, Any]:
    """One model turn that answers with text, ending the agent's turn."""
    return _turn({"text": text})


def _turn(part: dict[str, Any]) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
    return {"method": "generateContentStream", "response": [{"candidates": [candidate]}]}


@dataclass
class ToolResult:
    name: str
    parameters: dict[str, Any]
    status: str  # "success" or "error"
    output: str
    error_type: str | None  # "policy_violation": a hook refused the call


@dataclass
class GeminiRun:
    """What one headless session did, read from its stream-json events."""

    returncode: int
    session_id: str
    tools: list[ToolResult]
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(repr=False)

    def context(self) -> str:
        """The text the hooks added to the session (coord's SessionStart context)."""
        return "\n".join(
            e.get("content", "")
            for e in self.events
            if e.get("type") == "message" and e.get("role") == "user"
        )


def home(root: Path, repo: Path, *, trusted: bool = True) -> Path:
    """A fresh home for Gemini CLI: API-key login, no telemetry, `repo` trusted or not."""
    gemini_dir = root / "gemini-home" / ".gemini"
    gemini_dir.mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (gemini_dir / "settings.json").write_text(json.dumps(settings))
    trust = {str(repo): "TRUST_FOLDER"} if trusted else {}
    (gemini_dir / "trustedFolders.json").write_text(json.dumps(trust))
    return gemini_dir.parent


def start(
    repo: Path,
    home_dir: Path,
    script: list[dict[str, Any]],
    *,
    path: str,
    name: str = "run",
    session_id: str | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """Start `gemini -p` in `repo` answering from `script`; `finish` reads what it did.

    `session_id` starts the session under that id (``--session-id``) instead of a random one,
    so a script can name the agent coord will call it; `args` go to gemini as they are.
    """
    executable = client_executable(PACKAGE)
    responses = home_dir / f"{name}.responses"
    responses.write_text("".join(json.dumps(turn) + "\n" for turn in script))
    # no COORD_* from the test's own environment: the session must get its own name
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "GEMINI_", "GOOGLE_"))
    }
    env.update(
        HOME=str(home_dir),
        GEMINI_CLI_HOME=str(home_dir),
        GEMINI_API_KEY="fake-key-never-sent",
        PATH=path,
    )
    argv = [
        str(executable),
        "--fake-responses",
        str(responses),
        "--model",
        MODEL,
        "--approval-mode",
        "yolo",  # tools run without a prompt: only coord's hook may refuse them
        "--output-format",
        "stream-json",
        "--prompt",
        "Do the scripted work.",
        *(("--session-id", session_id) if session_id else ()),
        *args,
    ]
    return subprocess.Popen(
        argv,
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> GeminiRun:
    try:
        stdout, stderr = process.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired as err:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"gemini did not finish in {RUN_SECONDS}s:\n{stderr[-3000:]}") from err
    events = []
    for line in stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # the odd plain line among the events
    session_id = next((e["session_id"] for e in events if e.get("type") == "init"), "")
    uses = {e["tool_id"]: e for e in events if e.get("type") == "tool_use"}
    tools = []
    for event in events:
        if event.get("type") != "tool_result":
            continue
        use = uses.get(event["tool_id"], {})
        error = event.get("error") or {}
        tools.append(
            ToolResult(
                name=use.get("tool_name", "?"),
                parameters=use.get("parameters", {}),
                status=event.get("status", "?"),
                output=event.get("output") or error.get("message") or "",
                error_type=error.get("type"),
            )
        )
    return GeminiRun(process.returncode, session_id, tools, stdout, stderr, events)


def run(repo: Path, home_dir: Path, script: list[dict[str, Any]], **options: Any) -> GeminiRun:
    """One headless session from start to end (`options` as for `start`)."""
    return finish(start(repo, home_dir, script, **options))
