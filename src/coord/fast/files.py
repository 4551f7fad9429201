"""Writing a file so that a reader sees the old bytes or the new ones, never half of either.

Every file coord writes in place (the board's config and records, a design document it ticks,
a client's config it wires, a git object it keeps) goes through here: a temporary file beside
the target, then one ``os.replace``.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` by ``data``. ``mode``: the new file's permissions; None keeps the
    current file's (0o644 for a new one). A symlink is written through, not replaced."""
    target = path.resolve() if path.is_symlink() else path
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    tmp = target.with_name(f".{target.name}.coord-{os.getpid()}.tmp")
    # created 0600 and widened only once whole: nobody reads a token through a loose mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
