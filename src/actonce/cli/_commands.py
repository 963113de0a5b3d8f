"""The ``actonce`` commands that read and settle a ledger, over the public API only.

``status``, ``list`` and ``show`` open the ledger read-only (``show`` adds
the intent chain, the approvals and the holds of a gated effect): they never
create, migrate or write (a mistyped path is an error, never a new ledger).
``init`` makes a ledger, ``migrate`` upgrades one, ``resolve`` and
``reconcile`` write to an existing one.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from actonce import (
    EffectRecord,
    Ledger,
    LedgerNotFound,
    Resolution,
    Status,
    UnknownEffect,
    open_ledger,
    registry,
)

from ._approvals import approvals_section, gated_json
from ._firewall import firewall_line
from ._format import clean, event_json, print_json, record_json, table, utc, when

__all__ = [
    "EXIT_FAIL",
    "EXIT_OK",
    "EXIT_OPEN",
    "EXIT_USAGE",
    "cmd_budgets",
    "cmd_init",
    "cmd_list",
    "cmd_migrate",
    "cmd_receipt",
    "cmd_reconcile",
    "cmd_resolve",
    "cmd_show",
    "cmd_status",
    "cmd_summary",
]

#: Exit codes: done; an error (one line on stderr); a bad command line;
#: reconcile left effects open (not an error: run it again later).
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_OPEN = 0, 1, 2, 3


def _read(args: argparse.Namespace) -> Ledger:
    return open_ledger(args.ledger, readonly=True)


def _write(args: argparse.Namespace) -> Ledger:
    return open_ledger(args.ledger)


def cmd_status(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        counts = ledger.counts()
        duplicates = ledger.duplicates()
        review = ledger.list(Status.NEEDS_REVIEW, limit=10)
        operations = ledger.operations.in_review(limit=1000)
        refusals = ledger.firewall.totals()
        wall = firewall_line(ledger)
        url = ledger.url
    total = sum(counts.values())
    open_ = sum(n for s, n in counts.items() if s.is_open)
    if args.json:
        print_json(
            {
                "ledger": url,
                "total": total,
                "open": open_,
                "duplicates_detected": duplicates,
                "counts": {s.value: counts.get(s, 0) for s in Status},
                "operations_in_review": len(operations),
                "firewall_refusals": refusals,
            }
        )
        return EXIT_OK
    print(f"ledger  {url}")
    print(
        f"effects {total}  (open: {open_}, needs review: {counts.get(Status.NEEDS_REVIEW, 0)}, "
        f"duplicates detected: {duplicates})"
    )
    print(table([[s.value, str(counts.get(s, 0))] for s in Status], ["status", "count"]))
    print(f"operations in review: {len(operations)}")
    print(wall)
    for v in operations[:10]:
        at = f"undo of {v.step}" if v.undo else v.step
        print(f"  {v.op_id}  at {at}, since {when(v.since)}: {clean(v.reason) or ''}")
    if review:
        print("\nwaiting for review:")
        for r in review:
            print(f"  {r.key[:16]}  {r.kind}  {clean(r.reason) or ''}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        rows = ledger.list(args.status, kind=args.kind, limit=args.limit)
    if args.json:
        print_json([record_json(r) for r in rows])
        return EXIT_OK
    if not rows:
        print("no effects")
        return EXIT_OK
    print(
        table(
            [
                [
                    r.key[:16],
                    r.kind,
                    r.status.value,
                    str(r.fence),
                    when(r.updated_at),
                    clean(r.result_ref) or "",
                    (clean(r.reason) or "")[:60],
                ]
                for r in rows
            ],
            ["key", "kind", "status", "attempt", "updated", "result", "reason"],
        )
    )
    return EXIT_OK


def _extra(data: dict[str, Any]) -> str:
    parts = []
    if "evidence" in data:
        parts.append(f"evidence {data['evidence']}")
    perform = data.get("perform")
    if isinstance(perform, dict) and perform.get("error"):
        parts.append(f"perform raised {perform['error']}")
    duplicate = data.get("duplicate")
    if isinstance(duplicate, dict):
        parts.append(f"{duplicate.get('count')} matches: {', '.join(duplicate.get('refs', []))}")
    if "alarm" in data:
        parts.append("performed after being overtaken")
    return " ".join(parts)


def cmd_show(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        record: EffectRecord | None
        try:
            record = ledger.find(args.key)
            key = record.key
        except UnknownEffect:
            # A gated effect that was never claimed: its approvals name its full key.
            if not ledger.approvals.list(key=args.key, limit=1):
                raise
            record, key = None, args.key
        try:
            events = ledger.events(key)
        except UnknownEffect:
            events = []
        if args.json:
            gated = gated_json(ledger, key)
        else:
            lines = approvals_section(ledger, key, record)
    if args.json:
        effect = None if record is None else record_json(record)
        print_json({"effect": effect, "events": [event_json(e) for e in events], **gated})
        return EXIT_OK
    if record is None:
        print(f"key      {key}")
        print("status   not claimed (a gated effect waiting for its approval, or refused)")
    else:
        _show_record(record)
    for line in lines:
        print(line)
    print("\nhistory:")
    print(
        table(
            [
                [
                    str(e.seq),
                    when(e.at),
                    e.type.value,
                    f"{e.from_status or ''}->{e.to_status or ''}" if e.to_status else "",
                    str(e.fence),
                    e.run_id[:14],
                    ((clean(e.message) or "")[:70] + " " + _extra(e.data)).strip(),
                ]
                for e in events
            ],
            ["seq", "at", "event", "change", "attempt", "run", "message"],
        )
    )
    return EXIT_OK


def _show_record(record: EffectRecord) -> None:
    print(f"key      {record.key}")
    print(f"kind     {record.kind}")
    print(f"status   {record.status.value} (attempt {record.fence})")
    print(f"result   {clean(record.result_ref) or '-'}")
    if record.matches > 1:
        print(f"matches  {record.matches} (a duplicate was detected)")
    print(f"reason   {clean(record.reason) or '-'}")
    print(f"scope    {record.scope}")
    print(f"payload  {record.payload}")


def cmd_resolve(args: argparse.Namespace) -> int:
    with _write(args) as ledger:
        record = ledger.resolve(
            args.key,
            Resolution(args.decision.replace("-", "_")),
            reviewer=args.reviewer,
            reason=args.reason,
            result_ref=args.result_ref,
            attempt=args.attempt,
        )
    if args.json:
        print_json(record_json(record))
    else:
        print(f"{record.key[:16]} is now {record.status.value}")
    return EXIT_OK


def cmd_reconcile(args: argparse.Namespace) -> int:
    registry.load(args.verifiers)
    with _write(args) as ledger:

        def progress(r: Any) -> None:
            if not args.json:
                print(f"  {r.key[:16]}  -> {r.status}  {clean(r.reason) or ''}", file=sys.stderr)

        report = ledger.reconcile(progress=progress)
    unresolved = report.unresolved
    summary = {
        "checked": len(report.results),
        "live": report.live,
        "no_verifier": len(report.no_verifier),
        "unresolved": len(unresolved),
        "errors": len(report.errors),
        "results": {s.value: sum(1 for r in report.results if r.status is s) for s in Status},
    }
    if args.json:
        print_json(summary)
    else:
        print(
            f"checked {summary['checked']}, left to live owners {report.live}, "
            f"unresolved {len(unresolved)}, failed to reconcile {len(report.errors)}"
        )
        if report.no_verifier:
            keys = ", ".join(sorted({k[:16] for k in report.no_verifier}))
            print(
                f"no verifier registered for {len(report.no_verifier)} effect(s): {keys} "
                "(register one: see --verifiers)"
            )
        for key, message in report.errors:
            print(f"  {key[:16]}  {message}", file=sys.stderr)
    return EXIT_OPEN if unresolved or report.no_verifier or report.errors else EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    try:
        with open_ledger(args.ledger) as ledger:
            existed = True
            url = ledger.url
    except LedgerNotFound:
        existed = False
        with open_ledger(args.ledger, create=True) as ledger:
            url = ledger.url
    if args.json:
        print_json({"ledger": url, "created": not existed})
    else:
        print(f"{'a ledger already exists at' if existed else 'created a ledger at'} {url}")
    return EXIT_OK


def cmd_migrate(args: argparse.Namespace) -> int:
    with _write(args) as ledger:  # opening for writing brings the schema to head
        url = ledger.url
    if args.json:
        print_json({"ledger": url, "migrated": True})
    else:
        print(f"the ledger at {url} is up to date")
    return EXIT_OK


def cmd_receipt(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        receipt = ledger.receipt(args.operation)
    if receipt is None:
        raise UnknownEffect(
            f"no receipt for operation {args.operation!r} (it has not stood still in a final state)"
        )
    if args.json:
        print_json({"operation": receipt.operation_id, "state": receipt.state.value,
                    "text": receipt.text, "data": receipt.data})  # fmt: skip
    else:
        print(receipt.text)
    return EXIT_OK


def cmd_budgets(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        usages = ledger.budgets.usage(*args.pools)  # a pool that does not exist: UsageError
        url = ledger.url
    if args.json:
        print_json({"ledger": url, "pools": [u.as_json() for u in usages]})
        return EXIT_OK
    print(f"ledger  {url}")
    if not usages:
        print("no budget pools")
        return EXIT_OK
    rows = []
    for u in usages:
        window = u.pool.window if isinstance(u.pool.window, str) else f"{u.pool.window:g}s"
        rows.append([u.pool.name, u.pool.unit, window, str(u.pool.limit), str(u.reserved),
                     str(u.consumed), str(u.free), f"{utc(u.start)} -> {utc(u.end)}"])  # fmt: skip
    headers = ["pool", "unit", "per", "limit", "reserved", "consumed", "free", "window (UTC)"]
    print(table(rows, headers))
    print("reserved: held by effects in flight or in doubt; consumed: verified; "
          "free: what a new claim may take")  # fmt: skip
    return EXIT_OK


def cmd_summary(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        if args.run_id:
            found = ledger.summary(args.run_id)
            runs = [] if found is None else [found]
        else:
            runs = ledger.summaries(args.operator, limit=args.limit if args.list else 1)
    if args.run_id and not runs:
        print(f"actonce: error: no run summary {args.run_id!r} in this ledger", file=sys.stderr)
        return EXIT_FAIL
    if args.json:
        data = [r.as_json() for r in runs]
        print_json(data if args.list else (data[0] if data else None))
        return EXIT_OK
    if not runs:
        who = f" of operator {args.operator!r}" if args.operator else ""
        print(f"no run summaries{who}")
        return EXIT_OK
    if args.list:
        rows = []
        for r in runs:
            c = r.counts()
            rows.append([r.run_id, r.operator, r.status.value, when(r.ended_at), str(c["done"]),
                         str(sum(c["skipped"].values())), str(c["failures"]),
                         str(c["ambiguous"]), str(c["hard_stops"]), str(c["quality_skips"])])  # fmt: skip
        headers = ["run", "operator", "status", "ended", "done", "skipped", "failures",
                   "ambiguous", "hard stops", "quality"]  # fmt: skip
        print(table(rows, headers))
        return EXIT_OK
    print("\n".join(clean(line) or "" for line in runs[0].lines()))
    return EXIT_OK
