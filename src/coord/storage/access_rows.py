"""The access_tokens table in both dialects (issue 27): its SQL, with the driver's placeholder,
and its rows as nouns. The secret's hash goes in and is looked up; it never comes out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coord.model import AccessToken

COLUMNS = "id, name, machine, created_at, last_used_at, revoked_at"


def select_by_hash(mark: str) -> str:
    return f"SELECT {COLUMNS} FROM access_tokens WHERE secret_sha256 = {mark}"


SELECT_ALL = f"SELECT {COLUMNS} FROM access_tokens ORDER BY id"
# the first REF_DIGITS of a token's hash name it in GET /v1/identity (the daemon's proof that
# it holds the token, keyed by the whole hash: the prefix alone cannot make it)
REF_DIGITS = 16


def select_by_ref(mark: str) -> str:
    return (
        f"SELECT secret_sha256 FROM access_tokens "
        f"WHERE substr(secret_sha256, 1, {REF_DIGITS}) = {mark} AND revoked_at IS NULL"
    )


def insert(mark: str) -> str:
    return (
        "INSERT INTO access_tokens (name, machine, secret_sha256, created_at) "
        f"VALUES ({mark}, {mark}, {mark}, {mark})"
    )


def revoke(mark: str) -> str:
    # a revoked token stays revoked at its first time: revoking again changes nothing
    return f"UPDATE access_tokens SET revoked_at = {mark} WHERE id = {mark} AND revoked_at IS NULL"


def touch(mark: str) -> str:
    # at most one write a minute per token: a read carrying it is not a write of the board
    return (
        f"UPDATE access_tokens SET last_used_at = {mark} WHERE id = {mark} "
        f"AND (last_used_at IS NULL OR last_used_at < {mark})"
    )


TOUCH_SECONDS = 60.0


def token_of(row: Sequence[Any]) -> AccessToken:
    return AccessToken(
        id=int(row[0]),
        name=row[1],
        machine=bool(row[2]),
        created_at=float(row[3]),
        last_used_at=row[4],
        revoked_at=row[5],
    )
