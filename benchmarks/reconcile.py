"""How long does reconcile take to find the open effects in a big ledger?

Builds a SQLite ledger with ``--rows`` effect rows (default 1,000,000: mostly
confirmed, a few hundred open), bulk-inserted with ``executemany`` in one
transaction, then times ``store.open_effects()`` (best of ``--repeat``).
The built file is cached in the temporary folder, keyed by the checkout, the
schema version and the row count, so a re-run is quick. The last line of ``--json`` output is one JSON object.

    python benchmarks/reconcile.py [--json] [--rows 1000000] [--open 300]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from _ledgerfile import cache_folder, write_ledger

from actonce import SQLiteStore

NOW = 1_700_000_000.0


def _rows(total: int, open_: int) -> Iterator[tuple[Any, ...]]:
    step = max(1, total // max(open_, 1))
    statuses = ("claimed", "executing", "unknown")
    for i in range(total):
        is_open = i % step == 0 and i // step < open_
        status = statuses[(i // step) % 3] if is_open else "confirmed"
        yield (
            f"{i:064x}",
            "bench",
            status,
            1,
            "builder",
            NOW + 60.0,
            f'{{"i":{i}}}',
            "0" * 64,
            "{}",
            None if is_open else f"ref-{i}",
            None,
            NOW + i * 1e-3,
            NOW + i * 1e-3,
            NOW if status != "claimed" else None,
        )


def build(path: str, total: int, open_: int) -> float:
    """Create the ledger file; returns seconds spent."""
    return write_ledger(path, _rows(total, open_))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    folder = cache_folder("reconcile")
    path = os.path.join(folder, f"ledger-{args.rows}-{args.open}.db")
    built = None
    if not os.path.exists(path):
        built = build(path, args.rows, args.open)
    store = SQLiteStore(path, create=True)
    found = store.open_effects()  # warm the page cache once
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        found = store.open_effects()
        times.append((time.perf_counter() - t0) * 1000)
    plan = store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT key FROM effects WHERE status IN "
        "('claimed', 'executing', 'unknown') ORDER BY lease_expires_at LIMIT 1000"
    ).fetchall()
    (rows,) = store._conn.execute("SELECT count(*) FROM effects").fetchone()
    store.close()
    summary = {
        "rows": rows,
        "open_found": len(found),
        "ms_find_open": round(min(times), 4),
        "ms_find_open_median": round(sorted(times)[len(times) // 2], 4),
        "build_seconds": None if built is None else round(built, 1),
        "cached_file": path,
        "query_plan": [str(r[-1]) for r in plan],
    }
    out = sys.stderr if args.json else sys.stdout
    print(f"{rows} rows, {len(found)} open: best {min(times):.3f} ms", file=out)
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
