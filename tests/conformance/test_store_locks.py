"""Which statements of a transaction lock rows and which write, in order.

``gated_ops`` documents one lock order ("the intent, then the effect, then its
holds, then the budget pools (in name order), then the approval") so that no
two PostgreSQL transactions wait on each other in a circle; a locking read
becomes ``FOR UPDATE`` there, and a statement's ``write`` flag is what a
read-only PostgreSQL store refuses. Races that a lost lock lets through show
only between two PostgreSQL sessions under load, so the order is stated here
as the statement work yields it: (verb, table, locks?, writes?) per statement,
run for real on a memory ledger.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from actonce import ApprovalStatus, Gate, MemoryStore, Status
from actonce._rules.budgets import Draw, Pool
from actonce._rules.holds import Settle
from actonce._store import approval_ops, budget_ops, gated_ops, intent_ops, operation_ops
from actonce._store.stmts import Work

from .test_gates import NOW, event, intent, packet, record

_TABLE_AFTER = {"SELECT": "FROM", "INSERT": "INTO", "DELETE": "FROM"}


def _trace(store: MemoryStore, work: Work[Any]) -> tuple[list[tuple[Any, ...]], Any]:
    """Run ``work`` in one transaction of ``store``; each statement as (verb, table, lock, write)."""
    seen: list[tuple[Any, ...]] = []
    conn = store._conn
    conn.execute("BEGIN IMMEDIATE")
    answer: Any = None
    try:
        while True:
            try:
                stmt = work.send(answer)
            except StopIteration as stop:
                result = stop.value
                break
            words = stmt.sql.split()
            verb = words[0]
            table = words[1] if verb == "UPDATE" else words[words.index(_TABLE_AFTER[verb]) + 1]
            step: tuple[Any, ...] = (verb, table, stmt.lock, stmt.write)
            if table == "pools" and verb == "SELECT":
                step += (stmt.params[0],)  # the pool: they are locked in name order
            seen.append(step)
            cur = conn.execute(stmt.sql, stmt.params)
            answer = (cur.rowcount, cur.fetchall() if cur.description else [])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return seen, result


def _ledger() -> tuple[MemoryStore, Gate]:
    store = MemoryStore()
    store.intent_create(intent(), NOW, "setup")
    store.pool_define(Pool("b", Decimal(9)), NOW, "r")
    store.pool_define(Pool("a", Decimal(9)), NOW, "r")
    store.approval_put(packet("k1", ApprovalStatus.APPROVED), None, "r")
    draws = (Draw("b", Decimal(1)), Draw("a", Decimal(1)))
    return store, Gate(intent=intent().ref, approval="p1", amount=Decimal(110), draws=draws)


def test_a_gated_claim_locks_intent_effect_pools_in_name_order_then_the_packet() -> None:
    store, gate = _ledger()
    steps, refusal = _trace(store, gated_ops.check_gate(gate, "k1", None, NOW))
    assert refusal is None
    assert steps == [
        ("SELECT", "intents", True, False),
        ("SELECT", "effects", True, False),
        ("SELECT", "pools", True, False, "a"),
        ("SELECT", "holds", False, False),
        ("SELECT", "pools", True, False, "b"),
        ("SELECT", "holds", False, False),
        ("SELECT", "approvals", True, False),
        ("SELECT", "effects", True, False),  # looked at again: another claim may have won
    ]
    store.claim(record("k1"), None, event("k1", Status.CLAIMED))
    steps, _ = _trace(store, gated_ops.take_holds(gate, "k1", 1, NOW, "r"))
    assert steps == [
        ("SELECT", "approvals", True, False),
        ("UPDATE", "approvals", False, True),
        ("INSERT", "events", False, True),
        *[("INSERT", "holds", False, True)] * 4,
    ]
    steps, settled = _trace(store, gated_ops.settle("k1", 1, Settle.RELEASE, NOW, "r"))
    assert settled == 4
    assert steps == [
        ("SELECT", "holds", True, False),
        ("UPDATE", "holds", False, True),
        ("SELECT", "approvals", True, False),
        ("SELECT", "intents", False, False),  # unlocked: the intent comes first in the order
        ("UPDATE", "approvals", False, True),
        ("INSERT", "events", False, True),
    ]


def test_a_gate_with_an_approval_only_learns_its_intent_without_a_lock() -> None:
    store, _ = _ledger()
    steps, _ = _trace(store, gated_ops.check_gate(Gate(approval="p1"), "k1", None, NOW))
    assert steps[:3] == [
        ("SELECT", "approvals", False, False),
        ("SELECT", "intents", True, False),
        ("SELECT", "effects", True, False),
    ]
    assert steps[-2:] == [("SELECT", "approvals", True, False), ("SELECT", "effects", True, False)]


def test_closing_a_version_locks_its_effects_then_its_packets_then_its_operations() -> None:
    store, _ = _ledger()
    store.approval_put(packet("k9", ApprovalStatus.PENDING, pid="p9"), None, "r")
    new = replace(record("k5"), lease_expires_at=NOW + 500)
    store.claim(new, None, event("k5", Status.CLAIMED), gate=Gate(intent=intent().ref))
    store.operation_put("op", intent().ref, "{}", NOW, "r")
    steps, done = _trace(store, gated_ops.intent_withdraw(intent().ref, "ana", "x", NOW, "r"))
    assert (done.closed, done.voided, done.operations) == (("k5",), ("p1", "p9"), ("op",))
    assert steps == [
        ("SELECT", "intents", False, False),
        ("INSERT", "events", False, True),
        ("SELECT", "effects", True, False),
        ("UPDATE", "effects", False, True),  # k5 fails
        ("INSERT", "events", False, True),
        ("SELECT", "holds", True, False),  # its holds released
        ("UPDATE", "holds", False, True),
        ("SELECT", "approvals", True, False),
        *[("UPDATE", "approvals", False, True), ("INSERT", "events", False, True)] * 2,
        ("SELECT", "effects", False, False),  # in flight: only read
        ("SELECT", "operations", True, False),
        ("SELECT", "operation_decisions", False, False),
        ("SELECT", "operations", True, False),
        ("INSERT", "operation_decisions", False, True),
        ("UPDATE", "operations", False, True),
        ("INSERT", "events", False, True),
    ]


def test_counters_decisions_receipts_and_pools_lock_what_they_then_write() -> None:
    store, _ = _ledger()
    assert _trace(store, approval_ops.code_failures("ana", NOW, 60, 1))[0] == [
        ("INSERT", "code_failures", False, True),
        ("SELECT", "code_failures", True, False),
        ("UPDATE", "code_failures", False, True),
    ]
    assert _trace(store, approval_ops.code_failures("ana", NOW, 60, 0))[0] == [
        ("SELECT", "code_failures", False, False),  # only reads: no lock
    ]
    store.operation_put("op", None, "{}", NOW, "r")
    assert _trace(store, operation_ops.decision_put("op", 1, "accept", None, 0, "b", NOW, "x", "r"))[0] == [
        ("SELECT", "operations", True, False),
        ("INSERT", "operation_decisions", False, True),
        ("UPDATE", "operations", False, True),
        ("INSERT", "events", False, True),
    ]  # fmt: skip
    assert _trace(store, operation_ops.receipt_put("op", "running", "t", "{}", NOW, "r"))[0] == [
        ("UPDATE", "operations", False, True),
        ("SELECT", "receipts", True, False),
        ("INSERT", "receipts", False, True),
        ("INSERT", "events", False, True),
    ]
    assert _trace(store, budget_ops.pool_usage("a", NOW, lock=True))[0] == [
        ("SELECT", "pools", True, False, "a"),
        ("SELECT", "holds", False, False),
    ]
    assert _trace(store, budget_ops.pool_get("a"))[0] == [("SELECT", "pools", False, False, "a")]
    assert _trace(store, budget_ops.pool_define(Pool("c", Decimal(1)), NOW, "r"))[0] == [
        ("INSERT", "pools", False, True),
        ("INSERT", "events", False, True),
    ]


def test_intent_and_packet_writes_say_they_write() -> None:
    store, _ = _ledger()
    assert _trace(store, intent_ops.intent_touch(intent(), ("x",), NOW, "r"))[0] == [
        ("UPDATE", "intents", False, True),
        ("INSERT", "events", False, True),
    ]
    assert _trace(store, intent_ops.intent_create(replace(intent(), intent_id="t2"), NOW, "r"))[0] == [
        ("INSERT", "intents", False, True),
        ("INSERT", "events", False, True),
        ("SELECT", "intents", False, False),
    ]  # fmt: skip
    pending = packet("k8", ApprovalStatus.PENDING, pid="p8")
    assert _trace(store, approval_ops.approval_put(pending, None, "r"))[0] == [
        ("INSERT", "approvals", False, True),
        ("INSERT", "events", False, True),
    ]
    assert _trace(store, approval_ops.approval_set_code("p8", "d" * 64, NOW, "r"))[0] == [
        ("UPDATE", "approvals", False, True),
        ("INSERT", "events", False, True),
    ]
    answer = approval_ops.approval_answer(
        pending, ApprovalStatus.DENIED, "b", NOW, "r", None, False, "api"
    )
    assert _trace(store, answer)[0] == [
        ("UPDATE", "approvals", False, True),
        ("INSERT", "events", False, True),
    ]
    assert _trace(store, approval_ops.approval_get("p8", lock=True))[0] == [
        ("SELECT", "approvals", True, False),
    ]
    assert _trace(store, approval_ops.approval_get("p8"))[0] == [
        ("SELECT", "approvals", False, False)
    ]
