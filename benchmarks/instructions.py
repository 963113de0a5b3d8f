"""What does actonce cost per effect in CPU instructions, next to raw SQL?

Wall-clock ratios (``overhead.py``) move with the machine's load and its
fsync latency; instruction counts do not: ``valgrind --tool=callgrind``
counts the user-space instructions a process executes, the same for the same
binary and inputs whatever else the machine does. Each variant of
``overhead.py`` runs in a process of its own under callgrind, twice (after
a warm-up of 20 effects: once with no more, once with ``--effects`` more);
the difference divided by ``--effects`` is its cost per effect, start-up and
imports left out. The ratios are taken against ``raw`` (hand-written SQL,
the same rows and transactions) and against ``store`` (the public store API
without the protocol).

Instructions leave out what the kernel does (fsync, file locks) and time
spent waiting: they measure the CPU cost of our Python and of SQLite, which
is what a change to the protocol can change. ``overhead.py`` stays the
wall-clock figure.

    python benchmarks/instructions.py [--json] [--effects 200]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

VARIANTS = ("raw", "store", "actonce", "actonce_no_reverify")


def _child(variant: str, effects: int) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from overhead import ActOnceBench, RawBench, StoreBench

    from actonce import Policy

    with tempfile.TemporaryDirectory(prefix="actonce-ir-") as folder:
        path = os.path.join(folder, "ledger.db")
        bench: Any
        if variant == "raw":
            bench = RawBench(path)
            bench.conn.set_trace_callback(None)  # counting commits costs instructions
        elif variant == "store":
            bench = StoreBench(path)
        else:
            policy = Policy(verify_after_claim=variant == "actonce")
            bench = ActOnceBench(path, policy)
            bench.store._conn.set_trace_callback(None)  # counting commits costs instructions
        bench.run(0, 20)
        bench.run(1, effects)
        bench.close()


def _instructions(valgrind: str, variant: str, effects: int) -> int:
    cmd = [
        valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, os.path.abspath(__file__), "--child", variant, str(effects),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = re.search(r"Collected\s*:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed for {variant}: {done.stderr[-600:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--effects", type=int, default=100)
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if args.effects < 1:
        parser.error("--effects must be at least 1")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is needed (apt-get install valgrind)")
    per: dict[str, float] = {}
    for variant in VARIANTS:
        print(f"{variant}: counting ...", file=sys.stderr, flush=True)
        base = _instructions(valgrind, variant, 0)
        more = _instructions(valgrind, variant, args.effects)
        per[variant] = (more - base) / args.effects
    summary: dict[str, Any] = {
        "effects": args.effects,
        "instructions_per_effect": {k: round(v) for k, v in per.items()},
        "ratio_vs_raw": round(per["actonce"] / per["raw"], 4),
        "ratio_no_reverify_vs_raw": round(per["actonce_no_reverify"] / per["raw"], 4),
        "ratio_store_vs_raw": round(per["store"] / per["raw"], 4),
        "ratio_vs_store": round(per["actonce"] / per["store"], 4),
        "python_instructions_over_raw": round(per["actonce"] - per["raw"]),
    }
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        for variant, value in per.items():
            print(f"{variant:>20}: {value:,.0f} instructions/effect")
        for k, v in summary.items():
            if k != "instructions_per_effect":
                print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
