"""Codex CLI driven headless: a home of its own, coord's hooks trusted, ``codex exec`` runs.

Codex reads a project's ``.codex/`` (the ``hooks.json`` that ``coord init --codex`` writes)
only in a trusted project, and runs a project hook only once the user trusted that hook's
current content (``/hooks`` in the TUI), kept in the user's ``config.toml`` as
``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."``
(openai/codex ``codex-rs/hooks/src/engine/discovery.rs``). ``trust_hooks`` records exactly
that, with the keys and hashes Codex's own app server lists (``hooks/list``), so the sessions
run coord's hooks the way a user's do: no ``--dangerously-bypass-hook-trust``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from real_clients.repo import path_with_coord

# a model in Codex's bundled catalog: Codex offers it the freeform `apply_patch` tool and the
# `exec_command` shell tool, as in real sessions (an unknown model gets neither)
MODEL = "gpt-5.5"
RUN_SECONDS = 120


class CodexHome:
    """A ``CODEX_HOME`` whose model provider is the fake at ``base_url``, trusting ``repo``."""

    def __init__(self, executable: Path, repo: Path, base_url: str) -> None:
        self.executable = executable
        self.repo = repo
        self.home = repo.parent / "codex-home"
        self.home.mkdir(exist_ok=True)
        (self.home / "config.toml").write_text(
            f'model = "{MODEL}"\n'
            'model_provider = "fake"\n'
            'approval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{base_url}"\n'
            'wire_api = "responses"\n'
            'env_key = "FAKE_OPENAI_API_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
            f"[projects.{json.dumps(str(repo))}]\n"
            'trust_level = "trusted"\n'
        )

    def env(self, path: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "CODEX_"))}
        env.update(
            CODEX_HOME=str(self.home),
            FAKE_OPENAI_API_KEY="fake-key",
            PATH=path_with_coord() if path is None else path,
        )
        return env

    def hooks(self) -> list[dict[str, Any]]:
        """The repository's hooks as Codex sees them (``hooks/list`` of its app server):
        ``key``, ``eventName``, ``currentHash``, ``trustStatus``, ..."""
        with subprocess.Popen(
            [str(self.executable), "app-server"],
            cwd=self.repo,
            env=self.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as server:
            try:
                return _list_hooks(server, self.repo)
            finally:
                server.kill()  # it would serve on; the pipes close as the block ends

    def trust_hooks(self) -> None:
        """Trust every hook of the repository as it is now, as the user's ``/hooks`` does."""
        with (self.home / "config.toml").open("a") as config:
            for hook in self.hooks():
                config.write(
                    f"[hooks.state.{json.dumps(hook['key'])}]\n"
                    f"trusted_hash = {json.dumps(hook['currentHash'])}\n"
                )

    def run(self, prompt: str, *, path: str | None = None) -> str:
        """One ``codex exec`` session, run to its end; its session id (Codex's thread id)."""
        done = subprocess.run(
            [str(self.executable), "exec", "--json", "-C", str(self.repo), prompt],
            cwd=self.repo,
            env=self.env(path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
        )
        shown = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == 0, f"codex exec failed:\n{shown}"
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        started = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
        assert started, f"codex printed no thread.started event:\n{shown}"
        return str(started[0])


def _list_hooks(server: subprocess.Popen[str], repo: Path) -> list[dict[str, Any]]:
    assert server.stdin is not None and server.stdout is not None
    for message in (
        {"id": 1, "method": "initialize", "params": {"clientInfo": _CLIENT_INFO}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(repo)]}},
    ):
        server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()
    for line in server.stdout:  # notifications and the answer to initialize come first
        answer = json.loads(line)
        if answer.get("id") == 2:
            assert "result" in answer, answer
            (listed,) = answer["result"]["data"]
            assert not listed["errors"] and not listed["warnings"], listed
            return list(listed["hooks"])
    raise AssertionError("codex app-server ended without listing the hooks")


_CLIENT_INFO = {"name": "coord-tests", "version": "1"}
