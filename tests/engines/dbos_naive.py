"""The example's workflow without the ledger: ``python dbos_naive.py REF`` (in a folder of its own).

The step places the order directly. DBOS runs a step again when the process
died before the step's result was saved, so a kill right after the order
was made (``ACTONCE_CRASH_AT=provider_committed``) makes a second order on
restart: what ``test_dbos.py`` shows the ledger prevents.
"""

from __future__ import annotations

import sys

from dbos import DBOS, DBOSConfig, SetWorkflowID

from actonce.testing import FakeProvider

orders = FakeProvider("orders.db")


@DBOS.step()
def place_order(ref: str, amount: str) -> str:
    return orders.submit(ref, {"amount": amount})


@DBOS.workflow()
def checkout(ref: str, amount: str) -> str:
    return place_order(ref, amount)


if __name__ == "__main__":
    config: DBOSConfig = {"name": "orders-naive", "system_database_url": "sqlite:///dbos.sqlite"}
    DBOS(config=config)
    DBOS.launch()  # on the second run: recovers the killed one's workflow, and waits for it
    with SetWorkflowID(f"checkout-{sys.argv[1]}"):
        print(checkout(sys.argv[1], "120.00"), flush=True)
