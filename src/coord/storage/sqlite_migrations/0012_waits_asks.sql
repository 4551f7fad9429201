-- Issue 26, waiting and asking. A waiter's place in the queue for an item or for paths,
-- first come first served (by id); the place is leased (expires_at, renewed by the waiter's
-- heartbeat): past it the waiter lost its place and blocks nobody. A release, a lapse or an
-- unreserve grants the first live waiter in the same transaction ('granted', with the
-- claim's token for an item).
CREATE TABLE waits (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,  -- arrival order: never reused
    agent         TEXT    NOT NULL,
    item_id       INTEGER,                            -- waits for a claim of this item, or
    patterns      TEXT    NOT NULL DEFAULT '[]',      -- for these paths (JSON array), held whole
    lease_seconds REAL    NOT NULL,                   -- the granted claim's or hold's lease
    created_at    REAL    NOT NULL,
    expires_at    REAL    NOT NULL,                   -- the place's own lease
    state         TEXT    NOT NULL DEFAULT 'waiting'
                  CHECK (state IN ('waiting', 'granted', 'cancelled', 'gone')),
    ended_at      REAL,
    token         INTEGER,                            -- a granted claim's fencing token
    outcome       TEXT    NOT NULL DEFAULT '',        -- why it ended, in words
    CHECK ((item_id IS NULL) != (patterns = '[]'))
);
-- the queue: only the waiting rows, in arrival order
CREATE INDEX waits_waiting ON waits (id) WHERE state = 'waiting';

-- An ask: one agent asks the holder of an item (or of paths) to let go. It reaches the
-- holder (its inbox, its next hook's context); the holder answers release or defer. Nothing
-- shortens the holder's lease. Unanswered past expires_at it has timed out (the board's
-- clock judges it, as it judges leases).
CREATE TABLE asks (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    asker          TEXT    NOT NULL,
    holder         TEXT    NOT NULL,
    item_id        INTEGER,                           -- the held item, or
    token          INTEGER,                           -- (its claim when asked: a release ends
                                                      -- that claim only)
    patterns       TEXT    NOT NULL DEFAULT '[]',     -- the held paths asked for
    reason         TEXT    NOT NULL,
    created_at     REAL    NOT NULL,
    expires_at     REAL    NOT NULL,
    answer         TEXT    CHECK (answer IN ('release', 'defer')),
    answer_reason  TEXT    NOT NULL DEFAULT '',
    deferred_until REAL,
    answered_at    REAL
);
CREATE INDEX asks_open ON asks (holder, id) WHERE answer IS NULL;
