-- File reservations: an agent's hold on paths or gitignore-style patterns, with a lease.
-- A reservation counts while expires_at > now; expired rows stop counting at once and are
-- deleted by later writes, so no sweep is needed for correctness.

CREATE TABLE reservations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    agent      TEXT    NOT NULL,
    pattern    TEXT    NOT NULL,                      -- canonical, repository-relative
    prefix     TEXT    NOT NULL,                      -- its leading literal directories
    exclusive  INTEGER NOT NULL CHECK (exclusive IN (0, 1)),
    item_id    INTEGER REFERENCES items (id),         -- freed with that item's claim
    reason     TEXT    NOT NULL DEFAULT '',
    created_at REAL    NOT NULL,
    expires_at REAL    NOT NULL
);
CREATE INDEX reservations_expiry ON reservations (expires_at);
CREATE INDEX reservations_agent ON reservations (agent, pattern);
CREATE INDEX reservations_item ON reservations (item_id) WHERE item_id IS NOT NULL;
-- Two patterns can overlap only if one's literal prefix is an ancestor of (or equal to) the
-- other's: a request reads the few rows near it, not every live reservation.
CREATE INDEX reservations_prefix ON reservations (prefix);

-- The files an item declares; claiming the item reserves them in the same transaction.
CREATE TABLE item_files (
    item_id INTEGER NOT NULL REFERENCES items (id),
    pattern TEXT    NOT NULL,
    PRIMARY KEY (item_id, pattern)
) WITHOUT ROWID;
