"""The ``apply_patch`` format (Codex's edit tool, also run from a shell heredoc): the files
a patch writes are named on its ``*** Add File:``, ``*** Update File:``, ``*** Delete File:``
and ``*** Move to:`` lines.

Stdlib only: it runs before every edit.
"""

from __future__ import annotations

import re

_PATCH_LINE = re.compile(r"^\s*\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$")


def paths(text: str) -> list[str]:
    """The paths an ``apply_patch`` patch adds, updates, deletes or moves to, in order."""
    found: list[str] = []
    for line in text.splitlines():
        match = _PATCH_LINE.match(line)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found
