"""The asks addressed to an agent that its hooks have not shown it yet (issue 26).

An ask reaches the holder at once in the face it works in: this is the hook's half. The
after-tool hook (Claude Code's ``PostToolUse``) reads the open asks for the agent straight
from a SQLite board file (read-only, no daemon, as the guard reads holds) and puts the new
ones in the agent's context; a small file per agent remembers the last ask shown, so each
is said once. A team board (PostgreSQL) is not read here: its asks reach the agent through
its inbox, `coord asks`, `coord watch` and the page.
"""

from __future__ import annotations

import os
import sqlite3
import time

from coord.fast import board_files, holds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SHOWN_DIR = "asks-shown"
MAX_SHOWN = 5


def _marker(board_dir: str, agent: str) -> str:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in agent)
    return os.path.join(board_dir, SHOWN_DIR, safe)


def new_asks(board_dir: str, agent: str, now: float | None = None) -> list[dict[str, Any]]:
    """The open asks for ``agent`` past the last one shown (and marks them shown). Nothing
    on a team board, or when the board cannot be read: a hint, never a refusal."""
    from pathlib import Path

    if board_files.database_url(board_dir) is not None:
        return []
    db = board_files.db_path(Path(board_dir))
    marker = _marker(board_dir, agent)
    try:
        with open(marker) as f:
            last = int(f.read().strip() or 0)
    except (OSError, ValueError):
        last = 0
    try:
        conn = sqlite3.connect(f"file:{holds._uri_path(db)}?mode=ro", uri=True, timeout=2)
        try:
            rows = conn.execute(
                "SELECT id, asker, item_id, patterns, reason, expires_at FROM asks "
                "WHERE holder = ? AND answer IS NULL AND expires_at > ? AND id > ? "
                "ORDER BY id LIMIT ?",
                (agent, time.time() if now is None else now, last, MAX_SHOWN),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:  # an older board without asks, or a busy file: nothing to say
        return []
    if not rows:
        return []
    board_files.private_dir(Path(board_dir) / SHOWN_DIR)
    with open(marker, "w") as f:
        f.write(str(rows[-1][0]))
    import json

    return [
        {
            "id": row[0],
            "asker": row[1],
            "item": row[2],
            "paths": json.loads(row[3]),
            "reason": row[4],
        }
        for row in rows
    ]


def context_text(asks: list[dict[str, Any]]) -> str:
    """What the holder is told: who asks for what, why, and its two answers."""
    lines = []
    for ask in asks:
        what = f"item {ask['item']}" if ask["item"] is not None else ", ".join(ask["paths"])
        lines.append(
            f"coord: {ask['asker']} asks you to let go of {what}: {ask['reason']!r} (ask "
            f"{ask['id']}). Answer it: `coord answer-ask {ask['id']} release` when you can "
            f"give it up now, or `coord answer-ask {ask['id']} defer --until 20m` (a reason "
            "optional: --reason). Your lease is yours either way: nothing shortens it."
        )
    return "\n".join(lines)
