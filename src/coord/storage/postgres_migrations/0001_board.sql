-- The whole board as SQLite's migrations 0001-0007 leave it, in PostgreSQL's words: the same
-- tables, columns and meaning, so one contract suite holds for both. Forward-only from here;
-- the numbering is PostgreSQL's own (schema_migrations in this database).
-- Times are seconds since the epoch on the database server's clock (double precision).

-- One row of counters, written only inside the board's serialised write transactions: event
-- sequence numbers and item ids come from here, not from sequences, because a sequence keeps
-- the numbers a rolled-back transaction took (gaps) and hands them out in start order, not in
-- commit order. The row lock is held to commit, so numbers follow commit order.
CREATE TABLE board_counters (
    one       BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    last_seq  BIGINT  NOT NULL DEFAULT 0,
    last_item BIGINT  NOT NULL DEFAULT 0
);
INSERT INTO board_counters DEFAULT VALUES;

CREATE TABLE items (
    id               BIGINT  PRIMARY KEY,                -- from board_counters: never reused
    kind             TEXT    NOT NULL CHECK (kind IN ('task', 'bug', 'note', 'handoff')),
    title            TEXT    NOT NULL,
    body             TEXT    NOT NULL DEFAULT '',
    priority         INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 4),
    labels           JSONB   NOT NULL DEFAULT '[]',      -- array of strings, in order
    state            TEXT    NOT NULL CHECK (state IN ('pending', 'claimed', 'done', 'cancelled')),
    created_by       TEXT    NOT NULL,
    recipient        TEXT,                               -- who a handoff or note is addressed to
    claimed_by       TEXT,
    fencing_token    BIGINT  NOT NULL DEFAULT 0,         -- grows with every claim of this item
    lease_expires_at DOUBLE PRECISION,
    created_at       DOUBLE PRECISION NOT NULL,
    updated_at       DOUBLE PRECISION NOT NULL,
    closed_at        DOUBLE PRECISION,
    key              TEXT,                               -- the work package id (R3)
    spec             TEXT,                               -- its design document
    spec_line        INTEGER,
    checks           JSONB   NOT NULL DEFAULT '[]',      -- commands that must pass before done
    evidence         JSON,                               -- their last run (key order kept)
    question         TEXT,                               -- needs_human
    escalate_to      TEXT,
    reserved_for     TEXT,                               -- reserved in the document for
    CHECK ((state = 'claimed') = (lease_expires_at IS NOT NULL AND claimed_by IS NOT NULL))
);
-- claim-next walks only pending rows, best first; done and claimed rows are not in it.
CREATE INDEX items_pending ON items (priority, id) WHERE state = 'pending';
CREATE INDEX items_claimed_lease ON items (lease_expires_at) WHERE state = 'claimed';
CREATE UNIQUE INDEX items_key ON items (key) WHERE key IS NOT NULL;
CREATE INDEX items_spec ON items (spec, key) WHERE spec IS NOT NULL;
CREATE INDEX items_needs_human ON items (id) WHERE question IS NOT NULL;

CREATE TABLE deps (
    item_id    BIGINT NOT NULL REFERENCES items (id),
    depends_on BIGINT NOT NULL REFERENCES items (id),
    PRIMARY KEY (item_id, depends_on)
);
CREATE INDEX deps_reverse ON deps (depends_on, item_id);

CREATE TABLE replies (
    id         BIGSERIAL PRIMARY KEY,
    item_id    BIGINT NOT NULL REFERENCES items (id),
    author     TEXT   NOT NULL,
    body       TEXT   NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX replies_item ON replies (item_id, id);
CREATE INDEX replies_author ON replies (author, item_id);

CREATE TABLE acks (
    item_id    BIGINT NOT NULL REFERENCES items (id),
    agent      TEXT   NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (item_id, agent)
);

CREATE TABLE agents (
    name       TEXT   PRIMARY KEY,
    first_seen DOUBLE PRECISION NOT NULL,
    last_seen  DOUBLE PRECISION NOT NULL,
    inbox_seq  BIGINT NOT NULL DEFAULT 0               -- last event seq shown by `coord inbox`
);

-- Append-only: rows are inserted in write transactions, never updated or deleted.
CREATE TABLE events (
    seq     BIGINT PRIMARY KEY,                        -- from board_counters: gapless
    at      DOUBLE PRECISION NOT NULL,
    agent   TEXT,
    item_id BIGINT,
    kind    TEXT   NOT NULL,
    details JSON   NOT NULL DEFAULT '{}'               -- object, key order kept
);
CREATE INDEX events_item ON events (item_id, seq);

CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only';
END
$$;
CREATE TRIGGER events_append_only_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();

-- File reservations. A reservation counts while expires_at > now (the server's clock).
CREATE TABLE reservations (
    id         BIGSERIAL PRIMARY KEY,
    agent      TEXT    NOT NULL,
    pattern    TEXT    NOT NULL,                      -- canonical, repository-relative
    -- its leading literal directories; byte order, because the "near" query reads the
    -- prefixes beneath one as the range [prefix/, prefix0) ('0' follows '/')
    prefix     TEXT    COLLATE "C" NOT NULL,
    exclusive  INTEGER NOT NULL CHECK (exclusive IN (0, 1)),
    item_id    BIGINT  REFERENCES items (id),         -- freed with that item's claim
    reason     TEXT    NOT NULL DEFAULT '',
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    rule       INTEGER NOT NULL DEFAULT 1             -- the overlap rule it was granted under
);
CREATE INDEX reservations_expiry ON reservations (expires_at);
CREATE INDEX reservations_agent ON reservations (agent, pattern);
CREATE INDEX reservations_item ON reservations (item_id) WHERE item_id IS NOT NULL;
CREATE INDEX reservations_prefix ON reservations (prefix);

CREATE TABLE item_files (
    item_id BIGINT NOT NULL REFERENCES items (id),
    pattern TEXT   COLLATE "C" NOT NULL,                -- read back in byte order, as SQLite's
    PRIMARY KEY (item_id, pattern)
);
