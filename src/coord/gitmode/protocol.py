"""``coord git reserve|release|done|status|reap``: the protocol on the remote's branch.

**The lock is the remote's branch** (``origin/main`` unless set otherwise, see
``coord.gitmode.settings``). A reservation counts once its commit is on that branch; of two
conflicting ones, the one that landed first wins.

**How a change lands (compare-and-swap, ``coord.gitmode.remote``).** Every command that
writes fetches the branch, reads the document (and its progress file) *at that tip*, decides
on that text (for ``reserve``: the package must be claimable by ``coord.spec.protocol``; if it
is not, exit 3 naming the holder or the reason), commits the edit on that tip in quarantine
(``coord.gitmode.quarantine``: private objects and index) and pushes it without force. The
remote takes it only if the branch is still where we read it; refused because it moved, all
of it again on the new tip (at most ``coord.retries`` times, default 30), so a reservation
that landed first makes us lose (exit 3) and an unrelated commit is simply built upon. A
command that does not land leaves **no commit, object, ref or reflog entry behind**.

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
  line landed longer ago than that (``git blame`` at the tip, committer time: the one clock of
  ``coord.spec.age``, which ``coord spec lint`` uses too); the message names each with its
  holder and age. Track markers are reported, not removed;
* ``status``: the claimable set (the same as ``coord spec status`` on that text) and every
  reservation with the commit that wrote its line and its age.

Exit codes: 0 done (or nothing to do), 2 bad input (unknown package, no document on the
branch, no settings), 3 lost or not allowed (another reservation won, not claimable, a check
failed, reserved by someone else), 1 anything else (no remote, no network, push refused by the
remote for another reason).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from coord.client import checks as checks_module
from coord.errors import (
    AlreadyClaimed,
    ChecksFailed,
    Conflict,
    FilesReserved,
    InvalidInput,
    NotClaimable,
    NotReady,
)
from coord.fast.git import Git
from coord.gitmode.quarantine import Change
from coord.gitmode.remote import Landed, Placed, Session, State
from coord.spec import edit
from coord.spec.document import Package
from coord.spec.protocol import Rules, Verdict
from coord.times import duration_text

_DAY = 86400.0


# --- the commands ------------------------------------------------------------------------------


def reserve(session: Session, package_id: str, user: str) -> dict[str, Any]:
    def decide(state: State) -> Change | None:
        package = _package(session, state, package_id)
        if any(p.user == user for p in state.reservations_of(package_id)):
            return None  # ours already landed (perhaps by a push that lost its answer)
        found = Rules(state.merged).verdict(package)
        if not found.claimable:
            raise not_claimable(found, session.where)
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
    watch: checks_module.Watch | None = None,
) -> dict[str, Any]:
    """Run the package's checks here (``watch`` hears them as they go, as ``coord done``'s
    do), then tick it on the remote's branch if they passed."""
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
        holders = Rules(state.merged).verdict(package).reserved_by
        others = [holder for holder in holders if holder != user]
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
            found = checks_module.run(missing, session.settings.root, check_timeout, watch=watch)
            for run in found:
                runs[run["command"]] = run
            failed = [runs[c] for c in package.checks if runs[c]["exit_code"] != 0]
            if failed:
                listed = "; ".join(f"`{r['command']}` exited {r['exit_code']}" for r in failed)
                raise ChecksFailed(
                    f"{package_id} is not done: {listed}. Nothing was pushed; fix it and run "
                    f"`coord git done {package_id}` again\n" + checks_module.failed_output(failed),
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
            ticked = edit.tick(state.doc_text, [(package.line, package_id)])
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
    landed = session.landings(state)
    reservations = []
    for placed in state.placed:
        landing = landed.get((placed.path, placed.line))
        age = None if landing is None else landing.age(now)
        reservations.append(
            {
                "package": placed.package,
                "track": placed.track,
                "user": placed.user,
                "file": placed.path,
                "line": placed.line,
                "commit": None if landing is None else landing.commit,
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
        landed = session.landings(state)
        stale: list[tuple[Placed, str, float]] = []
        markers = []
        for placed in state.placed:
            landing = landed.get((placed.path, placed.line))
            if landing is None or landing.age(now) <= older_than:
                continue
            age = landing.age(now)
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
                stale.append((placed, landing.commit, age))
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


def not_claimable(found: Verdict, where: str) -> Conflict:
    """Why a package cannot be reserved at this tip, as the error to report: the first of
    the protocol's reasons (``coord.spec.protocol.Verdict``) a person acts on."""
    package_id = found.package.id
    if found.package.done:
        return NotClaimable(
            f"{package_id} is already done (ticked) on {where}: choose another package "
            "(`coord git status` lists the claimable ones)",
            package=package_id,
            reason="done",
        )
    holders = found.reserved_by
    if holders:
        return AlreadyClaimed(
            f"{package_id} is reserved by {_names(holders)} on {where}: their reservation "
            "landed first. Choose another package (`coord git status` lists the claimable ones)",
            package=package_id,
            holder=holders[0],
            holders=holders,
            reason="reserved",
        )
    if found.clashes:
        described = "; ".join(
            f"{c.held} reserved by @{c.holder} (`{c.theirs}`"
            + (f" and `{c.mine}`)" if c.mine != c.theirs else ")")
            for c in found.clashes
        )
        holders = list(dict.fromkeys(c.holder for c in found.clashes))
        return FilesReserved(
            f"the files of {package_id} overlap those of {described} on {where}: that "
            "reservation landed first. Choose another package",
            package=package_id,
            holder=holders[0],
            holders=holders,
            conflicts=[c.to_dict() for c in found.clashes],
            reason="files_reserved",
        )
    if found.waiting_on:
        return NotReady(
            f"{package_id} waits on {', '.join(found.waiting_on)} (not ticked on {where}): "
            "choose another package",
            package=package_id,
            waiting_on=found.waiting_on,
            reason="dependencies",
        )
    return Conflict(f"{package_id} is not claimable on {where}", package=package_id)


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


human_age = duration_text  # one spelling of a length of time (coord.times)
