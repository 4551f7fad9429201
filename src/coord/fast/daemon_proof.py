"""Telling this board's daemon from a stranger on its port, without showing the token.

``.coord/daemon.json`` says where the daemon listens. When the daemon died without removing
it (``kill -9``, a reboot) and its pid and port were taken by another process, a client that
trusted the record would send the board's token to whoever listens there. So before it sends
the token, the client asks ``GET /v1/identity?nonce=N`` (open: no token) and checks the
answer: the daemon proves that it knows the token by answering

    HMAC-SHA256(key: the board's token,
                message: "coord daemon identity v1" LF nonce LF instance LF port)

where ``instance`` is the random id the daemon wrote into its record at start and ``port`` the
port it listens on. A stranger without the token cannot compute it; a fresh nonce per check
makes an old answer worthless; the port in the message makes an answer relayed from a daemon
listening elsewhere fail. The token is the board's own secret, so the proof also names the
board: a daemon of another board answers with another key.

Stdlib only, and no ``hmac``: that module loads OpenSSL through ``hashlib`` (several ms of every
CLI call), while the builtin ``_sha256`` costs a fraction of a millisecond. HMAC is the two
nested hashes of RFC 2104, checked against ``hmac`` in the tests.
"""

from __future__ import annotations

import os

try:
    from _sha256 import sha256
except ImportError:  # Python 3.12 renamed the builtin module _sha2
    try:
        from _sha2 import sha256
    except ImportError:  # a build without either: hashlib, at its OpenSSL cost
        from hashlib import sha256

from _operator import _compare_digest

DOMAIN = "coord daemon identity v1"
NONCE_BYTES = 16
_BLOCK = 64  # SHA-256's block size in bytes
_INNER = bytes(x ^ 0x36 for x in range(256))
_OUTER = bytes(x ^ 0x5C for x in range(256))


def person_key(secret: str) -> str:
    """What a person's or machine's token proves the daemon with: its SHA-256 (hex), which the
    board keeps; ``person_ref`` (its first 16 digits) says which token, and cannot make it."""
    return sha256(secret.encode()).hexdigest()


def person_ref(secret: str) -> str:
    return person_key(secret)[:16]


def new_nonce() -> str:
    return os.urandom(NONCE_BYTES).hex()


def proof(token: str, nonce: str, instance: str, port: int) -> str:
    """What the daemon answers to ``nonce``, as lowercase hex."""
    message = "\n".join((DOMAIN, nonce, instance, str(port))).encode()
    return hmac_sha256(token.encode(), message).hex()


def proves(answer: object, token: str, nonce: str, instance: str, port: int) -> bool:
    """Whether the daemon's answer to ``nonce`` comes from the daemon of ``instance`` on
    ``port`` that holds ``token``."""
    if not isinstance(answer, dict) or answer.get("instance") != instance:
        return False
    given = answer.get("proof")
    return isinstance(given, str) and _compare_digest(
        given.encode("ascii", "replace"), proof(token, nonce, instance, port).encode()
    )


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    """RFC 2104 with SHA-256: ``hmac.digest(key, message, "sha256")``."""
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = sha256(key.translate(_INNER) + message).digest()
    return sha256(key.translate(_OUTER) + inner).digest()
