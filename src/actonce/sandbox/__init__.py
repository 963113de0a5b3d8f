"""A small, real web app to point browser agents at: the actonce sandbox.

Posts, replies, likes, follows, invoices (HTML and a JSON API with
``Idempotency-Key``), a shop with bookings, and deterministic fault injection
(lost or slow confirmations, 500s before or after commit, late indexing,
login wall, CAPTCHA, rate limit, price change, an editor that appends).
Its SQLite database is the ground truth: ``GET /admin/ground-truth`` counts
what was created per natural key, independently of any ledger.

Serve it with ``actonce sandbox`` or ``SandboxServer``::

    with SandboxServer(seed=1) as server:
        print(server.url)
"""

from __future__ import annotations

from ._app import SESSION_COOKIE, Sandbox, create_app, parse_post_ref
from ._db import SEED_ITEMS, SEED_USERS, SandboxDB
from ._faults import ACTIONS, Fault, FaultPlan, FaultRule, FiredFault
from ._server import SandboxServer, serve

__all__ = [
    "ACTIONS",
    "SEED_ITEMS",
    "SEED_USERS",
    "SESSION_COOKIE",
    "Fault",
    "FaultPlan",
    "FaultRule",
    "FiredFault",
    "Sandbox",
    "SandboxDB",
    "SandboxServer",
    "create_app",
    "parse_post_ref",
    "serve",
]
