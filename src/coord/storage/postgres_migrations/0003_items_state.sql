-- SQLite's migration 0009 in PostgreSQL's words: counts by state (`coord status`) read this
-- index instead of every row. Numbered 0003 to leave 0002 to the `daemons` table; the order
-- of the two does not matter (each is applied once, by number).
CREATE INDEX items_state ON items (state);
