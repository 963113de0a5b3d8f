"""A DBOS workflow whose step places an order through the ledger (``pip install 'actonce[dbos]'``).

Run it: ``python dbos_orders.py ORDER-9201``. DBOS keeps the workflow in
``dbos.sqlite``; the ledger is ``actonce.db``; the order service is a
``FakeProvider`` in ``orders.db`` (it does not deduplicate: its table is the
truth). Kill the process in the middle of the step (``kill -9``, or
``ACTONCE_CRASH_AT=after_perform``) and run the same command again: DBOS
recovers the workflow and runs the step again, and the ledger sees to it
that the order is placed once.
"""

from __future__ import annotations

import os
import sys

from dbos import DBOS, DBOSConfig, SetWorkflowID

from actonce import Effect, Outcome, Policy, Status, effect_key, open_ledger
from actonce.testing import FakeProvider

# How long a killed process's order stays its own: the ledger's lease (extended
# while the order is being placed). The step is tried again until it ran out.
LEASE = float(os.environ.get("ORDERS_LEASE_SECONDS", "30"))
POLICY = Policy(lease_seconds=LEASE, settle_seconds=LEASE / 10, absence_authoritative=True)

orders = FakeProvider("orders.db")  # the outside world
ledger = open_ledger("sqlite:///actonce.db", create=True)


class NotSettled(Exception):
    """Owned by a run that may still be alive, or not proven yet: try the step later."""


def order_effect(ref: str, amount: str) -> Effect:
    return Effect(
        key=effect_key(tenant="acme", actor="orders", kind="order", object=ref, operation="place"),
        kind="order",
        payload={"ref": ref, "amount": amount},
        perform=lambda: orders.submit(ref, {"amount": amount}),
        verify=lambda: orders.lookup(ref),
        policy=POLICY,
    )


@DBOS.step(
    retries_allowed=True,
    interval_seconds=LEASE / 4,
    backoff_rate=1.5,
    max_attempts=10,
    should_retry=lambda exc: isinstance(exc, NotSettled),
)
def place_order(ref: str, amount: str) -> str:
    # DBOS runs a step again when the process died before its result was
    # saved: the ledger answers the second run with the first one's order.
    result = ledger.run(order_effect(ref, amount))
    if result.done:
        return str(result.result_ref)
    if result.outcome in (Outcome.DEFERRED, Outcome.FAILED) or result.status is Status.UNKNOWN:
        raise NotSettled(f"{ref}: {result.outcome.value}: {result.reason}")
    raise RuntimeError(f"{ref}: {result.outcome.value}: {result.reason}")  # a human decides


@DBOS.workflow()
def checkout(ref: str, amount: str) -> str:
    return place_order(ref, amount)


if __name__ == "__main__":
    config: DBOSConfig = {"name": "orders", "system_database_url": "sqlite:///dbos.sqlite"}
    DBOS(config=config)
    DBOS.launch()  # recovers the workflows a killed process left pending
    ref = sys.argv[1] if len(sys.argv) > 1 else "ORDER-9201"
    with SetWorkflowID(f"checkout-{ref}"):  # the same workflow on every run of this command
        handle = DBOS.start_workflow(checkout, ref, "120.00")
    print(f"order {handle.get_result()}; orders made for {ref}: {orders.count(ref)}")
    DBOS.destroy()
