"""The command line of ``actonce chaos`` (see ``_campaign`` for the campaign itself)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from actonce import LedgerError

from ._campaign import run_campaign
from ._cluster import ClusterError

__all__ = ["main"]


def _span(text: str) -> tuple[float, float]:
    """``LOW:HIGH`` (or one number) in seconds, for ``--restart-every``."""
    low, _, high = text.partition(":")
    try:
        return float(low), float(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH seconds, not {text!r}") from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="actonce chaos",
        description="Race worker processes over the same intents with real SIGKILLs and "
        "faults; compare the ledger with the provider's ground truth.",
    )
    p.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument(
        "--dsn",
        default=None,
        help="PostgreSQL DSN (backend postgres; default $ACTONCE_TEST_POSTGRES_DSN "
        "or $ACTONCE_LEDGER when a postgresql:// URL)",
    )
    p.add_argument(
        "--terminate-connections",
        action="store_true",
        help="PostgreSQL: terminate random workers' connections (pg_terminate_backend) "
        "at random moments",
    )
    p.add_argument(
        "--restart-server",
        action="store_true",
        help="PostgreSQL: start a throwaway cluster (initdb, pg_ctl; never the --dsn "
        "server) and restart it now and then, alternating -m fast and -m immediate",
    )
    p.add_argument(
        "--restart-every",
        type=_span,
        default=(5.0, 40.0),
        metavar="LOW:HIGH",
        help="seconds between two server restarts, a random span (default 5:40)",
    )
    p.add_argument(
        "--min-restarts",
        type=int,
        default=0,
        help=(
            "with --restart-server: run more schedules until the server was restarted "
            "this often and a restart was seen by a worker or the parent"
        ),
    )
    p.add_argument(
        "--pg-bin",
        default=None,
        help="folder of initdb and pg_ctl (default $ACTONCE_PG_BIN, PATH, "
        "/usr/lib/postgresql/*/bin)",
    )
    p.add_argument(
        "--slow-rate",
        type=float,
        default=0.0,
        help="fraction (0-1) of performs in chaotic rounds that are slow: the page loads "
        "for longer than lease + settle before the request (default 0)",
    )
    p.add_argument(
        "--slow-seconds",
        type=float,
        default=3.0,
        help="a slow perform takes 1-1.5 times this; lease + settle is at most 0.65 "
        "times it (2-120, default 3)",
    )
    p.add_argument("--schedules", type=int, default=200)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--intents", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first", type=int, default=0, help="index of the first schedule")
    p.add_argument("--json", action="store_true", help="print the report as JSON, last line")
    return p


def _progress_printer() -> Callable[[int, int], None]:
    tty = sys.stderr.isatty()
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        step = max(1, total // 20)
        if not tty and done % step and done != total:
            return
        line = f"chaos: {done}/{total} schedules, {time.monotonic() - started:.1f}s"
        end = "\n" if done == total or not tty else ""
        print(("\r" if tty else "") + line, end=end, file=sys.stderr, flush=True)

    return show


def _interrupt(signum: int, frame: Any) -> None:
    # Unwind like Ctrl-C so that workers are killed and folders removed.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """``actonce chaos``: 0 when clean, 1 on a duplicate or lost intent, 2 on bad input."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = run_campaign(
            backend=args.backend,
            dsn=args.dsn,
            schedules=args.schedules,
            workers=args.workers,
            intents=args.intents,
            seed=args.seed,
            first=args.first,
            progress=_progress_printer(),
            terminate_connections=args.terminate_connections,
            slow_rate=args.slow_rate,
            slow_seconds=args.slow_seconds,
            restart_server=args.restart_server,
            restart_every=args.restart_every,
            min_restarts=args.min_restarts,
            pg_bin=args.pg_bin,
        )
    except (ValueError, LedgerError) as exc:
        print(f"actonce chaos: {exc}", file=sys.stderr)
        return 2
    except ClusterError as exc:  # initdb or pg_ctl failed
        print(f"actonce chaos: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("actonce chaos: interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(report.summary())
    if args.json:
        print(json.dumps(report.to_json(), sort_keys=True))
    return 0 if report.ok else 1
