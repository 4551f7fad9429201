"""Removing merged items' worktrees and branches off the landing path, on a thread of its own.

A removal judges its worktree and branch with git (clean? every commit on main or in a
snapshot?) and then removes them: a dozen git commands, about as many as a landing. A
watching runner (``coord land --watch``, the daemon's) hands each merged item here once main
has moved and the board has heard it, and lands the next item meanwhile: a dependent's claim
waits for the merge, never for the tidying of the item before it.

Nothing is lost by the hand-over: ``coord.landing.removal`` judges at the moment it removes
(main only moves forward, so what was on main when judged still is), and a runner that dies
with removals still pending leaves merged items' worktrees that ``coord worktree gc`` removes,
saying why. One removal at a time, in merge order: they take the worktree lock in turn anyway.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coord.landing.runner import Landed


class Tidier:
    """A queue of merged items to tidy and the one thread that tidies them.

    ``clean(item)`` removes one item's worktree and branch and says what became of them;
    ``said(landed)`` hears each result (``landed.cleaned`` filled in)."""

    def __init__(
        self, clean: Callable[[dict[str, Any]], str], said: Callable[[Landed], None]
    ) -> None:
        self._clean = clean
        self._said = said
        self._pending: deque[tuple[Landed, dict[str, Any]]] = deque()
        self._changed = threading.Condition()
        self._working = False  # a removal is under way (popped, not finished)
        self._thread: threading.Thread | None = None

    def later(self, landed: Landed, item: dict[str, Any]) -> None:
        """Tidy after ``landed``'s merge, on the tidying thread (started on first use)."""
        with self._changed:
            self._pending.append((landed, item))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="coord-tidy", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    @property
    def busy(self) -> bool:
        """Removals pending or under way."""
        with self._changed:
            return bool(self._pending) or self._working

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every removal handed over is done; False when ``timeout`` ran out."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending and not self._working, timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                if not self._pending:
                    self._thread = None  # the next hand-over starts a thread again
                    return
                landed, item = self._pending.popleft()
                self._working = True
            try:
                landed.cleaned = _clean_saying_why(self._clean, item)
                self._said(landed)
            finally:
                with self._changed:
                    self._working = False
                    self._changed.notify_all()


def _clean_saying_why(clean: Callable[[dict[str, Any]], str], item: dict[str, Any]) -> str:
    """A removal that failed unexpectedly is said, not a dead thread: what it left is the
    worktree of a merged item, which `coord worktree gc` judges again and removes."""
    try:
        return clean(item)
    except Exception as err:  # git missing meanwhile, a full disk: kept, and said
        path = item.get("worktree") or "its worktree"
        return f"kept {path}: {type(err).__name__}: {err} (`coord worktree gc` removes it)"
