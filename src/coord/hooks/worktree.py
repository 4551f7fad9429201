"""Claude Code's ``WorktreeCreate`` and ``WorktreeRemove`` hooks: its worktrees are coord's.

With these hooks configured, Claude Code makes no worktree of its own: ``claude --worktree
NAME`` and every subagent with ``isolation: "worktree"`` ask the hook for one, and end by
asking it to remove it. The contract, read from the client (2.1.197, the tested pin):

- ``WorktreeCreate``: input ``session_id``, ``cwd``, ``name`` (the session's or subagent's
  worktree name). A command hook answers with the worktree's absolute path, the last
  non-empty line of stdout, and exit 0; the path must be a directory that exists. Anything
  else fails the worktree (Claude Code shows the hook's output): it never falls back to a
  worktree of its own.
- ``WorktreeRemove``: input ``worktree_path``. Exit 0 means removed; any other code is logged
  and the worktree is kept.

So a worktree is a claim: create is ``coord start`` for the session's agent (the item
``name`` names, when it names one, else the best ready one), made by coord, locked, on the
item's branch, and the path printed. With nothing ready, or the named item held, the
worktree fails with coord's reason. Claude Code reads the worktree's own
``.claude/settings.json`` for the session in it: where main's copy is missing or differs from
the checkout's (coord's hooks wired but not committed), the worktree would run without
coord's guard, so it is not made, and the reason says to commit the file.

Remove is ``coord worktree gc`` for that one worktree: a worktree whose item is merged or
abandoned goes; one still claimed by this agent goes only if nothing was done in it (clean,
no commit past its base), and its claim is given back; anything else is kept (promise 18),
exit 1 and the reason. A worktree coord did not make is removed by ``git worktree remove``,
which refuses one with changes; its branch stays.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CREATE_EVENT = "WorktreeCreate"
REMOVE_EVENT = "WorktreeRemove"
EVENTS = (CREATE_EVENT, REMOVE_EVENT)
EXIT_FAILED = 1  # read as "not made" / "kept" by Claude Code, which shows the reason


def answer(client: str, event: str, data: dict[str, Any]) -> int:
    """Run one of the two hooks: the exit code; the path (create) on stdout, reasons on
    stderr. Every failure is said in one line and fails the call (nothing half made)."""
    from coord.errors import CoordError

    try:
        if event == CREATE_EVENT:
            path, said = create(client, data)
            if said:
                print(said, file=sys.stderr)
            print(path)
            return 0
        said, removed = remove(client, data)
        print(said, file=sys.stderr)
        return 0 if removed else EXIT_FAILED
    except CoordError as err:
        print(f"coord: {err.message}", file=sys.stderr)
        return EXIT_FAILED


def create(client: str, data: dict[str, Any]) -> tuple[str, str]:
    """(the worktree's path, what was claimed), or a ``CoordError`` saying why not."""
    from coord.errors import InvalidInput, NotFound
    from coord.landing import flow as landing_flow

    session, agent = _session(client, data)
    _require_hooks_on_main(session)
    name = data.get("name")
    ref: str | None = None
    if isinstance(name, str) and name:
        try:
            ref = str(session.get(f"/v1/items/{_quoted(name)}")["id"])
        except (NotFound, InvalidInput):  # a name of Claude Code's own: the best ready item
            ref = None
    won = landing_flow.start(session, agent, ref)
    made, item = won["worktree"], won["item"]
    said = (
        f"coord: {agent} claimed item {won['id']} ({item.get('title', '')}) in this worktree, "
        f"branch {made['branch']}; when finished, commit there and run `coord done "
        f"{won['id']} --as {agent}` to submit it for landing"
    )
    return made["path"], said


def remove(client: str, data: dict[str, Any]) -> tuple[str, bool]:
    """(what happened, whether the worktree is gone)."""
    from coord.client import flow
    from coord.errors import Conflict, GitError, InvalidInput, NotFound
    from coord.fast import worktree as fast_worktree
    from coord.fast.git import Git
    from coord.landing import flow as landing_flow
    from coord.landing import removal

    path = data.get("worktree_path")
    if not isinstance(path, str) or not path:
        raise InvalidInput("the WorktreeRemove input names no worktree_path", field="worktree_path")
    session, agent = _session(client, data)
    repo = landing_flow.repo_of(session)
    where = os.path.realpath(path)
    if fast_worktree.claim_of(where, str(repo)) is None:  # not coord's: git's own care
        done = Git(repo).run("worktree", "remove", where, check=False)
        if done.returncode != 0:
            from coord.fast.git import stderr

            return f"coord: kept {where}: {stderr(done) or 'git worktree remove failed'}", False
        return f"coord: removed {where} (not a coord worktree; its branch is kept)", True
    judged = next((w for w in landing_flow.worktrees_judged(session) if w["path"] == where), None)
    if judged is None:
        return f"coord: kept {where}: coord cannot judge it (`coord worktree list`)", False
    if judged["state"] == "claimed" and not judged["removable"]:
        item = session.get(f"/v1/items/{judged['item']}?agent={_quoted(agent)}")
        mine = item.get("claimed_by") == agent and item.get("fencing_token") == judged["token"]
        untouched = judged["exists"] and judged["clean"] and not judged["ahead"]
        if not (mine and untouched):
            return f"coord: kept {where}: {judged['reason']}", False
        flow.release(
            session,
            agent,
            judged["item"],
            token=judged["token"],
            reason="its Claude Code worktree was removed with nothing done in it",
        )
    elif not judged["removable"]:
        return f"coord: kept {where}: {judged['reason']}", False
    try:
        removal.remove(repo, where, main=landing_flow.main_ref(session))
    except (Conflict, NotFound, GitError) as err:
        return f"coord: kept {where}: {err.message}", False
    return f"coord: removed {where} (item {judged['item']}: {judged['reason']})", True


SETTINGS = ".claude/settings.json"  # where `coord init --claude` wires the hooks


def _require_hooks_on_main(session: Any) -> None:
    """Refuse (``InvalidInput``) when main's settings file is not the checkout's: a worktree
    made from main would start its session without the hooks this one runs."""
    from coord.errors import InvalidInput
    from coord.fast.git import Git
    from coord.landing import flow as landing_flow

    repo = landing_flow.repo_of(session)
    main = landing_flow.main_ref(session)
    on_main = Git(repo).run("show", f"{main}:{SETTINGS}", check=False)
    try:
        here = (repo / SETTINGS).read_bytes()
    except OSError:
        here = None
    if on_main.returncode == 0 and on_main.stdout == here:
        return
    why = "is not committed on main" if on_main.returncode != 0 else "differs from main's"
    raise InvalidInput(
        f"{SETTINGS} (coord's hooks for Claude Code) {why}, and Claude Code reads the "
        "worktree's own copy, made from main: its session would run without coord's guard. "
        f"Commit it on main (`git add {SETTINGS} && git commit`), then start again",
        field="worktree",
    )


def _session(client: str, data: dict[str, Any]) -> tuple[Any, str]:
    """The board around the hook's ``cwd`` (the process moves there: paths and git are read
    from it, as in the agent's own shell) and the session's agent name."""
    from coord.client import flow
    from coord.client.http import Client
    from coord.errors import BoardNotFound, InvalidInput
    from coord.fast import board_files, identity

    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise InvalidInput("the hook input has no cwd", field="cwd")
    os.chdir(cwd)
    board_dir = board_files.find_board_dir(cwd)
    if board_dir is None or not board_files.has_board(board_dir):
        raise BoardNotFound(
            f"no coord board in {cwd} or above, so coord cannot make this worktree: run "
            "`coord init` there, or `coord uninstall --claude` to let Claude Code make its own"
        )
    session_id = data.get("session_id")
    sid = session_id if isinstance(session_id, str) and session_id else None
    agent = identity.agent_name(board_dir, client, sid)
    if agent is None:
        raise InvalidInput("coord cannot tell this session's agent name: set COORD_AGENT")
    return flow.Session(board_dir, Client(board_dir), local=True), agent


def _quoted(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")
