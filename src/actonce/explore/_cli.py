"""``actonce explore`` / ``python -m actonce.explore``: the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from .._rules.errors import UsageError
from ._search import Report, random_walks, replay, walk_trace
from ._search import explore as run_explore
from ._world import PERFORMS, Bounds
from .faults import FAULTS, build

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"actonce explore: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="actonce explore",
        description="Explore every interleaving, crash and verdict of the real protocol within bounds.",
    )
    p.add_argument(
        "--workers", type=int, default=2, help="workers racing on one effect (default 2)"
    )
    p.add_argument("--runs", type=int, default=1, help="runs per worker, restarts included (1)")
    p.add_argument("--reconciles", type=int, default=1, help="reconcile passes (1)")
    p.add_argument("--reviews", type=int, default=1, help="human decisions (1)")
    p.add_argument("--crashes", type=int, default=2, help="actors dropped by SIGKILL, at most (2)")
    p.add_argument("--failed-writes", type=int, default=1, help="ledger writes that fail (1)")
    p.add_argument("--ticks", type=int, default=2, help="clock jumps (2)")
    p.add_argument("--depth", type=int, default=None, help="longest schedule (no bound)")
    p.add_argument(
        "--performs", default=",".join(PERFORMS), help="perform outcomes (ok,lost,refused)"
    )
    p.add_argument("--direct-claim", action="store_true", help="verify_after_claim off")
    p.add_argument(
        "--stale-review",
        action="store_true",
        help="a reviewer's decision applies to whatever attempt is current (resolve without attempt=)",
    )
    p.add_argument(
        "--fault", choices=sorted(FAULTS), help="explore a test build with this bug put back"
    )
    p.add_argument("--max-states", type=int, default=None, help="stop after this many states")
    p.add_argument("--all", action="store_true", help="go on after a violation (count them all)")
    p.add_argument(
        "--walks", type=int, default=None, help="random walks instead of the whole space"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random walks (0)")
    p.add_argument("--walk", type=int, default=None, help="replay random walk N of --seed")
    p.add_argument(
        "--trace", default=None, help="replay a reported trace (its steps, space-separated)"
    )
    p.add_argument("--json", action="store_true", help="the report as one JSON object on stdout")
    return p


def _bounds(args: argparse.Namespace) -> Bounds:
    performs = tuple(x.strip() for x in args.performs.split(",") if x.strip())
    return Bounds(
        workers=args.workers,
        runs=args.runs,
        reconciles=args.reconciles,
        reviews=args.reviews,
        crashes=args.crashes,
        failed_writes=args.failed_writes,
        ticks=args.ticks,
        depth=args.depth,
        performs=performs,
        verify_after_claim=not args.direct_claim,
        review_binds_attempt=not args.stale_review,
    )


def _progress(states: int, depth: int, seconds: float) -> None:
    if seconds >= 2.0:
        print(
            f"explore: {states} states, depth {depth}, {seconds:.0f}s", file=sys.stderr, flush=True
        )


def _walk_progress(walks: int, _depth: int, seconds: float) -> None:
    print(f"explore: {walks} walks, {seconds:.0f}s", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 clean, 1 a violation, 2 bad input."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.max_states is not None and args.max_states < 1:
            raise UsageError("--max-states must be >= 1")
        if args.walks is not None and args.walks < 1:
            raise UsageError("--walks must be >= 1")
        bounds = _bounds(args)
        protocol = build(args.fault)
        if args.trace is not None or args.walk is not None:
            trace = args.trace.split() if args.trace is not None else None
            if trace is None:
                trace = list(walk_trace(bounds, protocol, seed=args.seed, walk=args.walk))
            steps = replay(trace, bounds, protocol)
            broken = [v for _, vs in steps for v in vs]
            if args.json:
                print(
                    json.dumps(
                        {
                            "steps": [t for t, _ in steps],
                            "violations": [v._asdict() for v in broken],
                        }
                    )
                )
            else:
                for n, (text, vs) in enumerate(steps, 1):
                    print(f"{n:>3}. {text}")
                    for v in vs:
                        kind = "known residual" if v.residual else "VIOLATION"
                        print(f"     {kind}: {v.invariant}: {v.message}")
            return 1 if any(not v.residual for v in broken) else 0
        report: Report
        if args.walks is not None:
            report = random_walks(
                bounds, protocol, walks=args.walks, seed=args.seed, progress=_walk_progress
            )
        else:
            report = run_explore(
                bounds, protocol, stop_at_first=not args.all, max_states=args.max_states,
                progress=_progress,
            )  # fmt: skip
    except UsageError as exc:
        print(f"actonce explore: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("actonce explore: interrupted", file=sys.stderr)
        return 130
    print(json.dumps(report.to_json()) if args.json else report.summary())
    return 0 if report.ok else 1
