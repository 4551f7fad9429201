"""Who a request acts as, as the pipeline proved it (issue 27).

``OWNER``: the board's own token (``.coord/token``), whose holder may name any agent — the
name is asserted, not proven. A page session (``coord open --as NAME``), a person's token or
a machine's token (``coord token create``) act as their one name, and every name the request
gives must be it (``pipeline.act_as``).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

BOARD_TOKEN = "board_token"
PAGE = "page"
PERSON_TOKEN = "person_token"
MACHINE_TOKEN = "machine_token"
# what proves the name itself: a token issued for that name (a page's name is its opener's say)
VERIFYING = frozenset({PERSON_TOKEN, MACHINE_TOKEN})


@dataclass(frozen=True, slots=True)
class Actor:
    name: str | None  # None: the owner, who may name any agent
    via: str
    token_id: int | None = None

    @property
    def verified(self) -> bool:
        return self.via in VERIFYING


OWNER = Actor(None, BOARD_TOKEN)
# the daemon answers loopback alone (pipeline.check_host): its caller runs on this machine
MACHINE = socket.gethostname()


def provenance_of(actor: Actor, checkout: str | None, headers: Mapping[str, str]) -> dict[str, Any]:
    """What the events of this request record of who made them. ``checkout``: the one this
    daemon serves. The client and session are the request's own say (X-Coord-Client,
    X-Coord-Session) until sessions have credentials of their own."""
    found: dict[str, Any] = {"verified": actor.verified, "via": actor.via, "machine": MACHINE}
    if checkout:
        found["checkout"] = checkout
    for field in ("client", "session"):
        said = headers.get(f"x-coord-{field}")
        if said:
            found[field] = said[:200]
    return found
