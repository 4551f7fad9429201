"""What the repository's working tree says about a literal path, for the overlap rule.

One reading for the board (``coord.core.reservations``) and the design-document protocol
(``coord.spec.protocol``), so both judge the same paths the same way.
"""

from __future__ import annotations

import os

from coord.fast import fsfold


class WorkingTree:
    """What the repository's working tree says about a literal path: called, is it a plain
    file (rule 1's question); ``is_dir``, is it a directory (the current rule's: every other
    literal is one file, existing or to be created); ``fold``, the key its file system
    compares names by (``coord.fast.fsfold``)."""

    __slots__ = ("fold", "root")

    def __init__(self, root: str, fold: fsfold.Fold = fsfold.nfc) -> None:
        self.root = root
        self.fold = fold

    def __call__(self, path: str) -> bool:
        return os.path.isfile(os.path.join(self.root, path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(os.path.join(self.root, path))
