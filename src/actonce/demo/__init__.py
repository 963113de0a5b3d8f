"""``actonce demo``: the main job, on the embedded default.

SQLite ledger, the bundled sandbox, headless Chromium: several browser
workers run a batch of intents under seeded faults and kills, one
``actonce.Operator`` per actor, and a report compares the sandbox's ground
truth with the ledger and the operators' run summaries.
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
    def items(rows: list[dict[str, Any]], *fields: str) -> list[str]:
        return [
            f"    {' '.join(str(row[f]) for f in fields[:-1])}: {row[fields[-1]]}" for row in rows
        ]

    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.operator_runs.items()))
    kills = ", ".join(f"{k['worker']} ({k['how']})" for k in r.kills)
    lines = ["", "actonce demo report", "===================",
             f"intents            {r.intents} ({r.intents_done} settled) in {r.rounds} round(s), "
             f"{r.wall_s:.0f} s",
             f"effects (ledger)   {r.effects}, confirmed {r.confirmed}",
             f"observed (sandbox) {', '.join(f'{k} {v}' for k, v in sorted(r.observed.items()) if v)}",
             f"duplicates         {len(r.duplicates)}", *[f"    {d}" for d in r.duplicates],
             f"replanned          {len(r.replanned)} after proven failure: {', '.join(r.replanned)}",
             f"operator runs      {counts} (one per actor at a time; see actonce summary --list)",
             f"hard stops         {len(r.hard_stops)}", *items(r.hard_stops, "worker", "intent", "reason"),
             f"reviewed           {len(r.reviewed)} (each stopped its operator; the demo's reviewer "
             "decided from the site's own records)",
             *[f"    {i['intent']} ({i['key']}): {i['reason']} -> {i['decision']}" for i in r.reviewed],
             f"needs review       {len(r.needs_review)} (left for a person)",
             *[line for i in r.needs_review for line in (
                 f"    {i['intent']} ({i['key']}): {i['reason']}",
                 *([f"        evidence: {i['evidence']}"] if i.get("evidence") else []))],
             f"quality skips      {len(r.quality_skips)}", *items(r.quality_skips, "intent", "reason"),
             f"workers killed     {len(r.kills)}: {kills}",
             f"faults fired       {', '.join(f'{k} {v}' for k, v in sorted(r.faults_fired.items()))}",
             f"unresolved         {len(r.unresolved)}",
             f"ledger             {r.ledger}",
             f"inspect            actonce status --ledger {r.ledger}"]  # fmt: skip
    print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    """``actonce demo [--intents N] [--workers W] [--seed S] [--faults/--no-faults] ...``"""
    parser = argparse.ArgumentParser(prog="actonce demo", description=__doc__.splitlines()[0])
    parser.add_argument("--intents", type=int, default=24, help="intents in the batch (24)")
    parser.add_argument("--workers", type=int, default=3, help="concurrent browser workers (3)")
    parser.add_argument("--seed", type=int, default=1, help="seed of intents, faults, kills (1)")
    parser.add_argument("--faults", action=argparse.BooleanOptionalAction, default=True,
                        help="inject the sandbox faults (on)")  # fmt: skip
    parser.add_argument("--kills", action=argparse.BooleanOptionalAction, default=True,
                        help="kill workers at random moments and crash points (on)")  # fmt: skip
    parser.add_argument("--headed", action="store_true", help="show the browser windows")
    parser.add_argument("--workdir", help="where the ledger, sandbox db and evidence go "
                        "(default: a new temporary folder)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="last line: the report as JSON")
    parser.add_argument(
        "--install",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="without a Chromium, install one: Playwright's download, else apt-get as root (on)",
    )
    parser.add_argument(
        "--scenario",
        choices=("posts", "booking", "all"),
        default="posts",
        help="posts and invoices (default), booking (hold, pay, book, notify "
        "with approvals; see docs/booking.md), or all",
    )
    args = parser.parse_args(argv)
    if args.intents < 1 or args.workers < 1:
        parser.error("--intents and --workers must be at least 1")
    cfg = DemoConfig(intents=args.intents, workers=args.workers, seed=args.seed,
                     faults=args.faults, kills=args.kills, headed=args.headed,
                     workdir=args.workdir)  # fmt: skip

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from actonce import ActOnceError
    from actonce.browser import BrowserNotFound, ensure_chromium

    try:
        chromium = ensure_chromium(progress, install=args.install)
    except BrowserNotFound as exc:
        print(f"actonce demo: {exc}", file=sys.stderr)
        return 1
    if chromium.how == "found":
        progress(f"using {chromium.version or 'Chromium'} at {chromium.path}")
    failed = False
    out: dict[str, Any] = {}
    if args.scenario in ("posts", "all"):
        try:
            report = run_demo(cfg, progress)
        except ActOnceError as exc:
            print(f"actonce demo: error: {exc}", file=sys.stderr)
            return 1
        _print_report(report)
        out = report.to_json()
        failed = bool(report.duplicates)
    if args.scenario in ("booking", "all"):
        booking = _booking(args)
        failed = failed or bool(booking["failed"])
        out = booking if args.scenario == "booking" else {**out, "booking": booking}
    if args.json:
        print(json.dumps(out, sort_keys=True))
    return 1 if failed else 0


def _booking(args: argparse.Namespace) -> dict[str, Any]:
    """``--scenario booking`` (see ``actonce.demo._booking``): its report, printed."""
    from pathlib import Path

    from ._booking import clean, print_report, run_booking

    workdir = Path(args.workdir) / "booking" if args.workdir else None
    report = run_booking(
        workdir=workdir, seed=args.seed, progress=lambda m: print(m, file=sys.stderr, flush=True)
    )
    print_report(report)
    report["failed"] = not clean(report)
    return report
