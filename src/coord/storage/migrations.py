"""Forward-only schema migrations, shipped as numbered SQL files beside each backend.

Each backend applies them in its own transaction and records them in its own
``schema_migrations`` table; what ships and what a newer board means is said here once.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from coord.errors import CoordError


def shipped(folder: str) -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration in ``coord/storage/<folder>``, in order."""
    found = []
    for entry in resources.files("coord.storage").joinpath(folder).iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def refuse_newer(applied: Iterable[int], shipped: list[tuple[int, str, str]]) -> None:
    """A board written by a newer coord is refused, never misread."""
    newest_applied = max(applied, default=0)
    newest = max((version for version, _, _ in shipped), default=0)
    if newest_applied > newest:
        raise CoordError(
            f"this board was written by a newer coord (schema {newest_applied}; this "
            f"release knows up to {newest}): upgrade coord",
        )
