"""coord's MCP tools: a small, sharp set an agent can use without a manual.

Fifteen tools (the budget: no more than 15), each one call to the board. Results are
structured (JSON objects). A refusal (someone else holds it, the lease was lost, a check
failed, nothing is ready) is a tool result with ``isError`` and the board's own error object:
the code, a sentence saying what to do next, and the facts (holder, expiry, blocking items),
so the model can act on it rather than see a protocol failure.

Tokens: a claim's fencing token is remembered per agent (like the CLI does), so tools that
need it take it as an optional argument.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent

from coord import __version__, model
from coord.errors import CoordError
from coord.mcp import verbs
from coord.mcp.backends import Backend

INSTRUCTIONS = """\
coord is the shared board of the agents working on this repository. Work this way:
claim_next (or claim a package by id) before you start; edit only the files your claim
holds or that reserve_files gives you (a guard refuses edits to files others hold);
heartbeat if you work longer than the lease; done when finished (it runs the item's checks);
release what you give up; escalate when a human must decide. A refused call is a result with
isError: read its message, it says who holds what until when and what to do next."""

# the calling agent's name, from the request (an HTTP header) or the process (stdio); a
# resource read has no request context and gets None
AgentOf = Callable[[Context | None], str]


def build_server(backend: Backend, agent_of: AgentOf) -> MCPServer:
    server = MCPServer(
        name="coord", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    tool = _ToolKit(backend, agent_of)

    @server.tool()
    async def claim_next(
        ctx: Context, kind: str | None = None, label: str | None = None
    ) -> dict[str, Any]:
        """Claim the best ready item (priority, then age): the one to work on next. Returns
        its id, package key, title, description, files you now hold, checks, your token and
        the lease's end. isError with nothing_ready when there is nothing to do."""
        return await tool.run(ctx, verbs.claim_next, kind=kind, label=label)

    @server.tool()
    async def claim(ctx: Context, item: str) -> dict[str, Any]:
        """Claim one item by id (12) or package id (R3). If someone else holds it, the result
        (isError, already_claimed) names the holder and when the lease ends: pick another."""
        return await tool.run(ctx, verbs.claim, item=item)

    @server.tool()
    async def heartbeat(ctx: Context, item: str, token: int | None = None) -> dict[str, Any]:
        """Extend your lease on an item you hold (do it when work takes longer than the
        lease). lease_lost means it is no longer yours: stop working on it."""
        return await tool.run(ctx, verbs.heartbeat, item=item, token=token)

    @server.tool()
    async def done(
        ctx: Context,
        item: str,
        summary: str = "",
        token: int | None = None,
        skip_checks_reason: str | None = None,
    ) -> dict[str, Any]:
        """Close an item you hold. Its checks (shell commands) run first in your working
        tree; if one fails the item stays yours and the result shows the failing output. Only
        with a real reason, skip_checks_reason closes it anyway (recorded for everyone)."""
        return await tool.run(
            ctx, verbs.done, item=item, summary=summary, token=token, skip=skip_checks_reason
        )

    @server.tool()
    async def release(
        ctx: Context, item: str, reason: str = "", token: int | None = None
    ) -> dict[str, Any]:
        """Give an item you hold back to the board (pending again) with a reason."""
        return await tool.run(ctx, verbs.release, item=item, reason=reason, token=token)

    @server.tool()
    async def post(
        ctx: Context,
        title: str,
        kind: str = "task",
        body: str = "",
        priority: int = 2,
        files: list[str] | None = None,
        deps: list[int] | None = None,
        to: str | None = None,
    ) -> dict[str, Any]:
        """Post an item: a task or bug for someone to claim, a note, or a handoff to an agent
        (to=NAME). priority 0 is highest, 4 lowest. files: paths/globs it will own. deps:
        item ids it waits on."""
        return await tool.run(
            ctx,
            verbs.post,
            fields={
                "title": title,
                "kind": kind,
                "body": body,
                "priority": priority,
                "files": files or [],
                "deps": deps or [],
                "to": to,
            },
        )

    @server.tool()
    async def reply(ctx: Context, item: str, text: str) -> dict[str, Any]:
        """Reply on an item's thread; @name mentions reach that agent's inbox."""
        return await tool.run(ctx, verbs.reply, item=item, text=text)

    @server.tool()
    async def inbox(ctx: Context, peek: bool = False) -> dict[str, Any]:
        """What others said to you or did to your items since you last looked (replies,
        mentions, takeovers, answers to your questions). peek leaves them unread."""
        return await tool.run(ctx, verbs.inbox, peek=peek)

    @server.tool()
    async def reserve_files(
        ctx: Context, patterns: list[str], shared: bool = False, reason: str = ""
    ) -> dict[str, Any]:
        """Hold paths or globs (src/auth/**) before editing files no claim gave you. All or
        none: if someone holds an overlapping file, the result names them; do not edit it."""
        return await tool.run(ctx, verbs.reserve, patterns=patterns, shared=shared, reason=reason)

    @server.tool()
    async def release_files(
        ctx: Context, patterns: list[str] | None = None, everything: bool = False
    ) -> dict[str, Any]:
        """Free your reservations of these patterns, or all of them (everything=true)."""
        return await tool.run(ctx, verbs.unreserve, patterns=patterns, everything=everything)

    @server.tool()
    async def who_holds(ctx: Context, path: str) -> dict[str, Any]:
        """Who holds a file, until when, and whether you may edit it."""
        return await tool.run(ctx, verbs.who, path=path)

    @server.tool()
    async def board(ctx: Context) -> dict[str, Any]:
        """The board at a glance: what you hold, what is ready, who holds what, what waits
        on a human."""
        return await tool.run(ctx, verbs.summary)

    @server.tool()
    async def escalate(
        ctx: Context, item: str, question: str, token: int | None = None
    ) -> dict[str, Any]:
        """Ask a human to decide (the item becomes needs_human). You keep the claim and its
        files until someone answers, up to the board's escalation bound (asking again renews
        it); the answer comes to your inbox. Use it when the design does not hold or the task
        is ambiguous."""
        return await tool.run(ctx, verbs.escalate, item=item, question=question, token=token)

    @server.tool()
    async def reopen(ctx: Context, item: str, reason: str) -> dict[str, Any]:
        """Put a cancelled item back to pending, saying why (recorded in the log). Only its
        creator or a human listed in the board's config may (isError not_permitted names
        them); a done item stays done: post a follow-up instead."""
        return await tool.run(ctx, verbs.reopen, item=item, reason=reason)

    @server.tool()
    async def spec_status(ctx: Context, doc: str, prefix: str | None = None) -> dict[str, Any]:
        """A design document's work packages (path relative to the repository): which are
        claimable now, who holds what, what waits on what. prefix: the one the document was
        imported with (coord spec import --prefix); read off the board when not given."""
        return await tool.run(ctx, verbs.spec_status, doc=doc, prefix=prefix)

    @server.resource("coord://board", name="board", mime_type="application/json")
    async def board_resource() -> str:
        """The board at a glance: ready items, claims, needs_human (and yours, over stdio)."""
        return json.dumps(await tool.call(verbs.summary, tool.agent(None)))

    @server.resource("coord://claims/{agent}", name="claims", mime_type="application/json")
    async def claims_resource(agent: str) -> str:
        """The items an agent holds now, with their leases (your name: the board tool's
        "agent")."""
        return json.dumps((await tool.call(verbs.summary, model.check_agent(agent)))["mine"])

    return server


class _ToolKit:
    """Each tool is one function of the client flow, run in a worker thread (the flow is
    synchronous: the HTTP client blocks, and the in-process backend hands each request back
    to this event loop), its answer shaped for a model."""

    def __init__(self, backend: Backend, agent_of: AgentOf) -> None:
        self.backend = backend
        self.agent_of = agent_of
        self._limiter: anyio.CapacityLimiter | None = None

    def agent(self, ctx: Context | None) -> str:
        return model.check_agent(self.agent_of(ctx))

    async def run(self, ctx: Context, verb: Callable[..., Any], **kw: Any) -> Any:
        """The verb's result, or the board's refusal as an error result the model reads."""
        try:
            return await self.call(verb, self.agent(ctx), **kw)
        except CoordError as err:
            refusal = err.to_dict()
            return CallToolResult(
                content=[TextContent(type="text", text=json.dumps(refusal))],
                structured_content=refusal,
                is_error=True,
            )

    async def call(self, verb: Callable[..., Any], agent: str, **kw: Any) -> Any:
        # Threads of their own: inside the daemon, a flow waiting on the app must not hold a
        # token of the pool the app itself may need.
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(16)
        work = functools.partial(verb, self.backend, agent, **kw)
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)
