"""The file `coord open` hands the browser: a page only its owner may read that goes on to
the one-time link, so the code is never on a command line.

A browser is started with the address it should open as an argument, and every process's
arguments are in ``/proc/PID/cmdline``, which every user of the machine may read: the link
itself (``/?code=…``) there was another user's way in. So the daemon writes the link into
``.coord/open/<random>.html`` (the directory 0700, the file 0600, as the board's own files)
and the browser is given that file's ``file://`` address, which tells nothing. The page
sends the browser on at once (a meta refresh, and a script where refreshes are blocked), as
Jupyter's ``jupyter notebook`` does with its ``nbserver-*-open.html``. In the board directory
rather than under ``~/.local``: a snap-confined browser may not read the hidden directories
at the top of a home directory.

The file is deleted when its code is redeemed or expires, when the daemon stops, and (for a
daemon killed before it could) by the next one that writes such a file.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import secrets
import time
from pathlib import Path

HANDOFF_DIR = "open"  # inside the board directory
SUFFIX = ".html"


def write(directory: Path, url: str) -> Path:
    """A new file in ``directory`` (made 0700, and kept so) that sends a browser to ``url``."""
    directory.mkdir(mode=0o700, exist_ok=True)
    directory.chmod(0o700)  # made by hand or by an older coord: ours alone all the same
    path = directory / f"{secrets.token_hex(16)}{SUFFIX}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(_page(url))
    return path


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def remove_stale(directory: Path, older_than: float) -> None:
    """Files older than ``older_than`` seconds: left by a daemon that died before it could
    remove them (their codes died with it)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    limit = time.time() - older_than
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.name.endswith(SUFFIX) and entry.stat().st_mtime < limit:
                os.unlink(entry.path)


def _page(url: str) -> str:
    attribute = html.escape(url, quote=True)
    # JSON inside <script> ends at "</": "<" escaped cannot end it, and reads back the same
    script = json.dumps(url).replace("<", "\\u003c")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="0;url={attribute}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        "<title>coord: opening the live board</title></head>\n"
        f'<body><p>Opening <a href="{attribute}">the live board</a>…</p>\n'
        f"<script>location.replace({script});</script></body></html>\n"
    )
