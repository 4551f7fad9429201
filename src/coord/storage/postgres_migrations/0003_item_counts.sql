-- SQLite's migration 0009 in PostgreSQL's words: how many items are in each state, kept by
-- the items' own writes, so `coord status` reads four rows instead of counting every item.
-- Numbered 0003 to leave 0002 to the `daemons` table; each is applied once, by number, so
-- their order does not matter. Writes are serialised on the board's advisory lock, so the
-- counter rows are never contended by two writers of one board.
CREATE TABLE item_counts (
    state TEXT   PRIMARY KEY,
    n     BIGINT NOT NULL
);
INSERT INTO item_counts (state, n)
    SELECT s, (SELECT count(*) FROM items WHERE items.state = s)
      FROM unnest(ARRAY['pending', 'claimed', 'done', 'cancelled']) AS s;
CREATE FUNCTION items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE item_counts SET n = n - 1 WHERE state = OLD.state;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        UPDATE item_counts SET n = n + 1 WHERE state = NEW.state;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER items_count_insert_delete AFTER INSERT OR DELETE ON items
    FOR EACH ROW EXECUTE FUNCTION items_count();
CREATE TRIGGER items_count_update AFTER UPDATE OF state ON items
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION items_count();
