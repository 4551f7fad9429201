-- The event log without AUTOINCREMENT. Its rows are never deleted (the triggers refuse), so
-- a plain INTEGER PRIMARY KEY already takes max(seq) + 1: the same gapless, increasing
-- numbers, without the sqlite_sequence row that AUTOINCREMENT reads and rewrites on every
-- append (one page more in every write transaction that logs a change).
CREATE TABLE events_new (
    seq     INTEGER PRIMARY KEY,
    at      REAL    NOT NULL,
    agent   TEXT,
    item_id INTEGER,
    kind    TEXT    NOT NULL,
    details TEXT    NOT NULL DEFAULT '{}'                -- JSON object
);
INSERT INTO events_new (seq, at, agent, item_id, kind, details)
    SELECT seq, at, agent, item_id, kind, details FROM events ORDER BY seq;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_item ON events (item_id, seq);

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE (ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE (ABORT, 'the event log is append-only'); END;
