-- Who acted as an agent (claimed, reserved files or read its inbox), as against a person who
-- only added, edited, answered or replied, or a name a design document's reservation line was
-- given a claim for. `coord agents` lists the first. The board's past says it: a claim or a
-- reservation in the log by that name, an inbox it read. (A claim adopted from a document
-- before this migration reads as the user's own: the log does not tell them apart.)
ALTER TABLE agents ADD COLUMN worked INTEGER NOT NULL DEFAULT 0;
UPDATE agents SET worked = 1
 WHERE inbox_seq > 0
    OR name IN (SELECT agent FROM events WHERE kind IN ('claimed', 'takeover', 'reserved'));
