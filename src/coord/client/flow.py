"""The client half of the protocol, written once for the CLI and the MCP tools.

A claim's fencing token is remembered here when the claim is won and forgotten when it ends;
``done`` runs the item's checks in the agent's working tree when the daemon asks for them and
closes the item with their evidence; paths go to the daemon relative to the repository root.
Each face parses its own input, calls one function here and renders the answer its way.

A ``Session`` is how one face reaches the board: the board's directory, a transport (the HTTP
client, or the daemon's own app when the MCP face runs inside it) and whether this process runs
where the agent works. Everything here is synchronous; the MCP face calls it in a worker thread.

Stdlib and the nouns at import: ``coord next`` comes through here on every call.
"""

from __future__ import annotations

import os

from coord.client import tokens
from coord.errors import (
    ChecksFailed,
    ChecksRequired,
    Conflict,
    CoordError,
    InvalidInput,
    LeaseLost,
    NotClaimable,
)

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, NoReturn, Protocol

    from coord.client.checks import Watch

    class Transport(Protocol):
        def call(
            self, method: str, path: str, body: Any = None, timeout: float | None = None
        ) -> Any: ...


class Session:
    """``local``: this process runs in the agent's working tree (the CLI, ``coord mcp`` over
    stdio), so paths are relative to the current directory and checks run here. The MCP face
    inside the daemon is not local: paths start at the repository root and checks cannot run."""

    def __init__(self, board_dir: Path, transport: Transport, *, local: bool = True) -> None:
        self.board_dir = board_dir
        self.transport = transport
        self.local = local

    def call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        return self.transport.call(method, path, body, timeout)

    def get(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self.call("GET", query(path, params) if params else path, **kw)

    def post(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body)

    @property
    def workdir(self) -> str | None:
        return os.getcwd() if self.local else None

    def repo_relative(self, given: list[str], *, literal: bool = False) -> list[str]:
        from coord.client import paths

        return paths.repo_relative(self.board_dir, given, workdir=self.workdir, literal=literal)

    def document_path(self, given: str) -> str:
        """A design document's path as the board knows it (its items' ``spec``)."""
        from coord.client import paths

        return paths.document_path(self.board_dir, given, workdir=self.workdir)


def query(path: str, params: dict[str, Any]) -> str:
    """``path?k=v`` with the empty values left out (the daemon's defaults apply)."""
    from urllib.parse import urlencode

    kept = {k: v for k, v in params.items() if v not in (None, "", False)}
    return f"{path}?{urlencode(kept)}" if kept else path


# --- tokens ----------------------------------------------------------------------------------


def token_for(session: Session, agent: str, ref: int | str, given: int | None) -> int:
    """The token to write with: the one given, else the one remembered from the claim."""
    if given is not None:
        return int(given)
    found = tokens.remembered(session.board_dir, agent, ref)
    if found is None:
        _no_token(session, agent, ref)
    return found


def _no_token(session: Session, agent: str, ref: int | str) -> NoReturn:
    """Why this agent has no token for the item, said as the board sees it: no such item
    (not found), someone else's claim (a conflict naming the holder), not claimed at all, or
    a claim of its own whose token this machine does not remember (pass it)."""
    item = session.get(f"/v1/items/{ref}")  # raises the board's not_found for no such item
    holder = item.get("claimed_by")
    if item["state"] in ("claimed", "needs_human") and holder and holder != agent:
        until = item.get("lease_expires_at")
        raise LeaseLost(
            f"item {ref} is held by {holder}, not {agent}"
            + (
                " (its lease has run out: claim it to take it over)"
                if item.get("lease_expired")
                else f" (until {until})"
            ),
            id=item["id"],
            holder=holder,
        )
    if item["state"] not in ("claimed", "needs_human"):
        raise NotClaimable(
            f"item {ref} is {item['state']}, not claimed: claim it first", id=item["id"]
        )
    # field="token": each face names its own way of passing it (the CLI: --token T)
    raise InvalidInput(
        f"no token remembered for item {ref} as {agent}: pass the token your claim "
        "returned, or claim the item again",
        field="token",
    )


def _optional_token(session: Session, agent: str, ref: int | str, given: int | None) -> dict:
    """Writes any agent may make (edit, cancel) carry the holder's token when there is one."""
    token = given if given is not None else tokens.remembered(session.board_dir, agent, ref)
    return {} if token is None else {"token": token}


# --- claims ----------------------------------------------------------------------------------


def claim(
    session: Session,
    agent: str,
    ref: int | str,
    lease: float | None = None,
    *,
    worktree: dict[str, str] | None = None,
) -> Any:
    """``worktree`` (base_commit, path_root): the board records the item's branch, base and
    worktree path in the claim (``coord.landing.flow.start`` makes the worktree)."""
    request: dict[str, Any] = {"agent": agent, "lease_seconds": lease}
    if worktree is not None:
        request["worktree"] = worktree
    won = session.post(f"/v1/items/{ref}/claim", request)
    tokens.remember_claim(session.board_dir, agent, won)
    return won


def claim_next(
    session: Session,
    agent: str,
    *,
    kind: str | None = None,
    label: str | None = None,
    lease: float | None = None,
    count: int | None = None,
    worktree: dict[str, str] | None = None,
) -> Any:
    """The best ready item claimed; with ``count``, ``{"items": [...]}`` of up to that many."""
    request: dict[str, Any] = {
        "agent": agent,
        "lease_seconds": lease,
        "kind": kind,
        "label": label,
    }
    if worktree is not None:
        request["worktree"] = worktree
    if count is None:
        won = session.post("/v1/claim-next", request)
        tokens.remember_claim(session.board_dir, agent, won)
        return won
    batch = session.post("/v1/claim-next", {**request, "count": count})
    for won in batch["items"]:
        tokens.remember_claim(session.board_dir, agent, won)
    return batch


def _write(
    session: Session, agent: str, ref: int | str, action: str, token: int | None, body: dict
) -> Any:
    """A write under the claim's token. The token is dropped once the claim is over: when the
    daemon says it is lost, and after release and done."""
    request = {"agent": agent, "token": token_for(session, agent, ref, token), **body}
    try:
        answer = session.post(f"/v1/items/{ref}/{action}", request)
    except CoordError as err:
        if err.code == "lease_lost":  # that claim is over for good
            tokens.forget(session.board_dir, agent, ref)
        raise
    if action in ("release", "done"):
        tokens.forget(session.board_dir, agent, ref, answer.get("id"), answer.get("key"))
    return answer


def heartbeat(
    session: Session,
    agent: str,
    ref: int | str,
    token: int | None = None,
    lease: float | None = None,
) -> Any:
    return _write(session, agent, ref, "heartbeat", token, {"lease_seconds": lease})


def release(
    session: Session, agent: str, ref: int | str, token: int | None = None, reason: str = ""
) -> Any:
    return _write(session, agent, ref, "release", token, {"reason": reason})


def escalate(
    session: Session, agent: str, ref: int | str, question: str, token: int | None = None
) -> Any:
    return _write(session, agent, ref, "escalate", token, {"question": question})


def done(
    session: Session,
    agent: str,
    ref: int | str,
    *,
    token: int | None = None,
    summary: str = "",
    skip_reason: str | None = None,
    check_timeout: float = 1800.0,
    watch: Watch | None = None,
    before_checks: Callable[[list[str], str], None] | None = None,
) -> Any:
    """Close the item. If it has checks the daemon says so (checks_required); they run here,
    in the agent's working tree, and the item is closed with their evidence. A failed check
    (or one that timed out) keeps the claim, and the refusal carries the failing commands'
    last lines of output (unless ``watch`` heard them: said twice, they buried the refusal).
    A Ctrl-C mid-check ends the check and goes on up: nothing is sent, the claim stays.
    ``before_checks`` hears the commands and the directory before any of them runs (they
    are shell commands someone else may have written: the face shows them);
    ``watch`` hears each check's output as it comes and how it went, for a face that shows
    progress (``coord.client.checks.Watch``). An item claimed with a worktree is submitted
    instead (``coord.client.worktree_flow.submit``): queued to land, its files still held."""
    body: dict[str, Any] = {"summary": summary}
    if skip_reason is not None:
        body["skip_checks"] = skip_reason
    try:
        return _write(session, agent, ref, "done", token, body)
    except ChecksRequired as err:
        workdir = session.workdir
        if workdir is None:  # the daemon is not where the agent works
            raise
        from coord.client import checks

        listed = list(err.details.get("checks") or [])
        if before_checks is not None:
            before_checks(listed, workdir)
        runs = checks.run(listed, cwd=workdir, timeout=check_timeout, watch=watch)
        try:
            return _write(session, agent, ref, "done", token, {**body, "evidence": runs})
        except ChecksFailed as failed:
            if watch is None:  # a face that watched has shown the output as it came
                failed.message = "\n".join([failed.message, checks.failed_output(runs)])
            raise
    except Conflict as err:
        if err.code != "conflict" or "branch" not in err.details:
            raise
        # a worktree item: its done is a submit (checked in its worktree; the checks run
        # when it lands, on the tree that lands)
        if skip_reason is not None:
            raise InvalidInput(
                f"item {ref} was claimed with a worktree: its checks run when it lands, on "
                "the tree that lands, and cannot be skipped here; submit without skipping",
                field="skip_checks",
            ) from None
        from coord.client import worktree_flow

        return worktree_flow.submit(session, agent, ref, token=token)


def edit(
    session: Session, agent: str, ref: int | str, changes: dict[str, Any], token: int | None
) -> Any:
    body = {"agent": agent, **changes, **_optional_token(session, agent, ref, token)}
    return session.call("PATCH", f"/v1/items/{ref}", body)


def cancel(
    session: Session, agent: str, ref: int | str, reason: str, token: int | None = None
) -> Any:
    body = {"agent": agent, "reason": reason, **_optional_token(session, agent, ref, token)}
    return session.post(f"/v1/items/{ref}/cancel", body)


def reopen(session: Session, agent: str, ref: int | str, reason: str) -> Any:
    return session.post(f"/v1/items/{ref}/reopen", {"agent": agent, "reason": reason})


# --- items and talk --------------------------------------------------------------------------


def item_id(session: Session, ref: int | str) -> int:
    """The item's id where the board takes ids (dependencies, a reservation's item, the log's
    filter): a package id (``R3``) is looked up, and no such item is the board's not_found."""
    return ref if isinstance(ref, int) else int(session.get(f"/v1/items/{ref}")["id"])


def add(session: Session, agent: str, fields: dict[str, Any]) -> Any:
    """Post an item; its ``files`` as the board names them."""
    files = fields.get("files") or []
    return session.post(
        "/v1/items", {"agent": agent, **fields, "files": session.repo_relative(files)}
    )


def reply(session: Session, agent: str, ref: int | str, text: str) -> Any:
    return session.post(f"/v1/items/{ref}/replies", {"agent": agent, "body": text})


def send(session: Session, agent: str, to: str, text: str) -> Any:
    """A direct message to ``to``: a note addressed to it, in its inbox."""
    return session.post("/v1/messages", {"agent": agent, "to": to, "text": text})


def inbox(session: Session, agent: str, *, peek: bool = False) -> Any:
    return session.post("/v1/inbox", {"agent": agent, "peek": peek})


# --- files -----------------------------------------------------------------------------------


def reserve(
    session: Session,
    agent: str,
    patterns: list[str],
    *,
    shared: bool = False,
    lease: float | None = None,
    item: int | None = None,
    reason: str = "",
) -> Any:
    body = {
        "agent": agent,
        "patterns": session.repo_relative(patterns),
        "shared": shared,
        "lease_seconds": lease,
        "item": item,
        "reason": reason,
    }
    return session.post("/v1/reservations", body)


def unreserve(
    session: Session, agent: str, patterns: list[str] | None, *, everything: bool = False
) -> Any:
    body: dict[str, Any] = {"agent": agent, "all": everything}
    if not everything:
        body["patterns"] = session.repo_relative(patterns or [])
    return session.post("/v1/reservations:release", body)


def who(session: Session, agent: str | None, path: str) -> tuple[str, Any]:
    """(the path as the board names it, who holds it and whether ``agent`` may edit it)."""
    relative = session.repo_relative([path], literal=True)[0]
    return relative, session.get("/v1/who", {"path": relative, "agent": agent})
