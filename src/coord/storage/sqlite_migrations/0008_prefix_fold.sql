-- The prefix column holds each reservation's literal prefix by its widest key (NFC, case
-- folded: coord.fast.holds.search_prefix), so that a search finds a hold however a
-- case-insensitive or normalising file system lets the same file be spelled. SQL folds the
-- case of ASCII alone, which for an ASCII prefix is that key; a prefix with any other
-- character is set to '' (as if the pattern began with a glob), which every search reads,
-- and the overlap rule then compares it exactly.
UPDATE reservations SET prefix = lower(prefix);
UPDATE reservations SET prefix = '' WHERE prefix GLOB '*[^ -~]*';
