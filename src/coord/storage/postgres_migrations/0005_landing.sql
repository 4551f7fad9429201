-- SQLite's migration 0011 in PostgreSQL's words (issue 24, from claim to main): the stored
-- state 'queued' (a submitted worktree item waiting to land), the worktree and landing facts
-- of an item, 'queued' and 'merged' rows for item_counts, and the board's landing lease.
ALTER TABLE items DROP CONSTRAINT items_state_check;
ALTER TABLE items ADD CONSTRAINT items_state_check
    CHECK (state IN ('pending', 'claimed', 'queued', 'done', 'cancelled'));
ALTER TABLE items ADD COLUMN branch         TEXT;              -- the claim's worktree branch,
ALTER TABLE items ADD COLUMN base_commit    TEXT;              -- main's tip it started from,
ALTER TABLE items ADD COLUMN worktree       TEXT;              -- and its path
ALTER TABLE items ADD COLUMN submitted_head TEXT;              -- the head handed over at submit
ALTER TABLE items ADD COLUMN submitted_at   DOUBLE PRECISION;
ALTER TABLE items ADD COLUMN merged_commit  TEXT;              -- main's commit that contains it
ALTER TABLE items ADD COLUMN rework         JSON;              -- why it came back from landing
ALTER TABLE items ADD COLUMN rework_for     TEXT;              -- its last holder, first to
ALTER TABLE items ADD COLUMN rework_until   DOUBLE PRECISION;  -- claim it until then
CREATE INDEX items_queued ON items (submitted_at, id) WHERE state = 'queued';
CREATE INDEX items_rework ON items (id) WHERE rework IS NOT NULL;

-- A done item whose commit is on main is counted as 'merged', the rest of done as 'done'.
INSERT INTO item_counts (state, n) VALUES ('queued', 0), ('merged', 0);
CREATE OR REPLACE FUNCTION items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE item_counts SET n = n - 1
         WHERE state = CASE WHEN OLD.state = 'done' AND OLD.merged_commit IS NOT NULL
                            THEN 'merged' ELSE OLD.state END;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        UPDATE item_counts SET n = n + 1
         WHERE state = CASE WHEN NEW.state = 'done' AND NEW.merged_commit IS NOT NULL
                            THEN 'merged' ELSE NEW.state END;
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER items_count_update ON items;
CREATE TRIGGER items_count_update AFTER UPDATE OF state, merged_commit ON items
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                       OR (OLD.merged_commit IS NULL) IS DISTINCT FROM (NEW.merged_commit IS NULL))
    EXECUTE FUNCTION items_count();

-- The board's landing lease: one runner at a time, fenced by a token that grows with every
-- acquisition. One row, written on the first acquisition and kept, so the token never
-- starts over.
CREATE TABLE landing_lease (
    name       TEXT   PRIMARY KEY CHECK (name = 'main'),
    holder     TEXT,
    token      BIGINT NOT NULL,
    expires_at DOUBLE PRECISION,
    CHECK ((holder IS NULL) = (expires_at IS NULL))
);
