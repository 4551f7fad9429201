"""The fencing tokens of claims this CLI made, per agent, so `coord done 12 --as a` just works.

Kept in ``.coord/claims/AGENT.json`` as ``{"12": 3}``. The daemon stays the judge: a token
remembered here that has gone stale is refused there as ``lease_lost``.
"""

from __future__ import annotations

import fcntl
import json
import os

from coord.fast import board_files

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def _file(board_dir: Path, agent: str) -> Path:
    # Agent names are checked to [A-Za-z0-9._@:+-]; ':' is kept out of file names.
    return board_files.claims_dir(board_dir) / (agent.replace(":", "%3A") + ".json")


def _read(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}


def remembered(board_dir: Path, agent: str, item_id: int | str) -> int | None:
    return _read(_file(board_dir, agent)).get(str(item_id))


def remembered_all(board_dir: Path, agent: str) -> dict[str, int]:
    """Every token remembered for ``agent``, by item id or package key."""
    return _read(_file(board_dir, agent))


def _update(board_dir: Path, agent: str, change: Callable[[dict[str, int]], None]) -> None:
    path = _file(board_dir, agent)
    board_files.private_dir(path.parent)
    lock_fd = board_files.open_private(path.with_suffix(".lock"), os.O_WRONLY)
    with open(lock_fd, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tokens = _read(path)
        change(tokens)
        board_files.write_json_atomic(path, tokens, mode=0o600)


def remember_claim(board_dir: Path, agent: str, claim: dict[str, object]) -> None:
    """A claim's token, under its item id and its package key (`coord done R3` works)."""
    item = claim.get("item")
    key = item.get("key") if isinstance(item, dict) else None

    def keep(tokens: dict[str, int]) -> None:
        for name in (claim["id"], key):
            if name is not None:
                tokens[str(name)] = int(claim["token"])  # type: ignore[call-overload]

    _update(board_dir, agent, keep)


def forget(board_dir: Path, agent: str, *item_refs: int | str | None) -> None:
    def drop(tokens: dict[str, int]) -> None:
        for ref in item_refs:
            if ref is not None:
                tokens.pop(str(ref), None)

    _update(board_dir, agent, drop)
