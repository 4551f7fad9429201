-- Who a design document reserves this package for (its `**Reserved: ID by @user.**` line,
-- or its track's `**In progress and reserved: @user.**` marker), as of the last import.
-- While it is set the package is not ready: claim-next and `ls --ready` skip it, and only
-- that user may claim it (`coord spec import --adopt` does so with a lease). A re-import
-- whose document no longer has the line clears it.
ALTER TABLE items ADD COLUMN reserved_for TEXT;
