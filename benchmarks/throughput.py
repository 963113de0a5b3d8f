"""Effects per second through actonce vs raw hand-written transactions.

    python benchmarks/throughput.py --backend postgres \\
        --dsn postgresql://postgres@127.0.0.1:5432/test --workers 1,4,8 --json

For each worker count, W processes (each with its own connection) run, side
by side in one invocation:

- actonce: ``Ledger.run`` of a fresh effect, no-op perform and verify,
  ``Policy(verify_after_claim=True)``: one read and three commits (claim,
  executing mark, confirmed), each with its event;
- raw: the same three state changes written by hand the usual way, each a
  ``BEGIN; UPDATE/INSERT effects; INSERT events; COMMIT`` transaction.

Phases alternate over ``--rounds`` rounds; the medians are compared.
Each phase gets a fresh schema, dropped afterwards. The last line is JSON
(with ``--json``). This prints ratios; it asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
import uuid
from typing import Any


def _actonce_worker(dsn: str, schema: str, seconds: float, barrier: Any, out: Any) -> None:
    from actonce import Absent, Confirmed, Effect, Ledger, Policy, PostgresStore

    store = PostgresStore(dsn, schema=schema, min_size=1, max_size=1, create=True)
    ledger = Ledger(store)
    policy = Policy(verify_after_claim=True, settle_seconds=0)
    # A letter first: a key of digit groups ("13887-362504-123") can pass the card
    # number detector's Luhn check, and a key that looks like a secret is refused.
    prefix = f"w{os.getpid()}-{uuid.uuid4().hex[:6]}"
    done = 0
    barrier.wait()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        performed: list[bool] = []
        result = ledger.run(
            Effect(
                key=f"{prefix}-{done}",
                kind="bench",
                payload={"n": done},
                perform=lambda p=performed: p.append(True),  # type: ignore[misc]
                verify=lambda p=performed: Confirmed("ok") if p else Absent(),  # type: ignore[misc]
                policy=policy,
            )
        )
        assert result.performed
        done += 1
    store.close()
    out.put(done)


def _raw_worker(dsn: str, schema: str, seconds: float, barrier: Any, out: Any) -> None:
    import psycopg

    conn = psycopg.connect(dsn, options=f"-c search_path={schema}")
    # A letter first: a key of digit groups ("13887-362504-123") can pass the card
    # number detector's Luhn check, and a key that looks like a secret is refused.
    prefix = f"w{os.getpid()}-{uuid.uuid4().hex[:6]}"
    ev = (
        "INSERT INTO events (key, type, at, fence, run_id, from_status, to_status) "
        "VALUES (%s, %s, %s, 1, %s, %s, %s)"
    )
    done = 0
    barrier.wait()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        key, now = f"{prefix}-{done}", time.time()
        with conn.transaction():
            conn.execute(
                "INSERT INTO effects (key, kind, status, fence, owner, lease_expires_at, "
                "payload, payload_hash, scope, created_at, updated_at) "
                "VALUES (%s, 'bench', 'claimed', 1, %s, %s, %s, %s, '{}', %s, %s)",
                (key, prefix, now + 60, '{"n":1}', "h" * 64, now, now),
            )
            conn.execute(ev, (key, "claimed", now, prefix, None, "claimed"))
        with conn.transaction():
            conn.execute(
                "UPDATE effects SET status = 'executing', executing_at = %s, updated_at = %s "
                "WHERE key = %s AND status = 'claimed' AND fence = 1",
                (now, now, key),
            )
            conn.execute(ev, (key, "executing", now, prefix, "claimed", "executing"))
        with conn.transaction():
            conn.execute(
                "UPDATE effects SET status = 'confirmed', updated_at = %s "
                "WHERE key = %s AND status = 'executing' AND fence = 1",
                (now, key),
            )
            conn.execute(ev, (key, "confirmed", now, prefix, "executing", "confirmed"))
        done += 1
    conn.close()
    out.put(done)


def _phase(kind: str, dsn: str, workers: int, seconds: float) -> float:
    import psycopg
    from psycopg import sql

    schema = f"actonce_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        # Both sides write the same tables (actonce's schema, its indexes and
        # trigger): the comparison is the library's cost, not the schema's.
        from actonce import PostgresStore

        PostgresStore(dsn, schema=schema, min_size=0, create=True).close()  # migrate up front
        target = _raw_worker if kind == "raw" else _actonce_worker
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(workers + 1), ctx.Queue()
        procs = [
            ctx.Process(target=target, args=(dsn, schema, seconds, barrier, out))
            for _ in range(workers)
        ]
        for p in procs:
            p.start()
        barrier.wait()  # every worker connected: start the clock together
        total = sum(out.get(timeout=seconds + 120) for _ in procs)
        for p in procs:
            p.join()
        return total / seconds
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["postgres"], default="postgres")
    parser.add_argument(
        "--dsn",
        default=os.environ.get(
            "ACTONCE_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument("--workers", default="8", help="a count or a list: 1,4,8")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time per phase")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per count")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    counts = [int(w) for w in str(args.workers).split(",") if w.strip()]
    runs = []
    for w in counts:
        # Alternate the phases, several rounds, and compare medians: a shared
        # machine's noise (other fsyncs, other processes) hits both sides alike.
        effects_rounds, raw_rounds = [], []
        for r in range(args.rounds):
            order = ("actonce", "raw") if r % 2 == 0 else ("raw", "actonce")
            for kind in order:
                rate = _phase(kind, args.dsn, w, args.seconds)
                (effects_rounds if kind == "actonce" else raw_rounds).append(rate)
        effects, raw = statistics.median(effects_rounds), statistics.median(raw_rounds)
        run = {
            "workers": w,
            "effects_per_s": round(effects, 1),
            "raw_per_s": round(raw, 1),
            "ratio_vs_raw": round(effects / raw, 3) if raw else None,
            "effects_rounds": [round(x, 1) for x in effects_rounds],
            "raw_rounds": [round(x, 1) for x in raw_rounds],
        }
        runs.append(run)
        print(
            f"workers={w:>3}  actonce {effects:9.1f} effects/s   raw {raw:9.1f}/s   "
            f"ratio {run['ratio_vs_raw']}   (medians of {args.rounds} alternating rounds)",
            flush=True,
        )
    if args.json:
        print(
            json.dumps(
                {
                    **runs[-1],
                    "backend": args.backend,
                    "seconds": args.seconds,
                    "runs": runs,
                    "cpus": os.cpu_count(),
                }
            )
        )


if __name__ == "__main__":
    main()
