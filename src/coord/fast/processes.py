"""Whether a process recorded in a file (the daemon, an agent's client) still runs."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while ``pid`` names a running process, ours or someone else's."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive all the same
    return True
