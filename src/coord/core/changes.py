"""Writing a change of the board: the item's compare-and-set, its one event, who was seen.

Every write of the core goes through here, so two promises each have one home: every change
appends exactly one event, and no item is written from a snapshot its transaction did not
hold (the compare-and-set on the fencing token, checked every time).
"""

from __future__ import annotations

import threading
from typing import Any

from coord.core import provenance
from coord.errors import StaleSnapshot
from coord.limits import MAX_EVENT_TEXT
from coord.model import Item
from coord.storage.base import WriteTx


def compare_and_set(tx: WriteTx, item: Item, changes: dict[str, Any]) -> None:
    """Write ``changes`` to the item only if its token is still the one this transaction read.

    Under the write lock the token cannot move, so a miss is a broken invariant
    (``StaleSnapshot``): raising rolls the whole transaction back, and nothing is written.
    """
    if not tx.update_item(item.id, item.fencing_token, changes):
        raise StaleSnapshot(
            f"item {item.ref} changed inside a write transaction that should have excluded "
            f"every other writer (its token is no longer {item.fencing_token}); nothing was "
            "written. This is a bug in coord or its storage: please report it",
            id=item.id,
            expected_token=item.fencing_token,
        )


def old_and_new(item: Item, changes: dict[str, Any]) -> dict[str, Any]:
    """An edit's event details: each changed field as ``{"old": ..., "new": ...}``, so the log
    keeps what an edit overwrote. A text's old value is kept whole (the log is the only place
    left that has it); a new one longer than ``MAX_EVENT_TEXT`` is cut to that with its full
    length in ``new_chars``: the full text is the item's, and the next edit's ``old``. So one
    edit's event is at most the body limit plus ``MAX_EVENT_TEXT``, and the log never holds a
    version whole twice."""
    details: dict[str, Any] = {}
    for name, new in changes.items():
        old = getattr(item, name)
        change: dict[str, Any] = {"old": _plain(old), "new": _plain(new)}
        if isinstance(new, str) and len(new) > MAX_EVENT_TEXT:
            change["new"] = new[:MAX_EVENT_TEXT]
            change["new_chars"] = len(new)
        details[name] = change
    return details


def _plain(value: Any) -> Any:
    """Tuples (labels, checks, files) as the JSON lists they are everywhere else."""
    return list(value) if isinstance(value, tuple) else value


# The event kinds after which something may be free for a waiter (``coord.core.waiting``).
FREEING = frozenset(
    {"released", "done", "cancelled", "unreserved", "submitted", "merged", "abandoned"}
)


class FreedMarks:
    """Whether this thread's write transaction recorded a freeing change: ``record`` notes
    it, ``coord.core.waiting.GrantingStorage`` reads it before the commit and grants."""

    def __init__(self) -> None:
        self._local = threading.local()

    def freed_begin(self) -> bool:
        outer = bool(getattr(self._local, "freed", False))
        self._local.freed = False
        return outer

    def freed_now(self) -> bool:
        return bool(getattr(self._local, "freed", False))

    def freed_end(self, outer: bool) -> None:
        self._local.freed = outer


class Changes(FreedMarks):
    """The board's one writer of changes. Holds when each agent was last noted as seen."""

    def __init__(self) -> None:
        super().__init__()
        self._touched: dict[str, float] = {}
        self._working: set[str] = set()  # noted as agents on the board (``work``)

    def apply(
        self,
        tx: WriteTx,
        item: Item,
        changes: dict[str, Any],
        agent: str,
        kind: str,
        now: float,
        details: dict[str, Any],
        *,
        worked: bool = False,
        **also: Any,
    ) -> Item:
        """Write the changes, log them, and return the item as it now is (no second read).

        ``item`` is this transaction's own snapshot and is updated in place (cheaper than a
        copy on every claim); ``also`` sets derived fields that are not stored."""
        changes = {**changes, "updated_at": now}
        compare_and_set(tx, item, changes)
        self.record(tx, agent, item.id, kind, now, details, worked=worked)
        for name, value in (changes | also).items():
            setattr(item, name, value)
        return item

    def record(
        self,
        tx: WriteTx,
        agent: str,
        item_id: int | None,
        kind: str,
        now: float,
        details: dict[str, Any],
        *,
        worked: bool = False,
    ) -> None:
        """Log a change and note that the agent was seen (``worked``: acting as an agent)."""
        tx.append_event(
            at=now,
            agent=agent,
            item_id=item_id,
            kind=kind,
            details=details,
            provenance=provenance.current(),
        )
        if kind in FREEING:
            self._local.freed = True
        if worked:
            self.work(tx, agent, now)
        else:
            self.touch(tx, agent, now)

    def touch(self, tx: WriteTx, agent: str, now: float) -> None:
        # last_seen to the second is plenty; skipping the upsert keeps hot writes lean.
        if now - self._touched.get(agent, float("-inf")) >= 1.0:
            tx.touch_agent(agent, now)
            self._touched[agent] = now

    def work(self, tx: WriteTx, agent: str, now: float) -> None:
        """Note that ``agent`` acts as an agent: it claims, reserves files or reads its inbox
        itself. Who only adds, edits, answers or replies (a person), or holds a claim a design
        document's reservation line gave it (adoption), is seen but not an agent, and `coord
        agents` leaves it out. The mark rides on the touch (one upsert, at most once a
        second), and at once the first time in this process: a mark a rolled-back write or a
        prune elsewhere took away is back within a second of the next work. It stays."""
        if agent in self._working and now - self._touched.get(agent, float("-inf")) < 1.0:
            return
        tx.touch_agent(agent, now, worked=True)
        self._working.add(agent)
        self._touched[agent] = now

    def forget(self, agents: set[str]) -> None:
        """These agents' rows are gone (pruned): note them again when they come back."""
        self._working -= agents
        for name in agents:
            self._touched.pop(name, None)
