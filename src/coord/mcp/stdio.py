"""`coord mcp`: the MCP server over stdio, started by an agent's client.

It works on the board like the CLI (through the daemon, started on demand). The agent's name
comes from ``COORD_AGENT`` when set, else from what the client's SessionStart hook recorded
for this client process, else ``mcp-<client pid>``.

The tools are listed before the SDK has loaded (``coord.mcp.front``); this module imports the
standard library only until the server is built.
"""

from __future__ import annotations

from coord.errors import CoordError
from coord.fast import board_files, identity

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from mcp.server.mcpserver import MCPServer


def args_mcp(p: argparse.ArgumentParser) -> None:
    pass  # --as NAME (every command has it) names the agent


def cmd_mcp(args: argparse.Namespace, ctx: object) -> tuple[None, str]:
    serve_stdio(args)
    return None, ""


def serve_stdio(args: argparse.Namespace) -> None:
    serve(board_files.require_board_dir(), getattr(args, "agent", None))


def serve_before_argparse(agent: str | None) -> int | None:
    """``coord mcp [--as NAME]`` from ``coord.cli.entry``; None when there is no board, for
    the full parser to say so as every command does."""
    try:
        board_dir = board_files.require_board_dir()
    except CoordError:
        return None
    serve(board_dir, agent)
    return 0


def serve(board_dir: Path, agent: str | None) -> None:
    from coord.mcp import front

    if front.enabled():
        front.serve(lambda: build(board_dir, agent))
    else:
        build(board_dir, agent).run("stdio")


def build(board_dir: Path, agent: str | None) -> MCPServer:
    from coord.mcp.backends import HttpBackend
    from coord.mcp.tools import build_server

    fallback = f"mcp-{identity.client_pid()}"

    def agent_of(ctx: object) -> str:
        return agent or identity.agent_name(board_dir) or fallback

    return build_server(HttpBackend(board_dir), agent_of)
