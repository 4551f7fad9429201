"""A worktree item's submit (issue 24), written once for the CLI and the MCP tools: the
``done`` of an item claimed with a worktree, and the settings and repository its faces share.

``submit`` runs where the agent works (git is read here): refused unless the item's worktree
is clean, its HEAD is the item's branch and contains the base commit; then the daemon records
HEAD's commit and the item is queued, its files held by the queue until merged or abandoned.
``coord.client.flow.done`` comes here when the board says the item has a worktree. Making
worktrees and judging them is ``coord.landing.flow``'s (the client layer never imports
``coord.landing``, which imports it).

Imported only by those verbs: git is not on ``coord next``'s path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from coord.client import flow, tokens
from coord.errors import Conflict, CoordError, InvalidInput
from coord.fast import board_files
from coord.fast import worktree as fast_worktree
from coord.fast.git import Git

DEFAULT_MAIN = "main"


def repo_of(session: flow.Session) -> Path:
    """The main working tree of the board's repository (the board is at its root), as
    ``coord.landing.worktrees.main_root`` names it."""
    start = str(session.board_dir.parent)
    top = fast_worktree.toplevel(start) or os.path.realpath(start)
    return Path(fast_worktree.main_toplevel(top))


def settings(session: flow.Session) -> dict[str, Any]:
    config = board_files.read_config(session.board_dir)
    return {
        "main_branch": config.get("main_branch") or DEFAULT_MAIN,
        "worktree_root": config.get("worktree_root"),
        "worktree_setup": config.get("worktree_setup"),
        "start_in_worktree": bool(config.get("start_in_worktree")),
    }


def main_ref(session: flow.Session) -> str:
    return f"refs/heads/{settings(session)['main_branch']}"


# --- submit ----------------------------------------------------------------------------------


def item_here(session: flow.Session, where: str | None = None) -> int:
    """The item whose coord worktree holds ``where`` (default: the current directory)."""
    where = where or session.workdir
    found = fast_worktree.claim_of(where, str(repo_of(session))) if where else None
    if found is None:
        raise InvalidInput(
            f"{where} is in no coord worktree: name the item (`coord done ID`), or run it in "
            "the worktree `coord start` made",
            field="id",
        )
    return int(found[1]["item"])


def submit(
    session: flow.Session, agent: str, ref: int | str, *, token: int | None = None
) -> dict[str, Any]:
    """Hand the worktree's HEAD to the landing queue, after checking it here: the item,
    queued."""
    if not session.local:
        raise InvalidInput(
            "a worktree item is submitted where it was worked: call done through `coord done` "
            "or `coord mcp` (stdio), which read its worktree",
            field="item",
        )
    item = session.get(f"/v1/items/{ref}")
    if not item.get("branch") or not item.get("worktree"):
        raise Conflict(f"item {ref} has no worktree: `coord done {ref}` closes it", id=item["id"])
    written = flow.token_for(session, agent, ref, token)
    head = check_ready(item)
    request = {"agent": agent, "token": written, "head": head}
    try:
        queued = session.post(f"/v1/items/{ref}/submit", request)
    except CoordError as err:
        if err.code == "lease_lost":
            tokens.forget(session.board_dir, agent, ref)
        raise
    tokens.forget(session.board_dir, agent, ref, queued.get("id"), queued.get("key"))
    return queued


def check_ready(item: dict[str, Any]) -> str:
    """HEAD's commit of the item's worktree, if it may be submitted: clean (nothing staged,
    modified or untracked that git does not ignore), on the item's branch, containing the
    base. Else ``Conflict`` saying what to do; nothing is changed."""
    path, branch, base = Path(item["worktree"]), item["branch"], item.get("base_commit")
    ref = item.get("key") or item["id"]
    if not path.is_dir():
        raise Conflict(
            f"the worktree of item {ref}, {path}, is gone: nothing to submit; release the item "
            f"(`coord release {ref}`) and start it again",
            id=item["id"],
            worktree=str(path),
        )
    git = Git(path)
    # not git.out: it strips the output, and with it the first entry's leading status column
    status = git.run("status", "--porcelain", "--untracked-files=all").stdout.decode(
        "utf-8", "replace"
    )
    if status.strip():
        lines = status.splitlines()
        shown = ", ".join(line[3:] for line in lines[:5]) + (" …" if len(lines) > 5 else "")
        raise Conflict(
            f"the worktree {path} has {len(lines)} uncommitted change(s) ({shown}): commit "
            "them (or remove them) and run done again; only committed work lands",
            id=item["id"],
            worktree=str(path),
            uncommitted=len(lines),
        )
    on = git.out("symbolic-ref", "-q", "HEAD", check=False)
    if on != f"refs/heads/{branch}":
        raise Conflict(
            f"the worktree {path} is on {on.removeprefix('refs/heads/') or 'a detached HEAD'}, "
            f"not on the item's branch {branch}: `git switch {branch}` there (with your "
            "commits on it), then run done again",
            id=item["id"],
            branch=branch,
        )
    head = git.out("rev-parse", "HEAD")
    if base and not git.ok("merge-base", "--is-ancestor", base, head):
        raise Conflict(
            f"HEAD {head[:12]} of {path} does not contain {base[:12]}, main's tip when the "
            f"item was claimed: `git rebase {base[:12]}` there (a reused branch starts from "
            "an older main; or its history was rewritten), then run done again",
            id=item["id"],
            base_commit=base,
        )
    return head
