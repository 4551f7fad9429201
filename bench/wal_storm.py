"""The SQLite board's log under a storm of writes: its peak size with the daemon's
Checkpointer and hand-over, beside the same storm with no checkpoints at all (a log that keeps
every frame) and with background passes only. Run on its own: .venv/bin/python bench/wal_storm.py

Not a test (tests/test_sqlite_backend.py drives the hand-over a round at a time): how far the
checkpoint thread gets while the writer writes depends on the machine's load, so this prints.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from coord.storage.sqlite import Checkpointer, SQLiteStorage

FRAME = 4096 + 24


def storm(db: Path, *, checkpoints: bool, hand_over: bool, transactions: int = 6000) -> int:
    """The WAL's peak size in frames (the file grows only past its largest extent)."""
    storage = SQLiteStorage(db, wal_autocheckpoint=0)
    checkpointer = Checkpointer(
        db, interval=0.01, rewind_frames=300, on_big_log=storage.rewind_soon if hand_over else None
    )
    if checkpoints:
        checkpointer.start()
    try:
        for n in range(transactions):
            with storage.write() as tx:
                details = {"n": n, "text": "x" * 200}
                tx.append_event(at=float(n), agent="a", item_id=None, kind="note", details=details)
    finally:
        if checkpoints:
            checkpointer.stop()
    try:
        return (db.parent / f"{db.name}-wal").stat().st_size // FRAME
    finally:
        storage.close()  # after the measure: closing the last connection removes the log


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="coord-bench-wal-") as tmp:
        runs = {}
        for name, checkpoints, hand_over in (
            ("no checkpoints (every frame)", False, False),
            ("background passes only", True, False),
            ("passes + hand-over (the daemon)", True, True),
        ):
            folder = Path(tmp) / name.split()[0]
            folder.mkdir()
            runs[name] = storm(folder / "board.db", checkpoints=checkpoints, hand_over=hand_over)
        everything = runs["no checkpoints (every frame)"]
        for name, frames in runs.items():
            print(f"{name:34} peak log {frames:6} frames  {frames / everything:6.1%} of all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
