"""What each part of the board is handed: the storage, the board's clock and its settings.

``Board`` builds one ``BoardContext`` and gives it to each of its parts (items, claims, leases,
activity, reservations, work packages). A part reads what it needs from it, and uses another
part only when that part is handed to it by name: no part reaches into ``Board``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coord.core.changes import Changes
from coord.storage.base import ReadTx, Storage

# Is this repository-relative literal path a plain file of the working tree?
IsFile = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class BoardContext:
    storage: Storage
    # The board's clock where the storage has none of its own (SQLite: the daemon's; tests
    # move it by hand). Read through ``now(tx)``.
    clock: Callable[[], float]
    changes: Changes
    # file patterns are repository-relative; without a root the board holds no files
    repo_root: Path | None
    is_file: IsFile | None
    default_lease_seconds: float
    # who answers needs_human questions when the item's document names nobody
    escalate_to: str | None
    # the people who may cancel, reopen and set the checks of anyone's items (``humans`` in
    # .coord/config.json; ``coord.core.permissions``)
    humans: frozenset[str] = frozenset()

    def now(self, tx: ReadTx) -> float:
        """The board's time for this transaction: the storage's clock (PostgreSQL: the
        server's) or else the board's. Each write asks after taking the write lock, so a lease
        is judged at the moment the write is serialised."""
        own = tx.clock()
        return self.clock() if own is None else own
