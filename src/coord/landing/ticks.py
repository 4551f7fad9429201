"""What a landing adds to the tree it lands: the package's box ticked in its design document.

The protocol coord implements ends "the implementation's PR removes its reservation and
ticks the box". When coord lands a package's branch it does that as part of what lands, in
the same compare-and-set of main: the document on main says done only for code on main. The
package's unticked box becomes ``[x]`` and every ``**Reserved: ID by @user.**`` of it goes
(``coord.spec.edit``, the one ticker ``coord spec sync`` and ``coord git done`` use, which
keeps every other byte). A document the branch already ticked, or a package it does not
hold, is left as it is.
"""

from __future__ import annotations

from pathlib import Path

from coord.spec import edit
from coord.spec.parse import parse


def ticked(text: str, doc_path: str, package_id: str) -> str:
    """``text`` with ``package_id``'s box ticked and its reservation lines removed."""
    document = parse(text, doc_path)
    package = document.package(package_id)
    if package is None:
        return text
    new = text if package.done else edit.tick(text, [(package.line, package_id)])
    targets: list[tuple[int, str, str | None]] = [
        (r.line, package_id, None)
        for r in document.reservations
        if r.package == package_id and r.source is None
    ]
    return edit.unreserve(new, targets) if targets else new


def tick_in(tree: Path, doc_path: str, package_id: str) -> bool:
    """Tick the package in the document at ``tree/doc_path``; True if the file changed."""
    path = tree / doc_path
    try:
        raw = path.read_bytes()
    except OSError:
        return False  # the branch removed or moved it: nothing to tick here
    text = raw.decode("utf-8")
    new = ticked(text, doc_path, package_id)
    if new == text:
        return False
    path.write_bytes(new.encode("utf-8"))
    return True
