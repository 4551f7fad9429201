"""How a person's browser reaches the board without the token: a one-time code, then a cookie.

``coord open`` asks the daemon (with the token) for a code; the browser brings it to ``/?code=``
once, within ``CODE_SECONDS``, and gets a session cookie instead: HttpOnly (no script reads
it), SameSite=Strict (no other site's page sends it), Path=/. The cookie is signed, not looked
up: an HMAC keyed by a key derived from the board's token (``.coord/token``, the owner's
alone), so a session outlives a daemon restart (the page reconnects and goes on) and ends when
the token changes or after ``SESSION_SECONDS``. Codes live in memory only: a restart forgets
the few unredeemed ones, and ``coord open`` prints a new one.

A session acts as one person (``--as NAME``): a body's ``agent`` must be that name. Every
request that is not a read carries the session's CSRF token (``X-Coord-CSRF``, which the page
gets inside the HTML) and an ``Origin`` that is the daemon's own; a read with an ``Origin``
must name the daemon too. The board's token (``Authorization: Bearer``) is untouched by all
of this: CLI, MCP and agents go on as before.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coord.errors import ForeignOrigin, Unauthorized, WrongCsrf

CODE_SECONDS = 60.0
SESSION_SECONDS = 12 * 3600.0
CSRF_HEADER = "x-coord-csrf"
# Unredeemed codes kept at once: `coord open` needs the token, so this bounds only a mistake
# (a script calling it in a loop), never an attacker.
MAX_CODES = 256
RUN_OPEN = "run `coord open` in the repository for a new link"


@dataclass(frozen=True, slots=True)
class Session:
    """A browser's session: whom it acts as, until when, and its id (the CSRF token's seed)."""

    name: str
    expires_at: float
    sid: str


def cookie_name(host: str) -> str:
    """One cookie per port: browsers share cookies across ports of one host, and each board's
    daemon has its own port (and its own key)."""
    _, _, port = host.rpartition(":")
    return f"coord_{port}" if port.isdigit() else "coord"


class WebAccess:
    """The codes waiting to be redeemed and the key that signs sessions."""

    def __init__(self, write_token: str, clock: Callable[[], float] = time.time) -> None:
        self._key = hmac.new(write_token.encode(), b"coord web session v1", "sha256").digest()
        self._codes: dict[bytes, tuple[str, str, float]] = {}  # sha256 -> (code, name, end)
        self._clock = clock

    # --- one-time codes --------------------------------------------------------------------

    def issue_code(self, name: str) -> tuple[str, float]:
        now = self._clock()
        self._codes = {h: c for h, c in self._codes.items() if c[2] > now}
        while len(self._codes) >= MAX_CODES:  # the oldest goes first (dicts keep order)
            del self._codes[next(iter(self._codes))]
        code = secrets.token_urlsafe(24)
        expires_at = now + CODE_SECONDS
        self._codes[_digest(code)] = (code, name, expires_at)
        return code, expires_at

    def redeem(self, code: str) -> str:
        """The name a code was issued for; the code is spent whether it was still good or not.
        Looked up by its hash and compared in constant time: timing tells nothing of it."""
        entry = self._codes.pop(_digest(code), None)
        if entry is None or not hmac.compare_digest(entry[0].encode(), code.encode()):
            raise Unauthorized(f"this link's code is unknown or was used already; {RUN_OPEN}")
        if entry[2] <= self._clock():
            raise Unauthorized(
                f"this link's code expired (a code is good for {CODE_SECONDS:g} s); {RUN_OPEN}"
            )
        return entry[1]

    # --- sessions --------------------------------------------------------------------------

    def new_session(self, name: str) -> tuple[Session, str]:
        """A session for ``name`` and its cookie value."""
        session = Session(name, self._clock() + SESSION_SECONDS, secrets.token_urlsafe(16))
        payload = _b64(json.dumps([session.name, session.expires_at, session.sid]).encode())
        return session, f"{payload}.{self._sign(payload.encode())}"

    def session(self, value: str) -> Session:
        """The session a cookie value stands for; refused if forged, torn or expired."""
        payload, _, signature = value.partition(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload.encode()).encode()):
            raise Unauthorized(
                f"this page's session is not valid for this board (the board's token changed, "
                f"or the cookie is not this daemon's); {RUN_OPEN}"
            )
        name, expires_at, sid = json.loads(_unb64(payload))
        if expires_at <= self._clock():
            raise Unauthorized(
                f"this page's session ended (sessions last {SESSION_SECONDS / 3600:g} hours); "
                f"{RUN_OPEN}"
            )
        return Session(name, expires_at, sid)

    def csrf_token(self, session: Session) -> str:
        return self._sign(b"csrf:" + session.sid.encode())

    def cookie_header(self, host: str, value: str, max_age: float = SESSION_SECONDS) -> str:
        return (
            f"{cookie_name(host)}={value}; Max-Age={int(max_age)}; Path=/; HttpOnly; "
            "SameSite=Strict"
        )

    def from_cookie(self, host: str, cookies: str) -> Session | None:
        """The session of a request's Cookie header, or None when it carries none."""
        wanted = cookie_name(host)
        for part in cookies.split(";"):
            key, _, value = part.strip().partition("=")
            if key == wanted:
                return self.session(value)
        return None

    def check_request(
        self, session: Session, host: str, headers: Mapping[str, str], reads: bool
    ) -> None:
        """A request on a session's strength: its Origin, and unless it only reads, its CSRF
        token. A missing Origin is a browser's same-origin read (no browser sends a state
        change without one)."""
        origin = headers.get("origin")
        if origin is None and not reads:
            raise ForeignOrigin(
                "a change made with the page's session must come from the page: this request "
                "has no Origin header"
            )
        if origin is not None and origin != f"http://{host}":
            raise ForeignOrigin(
                f"a request from {origin!r} may not use this board's page session; only the "
                f"page at http://{host}/ may"
            )
        if reads:
            return
        given = headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.csrf_token(session).encode()):
            raise WrongCsrf(
                f"missing or wrong {CSRF_HEADER} header: a change made with the page's session "
                "must carry the token the page was served with; reload the page"
            )

    def _sign(self, data: bytes) -> str:
        return _b64(hmac.new(self._key, data, "sha256").digest())


def _digest(code: str) -> bytes:
    return hashlib.sha256(code.encode()).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> Any:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
