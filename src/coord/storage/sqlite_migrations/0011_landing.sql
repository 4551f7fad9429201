-- Issue 24, from claim to main: a worktree item is submitted (queued), then landed by the
-- board's one landing runner (merged) or sent back (needs_rework, a pending item with the
-- failure's facts). 'queued' is a stored state, and SQLite cannot alter a CHECK constraint:
-- the items table is rebuilt (create, copy, drop, rename; the runner turns foreign keys off
-- around the transaction and runs PRAGMA foreign_key_check before it commits), with its
-- indexes and the item_counts triggers of migration 9 made again.
CREATE TABLE items_new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: ids are never reused
    kind             TEXT    NOT NULL CHECK (kind IN ('task', 'bug', 'note', 'handoff')),
    title            TEXT    NOT NULL,
    body             TEXT    NOT NULL DEFAULT '',
    priority         INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 4),
    labels           TEXT    NOT NULL DEFAULT '[]',      -- JSON array of strings
    state            TEXT    NOT NULL
                     CHECK (state IN ('pending', 'claimed', 'queued', 'done', 'cancelled')),
    created_by       TEXT    NOT NULL,
    recipient        TEXT,                               -- who a handoff or note is addressed to
    claimed_by       TEXT,                               -- a queued item: who submitted it
    fencing_token    INTEGER NOT NULL DEFAULT 0,         -- grows with every claim of this item
    lease_expires_at REAL,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    closed_at        REAL,
    key              TEXT,
    spec             TEXT,
    spec_line        INTEGER,
    checks           TEXT    NOT NULL DEFAULT '[]',
    evidence         TEXT,
    question         TEXT,
    escalate_to      TEXT,
    reserved_for     TEXT,
    branch           TEXT,                               -- the claim's worktree: its branch,
    base_commit      TEXT,                               -- main's tip it started from,
    worktree         TEXT,                               -- and its path
    submitted_head   TEXT,                               -- the branch head handed over at submit
    submitted_at     REAL,
    merged_commit    TEXT,                               -- main's commit that contains it
    rework           TEXT,                               -- JSON: why it came back from landing
    rework_for       TEXT,                               -- its last holder, first to claim it
    rework_until     REAL,                               -- ... until then
    CHECK ((state = 'claimed') = (lease_expires_at IS NOT NULL AND claimed_by IS NOT NULL))
);
INSERT INTO items_new (id, kind, title, body, priority, labels, state, created_by, recipient,
                       claimed_by, fencing_token, lease_expires_at, created_at, updated_at,
                       closed_at, key, spec, spec_line, checks, evidence, question,
                       escalate_to, reserved_for)
    SELECT id, kind, title, body, priority, labels, state, created_by, recipient, claimed_by,
           fencing_token, lease_expires_at, created_at, updated_at, closed_at, key, spec,
           spec_line, checks, evidence, question, escalate_to, reserved_for
      FROM items ORDER BY id;
-- Ids are never reused: the new table's AUTOINCREMENT counter starts where the old one was
-- (it may be past the last id left, when the newest items were deleted).
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'items_new', seq FROM sqlite_sequence WHERE name = 'items'
       AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'items_new');
UPDATE sqlite_sequence
   SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0))
 WHERE name = 'items_new';
DROP TABLE items;
ALTER TABLE items_new RENAME TO items;

CREATE INDEX items_pending ON items (priority, id) WHERE state = 'pending';
CREATE INDEX items_claimed_lease ON items (lease_expires_at) WHERE state = 'claimed';
CREATE UNIQUE INDEX items_key ON items (key) WHERE key IS NOT NULL;
CREATE INDEX items_spec ON items (spec, key) WHERE spec IS NOT NULL;
CREATE INDEX items_needs_human ON items (id) WHERE question IS NOT NULL;
-- the landing queue, in submit order
CREATE INDEX items_queued ON items (submitted_at, id) WHERE state = 'queued';
-- the items sent back from landing (a few): `coord status` counts them as needs_rework
CREATE INDEX items_rework ON items (id) WHERE rework IS NOT NULL;

-- The counts of migration 9, with 'merged' (a done item whose commit is on main) counted on
-- its own row, as 'done' counts the rest: a counter per shown state that is a stored fact.
-- A state without a row is not counted at all, so 'queued' and 'merged' get theirs.
INSERT INTO item_counts (state, n) VALUES ('queued', 0), ('merged', 0);
CREATE TRIGGER items_count_insert AFTER INSERT ON items
BEGIN
    UPDATE item_counts SET n = n + 1
     WHERE state = CASE WHEN new.state = 'done' AND new.merged_commit IS NOT NULL
                        THEN 'merged' ELSE new.state END;
END;
CREATE TRIGGER items_count_update AFTER UPDATE OF state, merged_commit ON items
  WHEN old.state != new.state OR (old.merged_commit IS NULL) != (new.merged_commit IS NULL)
BEGIN
    UPDATE item_counts SET n = n - 1
     WHERE state = CASE WHEN old.state = 'done' AND old.merged_commit IS NOT NULL
                        THEN 'merged' ELSE old.state END;
    UPDATE item_counts SET n = n + 1
     WHERE state = CASE WHEN new.state = 'done' AND new.merged_commit IS NOT NULL
                        THEN 'merged' ELSE new.state END;
END;
CREATE TRIGGER items_count_delete AFTER DELETE ON items
BEGIN
    UPDATE item_counts SET n = n - 1
     WHERE state = CASE WHEN old.state = 'done' AND old.merged_commit IS NOT NULL
                        THEN 'merged' ELSE old.state END;
END;

-- The board's landing lease: exactly one runner lands at a time, fenced like a claim (its
-- token grows with every acquisition; a write with an older one is lease_lost). One row,
-- written on the first acquisition and kept (a free lease has no holder), so the token never
-- starts over.
CREATE TABLE landing_lease (
    name       TEXT    PRIMARY KEY CHECK (name = 'main'),
    holder     TEXT,
    token      INTEGER NOT NULL,
    expires_at REAL,
    CHECK ((holder IS NULL) = (expires_at IS NULL))
) WITHOUT ROWID;
