"""`coord migrate` on a big board: SQLite → PostgreSQL and back, beside references.

    .venv/bin/python bench/migrate.py [--items 200000] [--dsn postgresql://…]

A board of N pending items (each with its `created` event) is seeded through the library, as
``bench/README.md``'s master board. Figures, each in one run on the same machine:

- the copy to PostgreSQL (``coord.storage.transfer``: COPY per table, counters, verification
  by counts and key digests read back, one transaction);
- reference: the same rows of the same tables through plain ``executemany`` INSERTs (psycopg
  3's pipelined batches) in one transaction, no verification;
- reference: SQLite's own backup API copying the board file (no conversion at all);
- the export back to a new SQLite file (``coord migrate --to sqlite:PATH``'s path).

It prints; it asserts nothing. Scratch databases ``coord_bench_mig_<pid>_*`` are created on
the server and dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from urllib.parse import urlsplit

import psycopg

import common
from coord.fast import board_files
from coord.storage import transfer
from coord.storage.postgres import PostgresStorage


def _insert_reference(db: str, dsn: str) -> float:
    """The same tables' rows by plain INSERTs, batch by batch, one transaction; the schema
    made first, as the copy makes it (both timings include it)."""
    started = time.perf_counter()
    PostgresStorage(dsn).close()
    source = sqlite3.connect(db)
    with psycopg.connect(dsn) as conn, conn.cursor() as cursor:  # one transaction
        for table in transfer.TABLES:
            rows = source.execute(f"SELECT {', '.join(table.columns)} FROM {table.name}")
            insert = (
                f"INSERT INTO {table.name} ({', '.join(table.columns)}) "
                f"VALUES ({', '.join('%s' for _ in table.columns)})"
            )
            while batch := rows.fetchmany(transfer.BATCH_ROWS):
                cursor.executemany(insert, batch)
    source.close()
    return time.perf_counter() - started


def _backup_reference(db: str, path: str) -> float:
    started = time.perf_counter()
    source, copy = sqlite3.connect(db), sqlite3.connect(path)
    source.backup(copy)
    copy.close()
    source.close()
    return time.perf_counter() - started


def _migrate(source: str, target: str) -> tuple[float, int]:
    report = transfer.copy_board(
        transfer.open_source(transfer.location(source, "--from")),
        transfer.open_target(transfer.location(target, "--to")),
    )
    return report.seconds, sum(t["rows"] for t in report.tables.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--items", type=int, default=200_000)
    args = parser.parse_args()
    names = [f"coord_bench_mig_{os.getpid()}_{n}" for n in ("copy", "insert")]
    dsns = [urlsplit(args.dsn)._replace(path=f"/{name}").geturl() for name in names]
    try:
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            for name in names:
                admin.execute(f"CREATE DATABASE {name}".encode())
        board_dir = common.new_board_dir("migrate")
        common.log(f"seeding {args.items:,} items through the library")
        common.seed(board_dir, args.items)
        db = str(board_files.db_path(board_dir))
        scratch = board_dir.parent

        common.log("copying to PostgreSQL (coord migrate)")
        seconds, rows = _migrate(f"sqlite:{db}", dsns[0])
        common.log("the same rows by executemany INSERTs")
        inserts = _insert_reference(db, dsns[1])
        common.log("sqlite3 backup of the file")
        backup = _backup_reference(db, str(scratch / "backup.db"))
        common.log("exporting back to SQLite")
        back, _ = _migrate(dsns[0], f"sqlite:{scratch / 'back.db'}")

        print(f"coord migrate, a board of {args.items:,} items ({rows:,} rows in all)")
        print(f"{'':<44}{'seconds':>9}{'items/s':>11}{'rows/s':>11}")
        for label, took in (
            ("SQLite → PostgreSQL (COPY, verified)", seconds),
            ("reference: executemany INSERTs, one tx", inserts),
            ("reference: sqlite3 backup of the file", backup),
            ("PostgreSQL → SQLite (export, verified)", back),
        ):
            print(f"{label:<44}{took:>9.2f}{args.items / took:>11,.0f}{rows / took:>11,.0f}")
        print(f"migrate vs INSERTs: {inserts / seconds:.2f}× as fast")
    finally:
        common.CLEANUP.run()
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            for name in names:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
