-- SQLite's migration 0013 in PostgreSQL's words (issue 27): tokens for people and machines.
-- Every daemon of a team board reads this table on each request that carries one, so a
-- revocation holds on all of them at once.
CREATE TABLE access_tokens (
    id            BIGSERIAL PRIMARY KEY,
    name          TEXT             NOT NULL,
    machine       BOOLEAN          NOT NULL DEFAULT FALSE,
    secret_sha256 TEXT             NOT NULL UNIQUE,
    created_at    DOUBLE PRECISION NOT NULL,
    last_used_at  DOUBLE PRECISION,
    revoked_at    DOUBLE PRECISION
);

-- Provenance of each event, as SQLite's migration 0013 has it: NULL before this migration.
ALTER TABLE events ADD COLUMN provenance JSON;
