-- SQLite's migration 0012 in PostgreSQL's words (issue 26): the waiters' queue, each place
-- leased, and the asks addressed to holders.
CREATE TABLE waits (
    id            BIGSERIAL        PRIMARY KEY,          -- arrival order
    agent         TEXT             NOT NULL,
    item_id       BIGINT,
    patterns      TEXT             NOT NULL DEFAULT '[]', -- JSON array
    lease_seconds DOUBLE PRECISION NOT NULL,
    created_at    DOUBLE PRECISION NOT NULL,
    expires_at    DOUBLE PRECISION NOT NULL,
    state         TEXT             NOT NULL DEFAULT 'waiting'
                  CHECK (state IN ('waiting', 'granted', 'cancelled', 'gone')),
    ended_at      DOUBLE PRECISION,
    token         BIGINT,
    outcome       TEXT             NOT NULL DEFAULT '',
    CHECK ((item_id IS NULL) <> (patterns = '[]'))
);
CREATE INDEX waits_waiting ON waits (id) WHERE state = 'waiting';

CREATE TABLE asks (
    id             BIGSERIAL        PRIMARY KEY,
    asker          TEXT             NOT NULL,
    holder         TEXT             NOT NULL,
    item_id        BIGINT,
    token          BIGINT,
    patterns       TEXT             NOT NULL DEFAULT '[]',
    reason         TEXT             NOT NULL,
    created_at     DOUBLE PRECISION NOT NULL,
    expires_at     DOUBLE PRECISION NOT NULL,
    answer         TEXT             CHECK (answer IN ('release', 'defer')),
    answer_reason  TEXT             NOT NULL DEFAULT '',
    deferred_until DOUBLE PRECISION,
    answered_at    DOUBLE PRECISION
);
CREATE INDEX asks_open ON asks (holder, id) WHERE answer IS NULL;
