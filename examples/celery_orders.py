"""A Celery task whose side effect runs through the ledger (``pip install 'actonce[celery]'``).

Run a worker: ``ACTONCE_LEDGER=postgresql://... CELERY_BROKER_URL=redis://...
ORDERS_URL=http://... celery -A celery_orders worker``; queue an order with
``place_order.delay("ORDER-9201", "120.00")``. docs/engines.md explains every
setting; tests/engines/ kills workers running it (``SIGKILL``) while the broker
redelivers their tasks.

The order service behind ``ORDERS_URL`` does not deduplicate: a second
``POST /orders`` makes a second order. Celery redelivers a task whose worker
died (``acks_late``, ``task_reject_on_worker_lost``), so the task runs again;
the ledger makes sure the order is placed at most once.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from celery import Celery

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EffectRecord,
    Ledger,
    LedgerError,
    NotPerformed,
    Outcome,
    Policy,
    Status,
    Unavailable,
    Verdict,
    effect_key,
    open_ledger,
    registry,
)

ORDERS_URL = os.environ.get("ORDERS_URL", "http://127.0.0.1:8080")

# lease: how long a dead worker's effect stays its own (extended every third of
# it while the order is being placed); settle: how long a new order may take to
# show up in GET /orders. Absence is authoritative: the service's own lookup.
POLICY = Policy(lease_seconds=60, settle_seconds=5, absence_authoritative=True)
# Come back after the owner's lease and the settle window: never sooner.
RETRY_AFTER = POLICY.lease_seconds + POLICY.settle_seconds

app = Celery("orders", broker=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0"))
app.conf.update(
    task_acks_late=True,  # ack after the task ran: a worker that dies leaves it unacked
    task_reject_on_worker_lost=True,  # a killed pool process: requeue now, not never
    worker_prefetch_multiplier=1,  # a dead worker holds one message, not four
    # Redis redelivers an unacked message after the visibility timeout: keep it
    # above the longest run plus the longest countdown (RETRY_AFTER).
    broker_transport_options={"visibility_timeout": 3600},
)

_ledgers: dict[int, Ledger] = {}


def ledger() -> Ledger:
    """This process's ledger (``$ACTONCE_LEDGER``), opened after the pool's fork."""
    pid = os.getpid()
    if pid not in _ledgers:
        _ledgers[pid] = open_ledger()
    return _ledgers[pid]


def lookup(ref: str) -> Verdict:
    """Read-only: how many orders the service holds for ``ref``."""
    try:
        query = urllib.parse.urlencode({"ref": ref})
        with urllib.request.urlopen(f"{ORDERS_URL}/orders?{query}", timeout=10) as answer:
            ids = json.load(answer)["ids"]
    except (OSError, ValueError, KeyError) as exc:  # a failed look is not an absence
        return Unavailable(f"order lookup failed: {exc}")
    if not ids:
        return Absent()
    return Confirmed(ids[0], count=len(ids), refs=tuple(ids) if len(ids) > 1 else ())


def create_order(ref: str, amount: str) -> str:
    """The side effect: one POST, never retried (the ledger calls it at most once)."""
    body = json.dumps({"ref": ref, "amount": amount}).encode()
    request = urllib.request.Request(f"{ORDERS_URL}/orders", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return str(json.load(answer)["id"])
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ConnectionRefusedError):  # no byte left: nothing happened
            raise NotPerformed(f"order service refused the connection: {exc.reason}") from exc
        raise  # anything later may have placed the order: verification decides


def order_effect(ref: str, amount: str) -> Effect:
    return Effect(
        key=effect_key(tenant="acme", actor="orders", kind="order", object=ref, operation="place"),
        kind="order",
        payload={"ref": ref, "amount": amount},
        perform=lambda: create_order(ref, amount),
        verify=lambda: lookup(ref),
        policy=POLICY,
    )


@registry.verifier("order", policy=POLICY)  # for `actonce reconcile --verifiers celery_orders`
def order_exists(record: EffectRecord) -> Verdict:
    return lookup(str(record.data["ref"]))


@app.task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=100)
def place_order(self: Any, ref: str, amount: str) -> dict[str, Any]:
    try:
        result = ledger().run(order_effect(ref, amount))
    except LedgerError as exc:  # nothing was performed after the failed write
        raise self.retry(exc=exc, countdown=5) from exc
    if result.done:  # completed now, or skipped: done by an earlier delivery
        return {"outcome": result.outcome.value, "order": result.result_ref}
    if result.outcome is Outcome.DEFERRED or result.status is Status.UNKNOWN:
        # Another delivery owns it (or its owner died and the lease has not run
        # out), or it may have happened and is not proven yet: look again
        # later. The ledger never performs it again meanwhile.
        raise self.retry(countdown=RETRY_AFTER)
    if result.outcome is Outcome.FAILED:  # proven not to have happened: run it again
        # (at once when an earlier delivery's attempt was proven absent; later
        # when this one's own perform was refused before the boundary)
        raise self.retry(countdown=RETRY_AFTER if result.performed else 0)
    # needs_review, hard_stop, abandoned ...: a human (or reconcile) decides.
    return {"outcome": result.outcome.value, "reason": result.reason}
