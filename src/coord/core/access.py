"""People's and machines' tokens (issue 27): issued by the board's owner, shown once, kept
only as a SHA-256, revocable. A request that carries one acts as its name alone.

The secret is 32 random bytes (``secrets.token_urlsafe``), prefixed ``coord_`` so a leaked
one is recognisable in a log or a scanner; nothing but its hash is written anywhere. Looking
one up reads the table on every request, so a revocation holds at once on every daemon of a
team board (there is no cache to outlive it).
"""

from __future__ import annotations

import hashlib
import secrets

from coord import model
from coord.core.context import BoardContext
from coord.errors import InvalidInput, NotFound
from coord.model import AccessToken

PREFIX = "coord_"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Access:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def issue(self, name: str, *, machine: bool = False) -> tuple[AccessToken, str]:
        """A new token for ``name``: the record, and the secret (its only appearance)."""
        name = model.check_agent(name)
        secret = PREFIX + secrets.token_urlsafe(32)
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            token_id = tx.insert_access_token(name, machine, digest(secret), now)
            self.ctx.changes.record(
                tx, name, None, "token_created", now, {"token_id": token_id, "machine": machine}
            )
        return AccessToken(token_id, name, machine, now), secret

    def issued(self) -> list[AccessToken]:
        with self.ctx.storage.read() as tx:
            return tx.access_tokens()

    def revoke(self, which: str | int) -> list[AccessToken]:
        """Revoke the token with this id, or every live token of this name; what was revoked."""
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            live = [t for t in tx.access_tokens() if t.revoked_at is None]
            text = str(which)
            chosen = [t for t in live if str(t.id) == text or t.name == text]
            if not chosen:
                known = ", ".join(f"{t.id} ({t.name})" for t in live) or "none"
                raise NotFound(
                    f"no live token {text!r} to revoke: give a token's id or name "
                    f"(`coord token list`; live now: {known})",
                    token=text,
                )
            for token in chosen:
                tx.revoke_access_token(token.id, now)
                token.revoked_at = now
                self.ctx.changes.record(
                    tx, token.name, None, "token_revoked", now, {"token_id": token.id}
                )
        return chosen

    def holder(self, secret: str) -> AccessToken | None:
        """The live token whose secret this is, its use noted; None for anything else."""
        if not secret.startswith(PREFIX):
            return None  # not one of ours: no query, no hash
        hashed = digest(secret)
        with self.ctx.storage.read() as tx:
            found = tx.access_token(hashed)
            if found is None or found.revoked_at is not None:
                return None
            now = self.ctx.now(tx)
        if found.last_used_at is None or now - found.last_used_at >= 60:
            with self.ctx.storage.write() as tx:
                tx.touch_access_token(found.id, now)
        return found

    def proof_key(self, ref: str) -> str | None:
        """The key of the identity proof for the token ``ref`` names (``daemon_proof``)."""
        with self.ctx.storage.read() as tx:
            return tx.access_token_hash(ref)


def check_which(value: object) -> str | int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise InvalidInput("say which token: its id or its name (`coord token list`)", field="which")
