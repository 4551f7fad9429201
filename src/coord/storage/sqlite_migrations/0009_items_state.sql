-- Counts by state (`coord status`) read this index instead of every row: on 200,000 items
-- the grouped count read the whole table. Claim-next names its own indexes (INDEXED BY),
-- so its plans do not change; each claim writes one more index entry (bench/README.md).
CREATE INDEX items_state ON items (state);
