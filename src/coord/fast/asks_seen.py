"""The asks addressed to an agent, and the answers to its own, that its hooks have not shown
it yet (issue 26).

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

from coord.fast import board_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SHOWN_DIR = "asks-shown"
MAX_SHOWN = 5


def _uri_path(path: Any) -> str:
    """``coord.fast.holds._uri_path``'s, not imported: that module costs the hook ~12 ms."""
    return os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _marker(board_dir: str, agent: str) -> str:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in agent)
    return os.path.join(board_dir, SHOWN_DIR, safe)


def new_asks(board_dir: str, agent: str, now: float | None = None) -> list[dict[str, Any]]:
    """The open asks for ``agent`` past the last one shown, and the answers to its own asks
    given since it was last told (each marks itself shown). Nothing on a team board, or when
    the board cannot be read: a hint, never a refusal."""
    from pathlib import Path

    if board_files.database_url(board_dir) is not None:
        return []
    db = board_files.db_path(Path(board_dir))
    marker = _marker(board_dir, agent)
    try:
        with open(marker) as f:
            last_ask, last_answer = (float(x) for x in [*f.read().split(), "0", "0"][:2])
    except (OSError, ValueError):
        last_ask, last_answer = 0.0, 0.0
    try:
        conn = sqlite3.connect(f"file:{_uri_path(db)}?mode=ro", uri=True, timeout=2)
        try:
            asked = conn.execute(
                "SELECT id, asker, item_id, patterns, reason FROM asks "
                "WHERE holder = ? AND answer IS NULL AND expires_at > ? AND id > ? "
                "ORDER BY id LIMIT ?",
                (agent, time.time() if now is None else now, int(last_ask), MAX_SHOWN),
            ).fetchall()
            answered = conn.execute(
                "SELECT id, holder, item_id, patterns, answer, answer_reason, deferred_until, "
                "answered_at FROM asks WHERE asker = ? AND answered_at > ? "
                "ORDER BY answered_at LIMIT ?",
                (agent, last_answer, MAX_SHOWN),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:  # an older board without asks, or a busy file: nothing to say
        return []
    if not asked and not answered:
        return []
    board_files.private_dir(Path(board_dir) / SHOWN_DIR)
    with open(marker, "w") as f:
        f.write(f"{asked[-1][0] if asked else int(last_ask)} ")
        f.write(repr(answered[-1][7]) if answered else repr(last_answer))
    import json

    found = [
        {"id": r[0], "asker": r[1], "item": r[2], "paths": json.loads(r[3]), "reason": r[4]}
        for r in asked
    ]
    found += [
        {
            "id": r[0],
            "holder": r[1],
            "item": r[2],
            "paths": json.loads(r[3]),
            "answer": r[4],
            "reason": r[5],
            "deferred_until": r[6],
        }
        for r in answered
    ]
    return found


def context_text(asks: list[dict[str, Any]]) -> str:
    """What the holder is told: who asks for what, why, and its two answers."""
    lines = []
    for ask in asks:
        what = f"item {ask['item']}" if ask["item"] is not None else ", ".join(ask["paths"])
        if "answer" in ask:  # the answer to this agent's own ask
            why = f": {ask['reason']!r}" if ask["reason"] else ""
            if ask["answer"] == "release":
                lines.append(
                    f"coord: {ask['holder']} released {what} as you asked (ask {ask['id']}){why}."
                    " If you wait in line for it (`coord wait`), it is yours when your turn comes"
                )
            else:
                until = time.strftime("%H:%M:%SZ", time.gmtime(ask["deferred_until"] or 0))
                lines.append(
                    f"coord: {ask['holder']} defers your ask {ask['id']} for {what} until "
                    f"{until}{why}. Pick other work meanwhile, or wait in line (`coord wait`)"
                )
            continue
        lines.append(
            f"coord: {ask['asker']} asks you to let go of {what}: {ask['reason']!r} (ask "
            f"{ask['id']}). Answer it: `coord answer-ask {ask['id']} release` when you can "
            f"give it up now, or `coord answer-ask {ask['id']} defer --until 20m` (a reason "
            "optional: --reason). Your lease is yours either way: nothing shortens it."
        )
    return "\n".join(lines)
