"""Many processes, one effect key: exactly one perform, and nobody busy-loops.

    python benchmarks/contention.py --dsn postgresql://postgres@127.0.0.1:5432/test \\
        --processes 64 --json

Every process opens its own store, waits at a barrier, then runs the same
effect once. The perform appends a line to a file (the ground truth). Reported: performs (must be 1), losers' latency p50/p99,
and the ledger calls each loser made (a handful each: a loser reads, loses
its claim as a value and stops; it never polls). Prints, never asserts
timings; exits non-zero only if performs != 1.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any


class CountingStore:
    """Counts the ledger calls made through it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name in ("salt", "close"):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attr(*args, **kwargs)

        return counted


def _worker(dsn: str, schema: str, key: str, log: str, barrier: Any, out: Any) -> None:
    from actonce import Absent, Confirmed, Effect, Ledger, Policy, PostgresStore

    # One connection per process (64 processes stay under max_connections=100).
    store = CountingStore(PostgresStore(dsn, schema=schema, min_size=1, max_size=1, create=True))
    ledger = Ledger(store)  # type: ignore[arg-type]

    def perform() -> None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)

    def verify() -> Confirmed | Absent:
        return Confirmed("bench") if os.path.exists(log) else Absent()

    effect = Effect(
        key=key,
        kind="bench",
        payload={"key": key},
        perform=perform,
        verify=verify,
        policy=Policy(verify_after_claim=True, settle_seconds=0, verify_attempts=1),
    )
    barrier.wait()
    started = time.perf_counter()
    result = ledger.run(effect)
    elapsed = time.perf_counter() - started
    out.put(
        {
            "performed": result.performed,
            "outcome": result.outcome.value,
            "seconds": elapsed,
            "calls": store.calls,
        }
    )
    store.inner.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get(
            "ACTONCE_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import psycopg
    from psycopg import sql

    from actonce import PostgresStore

    schema = f"actonce_bench_{uuid.uuid4().hex[:8]}"
    PostgresStore(args.dsn, schema=schema, min_size=0, create=True).close()
    log = os.path.join(tempfile.mkdtemp(prefix="actonce-contention-"), "performs.log")
    try:
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(args.processes), ctx.Queue()
        procs = [
            ctx.Process(
                target=_worker,
                args=(args.dsn, schema, "hot-key", log, barrier, out),
            )
            for _ in range(args.processes)
        ]
        for p in procs:
            p.start()
        results = []
        for _ in procs:
            results.append(out.get(timeout=300))
        for p in procs:
            p.join()
        with open(log) as f:
            performs = len(f.read().split())
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

    winner = [r for r in results if r["performed"]]
    losers = [r for r in results if not r["performed"]]
    lat = [r["seconds"] * 1000 for r in losers] or [0.0]
    calls = [r["calls"] for r in losers] or [0]
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    report = {
        "processes": args.processes,
        "performs": performs,
        "winners": len(winner),
        "outcomes": outcomes,
        "loser_p50_ms": round(_pct(lat, 0.50), 2),
        "loser_p99_ms": round(_pct(lat, 0.99), 2),
        "winner_ms": round(winner[0]["seconds"] * 1000, 2) if winner else None,
        "loser_calls_mean": round(statistics.mean(calls), 2),
        "loser_calls_max": max(calls),
    }
    print(
        f"{args.processes} processes, one key: performs={performs} winners={len(winner)} "
        f"outcomes={outcomes}\nlosers: p50 {report['loser_p50_ms']} ms, "
        f"p99 {report['loser_p99_ms']} ms; ledger calls per loser: mean "
        f"{report['loser_calls_mean']}, max {report['loser_calls_max']} (no polling)"
    )
    if args.json:
        print(json.dumps(report))
    if performs != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
