-- The daemons serving this board, one row each: every machine (every checkout) runs its own
-- daemon on the shared database, and `coord status` shows the others that are live. A daemon
-- writes its row when it starts and its heartbeat every few seconds, on the database's clock;
-- a row whose heartbeat is older than a few beats is a daemon that is gone (killed, its
-- machine off the network) and is not shown. Not part of the board's state: no event, and
-- written outside the board's write lock.
CREATE TABLE daemons (
    instance     TEXT PRIMARY KEY,              -- the id in the daemon's daemon.json
    machine      TEXT NOT NULL,                 -- its host name
    pid          INTEGER NOT NULL,
    url          TEXT NOT NULL,                 -- where it listens, as seen on its machine
    board_dir    TEXT NOT NULL,                 -- the .coord/ of the checkout it serves
    version      TEXT NOT NULL,                 -- its coord release
    started_at   DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX daemons_heartbeat ON daemons (heartbeat_at);
