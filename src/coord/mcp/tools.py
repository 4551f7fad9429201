"""coord's MCP tools: a small, sharp set an agent can use without a manual.

Fifteen tools (the budget: no more than 15), each one call to the board; every argument
described in the schema, with the values it takes where they are fixed. Results are structured
(JSON objects). A refusal (someone else holds it, the lease was lost, a check failed, nothing
is ready, an argument the schema refuses) is a tool result with ``isError`` and the board's own
error object: the code, a sentence saying what to do next in the tools' words, and the facts
(holder, expiry, blocking items), so the model can act on it rather than see a protocol
failure (``coord.mcp.refusals``).

Tokens: a claim's fencing token is remembered per agent (like the CLI does), so tools that
need it take it as an optional argument.
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, StrictInt, StrictStr, ValidationError

from coord import __version__, model
from coord.errors import CoordError, NotFound
from coord.mcp import refusals, verbs
from coord.mcp.backends import Backend

INSTRUCTIONS = """\
coord is the shared board of the agents working on this repository. Work this way:
claim (with no item: the best ready one) before you start; edit only the files your claim
holds or that reserve_files gives you (a guard refuses edits to files others hold);
heartbeat if you work longer than the lease; done when finished (it runs the item's checks);
release what you give up; escalate when a human must decide; thread reads one item with its
replies. Claimed with a worktree (claim's worktree argument, or the board's default), work
and commit in the worktree the claim names; done there submits your branch to land on main.
A refused call is a result with isError: read its message, it says who holds what until when
and what to do next."""

# the calling agent's name, from the request (an HTTP header) or the process (stdio); a
# resource read has no request context and gets None
AgentOf = Callable[[Context | None], str]

# The arguments, each described where the model reads it (the tool's input schema). Ids are
# taken as a model writes them: 12, "12", "#12" or a package id "R3"; strict, so that true
# is not item 1.
Kind = Literal["task", "bug", "note", "handoff"]  # model.KINDS (a test holds them equal)
Item = Annotated[
    StrictInt | StrictStr,
    Field(description='the item: its id (12 or "12") or its package id (R3)'),
]
Token = Annotated[
    int | None,
    Field(
        description="the fencing token your claim returned; leave it out to use the one "
        "remembered from your claim"
    ),
]
WaitSeconds = Annotated[
    float | None,
    Field(
        description="if someone holds it: wait in line up to this many seconds (at most 120), "
        "first come first served; granted when its holder lets go"
    ),
]
Ask = Annotated[
    str | None,
    Field(description="if someone holds it: ask the holder to let go, saying why"),
]
Patterns = Annotated[
    list[str],
    Field(description="paths or globs, relative to your working directory (src/auth/**)"),
]


def build_server(backend: Backend, agent_of: AgentOf) -> MCPServer:
    server = _BoardServer(
        name="coord", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    tool = _ToolKit(backend, agent_of)
    register = server.register

    @register
    async def claim(
        ctx: Context,
        item: Annotated[
            StrictInt | StrictStr | None,
            Field(
                description='the item to claim: its id (12 or "12") or package id (R3); '
                "leave it out to claim the best ready item"
            ),
        ] = None,
        kind: Annotated[
            Kind | None, Field(description="with no item: claim only an item of this kind")
        ] = None,
        label: Annotated[
            str | None, Field(description="with no item: claim only an item with this label")
        ] = None,
        worktree: Annotated[
            bool | None,
            Field(
                description="true: work in a git worktree of your own, on a branch from main's "
                "tip (the result names its path: work there); default: the board's setting"
            ),
        ] = None,
        wait_seconds: WaitSeconds = None,
        ask: Ask = None,
    ) -> dict[str, Any]:
        """Claim an item before you work on it: with no item, the best ready one (priority,
        then age); else the one given. Returns its id, package key, title, description, the
        files you now hold, its checks, your token and the lease's end. If someone else holds
        it, the result (isError, already_claimed) names the holder and when the lease ends:
        pick another. isError with nothing_ready when there is nothing to do. With worktree,
        the result's worktree is where you work and commit; done then submits the branch to
        land on main. An item sent back for rework carries why (rework). With
        wait_seconds, an item someone holds is waited for in line, first come first served
        (granted: the claim, waited true; out of time: granted false and your place, kept a
        minute for your next call); with ask, its holder is asked to let go."""
        return await tool.run(
            ctx,
            verbs.claim,
            item=item,
            kind=kind,
            label=label,
            worktree=worktree,
            wait_seconds=wait_seconds,
            ask=ask,
        )

    @register
    async def heartbeat(ctx: Context, item: Item, token: Token = None) -> dict[str, Any]:
        """Extend your lease on an item you hold (do it when work takes longer than the
        lease). lease_lost means it is no longer yours: stop working on it."""
        return await tool.run(ctx, verbs.heartbeat, item=item, token=token)

    @register
    async def done(
        ctx: Context,
        item: Item,
        summary: Annotated[
            str, Field(description="what you did, for the others and the item's history")
        ] = "",
        token: Token = None,
        skip_checks_reason: Annotated[
            str | None,
            Field(
                description="close it without passing its checks, for this reason (recorded "
                "for everyone); only with a real reason"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Close an item you hold. Its checks (shell commands) run first in your working
        tree; if one fails the item stays yours and the result shows the failing output. Only
        with a real reason, skip_checks_reason closes it anyway (recorded for everyone). An
        item claimed with a worktree is submitted instead: commit everything there first
        (refused if the worktree is not clean); it is queued to land and done once merged."""
        return await tool.run(
            ctx, verbs.done, item=item, summary=summary, token=token, skip=skip_checks_reason
        )

    @register
    async def release(
        ctx: Context,
        item: Item,
        reason: Annotated[str, Field(description="why you give it back, for the next one")] = "",
        token: Token = None,
        answer_ask: Annotated[
            int | None,
            Field(
                description="the id of an ask of what you hold (your inbox says it): release "
                "answers it by letting go of what was asked for"
            ),
        ] = None,
        defer_minutes: Annotated[
            float | None,
            Field(
                description="with answer_ask: defer instead, for this many minutes (nothing "
                "is released; the asker is told)"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Give an item you hold back to the board (pending again) with a reason. With
        answer_ask, answer another agent's ask instead: release, or defer_minutes."""
        return await tool.run(
            ctx,
            verbs.release,
            item=item,
            reason=reason,
            token=token,
            answer_ask=answer_ask,
            defer_minutes=defer_minutes,
        )

    @register
    async def post(
        ctx: Context,
        title: Annotated[str, Field(description="one line saying what is to be done")],
        kind: Annotated[
            Kind,
            Field(
                description="task or bug: work to claim; note: an announcement nobody "
                "claims by default; handoff: work for one agent (give to)"
            ),
        ] = "task",
        body: Annotated[str, Field(description="the details: what, why, how to check")] = "",
        priority: Annotated[
            int, Field(ge=0, le=4, description="0 is the highest, 4 the lowest")
        ] = model.PRIORITY_DEFAULT,
        files: Annotated[
            list[str] | None,
            Field(description="paths or globs the item will own when claimed (src/auth/**)"),
        ] = None,
        deps: Annotated[
            list[StrictInt | StrictStr] | None,
            Field(description="the items it waits on: ids (12) or package ids (R3)"),
        ] = None,
        to: Annotated[
            str | None,
            Field(
                description="an agent's or a person's name: a handoff is handed to them; a "
                "note with to is a direct message, which reaches their inbox"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Post an item: a task or bug for someone to claim, a note, a handoff to an agent
        (to=NAME), or a direct message (kind note, to=NAME: `coord send NAME TEXT`)."""
        fields = {"title": title, "kind": kind, "body": body, "priority": priority}
        fields.update(files=files or [], deps=deps or [], to=to)
        return await tool.run(ctx, verbs.post, fields=fields)

    @register
    async def reply(
        ctx: Context,
        item: Item,
        text: Annotated[str, Field(description="your reply; @name mentions reach that agent")],
    ) -> dict[str, Any]:
        """Reply on an item's thread; @name mentions reach that agent's inbox."""
        return await tool.run(ctx, verbs.reply, item=item, text=text)

    @register
    async def thread(ctx: Context, item: Item) -> dict[str, Any]:
        """One item in full: its fields, description, files, checks and their evidence, the
        question it waits on, every reply in order, and its history (claims, releases,
        takeovers). Read it before you take over or answer on an item."""
        return await tool.run(ctx, verbs.thread, item=item)

    @register
    async def inbox(
        ctx: Context,
        peek: Annotated[bool, Field(description="true: show them but leave them unread")] = False,
    ) -> dict[str, Any]:
        """What others said to you or did to your items since you last looked (replies,
        mentions, takeovers, answers to your questions). peek leaves them unread."""
        return await tool.run(ctx, verbs.inbox, peek=peek)

    @register
    async def reserve_files(
        ctx: Context,
        patterns: Patterns,
        shared: Annotated[
            bool, Field(description="true: others may hold them shared too (reading, not edits)")
        ] = False,
        reason: Annotated[str, Field(description="why you hold them, shown to the others")] = "",
        wait_seconds: WaitSeconds = None,
        ask: Ask = None,
    ) -> dict[str, Any]:
        """Hold paths or globs (src/auth/**) before editing files no claim gave you. All or
        none: if someone holds an overlapping file, the result names them; do not edit it.
        With wait_seconds, wait in line for them (out of time: your place); with ask, ask
        their holder to let go."""
        return await tool.run(
            ctx,
            verbs.reserve,
            patterns=patterns,
            shared=shared,
            reason=reason,
            wait_seconds=wait_seconds,
            ask=ask,
        )

    @register
    async def release_files(
        ctx: Context,
        patterns: Annotated[
            list[str] | None,
            Field(description="the paths or globs to free, as you reserved them"),
        ] = None,
        everything: Annotated[
            bool, Field(description="true: free every reservation you hold")
        ] = False,
    ) -> dict[str, Any]:
        """Free your reservations of these patterns, or all of them (everything=true)."""
        return await tool.run(ctx, verbs.unreserve, patterns=patterns, everything=everything)

    @register
    async def who_holds(
        ctx: Context,
        path: Annotated[
            str, Field(description="a file's path, relative to your working directory")
        ],
    ) -> dict[str, Any]:
        """Who holds a file, until when, and whether you may edit it."""
        return await tool.run(ctx, verbs.who, path=path)

    @register
    async def board(ctx: Context) -> dict[str, Any]:
        """The board at a glance: what you hold, what is ready, who holds what, what waits
        on a human, what is blocked and by what (dependencies not done, a design document's
        reservation, files others hold), and what waits to land on main or was sent back for
        rework (landing)."""
        return await tool.run(ctx, verbs.summary)

    @register
    async def escalate(
        ctx: Context,
        item: Item,
        question: Annotated[
            str, Field(description="what the human must decide, with the options you see")
        ],
        token: Token = None,
    ) -> dict[str, Any]:
        """Ask a human to decide (the item becomes needs_human). You keep the claim and its
        files until someone answers, up to the board's escalation bound (asking again renews
        it); the answer comes to your inbox. Use it when the design does not hold or the task
        is ambiguous."""
        return await tool.run(ctx, verbs.escalate, item=item, question=question, token=token)

    @register
    async def reopen(
        ctx: Context,
        item: Item,
        reason: Annotated[str, Field(description="why it is wanted again, for the log")],
    ) -> dict[str, Any]:
        """Put a cancelled item back to pending, saying why (recorded in the log). Only its
        creator or a human listed in the board's config may (isError not_permitted names
        them); a done item stays done: post a follow-up instead."""
        return await tool.run(ctx, verbs.reopen, item=item, reason=reason)

    @register
    async def spec_status(
        ctx: Context,
        doc: Annotated[
            str, Field(description="the design document's path, relative to the repository")
        ],
        prefix: Annotated[
            str | None,
            Field(
                description="the prefix it was imported with (coord spec import --prefix); "
                "read off the board when left out"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """A design document's work packages: which are claimable now, who holds what, what
        waits on what."""
        return await tool.run(ctx, verbs.spec_status, doc=doc, prefix=prefix)

    @server.resource(
        "coord://board",
        name="board",
        mime_type="application/json",
        description="The board at a glance: ready items, claims, needs_human (and yours, over "
        "stdio).",
    )
    async def board_resource() -> str:
        return json.dumps(await tool.call(verbs.summary, tool.agent(None)))

    @server.resource(
        "coord://claims/{agent}",
        name="claims",
        mime_type="application/json",
        description="The items an agent holds now, with their leases (your name: the board "
        'tool\'s "agent").',
    )
    async def claims_resource(agent: str) -> str:
        return json.dumps((await tool.call(verbs.summary, model.check_agent(agent)))["mine"])

    return server


class _BoardServer(MCPServer):
    """The SDK's server, but an argument its schema refuses, an argument no tool has or a
    tool that does not exist is answered as the board answers bad input: its error object
    (the SDK's own answer is pydantic's text, with a link to pydantic's site)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.described: dict[str, dict[str, str]] = {}  # tool → argument → its description

    def register(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Add ``fn`` as a tool, its docstring without the source's indentation."""
        hints = typing.get_type_hints(fn, include_extras=True)
        self.described[fn.__name__] = {
            name: _description(hint)
            for name, hint in hints.items()
            if name not in ("ctx", "return")
        }
        self.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""))
        return fn

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        described = self.described.get(name)
        if described is None:
            return refusals.refusal(
                NotFound(f"no tool {name!r}; the tools are {', '.join(self.described)}")
            )
        unknown = sorted(set(arguments) - set(described))
        if unknown:
            return refusals.refusal(refusals.unknown_arguments(name, unknown, list(described)))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            if isinstance(err.__cause__, ValidationError):
                errors = err.__cause__.errors(include_url=False)
                return refusals.refusal(refusals.bad_arguments(name, errors, described))
            raise


def _description(hint: Any) -> str:
    for extra in getattr(hint, "__metadata__", ()):
        if getattr(extra, "description", None):
            return str(extra.description)
    return ""


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
            return refusals.refusal(err)

    async def call(self, verb: Callable[..., Any], agent: str, **kw: Any) -> Any:
        # Threads of their own: inside the daemon, a flow waiting on the app must not hold a
        # token of the pool the app itself may need.
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(16)
        work = functools.partial(verb, self.backend, agent, **kw)
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)
