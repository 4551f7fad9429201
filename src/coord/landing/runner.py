"""The landing queue's runner: lands queued worktree items on main, one at a time, in order.

One runner per board holds the board's landing lease (``POST /v1/landing/acquire``, fenced
like a claim: a runner that lost it cannot record a landing). For each queued item, in
submit order, ``coord.landing.steps.land`` builds the candidate in the runner's own landing
worktree (``.coord``'s sibling ``.worktrees/.landing``, never a user's checkout), refuses a
candidate that changes a file another item holds, runs the item's checks on that exact tree
and moves main by compare-and-set. Then the board hears what happened: ``merged`` (the
commit; its files are freed and its dependents become ready) or ``needs-rework`` (the facts:
conflicting files, the failed check's output, main's commit). When main is checked out with
local changes in the way, the item stays queued and the runner stops, saying which files.

After a merge the item's worktree and branch are removed when nothing would be lost
(``coord.landing.removal``: clean, and its commits on main); otherwise they stay, and
``coord worktree list`` shows them. A one-off pass (``coord land``) removes them after the
pass and reports it; a watching runner hands them to a thread of its own
(``coord.landing.tidy``) and lands the next item meanwhile, woken at once by a submit (the
event log's long poll) rather than reading the queue every few seconds.

The runner reaches the board only over the daemon's HTTP API (``Transport``), as the CLI
does; the git work is local, in the board's repository.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coord.errors import AlreadyClaimed, CoordError, GitError
from coord.fast import fsfold, patterns, worktree_owner
from coord.fast.git import Git
from coord.landing import gitlock, steps, ticks, worktrees
from coord.landing.tidy import Tidier

if TYPE_CHECKING:
    from coord.client.flow import Transport

# in the worktree root: the runner's own worktree (the guard refuses every agent there)
LANDING_DIRNAME = worktree_owner.LANDING_DIRNAME
# The landing lease: short, so a runner that died (kill -9, a closed laptop) stops holding
# the queue within a minute, and renewed every quarter of it while an item's checks run.
LEASE_SECONDS = 60.0
# how often a runner waiting for the lease (another runner lands) asks for it again
LEASE_WAIT_SECONDS = 1.0
# the longest long poll of the event log the daemon answers (``GET /v1/events?wait=``)
LONGEST_WAIT_SECONDS = 60.0
# how long an interrupted watch waits for the removals it handed over (each well under one)
DRAIN_SECONDS = 10.0


@dataclass(slots=True)
class Landed:
    """What the runner made of one queued item."""

    item: int
    ref: str
    kind: str  # merged | needs_rework | waiting | skipped | stopped
    commit: str | None = None
    reason: str = ""
    files: list[str] = field(default_factory=list)
    cleaned: str = ""  # what became of its worktree and branch after a merge

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"item": self.item, "ref": self.ref, "outcome": self.kind}
        for name in ("commit", "reason", "files", "cleaned"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out


class Runner:
    def __init__(
        self,
        transport: Transport,
        repo: Path,
        board_dir: Path,
        name: str,
        *,
        main_branch: str = "main",
        strategy: str = "rebase",
        worktree_root: Path | None = None,
        check_timeout: float = 1800.0,
        lease_seconds: float = LEASE_SECONDS,
        remote: str | None = None,
        stop: threading.Event | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.transport = transport
        self.repo = repo
        self.board_dir = board_dir
        self.name = name
        self.main = f"refs/heads/{main_branch}"
        self.remote = remote
        # what "on main" is judged against: the remote's main when main lives there
        self.judged = f"refs/remotes/{remote}/{main_branch}" if remote else self.main
        self.strategy = strategy
        root = worktree_root or repo / ".worktrees"
        self.landing_path = root / LANDING_DIRNAME
        self.check_timeout = check_timeout
        self.fold = fsfold.board_fold(board_dir)
        self.token: int | None = None
        self.lease_seconds = lease_seconds
        self.lost: str | None = None  # why the lease was lost while landing, if it was
        # set: land nothing more (a check running is ended, the item stays queued)
        self.stop = stop
        # given: wait for a lease another runner holds (told why, once a pass); else refused
        self.on_wait = on_wait
        self.busy = False  # a pass holds the lease or tidies after it: not idle
        self.current: str | None = None  # the item being landed (its key or id)
        # what the queue, main and the checkout of main were when the last pass had to wait:
        # a watching runner tries again only once one of them changed (each try takes the
        # lease, rebases and writes three events; a human's edit may sit there for hours)
        self.waited: tuple[Any, ...] | None = None
        # the worktree root is ignored in the repository: made sure of on the first pass and
        # on each sweep (a watching runner's other passes land at once on a submit)
        self.root_ignored = False
        # set (``tidy_in_background``): merged items are tidied on a thread of its own
        self.tidier: Tidier | None = None

    @classmethod
    def for_board(cls, transport: Transport, board_dir: Path, name: str, **given: Any) -> Runner:
        """A runner for the board's repository, with the board's settings (``main_branch``,
        ``land_strategy``, ``worktree_root``, ``land_remote``); ``given`` overrides."""
        from coord.fast import board_files

        repo = worktrees.main_root(board_dir.parent)
        config = board_files.read_config(board_dir)
        settings: dict[str, Any] = {
            "main_branch": config.get("main_branch") or "main",
            "strategy": config.get("land_strategy") or "rebase",
            "worktree_root": worktrees.resolve_root(repo, config.get("worktree_root")),
            "remote": config.get("land_remote"),
        }
        return cls(transport, repo, board_dir, name, **{**settings, **given})

    def tidy_in_background(self, said: Callable[[Landed], None]) -> Tidier:
        """From now on a merged item's worktree and branch are removed on a thread of their
        own while the next item lands; ``said`` hears what became of each."""
        self.tidier = Tidier(self._clean, said)
        return self.tidier

    @property
    def tidying(self) -> bool:
        """Removals handed to the tidying thread are pending or under way."""
        return self.tidier is not None and self.tidier.busy

    # --- the lease ---------------------------------------------------------------------------

    def acquire(self) -> int:
        """The landing lease; while another runner holds it, ``AlreadyClaimed`` (the board's
        word, naming the holder), or with ``on_wait`` a wait until it is released or lapses
        (``stop`` ends the wait with the same refusal)."""
        body = {"runner": self.name, "lease_seconds": self.lease_seconds}
        told = False
        while True:
            try:
                won = self._post("/v1/landing/acquire", body)
                break
            except AlreadyClaimed as held:
                if self.on_wait is None or self._stopping():
                    raise
                if not told:
                    holder = held.details.get("holder") or "another runner"
                    until = held.details.get("lease_expires_at")
                    self.on_wait(
                        f"the landing lease is held by {holder}"
                        + (f" until {until}" if until else "")
                        + "; waiting for it (one runner lands at a time)"
                    )
                    told = True
                time.sleep(LEASE_WAIT_SECONDS)
        self.token = int(won["token"])
        return self.token

    def renew(self) -> None:
        body = {"runner": self.name, "token": self.token, "lease_seconds": self.lease_seconds}
        self._post("/v1/landing/renew", body)

    def release(self) -> None:
        if self.token is not None:
            # lapsed or taken over: nothing of ours to give back
            with contextlib.suppress(CoordError):
                self._post("/v1/landing/release", {"runner": self.name, "token": self.token})
            self.token = None

    # --- one pass over the queue -------------------------------------------------------------

    def land_all(self, *, sweep: bool = True) -> list[Landed]:
        """Land every queued item in submit order, under the landing lease; stop at the first
        that must wait for the checkout of main. ``sweep``: first find the items merged by
        hand. An empty queue takes no lease (a watching runner writes nothing while idle)."""
        if sweep and self.remote is not None:  # judged against the remote's main as it is
            with contextlib.suppress(GitError):  # unreachable: judged by what was fetched last
                gitlock.fetch(self.repo, self.remote, timeout=120.0)
        # claimed items outside the lease (no runner lands one); queued ones only under it,
        # where no landing of another runner can be between moving main and saying so
        results = self.merged_by_hand(("claimed",)) if sweep else []
        queue = self.transport.call("GET", "/v1/queue?limit=1000")["items"]
        if not queue or self._stopping():
            return results
        seen = self._still(queue)  # before the pass: what it judges is this or newer
        if self.waited == seen:
            return results  # it would wait again, for the same reason
        self.busy = True
        try:
            landed = self._land_queue(results, sweep)
        finally:
            self.busy = False
        waiting = bool(landed) and landed[-1].kind == "waiting"
        self.waited = seen if waiting else None
        return landed

    def _still(self, queue: list[dict[str, Any]]) -> tuple[Any, ...]:
        """What a waiting landing waits on: the queue (its items and heads), main's tip, and
        the checkout of main's local changes (git's own listing of them)."""
        git = Git(self.repo)
        tip = git.out("rev-parse", "-q", "--verify", self.judged, check=False)
        checkout = steps.checked_out(self.repo, self.main)
        local = (
            Git(checkout).run("status", "--porcelain", "-z", "--untracked-files=all").stdout
            if checkout is not None
            else b""
        )
        heads = tuple((i["id"], i.get("submitted_head")) for i in queue)
        return heads, tip, local

    def _stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def _land_queue(self, results: list[Landed], sweep: bool) -> list[Landed]:
        self.acquire()
        stop = threading.Event()
        renewing = threading.Thread(target=self._keep_lease, args=(stop,), daemon=True)
        renewing.start()
        landed_items: list[tuple[Landed, dict[str, Any]]] = []
        try:  # whatever fails from here gives the lease back (it held the queue for 60 s)
            root = self.landing_path.parent
            os.makedirs(root, exist_ok=True)
            if sweep or not self.root_ignored:  # three git commands: not before every landing
                worktrees.ensure_ignored(self.repo, root)  # never "untracked" in main's checkout
                self.root_ignored = True
            if sweep:
                results += self.merged_by_hand(("queued",))
            # read again under the lease: another runner may have landed some meanwhile
            for item in self.transport.call("GET", "/v1/queue?limit=1000")["items"]:
                if self._stopping():
                    break
                landed = self.land_one(item)
                results.append(landed)
                if landed.kind == "merged" and self.tidier is not None:
                    self.tidier.later(landed, item)  # main moved and the board heard it
                else:
                    landed_items.append((landed, item))
                if landed.kind in ("waiting", "stopped"):
                    break
        finally:
            stop.set()
            renewing.join()
            self.release()
        # after the pass, not between landings: each removal judges its branch with git, and
        # the next item in the queue should not wait for that
        for landed, item in landed_items:
            if landed.kind == "merged":
                landed.cleaned = self._clean(item)
        return results

    def watch(
        self,
        every: float,
        sweep_every: float,
        report: Callable[[Landed], None],
        tidied: Callable[[Landed], None] | None = None,
    ) -> None:
        """Land as items are queued, until interrupted: the queue read as soon as the board
        changes (a submit) and every ``every`` seconds anyway, the sweep for items merged by
        hand every ``sweep_every``. Merged items are tidied in the background (``tidied``
        hears each); interrupted, or ``stop`` set, it first waits a little for the removals
        under way."""
        if self.tidier is None:
            self.tidy_in_background(tidied or (lambda landed: None))
        swept = 0.0
        cursor = self._last_seq()  # read before the pass: a submit during it wakes the wait
        try:
            while not self._stopping():
                due = time.monotonic() - swept >= sweep_every
                for landed in self.land_all(sweep=due):
                    report(landed)
                if due:
                    swept = time.monotonic()
                cursor = self._wait_for_change(cursor, every)
        finally:
            if self.tidier is not None:
                self.tidier.drain(DRAIN_SECONDS)

    def _last_seq(self) -> int | None:
        try:
            return int(self.transport.call("GET", "/v1/events?after=0&limit=1")["last_seq"])
        except (CoordError, KeyError, TypeError, ValueError):
            return None  # a daemon that cannot say: the watch reads the queue on a timer

    def _wait_for_change(self, after: int | None, seconds: float) -> int | None:
        """Wait up to ``seconds`` for an event after ``after`` (the daemon's long poll
        answers at once when one is written); the cursor to wait from next time."""
        wait = min(seconds, LONGEST_WAIT_SECONDS)
        if after is not None:
            try:
                answer = self.transport.call(
                    "GET", f"/v1/events?after={after}&limit=1&wait={wait:g}", timeout=wait + 30
                )
                return int(answer["last_seq"])
            except (CoordError, KeyError, TypeError, ValueError):
                pass  # the board was replaced under the cursor, say: read afresh below
        if self.stop is not None:
            self.stop.wait(wait)
        else:
            time.sleep(wait)
        return self._last_seq()

    def _keep_lease(self, stop: threading.Event) -> None:
        """Renew the landing lease every quarter of its length until ``stop``; a renewal the
        board refuses (the lease lapsed and was taken) is remembered, and the runner's next
        write about an item is refused by its token anyway."""
        while not stop.wait(self.lease_seconds / 4):
            try:
                self.renew()
            except CoordError as err:
                self.lost = err.message
                return

    def land_one(self, item: dict[str, Any]) -> Landed:
        ref = self.current = str(item.get("key") or item["id"])
        branch, head = item.get("branch"), item.get("submitted_head")
        if not branch or not head:
            return Landed(item["id"], ref, "skipped", reason="no branch or head recorded")
        outcome = steps.land(
            self.repo,
            branch,
            head,
            list(item.get("checks") or []),
            self.landing_path,
            check_timeout=self.check_timeout,
            main=self.main,
            strategy=self.strategy,
            message=f"{item.get('title') or branch} (coord item {ref}, {branch})",
            vet=lambda candidate, old, changed: self._held_elsewhere(item, changed),
            checkout=steps.checked_out(self.repo, self.main),
            tidy=lambda tree: _tick(tree, item),
            remote=self.remote,
            stop=self.stop,
        )
        landed = Landed(item["id"], ref, outcome.kind, outcome.commit, outcome.reason)
        landed.files = outcome.files
        tokens = {
            "runner": self.name,
            "landing_token": self.token,
            "item_token": item["fencing_token"],
        }
        if outcome.kind == "merged":
            self._post(f"/v1/items/{item['id']}/merged", {**tokens, "commit": outcome.commit})
        elif outcome.kind == "waiting" or outcome.code == "main_moved":
            landed.kind = "waiting"  # nothing for its holder to fix: the next pass tries again
            wait: dict[str, Any] = {
                "reason": "main_moved" if outcome.code == "main_moved" else "checkout_dirty",
                "files": outcome.files,
                "message": outcome.reason,
            }
            if outcome.main:
                wait["main_commit"] = outcome.main
            # said on the board too, for the faces that show the queue; only a note: the item
            # stays queued whether or not the board took it (a lost lease refuses the next
            # write that matters anyway)
            with contextlib.suppress(CoordError):
                self._post(f"/v1/items/{item['id']}/waiting", {**tokens, "wait": wait})
        elif outcome.kind == "needs_rework":
            facts: dict[str, Any] = {"reason": outcome.code, "files": outcome.files}
            if outcome.output_tail or outcome.reason:
                facts["check_output"] = outcome.output_tail or outcome.reason
            if outcome.main:
                facts["main_commit"] = outcome.main
            self._post(f"/v1/items/{item['id']}/needs-rework", {**tokens, "facts": facts})
        return landed

    def merged_by_hand(self, states: tuple[str, ...] = ("claimed", "queued")) -> list[Landed]:
        """Worktree items whose commits reached main some other way (a human's merge,
        fast-forward, squash or rebase): found by ancestry, then patch-id, then tree, and
        recorded merged like a landing. A claim whose branch has no commit of its own yet
        is not merged, though its head is on main."""
        found: list[Landed] = []
        git = Git(self.repo)
        for state in states:
            listed = self.transport.call("GET", f"/v1/items?state={state}&limit=1000")["items"]
            for item in listed:
                branch, base = item.get("branch"), item.get("base_commit")
                if not branch or not base:
                    continue
                head = item.get("submitted_head") or git.out(
                    "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False
                )
                if not head or git.out("rev-list", "--count", f"{base}..{head}", check=False) in (
                    "",
                    "0",
                ):
                    continue  # the branch is gone here, or has nothing of its own yet
                how = steps.merged_outside(self.repo, base, head, self.judged)
                if how is None:
                    continue
                tip = git.out("rev-parse", self.judged)
                body = {"agent": self.name, "commit": tip, "found_by": how.replace("-", "_")}
                self._post(f"/v1/items/{item['id']}/merged-outside", body)
                ref = str(item.get("key") or item["id"])
                landed = Landed(item["id"], ref, "merged", tip, f"found on main by {how}")
                if state == "queued":  # a live claim's worktree is its holder's to leave
                    landed.cleaned = self._clean(item)
                found.append(landed)
        return found

    def _held_elsewhere(self, item: dict[str, Any], changed: list[str]) -> steps.Outcome | None:
        """A candidate that changes a file another item or agent holds does not land."""
        live = self.transport.call("GET", "/v1/reservations")["reservations"]
        others = [
            r
            for r in live
            # the item's own holds, its claim's or the queue's, never refuse it
            if r.get("exclusive", True) and r.get("item") != item["id"]
        ]
        blocked: list[str] = []
        holders: set[str] = set()
        for path in changed:
            for held in others:
                if patterns.covers(held["pattern"], path, fold=self.fold):
                    blocked.append(path)
                    holders.add(
                        f"{held['agent']}" + (f" (item {held['item']})" if held.get("item") else "")
                    )
                    break
        if not blocked:
            return None
        return steps.Outcome(
            "needs_rework",
            code="files_held",
            reason=f"it changes files held by {', '.join(sorted(holders))}",
            files=blocked,
        )

    def _clean(self, item: dict[str, Any]) -> str:
        """Remove a merged item's worktree and branch where nothing would be lost."""
        path = item.get("worktree")
        if not path or not Path(path).exists():
            return ""
        from coord.landing import removal

        try:
            removal.remove(self.repo, path, main=self.judged)
        except CoordError as err:
            return f"kept {path}: {err.message}"
        return f"removed {path} and its branch"

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return self.transport.call("POST", path, body)


def _tick(tree: Path, item: dict[str, Any]) -> str | None:
    """Tick the item's package in its design document, in the tree that lands."""
    spec, package = item.get("spec"), item.get("key")  # spec: "PATH:LINE"
    if not spec or not package or not ticks.tick_in(tree, spec.rsplit(":", 1)[0], package):
        return None
    return f"docs(coord): done {package}\n\nLanded from {item.get('branch')}."
