"""Print coord's performance figures, each next to a reference measured in the same run.

    python bench/run.py [all|claim-next|blocked|drain|cli|plan|guard|reserve|spec|hook|after-tool
        |connections|stream|mcp-start|pg-claim-next] [--items N] [--quick] [--dsn postgresql://…]

Not a test: it asserts nothing about speed. The machine may be shared and noisy, so every
target is a ratio to a reference measured in this very run. See bench/README.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aftercheck
import claims
import cli_plan
import connections
import hooks
import mcp_start
import overlap
import pg_claims
import plan_overlap
import reservations
import specs
import stream
from common import CLEANUP, log

BENCHES = (
    "plan",
    "claim-next",
    "cli",
    "drain",
    "guard",
    "reserve",
    "blocked",
    "overlap",
    "plan-overlap",
    "spec",
    "hook",
    "after-tool",
    "connections",
    "stream",
    "mcp-start",
    "pg-claim-next",
)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", nargs="?", default="all", choices=("all", *BENCHES))
    parser.add_argument("--items", type=int, help="board size (default 200,000; --quick 20,000)")
    parser.add_argument("--quick", action="store_true", help="smaller board, fewer rounds")
    parser.add_argument(
        "--layout",
        default="auto",
        choices=("auto", "1", "2", "4"),
        help="load generator processes (auto: probe them on the reference)",
    )
    parser.add_argument("--cli-runs", type=int, help="runs per CLI/guard/hook command (default 30)")
    parser.add_argument("--importtime", action="store_true", help="always print import costs")
    parser.add_argument(
        "--packages", type=int, default=2000, help="spec: packages in the generated document"
    )
    parser.add_argument(
        "--dsn",
        default=pg_claims.DEFAULT_DSN,
        help="pg-claim-next: the PostgreSQL server (a scratch database is made on it)",
    )
    args = parser.parse_args(argv)
    items = args.items or (20_000 if args.quick else 200_000)
    if items < 1000:
        parser.error("--items must be at least 1000")
    cli_runs = args.cli_runs or (15 if args.quick else 30)
    chosen = BENCHES if args.bench == "all" else (args.bench,)
    signal.signal(signal.SIGTERM, _interrupt)
    began = time.perf_counter()
    try:
        for name in chosen:
            if name == "plan":
                board_dir, _ = claims.mostly_done_board(items, items // 20)
                cli_plan.bench_plan(board_dir)
            elif name == "claim-next":
                claims.bench_claim_next(items, args.quick, args.layout)
            elif name == "blocked":
                claims.bench_blocked(items, args.quick)
            elif name == "cli":
                cli_plan.bench_cli(cli_runs, args.importtime)
            elif name == "drain":
                claims.bench_drain(items, args.layout)
            elif name == "guard":
                reservations.bench_guard(cli_runs, args.importtime)
            elif name == "reserve":
                reservations.bench_reserve(items, args.quick, args.layout)
            elif name == "overlap":
                overlap.bench_overlap(5 if args.quick else 10)
            elif name == "plan-overlap":
                plan_overlap.bench_plan_overlap()
            elif name == "spec":
                specs.bench_specs(args.packages, 5 if args.quick else 11)
            elif name == "hook":
                hooks.bench_hook(cli_runs, args.importtime)
            elif name == "after-tool":
                aftercheck.bench_after_tool(cli_runs)
            elif name == "connections":
                connections.bench_connections(args.quick)
            elif name == "stream":
                stream.bench_stream(items, args.quick, args.layout)
            elif name == "mcp-start":
                mcp_start.bench_mcp_start(max(5, cli_runs // 3))
            elif name == "pg-claim-next":
                pg_claims.bench_pg_claim_next(items, args.quick, args.layout, args.dsn)
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        CLEANUP.run()
    log(f"bench finished in {time.perf_counter() - began:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
