"""coord's MCP tools: a small, sharp set an agent can use without a manual.

Fourteen tools, each one call to the board. Results are structured (JSON objects). A refusal
(someone else holds it, the lease was lost, a check failed, nothing is ready) is a tool result
with ``isError`` and the board's own error object: the code, a sentence saying what to do next,
and the facts (holder, expiry, blocking items), so the model can act on it rather than see a
protocol failure.

Tokens: a claim's fencing token is remembered per agent (like the CLI does), so tools that
need it take it as an optional argument.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent

from coord import __version__, model
from coord.client import tokens
from coord.errors import CoordError, InvalidInput
from coord.mcp.backends import Backend, query

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
        return await tool.run(ctx, tool.claim_next, kind=kind, label=label)

    @server.tool()
    async def claim(ctx: Context, item: str) -> dict[str, Any]:
        """Claim one item by id (12) or package id (R3). If someone else holds it, the result
        (isError, already_claimed) names the holder and when the lease ends: pick another."""
        return await tool.run(ctx, tool.claim, item=item)

    @server.tool()
    async def heartbeat(ctx: Context, item: str, token: int | None = None) -> dict[str, Any]:
        """Extend your lease on an item you hold (do it when work takes longer than the
        lease). lease_lost means it is no longer yours: stop working on it."""
        return await tool.run(ctx, tool.end, item=item, action="heartbeat", token=token)

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
            ctx, tool.done, item=item, summary=summary, token=token, skip=skip_checks_reason
        )

    @server.tool()
    async def release(
        ctx: Context, item: str, reason: str = "", token: int | None = None
    ) -> dict[str, Any]:
        """Give an item you hold back to the board (pending again) with a reason."""
        return await tool.run(
            ctx, tool.end, item=item, action="release", token=token, extra={"reason": reason}
        )

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
            tool.post,
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
        return await tool.run(ctx, tool.reply, item=item, text=text)

    @server.tool()
    async def inbox(ctx: Context, peek: bool = False) -> dict[str, Any]:
        """What others said to you or did to your items since you last looked (replies,
        mentions, takeovers, answers to your questions). peek leaves them unread."""
        return await tool.run(ctx, tool.inbox, peek=peek)

    @server.tool()
    async def reserve_files(
        ctx: Context, patterns: list[str], shared: bool = False, reason: str = ""
    ) -> dict[str, Any]:
        """Hold paths or globs (src/auth/**) before editing files no claim gave you. All or
        none: if someone holds an overlapping file, the result names them; do not edit it."""
        return await tool.run(ctx, tool.reserve, patterns=patterns, shared=shared, reason=reason)

    @server.tool()
    async def release_files(
        ctx: Context, patterns: list[str] | None = None, everything: bool = False
    ) -> dict[str, Any]:
        """Free your reservations of these patterns, or all of them (everything=true)."""
        return await tool.run(ctx, tool.unreserve, patterns=patterns, everything=everything)

    @server.tool()
    async def who_holds(ctx: Context, path: str) -> dict[str, Any]:
        """Who holds a file, until when, and whether you may edit it."""
        return await tool.run(ctx, tool.who, path=path)

    @server.tool()
    async def board(ctx: Context) -> dict[str, Any]:
        """The board at a glance: what you hold, what is ready, who holds what, what waits
        on a human."""
        return await tool.run(ctx, tool.summary)

    @server.tool()
    async def escalate(
        ctx: Context, item: str, question: str, token: int | None = None
    ) -> dict[str, Any]:
        """Ask a human to decide (the item becomes needs_human). You keep the claim and its
        files; the lease stops running out until someone answers; the answer comes to your
        inbox. Use it when the design does not hold or the task is ambiguous."""
        return await tool.run(ctx, tool.escalate, item=item, question=question, token=token)

    @server.tool()
    async def spec_status(ctx: Context, doc: str) -> dict[str, Any]:
        """A design document's work packages (path relative to the repository): which are
        claimable now, who holds what, what waits on what."""
        return await tool.run(ctx, tool.spec_status, doc=doc)

    @server.resource("coord://board", name="board", mime_type="application/json")
    async def board_resource() -> str:
        """The board at a glance: ready items, claims, needs_human (and yours, over stdio)."""
        return json.dumps(await tool.summary(tool.agent(None)))

    @server.resource("coord://claims/{agent}", name="claims", mime_type="application/json")
    async def claims_resource(agent: str) -> str:
        """The items an agent holds now, with their leases (your name: the board tool's
        "agent")."""
        return json.dumps((await tool.summary(model.check_agent(agent)))["mine"])

    return server


class _ToolKit:
    def __init__(self, backend: Backend, agent_of: AgentOf) -> None:
        self.backend = backend
        self.agent_of = agent_of

    def agent(self, ctx: Context | None) -> str:
        return model.check_agent(self.agent_of(ctx))

    async def run(self, ctx: Context, verb: Callable[..., Awaitable[Any]], **kw: Any) -> Any:
        """The verb's result, or the board's refusal as an error result the model reads."""
        try:
            return await verb(self.agent(ctx), **kw)
        except CoordError as err:
            refusal = err.to_dict()
            return CallToolResult(
                content=[TextContent(type="text", text=json.dumps(refusal))],
                structured_content=refusal,
                is_error=True,
            )

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        return await self.backend.call(method, path, body)

    def _token(self, agent: str, item: str, given: int | None) -> int:
        if given is not None:
            return given
        found = tokens.remembered(self.backend.board_dir, agent, item)
        if found is None:
            raise InvalidInput(
                f"no token remembered for {item} as {agent}: pass token (the one your claim "
                "returned), or claim the item first"
            )
        return found

    # --- claims -----------------------------------------------------------------------------

    async def claim_next(self, agent: str, kind: str | None, label: str | None) -> Any:
        won = await self.call(
            "POST", "/v1/claim-next", {"agent": agent, "kind": kind, "label": label}
        )
        tokens.remember_claim(self.backend.board_dir, agent, won)
        return _claim_view(won)

    async def claim(self, agent: str, item: str) -> Any:
        won = await self.call("POST", f"/v1/items/{_ref(item)}/claim", {"agent": agent})
        tokens.remember_claim(self.backend.board_dir, agent, won)
        return _claim_view(won)

    async def end(
        self,
        agent: str,
        item: str,
        action: str,
        token: int | None,
        extra: dict[str, Any] | None = None,
    ) -> Any:
        ref = _ref(item)
        body = {"agent": agent, "token": self._token(agent, ref, token), **(extra or {})}
        answer = await self.call("POST", f"/v1/items/{ref}/{action}", body)
        if action != "heartbeat":
            tokens.forget(self.backend.board_dir, agent, ref, answer.get("id"), answer.get("key"))
        return answer

    async def done(
        self, agent: str, item: str, summary: str, token: int | None, skip: str | None
    ) -> Any:
        ref = _ref(item)
        body: dict[str, Any] = {
            "agent": agent,
            "token": self._token(agent, ref, token),
            "summary": summary,
        }
        if skip is not None:
            body["skip_checks"] = skip
        try:
            answer = await self.call("POST", f"/v1/items/{ref}/done", body)
        except CoordError as err:
            if err.code != "checks_required" or not self.backend.runs_checks_here:
                raise
            from coord.client import checks

            listed = list(err.details.get("checks") or [])
            runs = await _to_thread(lambda: checks.run(listed, cwd=os.getcwd()))
            answer = await self.call("POST", f"/v1/items/{ref}/done", {**body, "evidence": runs})
        tokens.forget(self.backend.board_dir, agent, ref, answer.get("id"), answer.get("key"))
        return answer

    async def escalate(self, agent: str, item: str, question: str, token: int | None) -> Any:
        ref = _ref(item)
        body = {"agent": agent, "token": self._token(agent, ref, token), "question": question}
        return await self.call("POST", f"/v1/items/{ref}/escalate", body)

    # --- talking ----------------------------------------------------------------------------

    async def post(self, agent: str, fields: dict[str, Any]) -> Any:
        if fields.get("files"):
            fields["files"] = self._repo_relative(fields["files"])
        return await self.call("POST", "/v1/items", {"agent": agent, **fields})

    async def reply(self, agent: str, item: str, text: str) -> Any:
        return await self.call(
            "POST", f"/v1/items/{_ref(item)}/replies", {"agent": agent, "body": text}
        )

    async def inbox(self, agent: str, peek: bool) -> Any:
        return await self.call("POST", "/v1/inbox", {"agent": agent, "peek": peek})

    # --- files ------------------------------------------------------------------------------

    async def reserve(self, agent: str, patterns: list[str], shared: bool, reason: str) -> Any:
        body = {
            "agent": agent,
            "patterns": self._repo_relative(patterns),
            "shared": shared,
            "reason": reason,
        }
        return await self.call("POST", "/v1/reservations", body)

    async def unreserve(self, agent: str, patterns: list[str] | None, everything: bool) -> Any:
        body: dict[str, Any] = {"agent": agent}
        if everything:
            body["all"] = True
        else:
            body["patterns"] = self._repo_relative(patterns or [])
        return await self.call("POST", "/v1/reservations:release", body)

    async def who(self, agent: str, path: str) -> Any:
        relative = self._repo_relative([path], literal=True)[0]
        return await self.call("GET", query("/v1/who", {"path": relative, "agent": agent}))

    def _repo_relative(self, given: list[str], *, literal: bool = False) -> list[str]:
        from coord.fast import patterns, worktree

        root = str(self.backend.board_dir.parent)
        cwd = None
        if self.backend.runs_checks_here:  # stdio: the agent's working tree, maybe a worktree
            cwd = os.getcwd()
            root = worktree.root_for(cwd, root)
        return [patterns.normalize(p, root, cwd=cwd, literal=literal) for p in given]

    # --- overview ---------------------------------------------------------------------------

    async def summary(self, agent: str) -> dict[str, Any]:
        ready = await self.call("GET", query("/v1/items", {"ready": "true", "limit": 10}))
        claimed = await self.call("GET", query("/v1/items", {"state": "claimed", "limit": 200}))
        waiting = await self.call("GET", query("/v1/items", {"state": "needs_human", "limit": 50}))
        held = claimed["items"] + waiting["items"]
        return {
            "agent": agent,
            "mine": [_brief(i) for i in held if i["claimed_by"] == agent],
            "ready": [_brief(i) for i in ready["items"]],
            "claimed": [_brief(i) for i in claimed["items"] if i["claimed_by"] != agent],
            "needs_human": [_brief(i) for i in waiting["items"]],
        }

    async def spec_status(self, agent: str, doc: str) -> Any:
        from coord.fast import worktree
        from coord.spec.parse import parse_file
        from coord.spec.status import status

        spec = self._repo_relative([doc], literal=True)[0]
        root = str(self.backend.board_dir.parent)
        if self.backend.runs_checks_here:
            root = worktree.root_for(os.getcwd(), root)
        parsed = parse_file(os.path.join(root, spec))
        found: dict[str, dict[str, Any]] = {}
        after = 0
        while True:
            page = await self.call(
                "GET", query("/v1/items", {"spec": spec, "limit": 1000, "after": after})
            )
            found.update({i["key"]: i for i in page["items"]})
            if len(page["items"]) < 1000:
                break
            after = page["items"][-1]["id"]
        return status(parsed, found or None, spec)


def _ref(item: str) -> str:
    return str(model.check_item_ref(item))


def _claim_view(won: dict[str, Any]) -> dict[str, Any]:
    item = won["item"]
    return {
        "id": won["id"],
        "key": item.get("key"),
        "title": won["title"],
        "token": won["token"],
        "lease_expires_at": won["lease_expires_at"],
        "takeover_from": won.get("takeover_from"),
        "body": item["body"],
        "files": item["files"],
        "checks": item.get("checks", []),
        "spec": item.get("spec"),
    }


def _brief(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "key": item.get("key"),
        "title": item["title"],
        "state": item["state"],
        "priority": item["priority"],
        "claimed_by": item["claimed_by"] if item["state"] != "pending" else None,
        "lease_expires_at": item["lease_expires_at"],
        "files": item["files"],
        "question": item.get("question"),
    }


async def _to_thread(work: Callable[[], Any]) -> Any:
    return await anyio.to_thread.run_sync(work)
