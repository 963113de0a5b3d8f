"""The ``actonce`` command: a thin shell over the public API.

Readable tables by default, ``--json`` for scripts. Every error a user can
cause (unknown key, malformed URL, unreadable ledger, newer schema) prints
one line on stderr and exits non-zero; no tracebacks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from ._errors import ActOnceError, LedgerUnavailable
from ._ledger import Ledger, Resolution
from ._model import EffectRecord, Event, Status
from ._registry import registry
from ._urls import resolve_url, sqlite_path

__all__ = ["main"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _open(args: argparse.Namespace, *, create: bool = False) -> Ledger:
    url = resolve_url(args.ledger)
    path = sqlite_path(url)
    if path is not None and not create and not os.path.exists(path):
        raise LedgerUnavailable(f"no ledger at {path} (set --ledger or ACTONCE_LEDGER)")
    return Ledger.open(url)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines)


def _record_json(r: EffectRecord) -> dict[str, Any]:
    return {
        "key": r.key,
        "kind": r.kind,
        "status": r.status.value,
        "attempt": r.fence,
        "owner": r.owner,
        "lease_expires_at": r.lease_expires_at,
        "payload": json.loads(r.payload),
        "scope": json.loads(r.scope),
        "result_ref": r.result_ref,
        "reason": r.reason,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "executing_at": r.executing_at,
    }


def _event_json(e: Event) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "type": e.type.value,
        "at": e.at,
        "attempt": e.fence,
        "run_id": e.run_id,
        "from": None if e.from_status is None else e.from_status.value,
        "to": None if e.to_status is None else e.to_status.value,
        "message": e.message,
        "data": e.data,
    }


def _print_json(value: Any) -> None:
    print(json.dumps(value, sort_keys=True))


# --- commands ---------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    with _open(args) as ledger:
        counts = ledger.counts()
        review = ledger.list(Status.NEEDS_REVIEW, limit=10)
    total = sum(counts.values())
    open_ = sum(n for s, n in counts.items() if s.is_open)
    if args.json:
        _print_json(
            {
                "ledger": resolve_url(args.ledger),
                "total": total,
                "open": open_,
                "counts": {s.value: counts.get(s, 0) for s in Status},
            }
        )
        return EXIT_OK
    print(f"ledger  {resolve_url(args.ledger)}")
    print(f"effects {total}  (open: {open_}, needs review: {counts.get(Status.NEEDS_REVIEW, 0)})")
    print(_table([[s.value, str(counts.get(s, 0))] for s in Status], ["status", "count"]))
    if review:
        print("\nwaiting for review:")
        for r in review:
            print(f"  {r.key[:16]}  {r.kind}  {r.reason or ''}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as ledger:
        rows = ledger.list(args.status, kind=args.kind, limit=args.limit)
    if args.json:
        _print_json([_record_json(r) for r in rows])
        return EXIT_OK
    if not rows:
        print("no effects")
        return EXIT_OK
    print(
        _table(
            [
                [
                    r.key[:16],
                    r.kind,
                    r.status.value,
                    str(r.fence),
                    _when(r.updated_at),
                    r.result_ref or "",
                    (r.reason or "")[:60],
                ]
                for r in rows
            ],
            ["key", "kind", "status", "attempt", "updated", "result", "reason"],
        )
    )
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    with _open(args) as ledger:
        record = ledger.find(args.key)
        events = ledger.events(record.key)
    if args.json:
        _print_json({"effect": _record_json(record), "events": [_event_json(e) for e in events]})
        return EXIT_OK
    print(f"key      {record.key}")
    print(f"kind     {record.kind}")
    print(f"status   {record.status.value} (attempt {record.fence})")
    print(f"result   {record.result_ref or '-'}")
    print(f"reason   {record.reason or '-'}")
    print(f"scope    {record.scope}")
    print(f"payload  {record.payload}")
    print("\nhistory:")
    print(
        _table(
            [
                [
                    str(e.seq),
                    _when(e.at),
                    e.type.value,
                    f"{e.from_status or ''}->{e.to_status or ''}" if e.to_status else "",
                    str(e.fence),
                    e.run_id[:14],
                    (e.message or "")[:70]
                    + (f" {e.data['evidence']}" if "evidence" in e.data else ""),
                ]
                for e in events
            ],
            ["seq", "at", "event", "change", "attempt", "run", "message"],
        )
    )
    return EXIT_OK


def cmd_resolve(args: argparse.Namespace) -> int:
    decision = Resolution(args.decision.replace("-", "_"))
    with _open(args) as ledger:
        record = ledger.resolve(
            args.key,
            decision,
            reviewer=args.reviewer,
            reason=args.reason,
            result_ref=args.result_ref,
        )
    if args.json:
        _print_json(_record_json(record))
    else:
        print(f"{record.key[:16]} is now {record.status.value}")
    return EXIT_OK


def cmd_reconcile(args: argparse.Namespace) -> int:
    registry.load(args.verifiers)
    with _open(args) as ledger:

        def progress(r: Any) -> None:
            if not args.json:
                print(f"  {r.key[:16]}  -> {r.status}  {r.reason or ''}", file=sys.stderr)

        report = ledger.reconcile(progress=progress)
    unresolved = report.unresolved
    summary = {
        "checked": len(report.results),
        "live": report.live,
        "no_verifier": len(report.no_verifier),
        "unresolved": len(unresolved),
        "results": {s.value: sum(1 for r in report.results if r.status is s) for s in Status},
    }
    if args.json:
        _print_json(summary)
    else:
        print(
            f"checked {summary['checked']}, left to live owners {report.live}, "
            f"unresolved {len(unresolved)}"
        )
        if report.no_verifier:
            kinds = ", ".join(sorted({k[:16] for k in report.no_verifier}))
            print(
                f"no verifier registered for {len(report.no_verifier)} effect(s): {kinds} "
                "(register one: see --verifiers)"
            )
    return EXIT_FAIL if unresolved or report.no_verifier else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="actonce",
        description="Make the side effects of automations safe to retry.",
    )
    parser.add_argument("--version", action="version", version=f"actonce {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--ledger", help="ledger URL or path (default: $ACTONCE_LEDGER or ./actonce.db)"
    )
    common.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("status", parents=[common], help="effects per status")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("list", parents=[common], help="list effects")
    p.add_argument("--status", choices=[s.value for s in Status])
    p.add_argument("--kind")
    p.add_argument("--limit", type=int, default=100)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", parents=[common], help="one effect and its full history")
    p.add_argument("key", help="effect key or a unique prefix (at least 4 characters)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("resolve", parents=[common], help="record a reviewer's decision")
    p.add_argument("key", help="effect key or a unique prefix")
    p.add_argument("decision", choices=["happened", "not-happened", "abandon"])
    p.add_argument("--reason", required=True)
    p.add_argument("--reviewer", default=os.environ.get("USER") or "")
    p.add_argument("--result-ref", help="where the effect is (with 'happened')")
    p.set_defaults(func=cmd_resolve)

    p = sub.add_parser(
        "reconcile", parents=[common], help="verify every unfinished effect and move it on"
    )
    p.add_argument(
        "--verifiers",
        help="comma-separated modules that register verifiers "
        "(also $ACTONCE_VERIFIERS and 'actonce.verifiers' entry points)",
    )
    p.set_defaults(func=cmd_reconcile)

    for name, (_module, text) in _DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


#: Commands with their own option parsers: ``actonce NAME ...`` runs ``module.main(argv)``.
_DELEGATED = {
    "demo": ("actonce.demo", "the browser demo: agents, faults, kills, report"),
    "chaos": ("actonce._chaos", "randomized kill campaigns against a fake provider"),
    "sandbox": ("actonce.sandbox", "run the sandbox target app"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``actonce`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _DELEGATED:
        import importlib

        target: Callable[[list[str]], int] = importlib.import_module(_DELEGATED[argv[0]][0]).main
        return int(target(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "resolve" and not args.reviewer.strip():
        parser.error("resolve needs --reviewer (or $USER)")
    try:
        return int(args.func(args))
    except ActOnceError as exc:
        print(f"actonce: error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("actonce: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
