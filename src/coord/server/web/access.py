"""How a person's browser reaches the board without the token: a one-time code, then a session
that only this daemon process accepts, carried in a header, never in a cookie.

``coord open`` asks the daemon (with the token) for a code, good once within ``CODE_SECONDS``
(``handoff.py``: how it reaches the browser without a command line). The page at ``/?code=``
trades it for a session value, which the page's script keeps (in memory and in the tab's
``sessionStorage``, which is per origin: scheme, host *and* port) and sends as
``X-Coord-Session`` on every request.

Why no cookie. Cookies are not scoped by port (RFC 6265 §8.5): one set by the daemon at
``127.0.0.1:8123`` goes with every request the browser makes to ``127.0.0.1`` on any port, to
whoever listens there: another user's server on another port, or the program that took this
daemon's port once it stopped, to which the page, reconnecting, would hand it at once. A
cookie's name cannot help (the browser sends them all), nor ``HttpOnly`` and ``SameSite`` (a
page served from the same host is the same site). So the session is a header the page's own
script adds, and only after the daemon at its port proved who it is; the page sends no
cookie at all (``credentials: "omit"``). Nothing reaches another listener unasked.

Why per daemon process. The value is signed (HMAC-SHA256) with a random key each daemon
process makes at start and keeps in memory only; codes too live in memory only. A value or a
code taken anywhere is refused by every other daemon, the same board's next one included:
after a restart, whatever a squatter on the old port collected opens nothing, and the page
says to run ``coord open`` again. A session also ends after ``SESSION_SECONDS``.

How the page knows its daemon. After any disconnect, and before its first request, the page
asks ``GET /v1/web/proof?session=P&nonce=N`` with no credentials, ``P`` being the part of its
value before the dot (whom it acts as, until when, a random id: no secret) and ``N`` fresh
random hex. The daemon answers ``HMAC-SHA256(key: the value's signature, message: DOMAIN LF
N)``; the page, which holds the signature, checks it. Only the daemon process that signed the
value can compute the signature, so a stranger on the port (or the board's next daemon)
fails, learns ``P`` and ``N`` only, and gets nothing else: the page stops and says why. (Had
the daemon stopped between a proof and the page's next request, and a stranger bound the
port at once, that request's session would reach it: worthless, its daemon being gone.) This
is the page's counterpart of the CLI's ``/v1/identity`` (``coord.fast.daemon_proof``), which
it cannot use: the page has no token.

A session acts as one person (``--as NAME``): a body's ``agent`` must be that name. A request
with an ``Origin`` must name the daemon, and a change must carry one (what every browser
sends). The board's token (``Authorization: Bearer``) is untouched by all of this: CLI, MCP
and agents go on as before.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from coord.errors import ForeignOrigin, InvalidInput, Unauthorized
from coord.server.web import handoff

CODE_SECONDS = 60.0
SESSION_SECONDS = 12 * 3600.0
SESSION_HEADER = "x-coord-session"
PROOF_DOMAIN = "coord page identity v1"
# Unredeemed codes kept at once: `coord open` needs the token, so this bounds only a mistake
# (a script calling it in a loop), never an attacker.
MAX_CODES = 256
RUN_OPEN = "run `coord open` in the repository for a new link"
_PAYLOAD = re.compile(r"[A-Za-z0-9_-]{1,1024}")
_NONCE = re.compile(r"[0-9a-f]{16,128}")


@dataclass(frozen=True, slots=True)
class Session:
    """A browser's session: whom it acts as, until when, and a random id."""

    name: str
    expires_at: float
    sid: str


class _Code(NamedTuple):
    code: str
    name: str
    expires_at: float
    file: Path | None  # the browser's hand-off file (handoff.py), removed with the code


def _timer(seconds: float, then: Callable[[], None]) -> None:
    timer = threading.Timer(seconds, then)
    timer.daemon = True
    timer.start()


class WebAccess:
    """This daemon process's codes waiting to be redeemed and the key that signs sessions.
    ``handoff_dir``: where the browser's hand-off files go (None: nowhere, `coord open` then
    prints the link only); ``later(seconds, f)`` runs ``f`` after a while (a timer thread)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        handoff_dir: Path | None = None,
        later: Callable[[float, Callable[[], None]], None] = _timer,
    ) -> None:
        self._key = secrets.token_bytes(32)  # this process's alone, never written anywhere
        self._codes: dict[bytes, _Code] = {}  # by the code's sha256
        self._lock = threading.Lock()  # codes are swept from the timer's thread too
        self._clock = clock
        self._later = later
        self.handoff_dir = handoff_dir

    # --- one-time codes --------------------------------------------------------------------

    def issue_code(self, name: str) -> tuple[str, float]:
        code = secrets.token_urlsafe(24)
        expires_at = self._clock() + CODE_SECONDS
        with self._lock:
            self._sweep()
            while len(self._codes) >= MAX_CODES:  # the oldest goes first (dicts keep order)
                self._drop(next(iter(self._codes)))
            self._codes[_digest(code)] = _Code(code, name, expires_at, None)
        return code, expires_at

    def hand_off(self, code: str, url: str) -> Path:
        """A file only this user may read that sends a browser to ``url`` (the link with
        ``code``); removed when the code is redeemed or expires (handoff.py)."""
        if self.handoff_dir is None:
            raise InvalidInput(
                "this daemon has no board directory to write the browser's file in; run "
                "`coord open --no-browser` and open the link it prints yourself"
            )
        handoff.remove_stale(self.handoff_dir, CODE_SECONDS)
        path = handoff.write(self.handoff_dir, url)
        with self._lock:
            entry = self._codes.get(_digest(code))
            if entry is not None:
                self._codes[_digest(code)] = entry._replace(file=path)
        if entry is None:  # spent or swept meanwhile
            handoff.remove(path)
            raise InvalidInput(f"the code expired before its file was written; {RUN_OPEN}")
        self._later(CODE_SECONDS + 1, self.sweep)
        return path

    def redeem(self, code: str) -> str:
        """The name a code was issued for; the code is spent whether it was still good or not.
        Looked up by its hash and compared in constant time: timing tells nothing of it."""
        with self._lock:
            entry = self._drop(_digest(code))
        if entry is None or not hmac.compare_digest(entry.code.encode(), code.encode()):
            raise Unauthorized(
                f"this link's code is unknown or was used already (a code works once, with the "
                f"daemon that made it); {RUN_OPEN}"
            )
        if entry.expires_at <= self._clock():
            raise Unauthorized(
                f"this link's code expired (a code is good for {CODE_SECONDS:g} s); {RUN_OPEN}"
            )
        return entry.name

    def sweep(self) -> None:
        """Forget the codes that expired, and remove their files."""
        with self._lock:
            self._sweep()

    def close(self) -> None:
        """The daemon stops: every code goes, and every file with it."""
        with self._lock:
            for digest in list(self._codes):
                self._drop(digest)

    def _sweep(self) -> None:
        now = self._clock()
        for digest in [d for d, entry in self._codes.items() if entry.expires_at <= now]:
            self._drop(digest)

    def _drop(self, digest: bytes) -> _Code | None:
        entry = self._codes.pop(digest, None)
        if entry is not None and entry.file is not None:
            handoff.remove(entry.file)
        return entry

    # --- sessions --------------------------------------------------------------------------

    def new_session(self, name: str) -> tuple[Session, str]:
        """A session for ``name`` and its value (``X-Coord-Session``)."""
        session = Session(name, self._clock() + SESSION_SECONDS, secrets.token_urlsafe(16))
        payload = _b64(json.dumps([session.name, session.expires_at, session.sid]).encode())
        return session, f"{payload}.{self._sign(payload)}"

    def session(self, value: str) -> Session:
        """The session a value stands for; refused if forged, torn, another daemon's or
        expired."""
        payload, _, signature = value.partition(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            raise Unauthorized(
                "this page's session is not this daemon's: the daemon was restarted since the "
                f"page was opened, or the session was made elsewhere; {RUN_OPEN}"
            )
        name, expires_at, sid = json.loads(_unb64(payload))
        if expires_at <= self._clock():
            raise Unauthorized(
                f"this page's session ended (sessions last {SESSION_SECONDS / 3600:g} hours); "
                f"{RUN_OPEN}"
            )
        return Session(name, expires_at, sid)

    def from_headers(self, headers: Mapping[str, str]) -> Session | None:
        """The session a request carries, or None when it carries none."""
        value = headers.get(SESSION_HEADER)
        return None if value is None else self.session(value)

    def proof(self, payload: str, nonce: str) -> str:
        """What this daemon answers the page that holds a session whose value starts with
        ``payload``: an HMAC of ``nonce`` keyed by that value's signature (module doc)."""
        if not _PAYLOAD.fullmatch(payload):
            raise InvalidInput(
                "session must be the part of the page's session before the dot", field="session"
            )
        if not _NONCE.fullmatch(nonce):
            raise InvalidInput(
                "nonce must be 16 to 128 lowercase hex digits, chosen at random by the caller",
                field="nonce",
            )
        key = _unb64(self._sign(payload))
        return hmac.new(key, f"{PROOF_DOMAIN}\n{nonce}".encode(), "sha256").hexdigest()

    def check_request(self, host: str, headers: Mapping[str, str], reads: bool) -> None:
        """A request on a session's strength: an Origin, where there is one, must be the
        daemon's own, and a change must have one (no browser sends a change without)."""
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

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), "sha256").digest())


def legacy_cookie_reset(host: str) -> str:
    """A Set-Cookie that ends the session cookie an older coord gave this port's page
    (``coord_PORT``): no daemon takes it any more, and a browser would go on sending it to
    every port of the host."""
    _, _, port = host.rpartition(":")
    name = f"coord_{port}" if port.isdigit() else "coord"
    return f"{name}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"


def _digest(code: str) -> bytes:
    return hashlib.sha256(code.encode()).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> Any:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
