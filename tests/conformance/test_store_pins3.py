"""Pins for the stores' survivors of the dev samples of round 1208
(``python tests/mutants/areas.py --area _store --sample 40 --seed dev-1208-store-N``),
every backend unless said: a lost claim answers the row as it stands (none when
there is none) and writes nothing. Each was checked to fail on its mutant.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce import ApprovalStatus, Gate, Status
from actonce._rules.budgets import Draw, Pool
from actonce._rules.holds import HoldStatus, Settle

from .test_gates import NOW, intent, packet
from .test_gates import event as gated_event
from .test_gates import record as gated_record
from .test_store import event, record


@pytest.mark.parametrize("gated", [False, True])
def test_a_claim_expecting_a_row_that_is_not_there_loses_and_answers_none(
    store: Any, gated: bool
) -> None:
    if gated:
        store.intent_create(intent(), NOW, "setup")
        new = gated_record("k1", fence=2)
        got = store.claim(new, (Status.FAILED, 1), gated_event("k1", Status.CLAIMED, 2),
                          gate=Gate(intent().ref))  # fmt: skip
    else:
        new = record("k1", fence=2)
        got = store.claim(new, (Status.FAILED, 1), event(new, Status.FAILED))
    assert (got.acquired, got.record, got.refused) == (False, None, None), got
    assert store.get("k1") is None and store.events("k1") == []
    assert store.holds_of("k1") == []


SETTLED = {Settle.CONSUME: HoldStatus.CONSUMED, Settle.RELEASE: HoldStatus.RELEASED}
SEQ_SCANS = "options=-c%20enable_indexscan%3Doff%20-c%20enable_bitmapscan%3Doff"


@pytest.mark.parametrize(
    ("to", "how", "packet_after"),
    [
        (Status.CONFIRMED, Settle.CONSUME, ApprovalStatus.CONSUMED),
        (Status.FAILED, Settle.RELEASE, ApprovalStatus.APPROVED),
    ],
)
def test_a_verdict_settles_the_approval_whatever_order_the_holds_come_in(
    pg_schema: tuple[str, str], to: Status, how: Settle, packet_after: ApprovalStatus
) -> None:
    # Without indexes the server reads the holds in the order they were written
    # (the intent's first, the approval's after it), not in key order.
    from actonce import PostgresStore

    dsn, schema = pg_schema
    store = PostgresStore(f"{dsn}?{SEQ_SCANS}", schema=schema, max_size=2, create=True)
    try:
        store.intent_create(intent(), NOW, "setup")
        store.pool_define(Pool("a", Decimal(9)), NOW, "setup")
        store.approval_put(packet("k1"), None, "setup")
        gate = Gate(intent().ref, "p1", Decimal("110"), draws=(Draw("a", Decimal(1)),))
        new = gated_record("k1")
        assert store.claim(new, None, gated_event("k1", Status.CLAIMED), gate=gate).acquired
        done = store.transition((Status.CLAIMED, 1), replace(new, status=to),
                                gated_event("k1", to), settle=how)  # fmt: skip
        assert done is not None
        assert store.approval_get("p1")[0].status is packet_after
        assert {h.status for h in store.holds_of("k1")} == {SETTLED[how]}
    finally:
        store.close()
