-- A question waiting on a human no longer holds its claim and files forever (9999-12-31):
-- the lease runs to the escalation bound. Questions already waiting get the bound from now
-- (7 days, the longest lease; a board's own setting applies from the next ask or answer),
-- and their files follow their lease again.
UPDATE items
   SET lease_expires_at = max(coalesce(lease_expires_at, 0),
                              CAST(strftime('%s', 'now') AS REAL) + 604800)
 WHERE state = 'claimed' AND question IS NOT NULL;

UPDATE reservations
   SET expires_at = coalesce(
           (SELECT lease_expires_at FROM items WHERE items.id = reservations.item_id),
           CAST(strftime('%s', 'now') AS REAL) + 604800)
 WHERE expires_at >= 253402300799 AND item_id IS NOT NULL;
