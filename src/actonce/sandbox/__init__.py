"""A small, real web app to point browser agents at: the actonce sandbox.

Posts, replies, likes, follows, invoices (HTML and a JSON API with
``Idempotency-Key``), a shop with bookings, a booking world (``/book``,
``/api/book``: hotel rooms and shop items with inventory, holds that expire,
payment authorizations, bookings, outbound messages, with its own ground
truth at ``/admin/booking/ground-truth``), and deterministic fault injection
(confirmations lost after the headers or with no response byte at all — a
FIN or a reset, which makes browsers resend a POST — slow confirmations, 500s
before or after commit, late indexing, login wall, CAPTCHA, rate limit, price
change, an editor that appends, a page that submits twice, a booking refused
after its payment, a message accepted but never delivered, a list cut short).
Its SQLite database is the ground truth: ``GET /admin/ground-truth`` counts
what was created per natural key, independently of any ledger.

A second, separate hotel site, Lakeside Inn (``LakesideServer``: hold → pay →
book → email, holds that lapse on their own, a UUID ``request_id`` as its
idempotency key), is what "your own site" looks like in docs/booking.md.

Serve it with ``actonce sandbox`` or ``SandboxServer``::

    with SandboxServer(seed=1) as server:
        print(server.url)
"""

from __future__ import annotations

from ._app import SESSION_COOKIE, Sandbox, create_app, parse_post_ref
from ._booking import SEED_PRODUCTS, BookingClock, BookingDB, BookingWorld, Refused
from ._conns import LostMode
from ._db import SEED_ITEMS, SEED_USERS, SandboxDB
from ._faults import ACTIONS, Fault, FaultPlan, FaultRule, FiredFault
from ._lakeside import LakesideInn, LakesideServer
from ._server import SandboxServer, serve

__all__ = [
    "ACTIONS",
    "SEED_ITEMS",
    "SEED_PRODUCTS",
    "SEED_USERS",
    "SESSION_COOKIE",
    "BookingClock",
    "BookingDB",
    "BookingWorld",
    "Fault",
    "FaultPlan",
    "FaultRule",
    "FiredFault",
    "LakesideInn",
    "LakesideServer",
    "LostMode",
    "Refused",
    "Sandbox",
    "SandboxDB",
    "SandboxServer",
    "create_app",
    "main",
    "parse_post_ref",
    "serve",
]


def main(argv: list[str] | None = None) -> int:
    """``actonce sandbox [--host H] [--port P] [--db FILE] [--seed S] [--faults FILE.json]``."""
    import argparse
    import json
    import sys
    from pathlib import Path

    def port(text: str) -> int:
        if not text.isdigit() or not 0 < int(text) < 65536:
            raise argparse.ArgumentTypeError(f"must be a TCP port from 1 to 65535, not {text!r}")
        return int(text)

    parser = argparse.ArgumentParser(
        prog="actonce sandbox",
        exit_on_error=False,
        description="Serve the sandbox target app (Ctrl-C stops it).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback address (127.0.0.1)")
    parser.add_argument("--port", type=port, default=8765, help="TCP port (8765)")
    parser.add_argument("--db", help="database file (default: in memory)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault plan (0)")
    parser.add_argument("--faults", help="JSON file with fault rules, as POST /admin/faults takes")
    try:
        args = parser.parse_args(argv)
    except argparse.ArgumentError as exc:  # one line, like every actonce command
        print(f"actonce sandbox: error: {exc} (see --help)", file=sys.stderr)
        return 2
    rules: list[FaultRule] = []
    if args.faults:
        try:
            data = json.loads(Path(args.faults).read_text(encoding="utf-8"))
            rules = [FaultRule.from_json(r) for r in data.get("rules", [])]
        except (OSError, ValueError) as exc:
            print(f"actonce sandbox: error: bad --faults file: {exc}", file=sys.stderr)
            return 2
    try:
        print(
            f"sandbox on http://{args.host}:{args.port} (accounts: alice, bob, carol; "
            "password <name>-password; booking world at /book)",
            flush=True,
        )
        serve(args.host, args.port, args.db, args.seed, faults=rules)
    except (OSError, ValueError, OverflowError) as exc:
        print(f"actonce sandbox: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
