-- Issue 27: tokens for people and machines, issued by the board's owner. Only the secret's
-- SHA-256 (hex) is kept; a revoked token keeps its row (the list says when), refused.
CREATE TABLE access_tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL,                 -- the one agent name it acts as
    machine       INTEGER NOT NULL DEFAULT 0,       -- 1: a machine's (CI, a bot), 0: a person's
    secret_sha256 TEXT    NOT NULL UNIQUE,
    created_at    REAL    NOT NULL,
    last_used_at  REAL,
    revoked_at    REAL
);

-- Provenance of each event (issue 27): how its actor was known (verified by a token issued
-- for the name, or only asserted), and the machine, checkout, client and session where
-- known, as a JSON object. Events logged before this migration have none (NULL).
ALTER TABLE events ADD COLUMN provenance TEXT;
