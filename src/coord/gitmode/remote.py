"""The remote's branch as the lock: read the document at its tip, land a change by
compare-and-swap. The transport of ``coord git``; the commands are ``coord.gitmode.protocol``.

``Session.land`` does, at most ``coord.retries`` times: fetch the branch and read the document
(and its progress file) *at that tip*; let the command decide on that text; commit the change
on that tip in quarantine (``coord.gitmode.quarantine``); push it without force. The remote
takes it only if the branch is still where we read it: refused because it moved, the loop
starts again on the new tip, after a short random pause. A push that got no answer is settled
by fetching again: if our commit is on the branch, it landed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from coord.errors import CoordError, GitError, InvalidInput
from coord.fast.git import Git, stderr
from coord.gitmode.quarantine import NETWORK_TIMEOUT, Change, Quarantine
from coord.gitmode.settings import Settings
from coord.spec import age, progress
from coord.spec.document import DocReservation, Package, SpecDocument

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


@dataclass(slots=True)
class Placed:
    """A reservation and where its line is written: the document or the progress file."""

    reservation: DocReservation
    path: str
    line: int  # in that file

    @property
    def user(self) -> str:
        return self.reservation.user

    @property
    def package(self) -> str | None:
        return self.reservation.package

    @property
    def track(self) -> str | None:
        return self.reservation.track


@dataclass(slots=True)
class State:
    """The document (and progress file) at one tip of the remote branch."""

    tip: str
    doc_path: str
    doc_text: str
    progress_path: str
    progress_text: str | None
    merged: SpecDocument  # the document with its progress merged in (what readers see)

    @property
    def placed(self) -> list[Placed]:
        return [Placed(r, *age.written_at(r, self.merged)) for r in self.merged.reservations]

    def package(self, package_id: str) -> Package | None:
        return self.merged.package(package_id)

    def reservations_of(self, package_id: str) -> list[Placed]:
        return [p for p in self.placed if p.package == package_id]


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
                raise GitError(
                    f"the remote {s.remote} has no branch {s.branch}: push the branch that "
                    "holds the design document, or name it with `git config coord.branch NAME`",
                    remote=s.remote,
                    branch=s.branch,
                )
            if "lock" in message and attempt < 7:  # another fetch in this repository
                time.sleep(random.uniform(0.05, 0.3))
                continue
            raise GitError(
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
            raise GitError(
                f"{self.where} was never fetched here: run without --no-fetch",
                remote=self.settings.remote,
            )
        return found

    def read(self, tip: str) -> State:
        doc = self.settings.doc
        progress_path = progress.progress_name(doc)
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
        merged = progress.read(doc_text, doc, progress_text, progress_path)
        return State(tip, doc, doc_text, progress_path, progress_text, merged)

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

    def landings(self, state: State) -> dict[tuple[str, int], age.Landing]:
        """(path, line) of each reservation at the tip → the commit that last wrote it and
        when (``coord.spec.age``: the clock ``coord spec lint`` uses too)."""
        return age.landings(self.git, state.merged, rev=state.tip)

    # -- writing

    def land(self, decide: Callable[[State], Change | None]) -> Landed:
        """Fetch, decide on the tip, commit on it, push; again while the push loses a race."""
        _require_identity(self.git)
        with Quarantine(self.git) as quarantine:
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
                    except GitError:  # the remote is out of reach
                        raise GitError(
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
                    raise GitError(
                        f"the push to {self.settings.remote} failed: {reason}. {self.where} "
                        "does not have it (checked just now); nothing changed here. Check "
                        "the remote and your access, then run the command again",
                        tip=tip,
                    )
                if not any(word in reason for word in _RACE):
                    raise GitError(
                        f"{self.settings.remote} refused the push to {self.settings.branch}: "
                        f"{reason}. Nothing changed. (Is the branch protected, or does a "
                        "hook refuse it?)",
                        tip=tip,
                    )
                if attempts >= self.settings.retries:
                    raise GitError(
                        f"{self.where} kept moving: {attempts} pushes were refused, the last "
                        f"because {reason}. Nothing changed; run the command again (or raise "
                        "`git config coord.retries`)",
                        attempts=attempts,
                    )
                time.sleep(random.uniform(0, min(0.5, 0.02 * 2 ** min(attempts, 5))))


def _require_identity(git: Git) -> None:
    found = git.run("var", "GIT_COMMITTER_IDENT", check=False)
    if found.returncode != 0:
        raise GitError(
            "git does not know who you are, so it cannot make the commit: set "
            '`git config user.name "Your Name"` and `git config user.email you@example.com`'
            f" ({stderr(found)})"
        )
