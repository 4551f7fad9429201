"""The core: every rule of the board, and no HTTP, CLI or MCP.

``Board`` is the one object every face calls. It checks what a face sent, one argument at a
time (the nouns' checks), and hands the checked values to the part of the board that holds
the rule: ``items``, ``claims``, ``leases``, ``activity``, ``reservations``, ``packages``. Each
of the parts' verbs is one transaction: it reads the clock *after* taking the write lock (so
the lease decision is made at the moment the write is serialised), applies the rule, writes,
and appends exactly one event per change (``coord.core.changes``).

    >>> from coord import Board
    >>> board = Board.open("/path/to/repo/.coord")          # doctest: +SKIP
    >>> claim = board.claim_next(agent="orchestrator-1")    # doctest: +SKIP
    >>> board.done(claim.item.id, agent="orchestrator-1", token=claim.token)  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coord import model
from coord.core import next_steps, reservations, rules
from coord.core.access import Access
from coord.core.activity import Activity
from coord.core.asks import Asks
from coord.core.board_talk import Talk
from coord.core.changes import Changes
from coord.core.claims import Claims
from coord.core.context import BoardContext
from coord.core.evidence import check_runs
from coord.core.items import Items
from coord.core.landings import Landings
from coord.core.leases import Leases
from coord.core.packages import WorkPackages
from coord.core.tripwire import Tripwire
from coord.core.waiting import GrantingStorage, Waiting
from coord.errors import CoordError, InvalidInput
from coord.limits import (
    MAX_REPLIES_PAGE,
    REPLIES_PAGE,
)
from coord.model import Claim, Item, Reservation
from coord.storage.base import ItemQuery, Storage

DEFAULT_LEASE_SECONDS = 15 * 60
ACTIVE_WINDOW_SECONDS = 15 * 60


def open_storage(board_dir: Path, settings: dict[str, Any], options: dict[str, Any]) -> Storage:
    """The board's backend: PostgreSQL when its settings name a ``database``, else the SQLite
    file in ``board_dir``. The PostgreSQL driver is imported only here, when a board needs it."""
    from coord.fast import board_files

    url = settings.get("database")
    if url:
        try:
            from coord.storage.postgres import PostgresStorage
        except ImportError as err:
            raise CoordError(
                f"this board lives in PostgreSQL ({board_dir / 'config.json'} names a "
                f"database), but the PostgreSQL driver is not installed ({err}): "
                "pip install 'coord[postgres]'"
            ) from None
        return PostgresStorage(str(url), **options)
    from coord.storage.sqlite import SQLiteStorage

    return SQLiteStorage(
        board_files.db_path(board_dir),
        synchronous=str(settings.get("synchronous", "NORMAL")),
        **options,
    )


class Board(Talk):
    """One board: its storage, its clock, its settings, and the parts that hold its rules."""

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Callable[[], float] = time.time,
        default_lease_seconds: float = DEFAULT_LEASE_SECONDS,
        active_window_seconds: float = ACTIVE_WINDOW_SECONDS,
        repo_root: str | Path | None = None,
        escalate_to: str | None = None,
        escalation_hold_seconds: float = model.MAX_LEASE_SECONDS,
        humans: Any = None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.repo_root = Path(repo_root).resolve() if repo_root is not None else None
        self.default_lease_seconds = model.check_lease(default_lease_seconds, 0)
        self.active_window_seconds = active_window_seconds
        self.escalate_to = escalate_to
        self.humans = model.check_humans(humans)
        # the parts write through it: a write that frees something grants the waiters
        granting = GrantingStorage(storage)
        context = BoardContext(
            storage=granting,
            clock=clock,
            changes=Changes(),
            repo_root=self.repo_root,
            is_file=reservations.working_tree_files(self.repo_root),
            default_lease_seconds=self.default_lease_seconds,
            escalate_to=escalate_to,
            humans=self.humans,
        )
        self._context = context
        self._items = Items(context)
        self._claims = Claims(context)
        hold = model.check_lease(escalation_hold_seconds, 0)
        self._leases = Leases(context, hold)
        self._activity = Activity(context)
        self._tripwire = Tripwire(context)
        self._files = reservations.Reservations(context)
        self._packages = WorkPackages(context, self._claims)
        # a worktree item's way to main (submit, the queue, the landing lease, merged)
        self.landing = Landings(context, self._claims)
        # the fair wait (issue 26): the queue, and the grant a freeing write makes
        self.waiting = granting.waiting = Waiting(context, self._claims)
        # asking a holder to let go, and its answer
        self.asks = Asks(context)
        # people's and machines' tokens (issue 27)
        self.access = Access(context)

    @classmethod
    def open(
        cls,
        coord_dir: str | Path | None = None,
        *,
        create: bool = False,
        storage_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> Board:
        """Open the board in ``coord_dir`` (default: the ``.coord`` found from the cwd).

        ``create=True`` makes the database in an existing ``.coord`` directory if missing
        (``coord init`` does that, with the token and config beside it). A team board, whose
        config names a PostgreSQL ``database``, is opened there (the schema brought up to
        date); ``storage_options`` go to the backend the config chose.
        """
        from coord.fast import board_files

        board_dir = board_files.require_board_dir(coord_dir, must_exist=not create)
        settings = board_files.read_config(board_dir)
        storage = open_storage(board_dir, settings, storage_options or {})
        options.setdefault(
            "default_lease_seconds", settings.get("default_lease_seconds", DEFAULT_LEASE_SECONDS)
        )
        options.setdefault("repo_root", board_files.repo_root(board_dir))
        options.setdefault("escalate_to", settings.get("escalate_to"))
        options.setdefault("humans", settings.get("humans"))
        if "escalation_hold_seconds" in settings:
            options.setdefault("escalation_hold_seconds", settings["escalation_hold_seconds"])
        try:
            return cls(storage, **options)
        except BaseException:  # a config the board refuses (a bad lease): the storage too
            storage.close()
            raise

    def close(self) -> None:
        self.storage.close()

    def now(self) -> float:
        """The board's time: the storage's clock when it keeps one (PostgreSQL's server,
        which judges every lease), else the board's."""
        own = self.storage.now()
        return self.clock() if own is None else own

    def _lease(self, lease_seconds: Any) -> float:
        return model.check_lease(lease_seconds, self.default_lease_seconds)

    # --- items -----------------------------------------------------------------------------

    def add(
        self,
        title: str,
        *,
        created_by: str,
        kind: str = "task",
        priority: int = model.PRIORITY_DEFAULT,
        labels: Sequence[str] = (),
        deps: Sequence[int] = (),
        body: str = "",
        to: str | None = None,
        files: Sequence[str] = (),
    ) -> Item:
        entry = {
            "title": title,
            "kind": kind,
            "priority": priority,
            "labels": list(labels),
            "deps": list(deps),
            "body": body,
            "to": to,
            "files": list(files),
        }
        return self.get(self.import_items([entry], created_by=created_by)[0])

    def import_items(self, entries: Any, *, created_by: str) -> list[int]:
        """Create many items in one transaction: all of them, or none.

        An entry's ``deps`` may name existing ids or the ``ref`` of another entry in the same
        batch, so a whole dependency graph can be loaded at once.
        """
        return self._items.import_items(entries, model.check_agent(created_by))

    def get(self, item_id: Any) -> Item:
        """An item by id, or by the package key it was imported as."""
        return self._items.get(model.check_item_ref(item_id))

    def show(
        self, item_id: Any, *, replies_after: int = 0, replies_limit: int = REPLIES_PAGE
    ) -> dict[str, Any]:
        """An item with its thread (a page of it: ``replies_next`` says where the next one
        starts), acknowledgements and history."""
        if not 1 <= replies_limit <= MAX_REPLIES_PAGE:
            raise InvalidInput(
                f"replies_limit must be 1 to {MAX_REPLIES_PAGE}", field="replies_limit"
            )
        return self._items.show(model.check_item_ref(item_id), replies_after, replies_limit)

    def list_items(
        self,
        *,
        state: str | None = None,
        ready: bool = False,
        kind: str | None = None,
        label: str | None = None,
        spec: str | None = None,
        holder: str | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[Item]:
        """A page of items in id order; ``holder``: those whose claim is (or, done, was) that
        agent's; ``state`` one of ``model.LISTED_STATES``."""
        if state is not None:
            model.check_state(state, model.LISTED_STATES)
        if holder is not None:
            holder = model.check_agent(holder)
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000", field="limit")
        kinds = (model.check_kind(kind),) if kind else None
        query = ItemQuery(
            state=state,
            holder=holder,
            kinds=kinds,
            label=label,
            spec=spec,
            after_id=after_id,
            limit=limit,
        )
        return self._items.find(query, ready=ready)

    def edit(
        self,
        item_id: Any,
        *,
        agent: str,
        token: Any = None,
        title: str | None = None,
        body: str | None = None,
        priority: int | None = None,
        labels: Sequence[str] | None = None,
        add_deps: Sequence[int] = (),
        remove_deps: Sequence[int] = (),
        add_checks: Sequence[str] = (),
        remove_checks: Sequence[str] = (),
    ) -> Item:
        """Change an open item. While it is claimed, only its holder (with the token) can."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = model.check_title(title)
        if body is not None:
            changes["body"] = model.check_body(body)
        if priority is not None:
            changes["priority"] = model.check_priority(priority)
        if labels is not None:
            changes["labels"] = model.check_labels(labels)
        adding, removing = model.check_deps(add_deps), model.check_deps(remove_deps)
        checks_added = model.check_commands(list(add_checks))
        checks_removed = model.check_commands(list(remove_checks), "remove_checks")
        if not (changes or adding or removing or checks_added or checks_removed):
            raise InvalidInput(
                "nothing to change: give a new title, body, priority, labels, deps or checks"
            )
        return self._items.edit(
            ref,
            agent,
            token,
            changes,
            adding=adding,
            removing=removing,
            add_checks=checks_added,
            remove_checks=checks_removed,
        )

    def cancel(self, item_id: Any, *, agent: str, token: Any = None, reason: Any = None) -> Item:
        """Cancel an item, with the reason (required: it is recorded in the log). Its creator,
        the holder of a live claim (with the token) or one of the board's ``humans`` may."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        return self._items.cancel(ref, agent, token, model.check_reason(reason, "reason"))

    def reopen(self, item_id: Any, *, agent: str, reason: Any = None) -> Item:
        """A cancelled item back to pending, with the reason. Its creator or one of the
        board's ``humans`` may; a done item stays done."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        return self._items.reopen(ref, agent, model.check_reason(reason, "reason"))

    # --- claims ----------------------------------------------------------------------------

    def claim(
        self,
        item_id: Any,
        *,
        agent: str,
        lease_seconds: float | None = None,
        worktree: model.WorktreeSpec | None = None,
    ) -> Claim:
        """Claim one item. Exactly one of any number of concurrent callers wins. With
        ``worktree`` the item records its branch, base and path in the same transaction."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        with next_steps.told_on_refusal(self._context, agent):
            return self._claims.claim(ref, agent, self._lease(lease_seconds), worktree=worktree)

    def claim_next(
        self,
        *,
        agent: str,
        kind: str | None = None,
        label: str | None = None,
        lease_seconds: float | None = None,
        worktree: model.WorktreeSpec | None = None,
    ) -> Claim:
        """Claim the best ready item: priority 0 first, then the oldest."""
        agent = model.check_agent(agent)
        kind = model.check_kind(kind) if kind else None
        lease = self._lease(lease_seconds)
        with next_steps.told_on_refusal(self._context, agent):
            return self._claims.claim_next(agent, kind, label, lease, worktree=worktree)

    def claim_batch(
        self,
        count: int,
        *,
        agent: str,
        kind: str | None = None,
        label: str | None = None,
        lease_seconds: float | None = None,
    ) -> list[Claim]:
        """Claim up to ``count`` ready items whose files overlap neither each other nor
        anything held: work for ``count`` agents started at once."""
        agent = model.check_agent(agent)
        kind = model.check_kind(kind) if kind else None
        lease = self._lease(lease_seconds)
        if (
            isinstance(count, bool)
            or not isinstance(count, int)
            or not 1 <= count <= model.MAX_BATCH
        ):
            raise InvalidInput(f"count must be 1 to {model.MAX_BATCH}", field="count")
        with next_steps.told_on_refusal(self._context, agent):
            return self._claims.claim_batch(count, agent, kind, label, lease)

    # --- leases: what the holder does with a claim, by its token ---------------------------

    def heartbeat(
        self, item_id: Any, *, agent: str, token: Any, lease_seconds: float | None = None
    ) -> Claim:
        """Extend a live claim. A stale token changes nothing."""
        agent, ref, token = rules.claim_args(agent, item_id, token)
        return self._leases.heartbeat(ref, agent, token, self._lease(lease_seconds))

    def release(self, item_id: Any, *, agent: str, token: Any, reason: str = "") -> Item:
        """Give the item back to pending for someone else."""
        agent, ref, token = rules.claim_args(agent, item_id, token)
        return self._leases.release(ref, agent, token, model.check_body(reason))

    def done(
        self,
        item_id: Any,
        *,
        agent: str,
        token: Any,
        summary: str = "",
        evidence: Any = None,
        skip_checks: str | None = None,
    ) -> Item:
        """Close a claimed item. Only the live holder can.

        An item with checks closes only with ``evidence`` that each passed (``coord done``
        runs them), or with ``skip_checks``: the reason, recorded for everyone to see. A
        failed run is recorded too, and the item stays claimed.
        """
        agent, ref, token = rules.claim_args(agent, item_id, token)
        summary = model.check_body(summary)
        runs = check_runs(evidence)
        if skip_checks is not None:
            skip_checks = model.check_reason(skip_checks, "skip_checks")
        return self._leases.done(ref, agent, token, summary, runs, skip_checks)

    def escalate(self, item_id: Any, *, agent: str, token: Any, question: Any) -> Item:
        """Ask a human: the item becomes needs_human. The holder keeps the claim and its
        files while the question waits, up to the board's escalation bound (asking again or
        an answer renews it); past it the question stays, shown stale, and the item can be
        taken over like any lapsed claim."""
        agent, ref, token = rules.claim_args(agent, item_id, token)
        return self._leases.escalate(ref, agent, token, model.check_reason(question, "question"))

    def answer(self, item_id: Any, *, agent: str, text: Any) -> Item:
        """Answer a needs_human item: back to its holder with a fresh lease; the answer is a
        reply on the item and shows in the holder's inbox."""
        agent = model.check_agent(agent)
        ref = model.check_item_ref(item_id)
        return self._leases.answer(ref, agent, model.check_reason(text, "answer"))

    # --- files -----------------------------------------------------------------------------

    def reserve(
        self,
        patterns_given: Sequence[str],
        *,
        agent: str,
        shared: bool = False,
        lease_seconds: float | None = None,
        item: int | str | None = None,
        reason: str = "",
    ) -> list[Reservation]:
        """Reserve every pattern, or none: refused whole if any overlaps another agent's."""
        agent = model.check_agent(agent)
        given = model.check_files(patterns_given)
        lease = self._lease(lease_seconds)
        item_ref = model.check_item_ref(item) if item is not None else None
        reason = model.check_body(reason)
        with next_steps.told_on_refusal(self._context, agent):
            return self._files.reserve(given, agent, not shared, lease, item_ref, reason)

    def unreserve(
        self, patterns_given: Sequence[str] = (), *, agent: str, everything: bool = False
    ) -> list[str]:
        """Free the agent's reservations of these patterns (or all of them). Returns what
        was freed; freeing what you do not hold is not an error."""
        agent = model.check_agent(agent)
        return self._files.unreserve(model.check_files(list(patterns_given)), agent, everything)

    def reservations(self, agent: str | None = None) -> list[Reservation]:
        """Live reservations, oldest first (of one agent, or everyone's)."""
        return self._files.live(agent)

    def who(self, path: str, agent: str | None = None) -> dict[str, Any]:
        """Who holds ``path``, and may ``agent`` edit it?"""
        return self._files.who(path, model.check_agent(agent) if agent is not None else None)

    # --- design documents ------------------------------------------------------------------

    def import_packages(
        self,
        spec: Any,
        packages: Any,
        *,
        created_by: str,
        escalate_to: str | None = None,
        prefix: str = "",
        adopt: Any = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Bring the board in step with the document ``spec`` (a repository-relative path);
        ``dry_run``: say what that would do and change nothing.

        Returns the package ids ``created``, ``updated``, ``unchanged`` and ``removed`` (gone
        from the document, still on the board), ``closed`` (ticked in the document, closed
        now), ``conflicts`` (ticked but held by someone) and what ``adopt`` did.
        """
        created_by = model.check_agent(created_by)
        return self._packages.import_packages(
            spec, packages, created_by, escalate_to, prefix, adopt, dry_run
        )
