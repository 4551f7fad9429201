-- The board: items, their dependencies, threads, acknowledgements, agents and the event log.
-- Times are seconds since the epoch on the daemon's clock (REAL).

CREATE TABLE items (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: ids are never reused
    kind             TEXT    NOT NULL CHECK (kind IN ('task', 'bug', 'note', 'handoff')),
    title            TEXT    NOT NULL,
    body             TEXT    NOT NULL DEFAULT '',
    priority         INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 4),
    labels           TEXT    NOT NULL DEFAULT '[]',      -- JSON array of strings
    state            TEXT    NOT NULL CHECK (state IN ('pending', 'claimed', 'done', 'cancelled')),
    created_by       TEXT    NOT NULL,
    recipient        TEXT,                               -- who a handoff or note is addressed to
    claimed_by       TEXT,
    fencing_token    INTEGER NOT NULL DEFAULT 0,         -- grows with every claim of this item
    lease_expires_at REAL,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    closed_at        REAL,
    CHECK ((state = 'claimed') = (lease_expires_at IS NOT NULL AND claimed_by IS NOT NULL))
);

-- claim-next walks only pending rows, best first; done and claimed rows are not in it.
CREATE INDEX items_pending ON items (priority, id) WHERE state = 'pending';
-- expired leases are found by a range scan over claimed rows only; "what does agent X hold"
-- walks the same (small) index rather than paying for a third index on every claim.
CREATE INDEX items_claimed_lease ON items (lease_expires_at) WHERE state = 'claimed';

CREATE TABLE deps (
    item_id    INTEGER NOT NULL REFERENCES items (id),
    depends_on INTEGER NOT NULL REFERENCES items (id),
    PRIMARY KEY (item_id, depends_on)
) WITHOUT ROWID;
CREATE INDEX deps_reverse ON deps (depends_on, item_id);

CREATE TABLE replies (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id    INTEGER NOT NULL REFERENCES items (id),
    author     TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    created_at REAL    NOT NULL
);
CREATE INDEX replies_item ON replies (item_id, id);
CREATE INDEX replies_author ON replies (author, item_id);

CREATE TABLE acks (
    item_id    INTEGER NOT NULL REFERENCES items (id),
    agent      TEXT    NOT NULL,
    created_at REAL    NOT NULL,
    PRIMARY KEY (item_id, agent)
) WITHOUT ROWID;

CREATE TABLE agents (
    name       TEXT    PRIMARY KEY,
    first_seen REAL    NOT NULL,
    last_seen  REAL    NOT NULL,
    inbox_seq  INTEGER NOT NULL DEFAULT 0               -- last event seq shown by `coord inbox`
) WITHOUT ROWID;

-- Append-only: rows are inserted in write transactions, never updated or deleted.
-- AUTOINCREMENT inside serialised transactions gives gapless, increasing sequence numbers.
CREATE TABLE events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL    NOT NULL,
    agent   TEXT,
    item_id INTEGER,
    kind    TEXT    NOT NULL,
    details TEXT    NOT NULL DEFAULT '{}'                -- JSON object
);
CREATE INDEX events_item ON events (item_id, seq);

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE (ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE (ABORT, 'the event log is append-only'); END;
