-- Work packages from design documents, checks that must pass before done, and escalation.

-- The package id (R3, QA1) an item was imported as: `coord claim R3` finds it by this.
ALTER TABLE items ADD COLUMN key TEXT;
-- Where the package is written down: the document (repository-relative) and its line.
ALTER TABLE items ADD COLUMN spec TEXT;
ALTER TABLE items ADD COLUMN spec_line INTEGER;
-- Shell commands that must exit 0 before the item may be closed (JSON array of strings).
ALTER TABLE items ADD COLUMN checks TEXT NOT NULL DEFAULT '[]';
-- The last run of those checks, or the override that skipped them (JSON object).
ALTER TABLE items ADD COLUMN evidence TEXT;
-- needs_human: the holder's open question. While it is set the lease does not run out.
ALTER TABLE items ADD COLUMN question TEXT;
-- Who answers questions about this item (a design document's `Escalate to:`).
ALTER TABLE items ADD COLUMN escalate_to TEXT;

CREATE UNIQUE INDEX items_key ON items (key) WHERE key IS NOT NULL;
CREATE INDEX items_spec ON items (spec, key) WHERE spec IS NOT NULL;
CREATE INDEX items_needs_human ON items (id) WHERE question IS NOT NULL;
