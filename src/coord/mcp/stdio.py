"""`coord mcp`: the MCP server over stdio, started by an agent's client.

It works on the board like the CLI (through the daemon, started on demand). The agent's name
comes from ``COORD_AGENT`` when set, else from what the client's SessionStart hook recorded
for this client process, else ``mcp-<client pid>``.
"""

from __future__ import annotations

import argparse

from coord.fast import board_files, identity


def args_mcp(p: argparse.ArgumentParser) -> None:
    pass  # --as NAME (every command has it) names the agent


def cmd_mcp(args: argparse.Namespace, ctx: object) -> tuple[None, str]:
    serve_stdio(args)
    return None, ""


def serve_stdio(args: argparse.Namespace) -> None:
    from coord.mcp.backends import HttpBackend
    from coord.mcp.tools import build_server

    board_dir = board_files.require_board_dir()
    fallback = f"mcp-{identity.client_pid()}"

    def agent_of(ctx: object) -> str:
        return getattr(args, "agent", None) or identity.agent_name(board_dir) or fallback

    build_server(HttpBackend(board_dir), agent_of).run("stdio")
