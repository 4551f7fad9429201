"""Landing one submitted branch: in a landing worktree of its own, main moved by compare-and-set.

``land`` checks that the branch head is still the one recorded at submit (a zombie's later
commits never land), rebases a detached copy of it onto main's tip in the landing worktree
(never a user's checkout; the branch itself is not moved), runs the item's checks on that
candidate tree, then moves main with ``git update-ref refs/heads/main NEW OLD``: git refuses
when main is no longer OLD, and the landing starts again from the new tip (bounded). Nothing
is ever forced: a human's commit to main is built upon, never overwritten.

``merged_outside`` tells whether a branch reached main another way: ancestry, then patch-id
of its whole change against each commit on main since its base, then tree equality.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coord.client import checks as checks_module
from coord.fast import worktree as fast_worktree
from coord.fast.git import Git
from coord.landing import gitlock
from coord.landing.gitlock import changing_worktrees

MAIN_REF = "refs/heads/main"
REMOTE_TIMEOUT = 120.0  # a fetch or push over the network


@dataclass(slots=True)
class Outcome:
    # "merged" | "needs_rework" | "waiting" (the checkout of main is in the way) | "stopped"
    # (the runner is stopping: its checks were ended, main untouched, the item stays queued)
    kind: str
    commit: str | None = None
    reason: str = ""
    # why, as the board says it (coord.model.REWORK_REASONS), or "main_moved": main kept
    # moving under every attempt, which is nothing for the item's holder to fix
    code: str = ""
    files: list[str] = field(default_factory=list)
    output_tail: str = ""
    main: str | None = None
    attempts: int = 0
    runs: list[dict[str, Any]] = field(default_factory=list)


# The identity of the commits a landing makes (a merge or squash commit, a rebased copy's
# committer) where the repository sets none: a CI machine or a fresh container often has
# no user.name, and git refuses to commit without one.
_FALLBACK_IDENTITY = {"name": "coord", "email": "coord@localhost"}
# A landing runs no hook of the user's: it is not the user committing or merging.
_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
STRATEGIES = ("rebase", "merge", "squash")
# what ``git merge --ff-only`` says when local changes are in the way
_IN_THE_WAY = ("would be overwritten", "untracked working tree files would be")

Vet = Callable[[str, str, list[str]], "Outcome | None"]
# in the landing worktree's git directory: the check running now, "PID STARTED" (its process
# group, and when it started, so that a pid used again by another process is never signalled)
CHECK_RECORD = "coord-check"


class _Recorded(checks_module.Watch):
    """Writes down each check's process group while it runs (``CHECK_RECORD``)."""

    def __init__(self, record: Path) -> None:
        self.record = record

    def running(self, pid: int) -> None:
        started = fast_worktree.process_started(pid)
        with contextlib.suppress(OSError):  # unrecorded: a killed runner's check may linger
            self.record.write_text(f"{pid} {started}\n", encoding="ascii")


def _end_leftover_check(record: Path) -> None:
    """A runner killed while its check ran (kill -9) left the check running in the landing
    worktree, in a process group of its own: ended before the tree is used again."""
    try:
        pid_text, started = record.read_text(encoding="ascii").split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return
    if pid > 1 and started != "None" and str(fast_worktree.process_started(pid)) == started:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    record.unlink(missing_ok=True)


def _landing_worktree(git: Git, path: Path, tip: str) -> tuple[Git, Path]:
    """The landing worktree, made if missing and put back to a clean ``tip`` whatever a
    runner killed mid-way left there; with its own git directory."""
    if not (path / ".git").exists():
        with changing_worktrees(git.cwd):
            git.run("worktree", "add", "--detach", str(path), tip)
    here = Git(path, git.env)
    # every state file below is the worktree's own (none is shared with the repository):
    # one git command finds their directory, the rest are looked at on the disk
    own = Path(here.out("rev-parse", "--absolute-git-dir"))
    _end_leftover_check(own / CHECK_RECORD)
    # what a runner killed mid-way left: a rebase cut between two commits has no REBASE_HEAD,
    # only its state directory, and the next `git rebase` would refuse to start
    cut = any((own / state).exists() for state in ("REBASE_HEAD", "rebase-merge", "rebase-apply"))
    if cut and not here.ok("rebase", "--abort"):
        here.run("rebase", "--quit", check=False)
    if (own / "MERGE_HEAD").exists():
        here.run("merge", "--abort", check=False)
    here.run("checkout", "--detach", "--force", tip)  # our own tree: nothing of anyone's
    here.run("clean", "-fdq")  # what a killed check left: this tree is coord's alone
    return here, own


def _identity(git: Git) -> Git:
    env: dict[str, str] = {}
    # both keys in one git command (a landing is a few dozen of them; each one counts)
    found = git.out("config", "--get-regexp", r"^user\.(name|email)$", check=False)
    # the last of each wins, as `git config user.name` answers (a local "" over a global name)
    values: dict[str, str] = {}
    for line in found.splitlines():
        key, _, value = line.partition(" ")
        values[key] = value
    have = {key for key, value in values.items() if value}
    for part, fallback in _FALLBACK_IDENTITY.items():
        if f"user.{part}" not in have:
            env[f"GIT_AUTHOR_{part.upper()}"] = fallback
            env[f"GIT_COMMITTER_{part.upper()}"] = fallback
    return git.with_env(**env) if env else git


def _candidate(
    here: Git, strategy: str, old: str, head: str, branch: str, message: str
) -> tuple[str | None, list[str]]:
    """Build the tree that would land, in the landing worktree: main's tip ``old`` with the
    branch's change. (commit, []) or (None, conflicting files)."""
    if strategy == "rebase":
        built = here.run(*_NO_HOOKS, "rebase", "--no-autosquash", old, check=False)
    else:
        here.run("checkout", "--detach", "--force", old)
        flags = ["--squash"] if strategy == "squash" else ["--no-ff", "-m", message]
        built = here.run(*_NO_HOOKS, "merge", "--no-edit", *flags, head, check=False)
        if built.returncode == 0 and strategy == "squash":
            built = here.run(*_NO_HOOKS, "commit", "--allow-empty", "-qm", message, check=False)
    if built.returncode != 0:
        conflicted = here.out("diff", "--name-only", "--diff-filter=U").split()
        here.run("rebase" if strategy == "rebase" else "merge", "--abort", check=False)
        return None, conflicted
    return here.out("rev-parse", "HEAD"), []


def checked_out(repo: Path, main: str = MAIN_REF) -> Path | None:
    """The working tree where ``main`` is checked out (the user's own, typically), if any."""
    listing = gitlock.worktree_list(repo).decode("utf-8", "replace").strip()
    path: Path | None = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = Path(line[len("worktree ") :])
        elif line == f"branch {main}" and path is not None:
            return path
    return None


def _move_main(
    git: Git, main: str, candidate: str, old: str, checkout: Path | None, branch: str
) -> str:
    """Move main from ``old`` to ``candidate``: "moved", "lost" (main is no longer ``old``)
    or "blocked" (local changes in the checkout of main are in the way)."""
    if checkout is None:
        moved = git.ok("update-ref", "-m", f"coord: land {branch}", main, candidate, old)
        return "moved" if moved else "lost"
    # main is checked out: its tree moves with it, as `git merge --ff-only` moves it (never
    # leaving the checkout looking reverted), and only from the tip that was checked
    there = Git(checkout, git.env)
    if there.out("rev-parse", main) != old:
        return "lost"
    done = there.run(*_NO_HOOKS, "merge", "--ff-only", "-q", candidate, check=False)
    if done.returncode == 0:
        if there.out("rev-parse", main) == candidate:
            return "moved"
        return "lost"  # pragma: no cover - a fast-forward to a later descendant
    said = done.stderr.decode("utf-8", "replace")
    if any(words in said for words in _IN_THE_WAY):
        return "blocked"
    return "lost"


def _follow(git: Git, main: str, landed: str, checkout: Path | None, branch: str) -> None:
    """Bring the local main up to what landed on the remote, where that is a fast-forward
    (and the checkout of main, as `git merge --ff-only` would, when nothing is in its way);
    else it stays as it is, for its owner to pull."""
    local = git.out("rev-parse", "-q", "--verify", main, check=False)
    if not local or not git.ok("merge-base", "--is-ancestor", local, landed):
        return
    if checkout is not None and _in_the_way(checkout, local, landed):
        return
    _move_main(git, main, landed, local, checkout, branch)


def _blocked_by_checkout(
    checkout: Path, main: str, old: str, candidate: str, attempt: int
) -> Outcome | None:
    """The landing waits when local changes in the checkout of main touch files it changes."""
    blocking = _in_the_way(checkout, old, candidate)
    if not blocking:
        return None
    return Outcome(
        "waiting",
        reason=f"local changes in {checkout} (where {main} is checked out) are in the way: "
        "commit, stash or discard them there, then land again",
        files=blocking,
        main=old,
        attempts=attempt,
    )


def _in_the_way(checkout: Path, old: str, candidate: str) -> list[str]:
    """Files the landing would change that the checkout of main has local changes in."""
    here = Git(checkout)
    changing = set(here.out("diff", "--name-only", old, candidate).splitlines())
    listed = here.run("status", "--porcelain", "-z", "--untracked-files=all").stdout
    dirty: set[str] = set()
    entries = iter(listed.decode("utf-8", "surrogateescape").split("\0"))
    for entry in entries:
        if len(entry) > 3:
            dirty.add(entry[3:])
            if entry[0] in "RC":  # a rename's source follows as its own entry
                dirty.add(next(entries, ""))
    return sorted(changing & dirty)


def land(
    repo: Path,
    branch: str,
    submitted_head: str,
    checks: list[str],
    landing_path: Path,
    *,
    retries: int = 5,
    check_timeout: float = 1800.0,
    main: str = MAIN_REF,
    strategy: str = "rebase",
    message: str | None = None,
    vet: Vet | None = None,
    checkout: Path | None = None,
    tidy: Callable[[Path], str | None] | None = None,
    remote: str | None = None,
    stop: threading.Event | None = None,
) -> Outcome:
    """Land ``branch`` at ``submitted_head`` on ``main``. ``vet(candidate, old, changed
    files)`` may refuse a candidate (the files another item holds); ``tidy(tree)`` may edit
    the candidate's tree (the design document's box), returning the commit message for its
    edit; ``checkout``: the working tree where main is checked out, moved with it.
    ``remote``: main lives there; it is fetched before each attempt and moved by a push that
    is never forced (the remote refuses it when main moved: the compare-and-set), then the
    local main follows it where it can. ``stop`` set (the daemon is shutting down): a check
    running is ended and the landing gives up, main untouched ("stopped"); past its checks
    it finishes (moving main takes a moment, and the checks' time is not thrown away)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
    git = _identity(Git(repo))
    now = git.out("rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
    if now != submitted_head:
        return Outcome(
            "needs_rework",
            code="head_moved",
            reason=f"branch {branch} is at {now[:12] or 'nothing'}, not the head submitted "
            f"({submitted_head[:12]}): submit again",
        )
    tracking = f"refs/remotes/{remote}/{main.removeprefix('refs/heads/')}" if remote else main
    for attempt in range(1, retries + 1):
        if remote is not None:
            gitlock.fetch(repo, remote, f"+{main}:{tracking}", timeout=REMOTE_TIMEOUT)
        old = git.out("rev-parse", tracking)
        here, own_git_dir = _landing_worktree(git, landing_path, submitted_head)
        candidate, conflicted = _candidate(
            here, strategy, old, submitted_head, branch, message or f"coord: land {branch}"
        )
        if candidate is None:
            return Outcome(
                "needs_rework",
                code="conflict",
                reason="conflict with main",
                files=conflicted,
                main=old,
                attempts=attempt,
            )
        changed = here.out("diff", "--name-only", old, candidate).splitlines()
        if vet is not None:
            refused = vet(candidate, old, changed)
            if refused is not None:
                refused.main, refused.attempts = old, attempt
                return refused
        said = tidy(landing_path) if tidy is not None else None
        if said is not None:  # part of what lands, checked with it
            here.run("add", "-A")
            here.run(*_NO_HOOKS, "commit", "-qm", said)
            candidate = here.out("rev-parse", "HEAD")
        if checkout is not None and remote is None and checks:
            # asked again after the checks (the owner may edit meanwhile); asked first so that a
            # watching runner does not run the item's checks again on every pass while it waits
            blocked = _blocked_by_checkout(checkout, main, old, candidate, attempt)
            if blocked is not None:
                return blocked
        record = own_git_dir / CHECK_RECORD
        try:  # no checks: nothing to run (not even the git command that names the tree)
            runs = (
                checks_module.run(
                    checks,
                    cwd=landing_path,
                    timeout=check_timeout,
                    watch=_Recorded(record),
                    stop=stop,
                )
                if checks
                else []
            )
        except checks_module.Stopped as stopped:
            return Outcome("stopped", reason=str(stopped), main=old, attempts=attempt)
        finally:
            record.unlink(missing_ok=True)
        failed = [r for r in runs if r["exit_code"] != 0]
        if failed:
            return Outcome(
                "needs_rework",
                code="check_failed",
                reason="check failed: " + "; ".join(f"`{r['command']}`" for r in failed),
                output_tail=checks_module.failed_output(failed),
                main=old,
                attempts=attempt,
                runs=runs,
            )
        if remote is not None:
            pushed = git.run(
                *_NO_HOOKS,
                "push",
                "-q",
                remote,
                f"{candidate}:{main}",
                check=False,
                timeout=REMOTE_TIMEOUT,
            )
            if pushed.returncode == 0:
                git.run("update-ref", tracking, candidate)
                _follow(git, main, candidate, checkout, branch)
                return Outcome("merged", commit=candidate, main=old, attempts=attempt, runs=runs)
            continue  # the remote's main moved meanwhile: fetch it and start again
        if checkout is not None:
            blocked = _blocked_by_checkout(checkout, main, old, candidate, attempt)
            if blocked is not None:
                return blocked
        moved = _move_main(git, main, candidate, old, checkout, branch)
        if moved == "moved":
            return Outcome("merged", commit=candidate, main=old, attempts=attempt, runs=runs)
        if moved == "blocked":
            return Outcome(
                "waiting",
                reason=f"local changes in {checkout} are in the way of moving {main}",
                main=old,
                attempts=attempt,
            )
        # main moved while we checked: start again from its new tip
    return Outcome(
        "needs_rework",
        code="main_moved",
        reason=f"main kept moving: {retries} attempts lost; it stays queued and lands on the "
        "next pass (`coord land` again, or wait for a watching runner)",
        attempts=retries,
    )


def merged_outside(repo: Path, base: str, head: str, main: str = MAIN_REF) -> str | None:
    """How ``head`` (branched at ``base``) reached main: 'ancestry', 'patch-id', 'tree', or
    None when it did not. A fixed number of git commands however long main has grown since
    ``base``: every commit's patch-id from one ``git log -p`` (a merge diffed against its
    first parent), every tree from one listing."""
    git = Git(repo)
    if git.ok("merge-base", "--is-ancestor", head, main):
        return "ancestry"
    span = f"{base}..{main}"
    mine = _patch_id(git, git.run("diff", base, head).stdout)
    if mine:
        on_main = _patch_ids(git, span)
        # squashed: the whole change is one commit on main; rebased: each of its commits is
        if mine in on_main or (_patch_ids(git, f"{base}..{head}") or {mine}) <= on_main:
            return "patch-id"
    tree = git.out("rev-parse", f"{head}^{{tree}}")
    if tree in git.out("log", "--format=%T", span).split():
        return "tree"
    return None


def _patch_ids(git: Git, span: str) -> set[str]:
    """The patch-id of every commit in ``span`` (a merge's against its first parent)."""
    patches = git.run("log", "-p", "--diff-merges=first-parent", "--format=commit %H", span)
    if not patches.stdout:
        return set()
    found = git.run("patch-id", "--stable", input=patches.stdout).stdout.decode()
    return {line.split(" ")[0] for line in found.splitlines() if line}


def _patch_id(git: Git, diff: bytes) -> str:
    if not diff:
        return ""
    found = git.run("patch-id", "--stable", input=diff).stdout.decode()
    return found.split(" ")[0]
