"""``actonce demo``: the main job, on the embedded default.

SQLite ledger, the bundled sandbox, headless Chromium: several browser
workers run a batch of intents under seeded faults and kills, reconcile, and
a report compares the sandbox's ground truth with the ledger.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ._run import DemoConfig, DemoReport, run_demo

__all__ = ["DemoConfig", "DemoReport", "main", "run_demo"]


def _print_report(r: DemoReport) -> None:
    print()
    print("actonce demo report")
    print("===================")
    print(f"intents            {r.intents} ({r.intents_done} settled) in {r.rounds} round(s), "
          f"{r.wall_s:.0f} s")
    print(f"effects (ledger)   {r.effects}, confirmed {r.confirmed}")
    seen = ", ".join(f"{k} {v}" for k, v in sorted(r.observed.items()) if v)
    print(f"observed (sandbox) {seen or 'nothing'}")
    print(f"duplicates         {len(r.duplicates)}")
    for d in r.duplicates:
        print(f"    {d}")
    print(f"replanned          {len(r.replanned)} after proven failure"
          + (f": {', '.join(r.replanned)}" if r.replanned else ""))
    print(f"needs review       {len(r.needs_review)}")
    for item in r.needs_review:
        print(f"    {item['intent']} ({item['key']}): {item['reason']}")
        if item.get("evidence"):
            print(f"        evidence: {item['evidence']}")
    print(f"hard stops         {len(r.hard_stops)}")
    for h in r.hard_stops:
        print(f"    {h['worker']} {h['intent']}: {h['reason']}")
    print(f"quality skips      {len(r.quality_skips)}")
    for q in r.quality_skips:
        print(f"    {q['intent']}: {q['reason']}")
    print(f"workers killed     {len(r.kills)}"
          + (f": {', '.join(k['worker'] + ' (' + k['how'] + ')' for k in r.kills)}"
             if r.kills else ""))
    print(f"faults fired       {', '.join(f'{k} {v}' for k, v in sorted(r.faults_fired.items()))}")
    print(f"unresolved         {len(r.unresolved)}")
    print(f"ledger             {r.ledger}")
    print(f"inspect            actonce status --ledger {r.ledger}")


def main(argv: Sequence[str] | None = None) -> int:
    """``actonce demo [--intents N] [--workers W] [--seed S] [--faults/--no-faults] ...``"""
    parser = argparse.ArgumentParser(prog="actonce demo", description=__doc__.splitlines()[0])
    parser.add_argument("--intents", type=int, default=24, help="intents in the batch (24)")
    parser.add_argument("--workers", type=int, default=3, help="concurrent browser workers (3)")
    parser.add_argument("--seed", type=int, default=1, help="seed of intents, faults, kills (1)")
    parser.add_argument("--faults", action=argparse.BooleanOptionalAction, default=True,
                        help="inject the sandbox faults (on)")
    parser.add_argument("--kills", action=argparse.BooleanOptionalAction, default=True,
                        help="kill workers at random moments and crash points (on)")
    parser.add_argument("--headed", action="store_true", help="show the browser windows")
    parser.add_argument("--workdir", help="where the ledger, sandbox db and evidence go "
                        "(default: a new temporary folder)")
    parser.add_argument("--json", action="store_true", help="last line: the report as JSON")
    parser.add_argument("--scenario", choices=("posts", "booking", "all"), default="posts",
                        help="posts and invoices (default), booking (hold, pay, book, notify "
                        "with approvals; see docs/booking.md), or all")
    args = parser.parse_args(argv)
    if args.scenario == "booking":
        booking = _booking(args)
        if args.json:
            print(json.dumps(booking, sort_keys=True))
        return 1 if booking["failed"] else 0
    if args.intents < 1 or args.workers < 1:
        parser.error("--intents and --workers must be at least 1")
    cfg = DemoConfig(intents=args.intents, workers=args.workers, seed=args.seed,
                     faults=args.faults, kills=args.kills, headed=args.headed,
                     workdir=args.workdir)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from actonce import ActOnceError

    try:
        report = run_demo(cfg, progress)
    except ActOnceError as exc:
        print(f"actonce demo: error: {exc}", file=sys.stderr)
        return 1
    _print_report(report)
    if args.scenario == "all":
        booking = _booking(args)
        if args.json:
            print(json.dumps({**report.to_json(), "booking": booking}, sort_keys=True))
        return 1 if report.duplicates or booking["failed"] else 0
    if args.json:
        print(json.dumps(report.to_json(), sort_keys=True))
    return 1 if report.duplicates else 0


def _booking(args: argparse.Namespace) -> dict[str, Any]:
    """``--scenario booking`` (see ``actonce.demo._booking``): its report, printed."""
    from pathlib import Path

    from ._booking import clean, print_report, run_booking

    workdir = Path(args.workdir) / "booking" if args.workdir else None
    report = run_booking(workdir=workdir, seed=args.seed,
                         progress=lambda m: print(m, file=sys.stderr, flush=True))
    print_report(report)
    report["failed"] = not clean(report)
    return report
