"""A worktree item's start and its worktrees' fate (issue 24), written once for the CLI and
the MCP tools: ``start`` (claim with a worktree, then make it), the snapshots of an item's
earlier work offered to resume, and what ``coord worktree list`` and ``gc`` say and do.

``start`` claims through the daemon with the worktree spec (main's tip as the base, the
configured root), so the board records the branch, base and path in the claim's transaction;
then makes the linked worktree there (``worktrees.create``). If that fails, the claim is
released: nothing stays held for a worktree that does not exist. ``gc`` removes only what no
claim or queue entry needs, and only through ``removal.remove``, which refuses to lose work.
The submit half is ``coord.client.worktree_flow``'s.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from coord.client import flow
from coord.client.worktree_flow import main_ref, repo_of, settings
from coord.errors import Conflict, CoordError, GitError, InvalidInput, NotFound
from coord.fast.git import Git
from coord.landing import removal, snapshot, worktrees

# names the agent's own long-lived process, whose life the worktree's lock follows
PID_ENV = "COORD_AGENT_PID"


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "ash", "busybox"})


def owner_pid() -> int:
    """The process the worktree belongs to: ``COORD_AGENT_PID`` when the agent names its own,
    else this command's parent (the command itself ends now), past the ``sh -c`` shells an
    agent's client runs each command in (they end with it): the client, or a person's own
    interactive shell."""
    named = os.environ.get(PID_ENV, "")
    if named.isdigit() and int(named) > 0:
        return int(named)
    pid = os.getppid()
    for _ in range(16):
        parent = _parent_of(pid) if _transient_shell(pid) else None
        if parent is None or parent <= 1:
            return pid
        pid = parent
    return pid


def _transient_shell(pid: int) -> bool:
    """A shell running one command (``sh -c CMD``), by its /proc command line (Linux)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode("utf-8", "replace").split("\0")
    except OSError:
        return False
    name = os.path.basename(argv[0]).lstrip("-")
    flags = [a for a in argv[1:4] if a.startswith("-") and not a.startswith("--")]
    return name in SHELLS and any("c" in a[1:] for a in flags)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().decode("utf-8", "replace").rsplit(")", 1)[1].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def start(
    session: flow.Session,
    agent: str,
    ref: int | str | None = None,
    *,
    kind: str | None = None,
    label: str | None = None,
    lease: float | None = None,
    pid: int | None = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Claim ``ref`` (or the best ready item) with a worktree and make it: the claim, with
    ``worktree`` (what was made: path, branch, base, copied files, the setup's run, and the
    snapshots of the item's earlier work, offered to resume). ``resume``: one of those
    snapshots, restored in the new worktree (its HEAD, staged, unstaged and untracked
    changes)."""
    if not session.local:
        raise InvalidInput(
            "a worktree is made where the agent works: claim with a worktree through `coord "
            "start` or `coord mcp` (stdio), not the daemon's own MCP endpoint",
            field="worktree",
        )
    repo = repo_of(session)
    config = settings(session)
    main = config["main_branch"]
    git = Git(repo)
    base = git.out("rev-parse", "-q", "--verify", f"refs/heads/{main}^{{commit}}", check=False)
    if not base:
        raise InvalidInput(
            f"the main branch {main!r} has no commit in {repo}: commit on it first, or set "
            "main_branch in .coord/config.json to the branch work lands on",
            field="main_branch",
        )
    root = worktrees.resolve_root(repo, config["worktree_root"])
    spec = {"base_commit": base, "path_root": str(root)}
    previous = None
    if resume is not None and ref is None:
        raise InvalidInput("resume a snapshot of a named item: `coord start ID --resume REF`")
    if ref is not None:  # a worktree item claimed again keeps its branch (renamed)
        before = session.get(f"/v1/items/{ref}")
        previous = before.get("branch")
        if resume is not None:
            resume = _snapshot_named(repo, before["id"], resume)
        won = flow.claim(session, agent, ref, lease, worktree=spec)
    else:
        won = flow.claim_next(session, agent, kind=kind, label=label, lease=lease, worktree=spec)
    item = won["item"]
    rework = item.get("rework") or {}
    reuse = rework.get("previous_branch") or rework.get("branch") or previous
    if reuse is None or reuse == item["branch"]:
        reuse = _earlier_branch(repo, won["id"], item["branch"])
    try:
        made = worktrees.create(
            repo,
            item["branch"],
            base,
            item=won["id"],
            token=won["token"],
            root=root,
            reuse=reuse,
            pid=owner_pid() if pid is None else pid,
            setup=config["worktree_setup"],
        )
        if str(made.path) != item["worktree"]:
            raise Conflict(
                f"the worktree was made at {made.path}, not at {item['worktree']} where the "
                "board records it: a bug in coord; remove it and report it",
                worktree=str(made.path),
            )
        if resume is not None:
            _resume(made, resume)
    except CoordError as err:
        _give_back(session, agent, won, err)
        raise
    except OSError as err:  # a file the copy or the setup could not write
        failed = GitError(f"{err.strerror or err} ({err.filename or 'no file named'})")
        _give_back(session, agent, won, failed)
        raise failed from err
    won["worktree"] = {
        "path": str(made.path),
        "branch": made.branch,
        "base_commit": base,
        "reused": made.reused,
        # a reused branch from an older main: done wants the base in it (rebase onto it)
        "contains_base": Git(made.path).ok("merge-base", "--is-ancestor", base, "HEAD"),
        "resumed": resume,
        # an earlier claim's worktree, moved here with its uncommitted work, kept first
        "moved_from": None if made.moved_from is None else str(made.moved_from),
        "kept_in": made.kept_in,
        "snapshots": []
        if resume
        else [s for s in snapshots_of(repo, won["id"]) if s["ref"] != made.kept_in],
        "copied": made.copied,
        "not_copied": made.not_copied,
        "setup": made.setup,
    }
    return won


def snapshots_of(repo: Path, item_id: int) -> list[dict[str, str]]:
    """The snapshots kept of the item's earlier worktrees (``refs/coord/snapshots/<id>-t…``),
    newest first: work a crash or a removal left, which ``start`` offers to resume."""
    out = Git(repo).out(
        "for-each-ref",
        "--sort=-creatordate",
        "--format=%(refname) %(objectname) %(creatordate:iso-strict)",
        snapshot.PREFIX,
    )
    found = []
    for line in out.splitlines():
        name, commit, when = line.split(" ", 2)
        short, mine = name.removeprefix(snapshot.PREFIX), f"{item_id}-t"
        # (a "-branch" ref is a branch head kept beside a snapshot, not one itself)
        numbered = short.startswith(mine) and short[len(mine) :][:1].isdigit()
        if numbered and not short.endswith("-branch"):
            found.append({"ref": name, "commit": commit, "at": when})
    return found


def _snapshot_named(repo: Path, item_id: int, ref: str) -> str:
    full = ref if ref.startswith(snapshot.PREFIX) else snapshot.PREFIX + ref
    if full not in {s["ref"] for s in snapshots_of(repo, item_id)}:
        raise NotFound(
            f"no snapshot {ref} of item {item_id}: `coord start` lists the item's snapshots",
            snapshot=ref,
        )
    return full


def _resume(made: Any, ref: str) -> None:
    """Restore snapshot ``ref`` of the item in its worktree: HEAD (and the branch) moved to
    the commit it was taken at, then its changes put back as they were. Refused unless that
    loses nothing: no change in the worktree, and its HEAD already in the snapshot's."""
    git = Git(made.path)
    if git.out("status", "--porcelain", "--untracked-files=all"):
        raise Conflict(
            f"the worktree {made.path} has changes of its own (its setup command's, or an "
            "earlier claim's): resume refused, so that none is lost",
            snapshot=ref,
        )
    if not git.ok("merge-base", "--is-ancestor", "HEAD", f"{ref}^1"):
        raise Conflict(
            f"the worktree {made.path} is on commits the snapshot {ref} does not hold (an "
            "earlier branch of the item, reused): resume refused, so that none is lost",
            snapshot=ref,
        )
    git.run("reset", "-q", "--hard", f"{ref}^1")  # clean, and only moving ahead: nothing lost
    snapshot.restore(made.path, ref)
    made.head = git.out("rev-parse", "HEAD")


def _earlier_branch(repo: Path, item_id: int, branch: str) -> str | None:
    """The branch of an earlier coord worktree of the item (a claim released, or lapsed and
    taken over, by claim-next too): reused, so its commits and uncommitted work go on."""
    for wt in worktrees.of_item(repo, item_id):
        if wt.branch not in (None, branch):
            return wt.branch
    return None


def _give_back(session: flow.Session, agent: str, won: dict[str, Any], err: CoordError) -> None:
    """The worktree could not be made: release the claim, and say in ``err`` what to do."""
    ref = won["id"]
    try:
        flow.release(session, agent, ref, won["token"], reason="its worktree could not be made")
        kept = "the claim is released (nothing is held)"
    except CoordError as failed:
        kept = f"the claim could not be released ({failed.message}): `coord release {ref}`"
    err.message = (
        f"could not make the worktree of item {ref} on {won['item']['branch']}: {err.message}; "
        f"{kept}. Fix what git says (a branch or directory in the way: `git worktree list`, "
        "`git branch`), then `coord start` again"
    )
    err.details.update(id=ref, released="released" in kept)


# --- what the worktrees are ------------------------------------------------------------------


def worktrees_judged(session: flow.Session) -> list[dict[str, Any]]:
    """Each coord worktree of the repository: its item as the board sees it, owner, cleanness,
    whether it is merged; and what gc would do with it, and why."""
    repo, main = repo_of(session), main_ref(session)
    found = []
    for wt in worktrees.list_worktrees(repo, main):
        lock = wt.lock
        assert lock is not None  # list_worktrees lists only coord's
        try:
            item: dict[str, Any] | None = session.get(f"/v1/items/{lock.item}")
        except NotFound:
            item = None
        removable, why = _fate(wt, item)
        found.append(
            {
                "path": str(wt.path),
                "item": lock.item,
                "token": lock.token,
                "branch": wt.branch,
                "head": wt.head,
                "pid": lock.pid,
                "host": lock.host,
                "alive": wt.alive,
                "exists": wt.exists,
                "clean": wt.clean,
                "changed": wt.changed,
                "untracked": wt.untracked,
                "merged": wt.merged if wt.ahead else None,
                "ahead": wt.ahead,
                "state": item["state"] if item else None,
                "removable": removable,
                "reason": why,
            }
        )
    return found


def _fate(wt: Any, item: dict[str, Any] | None) -> tuple[bool, str]:
    """(whether gc may try to remove it, why): only what no claim and no queue entry needs;
    ``removal.remove`` still refuses anything that would lose work."""
    if item is None:
        return True, "its item is gone from the board"
    state, lock = item["state"], wt.lock
    # the branch is named after the claim's token; the token itself is shown only to the
    # holder's reads (issue 27), and gc may be run by anyone
    shown = item.get("fencing_token")
    ours = item.get("branch") == wt.branch and shown in (None, lock.token)
    if state in ("merged", "done"):
        return True, f"item {lock.item} is {state}"
    if state == "cancelled":
        return True, f"item {lock.item} is cancelled"
    if state == "queued" and ours:
        return False, f"item {lock.item} is queued to land from it"
    if state == "needs_rework" and (item.get("rework") or {}).get("branch") == wt.branch:
        return False, f"item {lock.item} needs rework: its next claim reuses this branch"
    if state in ("claimed", "needs_human") and ours:
        if item.get("lease_expired") and wt.alive is False:
            return False, (
                f"item {lock.item}'s lease ran out and its process {lock.pid} is gone: "
                "kept for the next claim to resume"
            )
        return False, f"item {lock.item} is claimed by {item.get('claimed_by')} in it"
    return True, f"item {lock.item} is {state} and no longer worked here (released or abandoned)"


def gc(session: flow.Session, *, dry_run: bool = False) -> list[dict[str, Any]]:
    """Remove the worktrees no claim or queue entry needs, each only if nothing would be lost
    (``removal.remove`` refuses otherwise, and it is kept with git's or coord's reason)."""
    repo, main = repo_of(session), main_ref(session)
    judged = worktrees_judged(session)
    for wt in judged:
        wt["removed"] = False
        if not wt["removable"]:
            continue
        if dry_run:  # what remove would refuse, said from the judgement (snapshots aside)
            losing = _would_lose(wt)
            if losing:
                wt["removable"], wt["reason"] = False, f"kept: {losing}"
            continue
        try:
            removal.remove(repo, wt["path"], main=main)
        except (Conflict, NotFound, GitError) as err:
            wt["reason"] = f"kept: {err.message}"
            wt["removable"] = False
            continue
        wt["removed"] = True
    return judged


def _would_lose(wt: dict[str, Any]) -> str | None:
    if not wt["exists"]:
        return "gone from the disk: check it by hand"
    if not wt["clean"]:
        return f"{wt['changed']} changed and {wt['untracked']} untracked files not committed"
    if wt["ahead"] and not wt["merged"]:
        return f"{wt['ahead']} commit(s) not on main"
    return None
