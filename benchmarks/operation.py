"""What does an operation cost, next to the same effects run one by one?

A four-step operation (hold -> pay -> book -> notify) with no-op steps, run
by ``Operation.run`` (one pass), against the same four effects run one by one
through ``Ledger.run``, on the same kind of store (a fresh SQLite file each),
interleaved round by round so noise hits both alike. The ratio is the median
of the per-round ratios; commits are counted with SQLite's trace callback.

    python benchmarks/operation.py [--json] [--rounds 10] [--per-round 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from actonce import Absent, Confirmed, Effect, Ledger, Operation, Policy, SQLiteStore, Step, Verdict

POLICY = Policy(verify_after_claim=True)


class Counting:
    def __init__(self, path: str) -> None:
        self.store = SQLiteStore(path, create=True)
        self.ledger = Ledger(self.store)
        self.commits = 0
        self.store._conn.set_trace_callback(self._trace)  # counting only

    def _trace(self, statement: str) -> None:
        if statement.strip().upper() == "COMMIT":
            self.commits += 1


def _effect(name: str) -> Effect:
    done = [False]

    def verify() -> Verdict:
        return Confirmed(name) if done[0] else Absent()

    def perform() -> None:
        done[0] = True

    return Effect(key=name, kind="bench", payload={"n": name}, perform=perform, verify=verify,
                  policy=POLICY)  # fmt: skip


def _steps(prefix: str) -> list[Step]:
    return [
        Step("hold", _effect(f"{prefix}-hold"), "compensatable", undo=_effect(f"{prefix}-unhold")),
        Step("pay", _effect(f"{prefix}-pay"), "compensatable", undo=_effect(f"{prefix}-void")),
        Step("book", _effect(f"{prefix}-book"), "pivot"),
        Step("notify", _effect(f"{prefix}-notify"), "retriable"),
    ]


def measure(rounds: int, per_round: int, folder: str) -> dict[str, Any]:
    op_side = Counting(os.path.join(folder, "operation.db"))
    one_side = Counting(os.path.join(folder, "one-by-one.db"))
    ratios, op_ms, one_ms = [], [], []
    ops = 0
    for r in range(rounds):
        spent = {"op": 0.0, "one": 0.0}
        for i in range(per_round):
            order = ("op", "one") if (r + i) % 2 else ("one", "op")
            for side in order:
                prefix = f"{side}-{r}-{i}"
                t0 = time.perf_counter()
                if side == "op":
                    result = Operation(op_side.ledger, prefix, _steps(prefix)).run()
                    assert result.done, result
                    ops += 1
                else:
                    for step in _steps(prefix):
                        assert one_side.ledger.run(step.effect).done
                spent[side] += time.perf_counter() - t0
        op_ms.append(spent["op"] * 1000 / per_round)
        one_ms.append(spent["one"] * 1000 / per_round)
        ratios.append(spent["op"] / spent["one"])
    return {
        "rounds": rounds,
        "per_round": per_round,
        "ms_per_operation": round(statistics.median(op_ms), 3),
        "ms_per_four_effects": round(statistics.median(one_ms), 3),
        "ratio": round(statistics.median(ratios), 4),
        "ratio_min": round(min(ratios), 4),
        "ratio_max": round(max(ratios), 4),
        "commits_per_operation": op_side.commits / ops,
        "commits_per_four_effects": one_side.commits / (rounds * per_round),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="actonce-bench-op-") as folder:
        summary = measure(args.rounds, args.per_round, folder)
    for k, v in summary.items():
        print(f"{k}: {v}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
