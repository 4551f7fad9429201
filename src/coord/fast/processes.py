"""Whether a process recorded in a file (the daemon, an agent's client) still runs."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` names a running process, ours or someone else's."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive all the same
    return True


def wait_for_daemon_exit(board_dir: Path, pid: int | None, timeout: float) -> bool:
    """Wait until no daemon holds the board's ``daemon.lock`` and process ``pid`` has ended;
    False when ``timeout`` passed first.

    The lock first: a daemon holds its ``flock`` until its last step (the board closed,
    ``daemon.json`` removed), and the kernel drops it when the process dies however it dies,
    so a lock that can be taken is held by no daemon even if ``pid`` was reused. Then the
    process, so that "stopped" means gone from the process table too.

    A ``pid`` that has ended is gone with its lock whoever holds the lock now: a command that
    starts a daemon on demand (a ``coord log --follow``) may take it the moment it is free,
    and waiting for it to be free again would wait for the wrong daemon.
    """
    import fcntl
    import time

    deadline = time.monotonic() + timeout
    try:
        fd = os.open(board_dir / "daemon.lock", os.O_RDWR)
    except FileNotFoundError:
        return True  # no daemon ever ran here
    try:
        while True:
            if pid is not None and (not alive(pid) or _ended(pid)):
                return True
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
                if pid is None:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
    finally:
        os.close(fd)


def _ended(pid: int) -> bool:
    """A zombie: the process has exited and waits for its parent to collect it (Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
