-- Which overlap rule a reservation was granted under. Rows stored before issue 12 keep rule 1
-- (every literal may be a directory, a glob covers everything beneath its matches) until they
-- end: a live hold is never narrowed. New rows are written with rule 2 (a literal is one file
-- unless it is a directory of the working tree or written 'dir/'; a glob covers its matches).
ALTER TABLE reservations ADD COLUMN rule INTEGER NOT NULL DEFAULT 1;
