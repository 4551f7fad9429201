"""Whose worktree a path is in: no agent writes into another agent's coord worktree, nor into
the landing worktree (issue 24, item 9), however the path is spelled.

``coord start`` makes a linked worktree per claim and locks it with a reason naming the item
and its fencing token (``coord.fast.worktree.lock_reason``); the landing runner builds and
checks what lands in its own worktree, ``<worktree root>/.landing``. A path is placed in the
working tree the file system puts it in (``coord.fast.targets``: symlinks and ``..``
resolved, so ``../.worktrees/3-t7/a.py`` and a symlink into it are the same place), and a
target whose working tree is a linked worktree of the board's repository is judged here:

- the landing worktree: refused for every agent (only the runner writes there);
- a linked worktree that is not locked with a coord reason (a person's, another tool's):
  not coord's; today's rules only (its holds);
- a coord worktree whose item the board says is claimed, under the lock's fencing token (or
  at the path the board recorded), with a live lease: its holder writes freely (other
  agents' holds on the same repository paths still refuse, as everywhere); anyone else is
  refused, told whose it is and to work in their own (``coord start``);
- every other coord worktree is refused for everyone, its last holder included: a queued
  item's (what lands is the submitted head; the board freezes its files for the submitter
  too), and one whose claim lapsed or ended (a lapsed claim's worktree holds work coord
  snapshots before anyone goes on with it, invariant 18: its old holder is a zombie by the
  fencing rule until it claims the item again, ``coord start ID``, which makes the worktree
  its own under the new token);
- when the guard cannot tell (the worktree's ``.git`` or lock file unreadable, a coord lock
  it cannot parse, the board unreadable) it refuses: ``holds.BoardUnreadable``, fail closed.

A shell command's target in the main working tree that reaches what is beneath it (``rm -rf
.worktrees``, ``rm -rf .``, ``cp -r x .worktrees/``) is refused for each worktree nested
there that the asking agent may not write (``Owners.beneath``).

The cost: a path in the main working tree pays nothing here (its working tree is the
board's root: one string comparison); a path in a linked worktree costs two small file reads
and, in a coord worktree, one indexed row of ``items``; ``beneath`` lists the repository's
linked worktrees (one ``listdir`` of ``.git/worktrees``) only for a shell target that names a
directory or a glob of the main tree.

On a PostgreSQL board the guard reads the daemon's mirror (``coord.fast.mirror``): beside the
live reservations it holds the worktree items claimed or queued (their state, holder, token,
lease and worktree), in ``items`` as on ``board.db``, so the same query answers; an item not
there is held by no claim and no queue entry. A mirror an older daemon wrote has no such table:
a path in a coord worktree is then refused (fail closed) until this daemon rewrites it.

Stdlib only: it runs before every edit.
"""

from __future__ import annotations

import os
import time

from coord.fast import board_files, patterns, worktree
from coord.fast.db import sqlite3
from coord.fast.holds import BoardUnreadable, _uri_path

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from typing import Any

    from coord.fast import fsfold

# the landing runner's own worktree, in the worktree root (coord.landing.runner)
LANDING_DIRNAME = ".landing"
ITEM_COLUMNS = "state, claimed_by, fencing_token, lease_expires_at, worktree"


class Refusal:
    """A worktree the asking agent may not write into, shaped like ``holds.Held`` for the
    callers that list blockers: ``agent`` is whose it is (its holder, or ``coord`` for the
    landing worktree and one no claim holds), ``pattern`` its root, ``item_id`` its item;
    ``why`` the sentence to show after the path."""

    __slots__ = (
        "agent",
        "created_at",
        "exclusive",
        "expires_at",
        "id",
        "item_id",
        "pattern",
        "reason",
        "root",
        "rule",
        "state",
        "why",
    )

    def __init__(
        self,
        id: int,
        root: str,
        why: str,
        *,
        agent: str = "coord",
        item_id: int | None = None,
        state: str | None = None,
        expires_at: float | None = None,
    ) -> None:
        self.id = id  # negative: never a reservation's
        self.root = root
        self.pattern = root
        self.why = why
        self.agent = agent
        self.item_id = item_id
        self.state = state
        self.expires_at = expires_at
        self.exclusive = True
        self.rule = patterns.RULE
        self.reason = None
        self.created_at = 0.0


class Owners:
    """The linked worktrees of one board's repository met in one judgement, each judged once
    for ``agent``. ``db`` is where the board is read (``board.db``, or a PostgreSQL board's
    mirror), ``now`` the board's clock (None: this machine's)."""

    def __init__(self, board_dir: str, db: str, now: float | None, agent: str | None) -> None:
        self.board_root = os.path.realpath(os.path.dirname(board_dir))
        self.db = db
        self.now = now
        self.agent = agent
        self.judged: dict[str, Refusal | None] = {}
        self.nested: list[tuple[str, str]] | None = None  # (repository path, root)
        # a PostgreSQL board's mirror: it holds only the worktree items claimed or queued
        self.on_mirror = os.path.basename(db) != board_files.DB_FILENAME

    def inside(self, root: str) -> Refusal | None:
        """Why ``agent`` may not write in the working tree ``root`` (a target's); None when it
        may (the main working tree, a worktree coord did not make, its own)."""
        if root == self.board_root:
            return None  # the common case: nothing to read
        if root not in self.judged:
            self.judged[root] = self._judge(root)
        return self.judged[root]

    def beneath(self, name: str, fold: fsfold.Fold) -> list[Refusal]:
        """The worktrees nested in the main working tree beneath what a shell target named
        ``name`` there (a directory, a glob) reaches, that ``agent`` may not write."""
        if self.nested is None:
            self.nested = self._nested()
        if not self.nested:
            return []
        reach = [name] if patterns.is_literal(name) else [name, patterns.beneath(name)]
        found = []
        for rel, root in self.nested:
            inside = patterns.beneath(patterns.escape(rel))
            if any(patterns.overlaps(p, inside, fold=fold) for p in reach):
                refusal = self.inside(root)
                if refusal is not None:
                    found.append(refusal)
        return found

    def _nested(self) -> list[tuple[str, str]]:
        """The linked worktrees of the repository inside its main working tree, from git's
        own records (``.git/worktrees/<name>/gitdir``), without running git."""
        admin = os.path.join(self.board_root, ".git", "worktrees")
        try:
            names = os.listdir(admin)
        except FileNotFoundError:
            return []  # no linked worktree at all (or .git is a file: judged as a worktree)
        except OSError as err:
            raise BoardUnreadable(
                f"cannot list {admin} ({err.strerror or err}), so cannot tell which worktrees "
                "a command writing there would reach"
            ) from None
        found = []
        for name in sorted(names):
            try:
                with open(os.path.join(admin, name, "gitdir"), encoding="utf-8") as f:
                    dot_git = f.readline().strip()
            except FileNotFoundError:
                continue  # half made or half removed: git itself ignores it
            except OSError as err:
                raise BoardUnreadable(
                    f"cannot read {os.path.join(admin, name, 'gitdir')} ({err.strerror or err}), "
                    "so cannot tell where that worktree is"
                ) from None
            # git writes it absolute; relative (worktree.useRelativePaths) is from its directory
            root = os.path.realpath(os.path.dirname(os.path.join(admin, name, dot_git)))
            if root.startswith(self.board_root + "/"):
                found.append((os.path.relpath(root, self.board_root), root))
        return found

    def _judge(self, root: str) -> Refusal | None:
        serial = -1 - len(self.judged)
        if os.path.basename(root) == LANDING_DIRNAME:
            return Refusal(
                serial,
                root,
                f"it is in the landing worktree {root}, where coord's landing runner builds and "
                "checks what lands on main; no agent writes there: work in your own worktree "
                "(`coord start` claims an item with one)",
            )
        reason = _lock_reason(root)
        if reason is None:
            return None  # not locked: not coord's
        fields = worktree.parse_reason(reason)
        if fields is None:
            if reason.split()[:1] != [worktree.REASON_PREFIX]:
                return None  # a person's lock, another tool's
            raise BoardUnreadable(
                f"the lock of worktree {root} reads {reason!r}, which names no item, token "
                "and process, so the guard cannot tell whose worktree it is"
            )
        item, token = int(fields["item"]), int(fields["token"])
        row = self._item(item, root)
        if row is None and self.on_mirror:  # neither claimed nor queued
            return Refusal(
                serial,
                root,
                f"it is in the worktree {root} that coord made for item {item}, which no claim "
                "holds: the work left there must not be trampled, so nobody writes there; "
                f"`coord worktree list` says what it holds, `coord start {item}` goes on with a "
                "pending item, `coord worktree gc` cleans what is merged or abandoned",
                item_id=item,
            )
        if row is None:
            return Refusal(
                serial,
                root,
                f"it is in worktree {root}, which coord made for item {item}, and this board "
                "has no such item, so nobody may write there: `coord worktree list` says what "
                "it holds",
                item_id=item,
            )
        state, holder, current, lease, recorded = row
        ours = current == token or (recorded is not None and os.path.realpath(recorded) == root)
        now = self.now if self.now is not None else time.time()
        if ours and state == "claimed" and lease is not None and lease > now:
            if holder == self.agent:
                return None  # its own: today's rules only
            return Refusal(
                serial,
                root,
                f"it is in {holder}'s worktree {root} (item {item}, claimed by {holder}); do not "
                "write into another agent's worktree: work in your own (`coord start` claims "
                f"an item with one), or ask {holder}",
                agent=holder,
                item_id=item,
                state=state,
                expires_at=lease,
            )
        if ours and state == "queued":
            return Refusal(
                serial,
                root,
                f"it is in the worktree {root} of item {item}, which {holder} submitted: it is "
                "queued to land from its submitted head, and nothing written there now would "
                "land; it stays as it is until it lands or comes back for rework (`coord "
                "queue`); work in your own worktree (`coord start`)",
                agent=holder or "coord",
                item_id=item,
                state=state,
            )
        if ours and state == "claimed":
            return Refusal(
                serial,
                root,
                f"it is in the worktree {root} of item {item}, whose claim by {holder} has "
                "lapsed: the work there is kept for whoever goes on with the item, and nobody "
                f"writes there until then, {holder} included: claim it again (`coord start "
                f"{item}`) to go on there",
                agent=holder or "coord",
                item_id=item,
                state="lapsed",
                expires_at=lease,
            )
        shown = state if ours else f"{state}, claimed since under another token"
        return Refusal(
            serial,
            root,
            f"it is in the worktree {root} that coord made for item {item} (now {shown}), "
            "which no claim holds: the work left there must not be trampled, so nobody writes "
            f"there; `coord worktree list` says what it holds, `coord start {item}` goes on "
            "with a pending item, `coord worktree gc` cleans what is merged or abandoned",
            item_id=item,
            state=state,
        )

    def _item(self, item: int, root: str) -> Any:
        """The item's ``ITEM_COLUMNS`` row, None when the board has no such item."""
        if not os.path.exists(self.db):
            raise BoardUnreadable(f"no board at {self.db}")
        try:
            conn = sqlite3.connect(f"file:{_uri_path(self.db)}?mode=ro", uri=True, timeout=2)
            try:
                row = conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM items WHERE id = ?", (item,)
                ).fetchone()
            finally:
                conn.close()
        except sqlite3.Error as err:
            hint = ""
            if self.on_mirror:
                hint = (
                    "; a mirror written by an older coord daemon holds no items: restart "
                    "this machine's daemon (`coord serve`)"
                )
            raise BoardUnreadable(f"cannot read {self.db}: {err}{hint}") from None
        return row


def _lock_reason(root: str) -> str | None:
    """The lock reason of the linked worktree ``root``; None when it is not locked.
    ``BoardUnreadable`` when its ``.git`` file or its lock cannot be read."""
    dot_git = os.path.join(root, ".git")
    try:
        with open(dot_git, encoding="utf-8") as f:
            line = f.readline().strip()
    except OSError as err:
        raise BoardUnreadable(
            f"cannot read {dot_git} ({err.strerror or err}), so cannot tell whose worktree "
            f"{root} is"
        ) from None
    if not line.startswith("gitdir:"):
        raise BoardUnreadable(f"{dot_git} names no git directory, so cannot tell whose it is")
    locked = os.path.join(root, line[len("gitdir:") :].strip(), "locked")
    try:
        with open(locked, encoding="utf-8") as f:
            return f.read().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) else "not UTF-8"
        raise BoardUnreadable(
            f"cannot read the lock {locked} ({why or err}), so cannot tell whose worktree {root} is"
        ) from None
