"""A worktree per claim: made on its own branch at main's tip, locked with whose it is, listed
and judged (alive? clean? merged?).

``create`` adds a linked worktree on a new branch (``coord/3-t7``) at the base commit, locked
at once (``git worktree add --lock --reason``) so that ``git worktree prune`` never drops it,
and the reason names the item, the fencing token and the process that owns it
(``coord.fast.worktree.lock_reason``): a sweeper tells live from dead by reading it, and the
guard reads it from the worktree's ``locked`` file without running git. A re-claim after
rework passes the earlier branch as ``reuse``: it is renamed to the new name (its commits, and
its worktree with any uncommitted work, kept) instead of failing. Then the ignored files
``.worktreeinclude`` names are copied in, and the project's setup command runs there; its
failure is reported, never undone (the agent may fix it).

Where the worktrees go: ``<repo>/.worktrees/`` unless told. Inside the repository because
that is the one directory coord knows it may write: the parent may be shared, read-only, or
someone else's (``/home``, a mounted volume), and an agent's sandbox (Claude Code's, Codex's
workspace-write) and a dev container usually reach only the project's directory. Hidden (a
dot) and written to ``.git/info/exclude`` (never to the user's ``.gitignore``), so ``git
status``, ripgrep, ruff and editors' searches pass over it; ``coord.fast.worktree`` already
names files in a nested worktree as in the main one. Any other root may be configured, a
sibling directory included; never one inside ``.coord/`` (the guard refuses every edit in the
board's directory, and deleting the board would take uncommitted work with it) or the git
directory, and never the repository itself.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coord import model
from coord.client import checks as checks_module
from coord.errors import Conflict, InvalidInput
from coord.fast import worktree as fast_worktree
from coord.fast.board_files import BOARD_DIRNAME
from coord.fast.git import Git
from coord.landing import gitlock, include, snapshot
from coord.landing.gitlock import changing_worktrees
from coord.landing.steps import MAIN_REF, merged_outside

# a full object id (SHA-1 or SHA-256): what a worktree made at it has as its HEAD
_FULL_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")

DEFAULT_ROOT = ".worktrees"
BRANCH_PREFIX = model.WORKTREE_BRANCH_PREFIX


@dataclass(slots=True)
class Lock:
    item: int
    token: int
    branch: str | None  # the branch coord made for it
    pid: int
    host: str
    started: int | None

    @classmethod
    def parse(cls, reason: str | None) -> Lock | None:
        fields = fast_worktree.parse_reason(reason or "")
        if fields is None:
            return None
        started = fields.get("started", "")
        return cls(
            int(fields["item"]),
            int(fields["token"]),
            fields.get("branch"),
            int(fields["pid"]),
            fields.get("host", ""),
            int(started) if started.isdigit() else None,
        )

    def alive(self) -> bool | None:
        """Whether the owning process still runs; None when it ran on another machine."""
        if self.host != os.uname().nodename:
            return None
        if self.pid <= 0:
            return False  # kill(0) would ask about our own process group
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # it exists, as another user's
        if self.started is not None:
            now = fast_worktree.process_started(self.pid)
            if now is not None and now != self.started:
                return False  # the pid was given to another process since
        return True


@dataclass(slots=True)
class Worktree:
    path: Path
    head: str
    branch: str | None  # None when detached (a rebase in progress, or by hand)
    lock_reason: str | None
    lock: Lock | None
    exists: bool = True
    alive: bool | None = None
    changed: int = 0  # tracked files staged or modified (and conflicts)
    untracked: int = 0  # untracked files git does not ignore
    # how its HEAD reached main (steps.merged_outside), or None; a fresh claim's HEAD is main's
    # commit, so 'ancestry' there too: with ``ahead`` 0 it means nothing to land, nothing to lose
    merged: str | None = None
    ahead: int = 0  # commits of HEAD not on main

    @property
    def clean(self) -> bool:
        return self.exists and self.changed == 0 and self.untracked == 0


@dataclass(slots=True)
class Created:
    path: Path
    branch: str
    head: str
    reused: str | None = None  # the branch renamed to ``branch``, on a re-claim
    moved_from: Path | None = None  # that branch's worktree, moved to ``path``
    # its uncommitted work (a crashed claim's), kept in this snapshot before the move
    kept_in: str | None = None
    copied: list[str] = field(default_factory=list)
    not_copied: dict[str, str] = field(default_factory=dict)
    setup: dict[str, Any] | None = None  # the setup command's run, as checks record one

    @property
    def setup_failed(self) -> bool:
        return self.setup is not None and self.setup["exit_code"] != 0


def resolve_root(repo: Path, root: str | Path | None = None, *, common: Path | None = None) -> Path:
    """The worktrees' root as the file system names it (a relative one is relative to the
    repository); refused inside ``.coord/`` or the git directory, or the repository itself.
    ``common``: the repository's ``gitlock.common_dir``, when the caller knows it already."""
    repo = main_root(repo)
    found = Path(os.path.realpath(repo / (root if root is not None else DEFAULT_ROOT)))
    board = Path(os.path.realpath(repo / BOARD_DIRNAME))
    if found == board or found.is_relative_to(board):
        raise InvalidInput(
            f"the worktree root {found} is inside {board}, the board's directory: "
            "choose another (the default is <repository>/.worktrees)",
            root=str(found),
        )
    common = Path(os.path.realpath(common or gitlock.common_dir(repo)))
    if found == common or found.is_relative_to(common):
        raise InvalidInput(
            f"the worktree root {found} is inside the git directory {common}: choose another",
            root=str(found),
        )
    if found == repo:
        raise InvalidInput(
            f"the worktree root cannot be the repository itself ({repo}): "
            "choose a directory in it (such as .worktrees) or beside it",
            root=str(found),
        )
    return found


def main_root(repo: str | Path) -> Path:
    """The main working tree's root, as the file system names it, for any spelling of the
    repository or of one of its linked worktrees: where the board and the worktrees' root
    are."""
    top = fast_worktree.toplevel(str(repo)) or os.path.realpath(repo)
    return Path(fast_worktree.main_toplevel(top))


def ensure_ignored(repo: Path, root: Path, *, common: Path | None = None) -> None:
    """A root inside the repository is written to ``.git/info/exclude`` (once); refused when
    it holds tracked files or the repository's own rules un-ignore it. ``common``: the
    repository's ``gitlock.common_dir``, when the caller knows it already."""
    if not root.is_relative_to(repo):
        return
    git = Git(repo)
    rel = root.relative_to(repo).as_posix()
    if git.out("--literal-pathspecs", "ls-files", "--", rel):
        raise InvalidInput(
            f"the worktree root {root} holds tracked files: choose a directory of its own",
            root=str(root),
        )
    # info/ is shared by every worktree: it is in the common directory
    exclude = (common or gitlock.common_dir(repo)) / "info" / "exclude"
    line = "/" + "".join("\\" + c if c in "\\*?[]!# " else c for c in rel) + "/"
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if line not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not text or text.endswith("\n") else "\n"
        with open(exclude, "a", encoding="utf-8") as f:
            f.write(f"{sep}# coord's worktrees, one a claim\n{line}\n")
    if not git.ok("check-ignore", "-q", f"{rel}/probe"):
        raise InvalidInput(
            f"{rel}/ is still not ignored by git (a rule of the repository un-ignores it): "
            "remove that rule or choose another worktree root",
            root=str(root),
        )


def dirname_for(branch: str) -> str:
    """The worktree's directory name: its branch without ``coord/``, one path component
    (``model.worktree_dirname``: the rule the board's record of the path follows too)."""
    return model.worktree_dirname(branch)


def create(
    repo: Path,
    branch: str,
    base: str,
    *,
    item: int,
    token: int,
    root: str | Path | None = None,
    reuse: str | None = None,
    pid: int | None = None,
    setup: str | None = None,
    setup_timeout: float = 600.0,
) -> Created:
    """A locked worktree on ``branch`` (new, at ``base``; or ``reuse`` renamed to it; or
    ``branch`` itself when a first attempt got that far), with the included files and the
    setup run. ``pid`` is the process that owns the claim (by default this one): the face
    should pass the agent's own, which outlives a ``coord claim`` command."""
    repo = main_root(repo)
    git = Git(repo)
    if not git.ok("check-ref-format", "--branch", branch):
        raise InvalidInput(f"{branch!r} is not a valid branch name", branch=branch)
    common = gitlock.common_dir(repo)  # one git command for the three that need it
    root = resolve_root(repo, root, common=common)
    ensure_ignored(repo, root, common=common)
    path = root / dirname_for(branch)
    pid = os.getpid() if pid is None else pid
    reason = fast_worktree.lock_reason(
        item, token, branch, pid, os.uname().nodename, fast_worktree.process_started(pid)
    )
    with changing_worktrees(repo, common):
        made = _make(git, repo, path, branch, base, reuse, pid, reason)
    copied = include.copy(repo, path, leave_out=[root])
    made.copied, made.not_copied = copied.copied, copied.skipped
    if setup:
        made.setup = checks_module.run([setup], cwd=path, timeout=setup_timeout)[0]
    return made


def _make(
    git: Git,
    repo: Path,
    path: Path,
    branch: str,
    base: str,
    reuse: str | None,
    pid: int,
    reason: str,
) -> Created:
    made = Created(path, branch, "")
    source = branch if _branch_exists(git, branch) else None
    if source is None and reuse is not None and _branch_exists(git, reuse):
        source = reuse
    holder = _holder(repo, source) if source is not None else None
    if holder is not None and holder.lock is None:
        raise Conflict(
            f"branch {source} is checked out in {holder.path}, which is not a coord worktree: "
            "check it out elsewhere there first",
            branch=source,
            worktree=str(holder.path),
        )
    if holder is not None and holder.lock is not None:
        owner = holder.lock
        same = (owner.pid, owner.host) == (pid, os.uname().nodename)
        if not same and owner.alive() is not False:
            # moved from under a live process, its later commits would go on the new branch
            raise Conflict(
                f"branch {source} is in {holder.path}, whose process {owner.pid} on "
                f"{owner.host or 'an unknown host'} may still run: end it, remove that "
                "worktree, or start from the base without reusing the branch",
                branch=source,
                worktree=str(holder.path),
                pid=owner.pid,
            )
    if source is not None and source != branch:
        git.run("branch", "-m", source, branch)  # a worktree on it follows the new name
        made.reused = source
    if holder is not None and not holder.path.is_dir():
        # its directory is gone (and with it any uncommitted work): only git's record of it
        # is left, which would keep the branch from being checked out again
        git.run("worktree", "unlock", str(holder.path))
        git.run("worktree", "remove", str(holder.path))
        holder = None
    if holder is not None:
        if holder.lock is not None and _uncommitted(holder.path):
            made.kept_in = _keep_before_moving(holder)
        git.run("worktree", "unlock", str(holder.path))
        if holder.path != path:
            git.run("worktree", "move", str(holder.path), str(path))
            made.moved_from = holder.path
        git.run("worktree", "lock", "--reason", reason, str(path))
    elif source is not None:
        git.run("worktree", "add", "--lock", "--reason", reason, str(path), branch)
    else:
        git.run("worktree", "add", "--lock", "--reason", reason, "-b", branch, str(path), base)
        if _FULL_ID.fullmatch(base):  # the new branch is the commit named: nothing to ask
            made.head = base.lower()
            return made
    made.head = Git(path).out("rev-parse", "HEAD")
    return made


def _keep_before_moving(holder: Worktree) -> str:
    """An earlier claim's uncommitted work (its process gone) goes on in the new claim's
    worktree; a snapshot keeps it first, before anything touches it (promise 18)."""
    assert holder.lock is not None
    return snapshot.PREFIX + snapshot.keep(holder.path, f"{holder.lock.item}-t{holder.lock.token}")


def _uncommitted(path: Path) -> bool:
    """Staged, unstaged or untracked-not-ignored changes."""
    return bool(Git(path).out("status", "--porcelain", "--untracked-files=all"))


def list_worktrees(repo: Path, main: str = MAIN_REF) -> list[Worktree]:
    """coord's worktrees (those locked with a coord reason), each judged."""
    found = []
    for wt in _porcelain(main_root(repo)):
        if wt.lock is None:
            continue
        judge(repo, wt, main)
        found.append(wt)
    return found


def of_item(repo: Path, item: int) -> list[Worktree]:
    """The coord worktrees locked for ``item`` (any token), not judged: cheap."""
    return [wt for wt in _porcelain(main_root(repo)) if wt.lock and wt.lock.item == item]


def judge(repo: Path, wt: Worktree, main: str = MAIN_REF) -> None:
    """Fill in whether its process lives, its uncommitted changes, and whether it is merged."""
    wt.alive = wt.lock.alive() if wt.lock else None
    wt.exists = wt.path.is_dir()
    if wt.exists:
        status = Git(wt.path).run("status", "--porcelain", "-z", "--untracked-files=all")
        entries = _status_entries(status.stdout)
        wt.untracked = sum(1 for e in entries if e.startswith(b"??"))
        wt.changed = len(entries) - wt.untracked
    git = Git(repo)
    tip = wt.head
    if git.ok("rev-parse", "-q", "--verify", main) and tip:
        base = git.out("merge-base", tip, main, check=False)
        wt.ahead = int(git.out("rev-list", "--count", f"{main}..{tip}") or 0)
        wt.merged = merged_outside(repo, base, tip, main) if base else None


def find(repo: Path, path: str | Path, main: str = MAIN_REF) -> Worktree | None:
    """The coord worktree whose root is ``path`` (however spelled), judged; None if none."""
    wanted = Path(os.path.realpath(path))
    for wt in _porcelain(main_root(repo)):
        if wt.lock is not None and Path(os.path.realpath(wt.path)) == wanted:
            judge(repo, wt, main)  # only this one: judging all would run merged_outside for each
            return wt
    return None


def containing(repo: Path, path: str | Path) -> Worktree | None:
    """The coord worktree (and so the claim, ``lock.item``) holding ``path``, however spelled,
    judged; None when it is in none of the repository's. The guard asks
    ``coord.fast.worktree.claim_of`` instead: the same answer from file reads alone."""
    found = fast_worktree.claim_of(str(path), str(main_root(repo)))
    return find(repo, found[0]) if found else None


def _porcelain(repo: Path) -> list[Worktree]:
    out = gitlock.worktree_list(repo, "-z")
    found = []
    for record in out.split(b"\0\0"):
        fields: dict[str, str] = {}
        for entry in record.split(b"\0"):
            key, _, value = entry.decode("utf-8", "surrogateescape").partition(" ")
            if key:
                fields[key] = value
        if "worktree" not in fields:
            continue
        branch = fields.get("branch")
        reason = fields.get("locked")
        found.append(
            Worktree(
                path=Path(fields["worktree"]),
                head=fields.get("HEAD", ""),
                branch=branch.removeprefix("refs/heads/") if branch else None,
                lock_reason=reason,
                lock=Lock.parse(reason),
            )
        )
    return found


def _holder(repo: Path, branch: str) -> Worktree | None:
    return next((wt for wt in _porcelain(repo) if wt.branch == branch), None)


def _branch_exists(git: Git, branch: str) -> bool:
    return git.ok("rev-parse", "-q", "--verify", f"refs/heads/{branch}")


def _status_entries(out: bytes) -> list[bytes]:
    """``git status --porcelain -z`` entries; a rename's second path is no entry of its own."""
    parts = out.split(b"\0")
    entries, i = [], 0
    while i < len(parts):
        if parts[i]:
            entries.append(parts[i])
            if parts[i][:1] in (b"R", b"C") or parts[i][1:2] in (b"R", b"C"):
                i += 1
        i += 1
    return entries
