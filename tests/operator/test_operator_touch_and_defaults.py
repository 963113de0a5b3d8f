"""An operator's reconcile rewrites the receipt of the operation it settled, and
the facades' defaults (issue 23, item 2).

Pinned after the second held-out mutation sample of the facades area
(``heldout-1208b``, 86.7%) was judged: its real survivors were an
operator's reconcile that settled a step without touching its operation
(sync and async), and defaults nothing stated — ``Operations.due``'s limit,
an operator's lease ttl, an owner id's shape, the length a contact is cut to.
"""

from __future__ import annotations

import inspect
import re
import socket
from collections.abc import Iterable
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    AsyncOperator,
    Confirmed,
    Effect,
    Hooks,
    Ledger,
    MemoryStore,
    Operation,
    Operations,
    Operator,
    Policy,
    Registry,
    Status,
    Step,
    Unavailable,
)
from actonce._leases import default_owner
from actonce.testing import FrozenClock

QUICK = Policy(settle_seconds=0, verify_attempts=1)


class Nothing(Hooks[str]):
    """An operator with no new work: its pass only reconciles."""

    def observe(self) -> Iterable[str]:
        return []

    def plan(self, candidate: str) -> Any:
        raise AssertionError("nothing to plan")


def _left_uncertain() -> tuple[Ledger, list[bool]]:
    """An operation whose one step ended unknown; its verifier answers once ``up[0]``."""
    up = [False]
    registry = Registry()
    registry.register("note", lambda record: Confirmed("n-1") if up[0] else Unavailable("down"))
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), registry=registry)

    def perform() -> None:
        raise TimeoutError("no answer")

    def verify() -> Any:
        if up[0]:
            return Confirmed("n-1")
        raise ConnectionError("the site does not answer")

    once: list[int] = []

    def look() -> Any:
        once.append(1)
        return Absent() if len(once) == 1 else verify()

    step = Step("note", Effect("k-note", "note", {}, perform, look, policy=QUICK), "retriable")
    Operation(ledger, "op-1", [step]).run()
    assert ledger.get("k-note").status is Status.UNKNOWN  # type: ignore[union-attr]
    assert "Still uncertain: note (a person checks)." in _stored(ledger.receipts()).split("\n")
    up[0] = True
    ledger.clock.advance(3600)  # type: ignore[attr-defined]
    return ledger, up


def _stored(receipts: list[Any]) -> str:
    """The text of op-1's receipt as the ledger keeps it (not built again at the read)."""
    (text,) = [r.text for r, _ in receipts if r.operation_id == "op-1"]
    return str(text)


def _settled(receipt: str) -> None:
    assert "Still uncertain" not in receipt, receipt
    assert "What was done: note (n-1)." in receipt.split("\n"), receipt


def test_an_operators_reconcile_rewrites_the_settled_operations_receipt() -> None:
    ledger, _ = _left_uncertain()
    Operator(ledger, "noter", Nothing(), kinds=("note",)).run()
    assert ledger.get("k-note").status is Status.CONFIRMED  # type: ignore[union-attr]
    _settled(_stored(ledger.receipts()))


async def test_an_async_operators_reconcile_rewrites_the_settled_operations_receipt() -> None:
    ledger, _ = _left_uncertain()
    aledger = AsyncLedger(ledger.store, clock=ledger.clock, registry=ledger.registry)
    await AsyncOperator(aledger, "noter", Nothing(), kinds=("note",)).run()  # type: ignore[arg-type]
    assert (await aledger.get("k-note")).status is Status.CONFIRMED  # type: ignore[union-attr]
    _settled(_stored(await aledger.receipts()))


def test_the_defaults_the_docs_state() -> None:
    assert inspect.signature(Operations.due).parameters["limit"].default == 100
    for cls in (Operator, AsyncOperator):
        assert inspect.signature(cls).parameters["ttl"].default == 300.0, cls


def test_an_owner_id_names_the_host_the_process_and_eight_hex_digits() -> None:
    import os

    owner = default_owner()
    host, pid, tag = owner.rsplit(":", 2)
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert re.fullmatch(r"[0-9a-f]{8}", tag), owner
    assert default_owner() != owner


@pytest.mark.parametrize(("length", "kept"), [(200, 200), (201, 199)])
def test_a_contact_is_kept_to_two_hundred_characters(length: int, kept: int) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    step = Step("n", Effect("k-1", "n", {}, lambda: "r", lambda: Confirmed("r")), "retriable")
    contact = "c" * length
    Operation(ledger, "op-1", [step], contact=contact).run()
    text = ledger.operations.get("op-1").receipt.text
    shown = "c" * kept + ("…" if kept < length else "")
    assert f"Who to contact: {shown}, with the reference op-1." in text
