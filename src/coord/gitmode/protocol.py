"""``coord git reserve|release|done|status|reap``: the protocol on the remote's branch.

**The lock is the remote's branch** (``origin/main`` unless set otherwise, see
``coord.gitmode.settings``). A reservation counts once its commit is on that branch; of two
conflicting ones, the one that landed first wins.

**How a change lands (compare-and-swap).** Every command that writes does, at most
``coord.retries`` times (default 30):

1. fetch the branch (``+refs/heads/main:refs/remotes/origin/main``) and read the document, and
   its progress file if any, *at that tip* (never the working tree's copy);
2. decide on that text: for ``reserve`` the package must be claimable
   (``coord.spec.lint.claimable``: box empty, dependencies ticked, no reservation of it or of
   overlapping files). If it is not, stop: exit 3, naming the holder or the reason;
3. make the edit and a commit whose only parent is that tip, with plumbing (``hash-object``,
   ``read-tree``/``update-index`` on a private index, ``write-tree``, ``commit-tree``) in a
   private object directory (``GIT_OBJECT_DIRECTORY`` in a temporary directory, the
   repository's objects as an alternate);
4. push that commit to ``refs/heads/main``, without force. The remote takes it only if the
   branch still is where we read it (a fast-forward under the remote's ref lock): a true
   compare-and-swap. Refused because the branch moved → back to 1, after a short random
   pause; the decision is made again on the new tip, so a reservation that landed first
   makes us lose there (exit 3) and anything else (an unrelated commit) is simply rebased.

On success the new objects are copied into the repository (the push already moved
``refs/remotes/origin/main`` to our commit). On failure the temporary directory is deleted:
**no commit, object, ref or reflog entry is left behind**.

**Local state is never touched.** Not the working tree, not the index (a private one is
used), not ``HEAD``, not any local branch: a dirty tree or a detached ``HEAD`` is fine, and the
answer says so. Only ``refs/remotes/<remote>/<branch>`` moves, as a ``git fetch`` would move
it. After winning, start your work from the reservation: ``git switch -c work/ID
origin/main`` (or ``git merge --ff-only origin/main`` on a clean ``main``). The local
``pre-push`` hook is skipped (the commit touches only the document); the remote's hooks apply.

**A push that fails without an answer** (the connection dropped) may have landed: the branch
is fetched again, and if our commit is on it the command succeeded. If the remote cannot be
reached at all the command says that it cannot tell (exit 1); ``coord git status`` tells later.

**The commits** (one per command, each touching only the document or its progress file):

* ``reserve ID``: ``docs(agent): reserve ID`` adds ``**Reserved: ID by @user.**`` directly
  above the entry (or, in the progress layout, at the end of the progress file);
* ``release ID``: ``docs(agent): unreserve ID`` removes your reservation of ID;
* ``done ID``: runs the package's ``Checks:`` first, in the working tree's top level (exit 3
  if one fails, nothing pushed), then ``docs(agent): done ID`` removes your reservation and
  ticks the box (in the progress layout: adds ``- [x] ID`` to the progress file);
* ``reap --older-than 7d``: ``docs(agent): reap A, B`` removes every package reservation whose
  line was last committed (committer time, by ``git blame`` at the tip) longer ago than that;
  the message names each with its holder and age. Track markers are reported, not removed;
* ``status``: the claimable set (the same as ``coord spec status`` on that text) and every
  reservation with the commit that wrote its line and its age.

Exit codes: 0 done (or nothing to do), 2 bad input (unknown package, no document on the
branch, no settings), 3 lost or not allowed (another reservation won, not claimable, a check
failed, reserved by someone else), 1 anything else (no remote, no network, push refused by the
remote for another reason).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coord.client import checks as checks_module
from coord.errors import (
    AlreadyClaimed,
    ChecksFailed,
    Conflict,
    CoordError,
    FilesReserved,
    InvalidInput,
    NotClaimable,
    NotReady,
)
from coord.fast.patterns import overlaps
from coord.gitmode import edit
from coord.gitmode.git import NETWORK_TIMEOUT, Git, git_error, stderr
from coord.gitmode.settings import Settings
from coord.spec.document import DocReservation, Package, SpecDocument
from coord.spec.lint import claimable
from coord.spec.parse import parse
from coord.spec.progress import Progress, merge, parse_progress, progress_name

# why a push may be refused when the branch moved under us (or another push held its lock)
_RACE = (
    "fetch first",
    "non-fast-forward",
    "stale info",
    "failed to update ref",
    "failed to lock",
    "cannot lock",
    "incorrect old value",
    "but expected",
)
_DAY = 86400.0


@dataclass(slots=True)
class Placed:
    """A reservation and where its line is: the document or the progress file."""

    user: str
    path: str
    line: int  # in that file
    package: str | None
    track: str | None = None


@dataclass(slots=True)
class State:
    """The document (and progress file) at one tip of the remote branch."""

    tip: str
    doc_path: str
    doc_text: str
    progress_path: str
    progress_text: str | None
    merged: SpecDocument  # the document with its progress merged in (what readers see)
    placed: list[Placed]

    def package(self, package_id: str) -> Package | None:
        return self.merged.package(package_id)

    def reservations_of(self, package_id: str) -> list[Placed]:
        return [p for p in self.placed if p.package == package_id]


@dataclass(slots=True)
class Change:
    files: dict[str, str]  # repository path -> new text
    subject: str
    body: str = ""
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Landed:
    state: State  # the tip the decision was made on
    change: Change | None  # None: nothing to do
    commit: str | None
    attempts: int


class Session:
    """One command's conversation with the remote."""

    def __init__(self, git: Git, settings: Settings) -> None:
        self.git = git
        self.settings = settings

    @property
    def where(self) -> str:
        return self.settings.where

    # -- reading

    def fetch(self) -> str:
        s = self.settings
        refspec = f"+refs/heads/{s.branch}:{s.tracking_ref}"
        for attempt in range(8):
            done = self.git.run(
                *("-c", "gc.auto=0", "-c", "maintenance.auto=false"),
                *("fetch", "--quiet", "--no-tags", "--no-recurse-submodules"),
                *(s.remote, refspec),
                check=False,
                timeout=NETWORK_TIMEOUT,
            )
            if done.returncode == 0:
                break
            message = stderr(done)
            if "couldn't find remote ref" in message.lower():
                raise git_error(
                    f"the remote {s.remote} has no branch {s.branch}: push the branch that "
                    "holds the design document, or name it with `git config coord.branch NAME`",
                    remote=s.remote,
                    branch=s.branch,
                )
            if "lock" in message and attempt < 7:  # another fetch in this repository
                time.sleep(random.uniform(0.05, 0.3))
                continue
            raise git_error(
                f"cannot fetch {s.branch} from {s.remote}: {message}. Check the network and "
                f"the remote (`git remote -v`), then run the command again; nothing changed",
                remote=s.remote,
            )
        return self.git.out("rev-parse", "--verify", "--quiet", f"{s.tracking_ref}^{{commit}}")

    def tracked_tip(self) -> str:
        """The remote branch as last fetched (``--no-fetch``)."""
        found = self.git.out(
            "rev-parse",
            "--verify",
            "--quiet",
            f"{self.settings.tracking_ref}^{{commit}}",
            check=False,
        )
        if not found:
            raise git_error(
                f"{self.where} was never fetched here: run without --no-fetch",
                remote=self.settings.remote,
            )
        return found

    def read(self, tip: str) -> State:
        doc = self.settings.doc
        progress_path = progress_name(doc)
        blobs = self._blobs(tip, [doc, progress_path])
        if doc not in blobs:
            raise InvalidInput(
                f"{doc} is not on {self.where} (commit {tip[:12]}): commit the design document "
                "and push it there, or pass --doc PATH (or `git config coord.doc PATH`) with "
                "its path from the repository root",
                doc=doc,
                tip=tip,
            )
        doc_text = blobs[doc]
        progress_text = blobs.get(progress_path)
        merged = parse(doc_text, doc)
        placed = [Placed(r.user, doc, r.line, r.package, r.track) for r in merged.reservations]
        if progress_text is not None:
            progress: Progress = parse_progress(progress_text, progress_path)
            placed += [
                Placed(r.user, progress_path, r.line, r.package) for r in progress.reservations
            ]
            merge(merged, progress)
        return State(tip, doc, doc_text, progress_path, progress_text, merged, placed)

    def _blobs(self, tip: str, paths: list[str]) -> dict[str, str]:
        listing = self.git.run("ls-tree", "-z", tip, "--", *paths).stdout.decode("utf-8")
        found: dict[str, str] = {}
        for entry in filter(None, listing.split("\0")):
            meta, _, path = entry.partition("\t")
            _, kind, sha = meta.split()
            if kind != "blob" or path not in paths:
                continue
            data = self.git.run("cat-file", "blob", sha).stdout
            try:
                found[path] = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidInput(
                    f"{path} on {self.where} is not UTF-8 text (invalid byte at offset "
                    f"{error.start}): save it as UTF-8",
                    doc=path,
                ) from None
        return found

    def ages(self, state: State, now: float) -> dict[tuple[str, int], tuple[str, float]]:
        """(path, line) of each reservation → (commit that last wrote it, its age in s)."""
        found: dict[tuple[str, int], tuple[str, float]] = {}
        for path in sorted({p.path for p in state.placed}):
            lines = sorted({p.line for p in state.placed if p.path == path})
            ranges = [arg for line in lines for arg in ("-L", f"{line},{line}")]
            done = self.git.run("blame", "--porcelain", *ranges, state.tip, "--", path, check=False)
            if done.returncode != 0:
                continue
            for line, (commit, when) in _blame(done.stdout.decode("utf-8", "replace")).items():
                found[(path, line)] = (commit, max(0.0, now - when))
        return found

    # -- writing

    def land(self, decide: Callable[[State], Change | None]) -> Landed:
        """Fetch, decide on the tip, commit on it, push; again while the push loses a race."""
        _require_identity(self.git)
        with _Quarantine(self.git) as quarantine:
            attempts = 0
            while True:
                attempts += 1
                tip = self.fetch()
                state = self.read(tip)
                try:
                    change = decide(state)
                except CoordError as error:
                    error.details.setdefault("tip", tip)
                    error.details.setdefault("attempts", attempts)
                    raise
                if change is None:
                    return Landed(state, None, None, attempts)
                commit = quarantine.commit(tip, change)
                outcome, reason = quarantine.push(self.settings, commit)
                if outcome == "landed":
                    quarantine.keep()
                    return Landed(state, change, commit, attempts)
                if outcome == "unknown":
                    try:
                        now_tip = self.fetch()
                    except CoordError:  # git_error: the remote is out of reach
                        raise git_error(
                            f"the push to {self.settings.remote} failed ({reason}) and the "
                            f"remote cannot be reached to tell whether {change.subject!r} "
                            f"landed. Nothing changed here; when the network is back, "
                            f"`coord git status` shows whether it did",
                            commit=commit,
                            tip=tip,
                        ) from None
                    if quarantine.is_ancestor(commit, now_tip):
                        quarantine.keep()
                        return Landed(state, change, commit, attempts)
                    raise git_error(
                        f"the push to {self.settings.remote} failed: {reason}. {self.where} "
                        "does not have it (checked just now); nothing changed here. Check "
                        "the remote and your access, then run the command again",
                        tip=tip,
                    )
                if not any(word in reason for word in _RACE):
                    raise git_error(
                        f"{self.settings.remote} refused the push to {self.settings.branch}: "
                        f"{reason}. Nothing changed. (Is the branch protected, or does a "
                        "hook refuse it?)",
                        tip=tip,
                    )
                if attempts >= self.settings.retries:
                    raise git_error(
                        f"{self.where} kept moving: {attempts} pushes were refused, the last "
                        f"because {reason}. Nothing changed; run the command again (or raise "
                        "`git config coord.retries`)",
                        attempts=attempts,
                    )
                time.sleep(random.uniform(0, min(0.5, 0.02 * 2 ** min(attempts, 5))))


# --- the commands ------------------------------------------------------------------------------


def reserve(session: Session, package_id: str, user: str) -> dict[str, Any]:
    def decide(state: State) -> Change | None:
        package = _package(session, state, package_id)
        if any(p.user == user for p in state.reservations_of(package_id)):
            return None  # ours already landed (perhaps by a push that lost its answer)
        if package_id not in claimable(state.merged):
            raise not_claimable(state, package, session.where)
        line = edit.reservation_line(package_id, user)
        if _progress_layout(session, state):
            text = edit.progress_append(state.progress_text, _base(state.doc_path), line)
            files = {state.progress_path: text}
        else:
            files = {state.doc_path: edit.reserve(state.doc_text, package.line, package_id, user)}
        return Change(files, f"docs(agent): reserve {package_id}")

    landed = session.land(decide)
    return _result(session, landed, "reserve", package_id, user)


def release(session: Session, package_id: str, user: str) -> dict[str, Any]:
    def decide(state: State) -> Change | None:
        placed = state.reservations_of(package_id)
        if not placed:
            _package(session, state, package_id)  # unknown id: exit 2
            return None
        mine = [p for p in placed if p.user == user]
        if not mine:
            holders = sorted({p.user for p in placed})
            raise AlreadyClaimed(
                f"{package_id} is reserved by {_names(holders)}, not by you (@{user}): nothing "
                "to release. Ask them, or remove a stale one with `coord git reap`",
                package=package_id,
                holder=holders[0],
                holders=holders,
            )
        return Change(_removed(state, mine, user), f"docs(agent): unreserve {package_id}")

    landed = session.land(decide)
    return _result(session, landed, "release", package_id, user)


def done(
    session: Session,
    package_id: str,
    user: str,
    *,
    skip_reason: str | None = None,
    check_timeout: float = 1800.0,
) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {}

    def decide(state: State) -> Change | None:
        package = _package(session, state, package_id)
        if package.done:
            raise NotClaimable(
                f"{package_id} is already ticked on {session.where}: nothing to do",
                package=package_id,
                reason="done",
            )
        placed = state.reservations_of(package_id)
        others = sorted({p.user for p in placed if p.user != user})
        others += sorted(
            {
                r.user
                for r in state.merged.reservations
                if r.package is None and r.track and r.track == package.track and r.user != user
            }
            - set(others)
        )
        if others:
            raise AlreadyClaimed(
                f"{package_id} is reserved by {_names(others)}, not by you (@{user}): only the "
                "holder marks it done",
                package=package_id,
                holder=others[0],
                holders=others,
            )
        body = ""
        if skip_reason is None:
            missing = [c for c in package.checks if c not in runs]
            for run in checks_module.run(missing, session.settings.root, check_timeout):
                runs[run["command"]] = run
            failed = [runs[c] for c in package.checks if runs[c]["exit_code"] != 0]
            if failed:
                listed = "; ".join(f"`{r['command']}` exited {r['exit_code']}" for r in failed)
                raise ChecksFailed(
                    f"{package_id} is not done: {listed}. Nothing was pushed; fix it and run "
                    f"`coord git done {package_id}` again",
                    package=package_id,
                    runs=[runs[c] for c in package.checks],
                )
            if package.checks:
                body = "Checks passed:\n" + "\n".join(
                    f"- `{c}` (exit 0, {runs[c]['duration_s']:.1f} s)" for c in package.checks
                )
        else:
            body = f"Checks skipped by @{user}: {skip_reason}"
        mine = [p for p in placed if p.user == user]
        if _progress_layout(session, state):
            files = _removed(state, mine, user)
            current = files.get(state.progress_path, state.progress_text)
            files[state.progress_path] = edit.progress_append(
                current, _base(state.doc_path), edit.progress_tick_line(package_id)
            )
        else:
            ticked = edit.tick(state.doc_text, package.line, package_id)
            files = _removed(state, mine, user, doc_text=ticked)
            files[state.doc_path] = files.get(state.doc_path, ticked)
        facts = {
            "was_reserved": bool(mine),
            "checks": [runs[c] for c in package.checks if c in runs],
        }
        return Change(files, f"docs(agent): done {package_id}", body, facts)

    landed = session.land(decide)
    result = _result(session, landed, "done", package_id, user)
    if skip_reason is not None:
        result["checks_skipped"] = skip_reason
    ahead = session.git.out("rev-list", "--count", f"{landed.state.tip}..HEAD", check=False)
    if ahead.isdigit() and int(ahead) > 0:
        result["notes"].append(
            f"your HEAD has {ahead} commit(s) that are not on {session.where}: the box is "
            "ticked there without them; push your work"
        )
    return result


def status(session: Session, *, fetch: bool = True) -> dict[str, Any]:
    from coord.spec.status import status as spec_status

    tip = session.fetch() if fetch else session.tracked_tip()
    state = session.read(tip)
    document = spec_status(state.merged, None, state.doc_path)
    now = time.time()
    ages = session.ages(state, now)
    reservations = []
    for placed in state.placed:
        commit, age = ages.get((placed.path, placed.line), (None, None))
        reservations.append(
            {
                "package": placed.package,
                "track": placed.track,
                "user": placed.user,
                "file": placed.path,
                "line": placed.line,
                "commit": commit,
                "age_seconds": None if age is None else round(age),
                "age": None if age is None else human_age(age),
            }
        )
    document.update(
        {
            "remote": session.settings.remote,
            "branch": session.settings.branch,
            "tip": tip,
            "progress_file": state.progress_path if state.progress_text is not None else None,
            "reservations": reservations,
        }
    )
    return document


def reap(session: Session, older_than: float, *, dry_run: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def decide(state: State) -> Change | None:
        now = time.time()
        ages = session.ages(state, now)
        stale: list[tuple[Placed, str, float]] = []
        markers = []
        for placed in state.placed:
            commit, age = ages.get((placed.path, placed.line), ("", -1.0))
            if age <= older_than:
                continue
            if placed.package is None:
                markers.append(
                    {
                        "track": placed.track,
                        "user": placed.user,
                        "line": placed.line,
                        "age": human_age(age),
                    }
                )
            else:
                stale.append((placed, commit, age))
        found["reaped"] = [
            {
                "package": p.package,
                "user": p.user,
                "file": p.path,
                "line": p.line,
                "commit": commit,
                "age_seconds": round(age),
                "age": human_age(age),
            }
            for p, commit, age in stale
        ]
        found["track_markers"] = markers
        if not stale or dry_run:
            return None
        ids = ", ".join(dict.fromkeys(str(p.package) for p, _, _ in stale))
        body = "Stale reservations (older than {}):\n{}".format(
            human_age(older_than),
            "\n".join(
                f"- {p.package} by @{p.user}, reserved {human_age(age)} ago in {commit[:12]}"
                for p, commit, age in stale
            ),
        )
        return Change(
            _removed(state, [p for p, _, _ in stale], None), f"docs(agent): reap {ids}", body
        )

    landed = session.land(decide) if not dry_run else _dry(session, decide)
    result = _result(session, landed, "reap", None, None)
    result.update(found)
    result["dry_run"] = dry_run
    return result


def _dry(session: Session, decide: Callable[[State], Change | None]) -> Landed:
    state = session.read(session.fetch())
    decide(state)
    return Landed(state, None, None, 1)


# --- deciding ------------------------------------------------------------------------------


def not_claimable(state: State, package: Package, where: str) -> Conflict:
    """Why ``package`` cannot be reserved at this tip, as the error to report."""
    doc = state.merged
    package_id = package.id
    first: dict[str, Package] = {}
    for p in doc.packages:
        first.setdefault(p.id, p)
    if package.done:
        return NotClaimable(
            f"{package_id} is already done (ticked) on {where}: choose another package "
            "(`coord git status` lists the claimable ones)",
            package=package_id,
            reason="done",
        )
    holders = [r.user for r in doc.reservations if r.package == package_id]
    holders += [
        r.user
        for r in doc.reservations
        if r.package is None and r.track is not None and r.track == package.track
    ]
    if holders:
        return AlreadyClaimed(
            f"{package_id} is reserved by {_names(holders)} on {where}: their reservation "
            "landed first. Choose another package (`coord git status` lists the claimable ones)",
            package=package_id,
            holder=holders[0],
            holders=list(dict.fromkeys(holders)),
            reason="reserved",
        )
    conflicts = _file_conflicts(doc, package, first)
    if conflicts:
        described = "; ".join(
            f"{c['held']} reserved by @{c['holder']} (`{c['theirs']}`"
            + (f" and `{c['mine']}`)" if c["mine"] != c["theirs"] else ")")
            for c in conflicts
        )
        holders = list(dict.fromkeys(c["holder"] for c in conflicts))
        return FilesReserved(
            f"the files of {package_id} overlap those of {described} on {where}: that "
            "reservation landed first. Choose another package",
            package=package_id,
            holder=holders[0],
            holders=holders,
            conflicts=conflicts,
            reason="files_reserved",
        )
    waiting = [d for d in package.dependencies if d not in first or not first[d].done]
    if waiting:
        return NotReady(
            f"{package_id} waits on {', '.join(waiting)} (not ticked on {where}): choose "
            "another package",
            package=package_id,
            waiting_on=waiting,
            reason="dependencies",
        )
    return Conflict(f"{package_id} is not claimable on {where}", package=package_id)


def _file_conflicts(
    doc: SpecDocument, package: Package, first: dict[str, Package]
) -> list[dict[str, str]]:
    tracks = {t.id: t for t in doc.tracks}
    found = []
    for reservation in doc.reservations:
        held, files = _held(reservation, first, tracks)
        if held is None:
            continue
        for mine in package.files:
            theirs = next((f for f in files if overlaps(_canon(mine), _canon(f))), None)
            if theirs is not None:
                found.append(
                    {"held": held, "holder": reservation.user, "theirs": theirs, "mine": mine}
                )
                break
    return found


def _held(
    reservation: DocReservation, first: dict[str, Package], tracks: dict[str, Any]
) -> tuple[str | None, list[str]]:
    if reservation.package is not None:
        held = first.get(reservation.package)
        if held is None or held.done:
            return None, []
        return held.id, held.files
    if reservation.track is None:
        return None, []
    own = [
        f for p in first.values() if p.track == reservation.track and not p.done for f in p.files
    ]
    track = tracks.get(reservation.track)
    return f"track {reservation.track}", [*(track.files if track else []), *own]


def _canon(pattern: str) -> str:
    pattern = pattern.rstrip("/")
    while pattern.endswith("/**"):
        pattern = pattern[:-3]
    return pattern or "**"


def _package(session: Session, state: State, package_id: str) -> Package:
    package = state.package(package_id)
    if package is None:
        known = [p.id for p in state.merged.packages]
        sample = ", ".join(known[:12]) + (" …" if len(known) > 12 else "")
        raise InvalidInput(
            f"no package {package_id} in {state.doc_path} on {session.where}"
            + (f" (its packages: {sample})" if known else " (it has no packages)")
            + ": check the id (ids are case-sensitive)",
            package=package_id,
        )
    return package


def _progress_layout(session: Session, state: State) -> bool:
    if session.settings.progress is not None:
        return session.settings.progress
    return state.progress_text is not None


def _removed(
    state: State, placed: list[Placed], user: str | None, *, doc_text: str | None = None
) -> dict[str, str]:
    """The files with these reservations removed (``user`` None: whoever holds them)."""
    files: dict[str, str] = {}
    texts = {state.doc_path: doc_text if doc_text is not None else state.doc_text}
    if state.progress_text is not None:
        texts[state.progress_path] = state.progress_text
    for path, text in texts.items():
        targets = [(p.line, str(p.package), user) for p in placed if p.path == path]
        if targets:
            files[path] = edit.unreserve(text, targets)
    return files


def _names(users: list[str]) -> str:
    return ", ".join(f"@{u}" for u in dict.fromkeys(users))


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _result(
    session: Session, landed: Landed, action: str, package_id: str | None, user: str | None
) -> dict[str, Any]:
    s = session.settings
    change = landed.change
    result: dict[str, Any] = {
        "ok": True,
        "action": action,
        "package": package_id,
        "user": user,
        "doc": s.doc,
        "remote": s.remote,
        "branch": s.branch,
        "changed": landed.commit is not None,
        "commit": landed.commit,
        "parent": landed.state.tip,
        "message": change.subject if change else None,
        "files": sorted(change.files) if change else [],
        "attempts": landed.attempts,
        "notes": _local_notes(session.git),
    }
    if change is not None:
        result.update(change.facts)
    return result


def _local_notes(git: Git) -> list[str]:
    notes = []
    if not git.ok("symbolic-ref", "-q", "HEAD"):
        notes.append("HEAD is detached; it was left as it is")
    if git.out("status", "--porcelain", "--untracked-files=no", check=False):
        notes.append("your working tree has uncommitted changes; they were left as they are")
    return notes


def human_age(seconds: float) -> str:
    if seconds >= _DAY:
        return f"{seconds / _DAY:.1f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds / 60:.0f}m"
    return f"{seconds:.0f}s"


def _blame(output: str) -> dict[int, tuple[str, float]]:
    """``git blame --porcelain``: final line → (commit, committer time)."""
    line_commit: dict[int, str] = {}
    times: dict[str, float] = {}
    commit = ""
    for row in output.splitlines():
        if row.startswith("\t"):
            continue
        fields = row.split(" ")
        if len(fields) >= 3 and len(fields[0]) in (40, 64) and fields[2].isdigit():
            commit = fields[0]
            line_commit[int(fields[2])] = commit
        elif fields[0] == "committer-time" and len(fields) == 2:
            times[commit] = float(fields[1])
    return {line: (c, times[c]) for line, c in line_commit.items() if c in times}


def _require_identity(git: Git) -> None:
    found = git.run("var", "GIT_COMMITTER_IDENT", check=False)
    if found.returncode != 0:
        raise git_error(
            "git does not know who you are, so it cannot make the commit: set "
            '`git config user.name "Your Name"` and `git config user.email you@example.com`'
            f" ({stderr(found)})"
        )


class _Quarantine:
    """Private object directories and index: a commit made here leaves no trace in the
    repository unless ``keep()`` copies its objects in (after it landed). Each attempt gets a
    fresh object directory, so only the objects of the commit that landed are kept."""

    def __init__(self, git: Git) -> None:
        objects = git.out("rev-parse", "--git-path", "objects")
        self.real = (git.cwd / objects).resolve()
        self.base = git
        self.git = git
        self.tmp = Path()
        self.objects = Path()
        self.attempts = 0

    def __enter__(self) -> _Quarantine:
        self.tmp = Path(tempfile.mkdtemp(prefix="coord-git-"))
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _fresh(self) -> None:
        self.attempts += 1
        self.objects = self.tmp / f"objects-{self.attempts}"
        self.objects.mkdir()
        alternates = [str(self.real)]
        if os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES"):
            alternates.append(os.environ["GIT_ALTERNATE_OBJECT_DIRECTORIES"])
        self.git = self.base.with_env(
            GIT_OBJECT_DIRECTORY=str(self.objects),
            GIT_ALTERNATE_OBJECT_DIRECTORIES=os.pathsep.join(alternates),
            GIT_INDEX_FILE=str(self.tmp / f"index-{self.attempts}"),
        )

    def commit(self, tip: str, change: Change) -> str:
        self._fresh()
        self.git.run("read-tree", tip)
        for path, text in change.files.items():
            blob = (
                self.git.run(
                    "hash-object", "-w", "--no-filters", "--stdin", input=text.encode("utf-8")
                )
                .stdout.decode()
                .strip()
            )
            listed = self.git.out("ls-files", "-s", "--", path)
            mode = listed.split(" ", 1)[0] if listed else "100644"
            self.git.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
        tree = self.git.out("write-tree")
        message = ["-m", change.subject] + (["-m", change.body] if change.body else [])
        return self.git.out("commit-tree", tree, "-p", tip, *message)

    def push(self, settings: Settings, commit: str) -> tuple[str, str]:
        """("landed" | "refused" | "unknown", the reason as git gives it)."""
        target = f"refs/heads/{settings.branch}"
        try:
            done = self.git.run(
                "push",
                "--porcelain",
                "--no-verify",
                settings.remote,
                f"{commit}:{target}",
                check=False,
                timeout=NETWORK_TIMEOUT,
            )
        except CoordError as error:  # a timeout
            return "unknown", error.message
        for row in done.stdout.decode("utf-8", "replace").splitlines():
            parts = row.split("\t")
            if len(parts) >= 3 and parts[1].endswith(":" + target):
                if parts[0] == "!":
                    return "refused", parts[2]
                if done.returncode == 0:
                    return "landed", parts[2]
        return "unknown", stderr(done) or f"git push exited {done.returncode}"

    def is_ancestor(self, commit: str, tip: str) -> bool:
        return self.git.ok("merge-base", "--is-ancestor", commit, tip)

    def keep(self) -> None:
        """Copy the last attempt's objects into the repository (they are on the remote now)."""
        source = self.objects
        for directory in source.iterdir():
            if len(directory.name) != 2 or not directory.is_dir():
                continue
            for item in directory.iterdir():
                target = self.real / directory.name / item.name
                if target.exists():
                    continue
                target.parent.mkdir(exist_ok=True)
                partial = target.with_name(f".{item.name}.coord-{os.getpid()}")
                shutil.copyfile(item, partial)
                os.chmod(partial, 0o444)
                os.replace(partial, target)
