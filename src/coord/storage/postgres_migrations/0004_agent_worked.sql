-- SQLite's migration 0010 in PostgreSQL's words: who acted as an agent (claimed, reserved
-- files or read its inbox), as against a person who only added, edited, answered or replied.
ALTER TABLE agents ADD COLUMN worked BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE agents SET worked = TRUE
 WHERE inbox_seq > 0
    OR name IN (SELECT agent FROM events WHERE kind IN ('claimed', 'takeover', 'reserved'));
