"""The same story told through the synchronous and the asynchronous facades
ends the same: operations run, assessed, withdrawn and receipted; ``once``;
reconcile with progress, resume and errors; ``aprovider_retry``.

Two ledgers on two memory stores, each with its own frozen clock moved in
step: every answer of the async twin equals the sync one's (run ids, which
are random, aside).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    AsyncOperation,
    Confirmed,
    Effect,
    Ledger,
    NotPerformed,
    Operation,
    Policy,
    Step,
    UsageError,
    aprovider_retry,
)
from actonce.testing import FakeProvider, FrozenClock, MemoryStore

from .open_effects import left_open

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)


class Side:
    def __init__(self) -> None:
        self.clock = FrozenClock()
        self.provider = FakeProvider(clock=self.clock)
        self.flags: dict[str, bool] = {}

    def effect(self, name: str) -> Effect:
        def perform() -> None:
            if self.flags.get(f"{name}_refused"):
                raise NotPerformed(f"the provider refused the {name}")
            self.provider.submit(name)

        return Effect(f"k-{name}", "step", {"n": name}, perform,
                      lambda: self.provider.lookup(name), policy=POLICY)  # fmt: skip

    def steps(self) -> list[Step]:
        return [
            Step("hold", self.effect("hold"), "compensatable", undo=self.effect("release")),
            Step("book", self.effect("book"), "pivot"),
            Step("notify", self.effect("notify"), "retriable"),
        ]


def _view(view: Any) -> Any:
    """An operation's view without its records' owners (random run ids)."""
    steps = [(s.name, s.role, s.key, s.record and (s.record.status, s.record.fence, s.record.result_ref))
             for s in view.steps]  # fmt: skip
    return (view.state, view.step, view.undo, view.attempt, view.choices, view.assessment, steps)


@pytest.mark.parametrize("refused", [False, True], ids=["booked", "refused"])
async def test_an_operation_ends_the_same_through_either_facade(refused: bool) -> None:
    s, a = Side(), Side()
    s.flags["book_refused"] = a.flags["book_refused"] = refused
    sync = Ledger(MemoryStore(), clock=s.clock)
    aledger = AsyncLedger(MemoryStore(), clock=a.clock)
    op = Operation(sync, "trip", s.steps(), contact="trips@x.example")
    aop = AsyncOperation(aledger, "trip", a.steps(), contact="trips@x.example")
    with pytest.raises(UsageError, match="no operation 'trip'"):
        op.state()  # nothing ran yet: neither ledger knows it
    with pytest.raises(UsageError, match="no operation 'trip'"):
        await aop.state()
    one, two = op.run(), await aop.run()
    assert (one.state, [n for n, _ in one.runs]) == (two.state, [n for n, _ in two.runs])
    assert op.state() == await aop.state()
    receipt, areceipt = op.receipt(), await aop.receipt()
    assert receipt is not None and areceipt is not None
    assert (receipt.state, receipt.text) == (areceipt.state, areceipt.text)
    assert _view(await aledger.operations.get("trip")) == _view(sync.operations.get("trip"))
    await aledger.aclose()


async def test_a_withdrawn_operation_is_the_same_through_either_facade() -> None:
    s, a = Side(), Side()
    sync = Ledger(MemoryStore(), clock=s.clock)
    aledger = AsyncLedger(MemoryStore(), clock=a.clock)
    op = Operation(sync, "trip", s.steps())
    aop = AsyncOperation(aledger, "trip", a.steps())
    view = op.withdraw(by="ana", reason="plans changed")
    aview = await aop.withdraw(by="ana", reason="plans changed")
    assert view == aview and view.state.value == "compensated"  # nothing done, nothing to undo
    # Withdrawn before it ran: a run afterwards does nothing through either.
    assert op.run().runs == () and (await aop.run()).runs == ()
    assert s.provider.accepted() == a.provider.accepted() == {}
    assert await aledger.operations.withdraw("trip", by="ana", reason="again") == (
        sync.operations.withdraw("trip", by="ana", reason="again")
    )
    await aledger.aclose()


async def test_async_operations_refuse_a_limit_out_of_range() -> None:
    aledger = AsyncLedger(MemoryStore(), clock=FrozenClock())
    sync = Ledger(MemoryStore(), clock=FrozenClock())
    for limit in (0, 10_001, True, "5"):
        with pytest.raises(UsageError) as caught:
            await aledger.operations.in_review(limit=limit)  # type: ignore[arg-type]
        assert str(caught.value) == f"limit is a whole number from 1 to 10000, not {limit!r}"
        with pytest.raises(UsageError):
            sync.operations.due(limit=limit)  # type: ignore[arg-type]
        with pytest.raises(UsageError):
            await aledger.operations.due(limit=limit)  # type: ignore[arg-type]
    assert await aledger.operations.in_review(limit=10_000) == []
    await aledger.aclose()


async def test_async_once_stores_the_arguments_and_runs_once() -> None:
    clock = FrozenClock()
    aledger = AsyncLedger(MemoryStore(), clock=clock)
    sent: list[str] = []

    @aledger.once(
        kind="invoice",
        key=lambda ref, amount=1: f"invoice:{ref}",
        verify=lambda ref, amount=1: Confirmed() if ref in sent else Absent(),
        policy=POLICY,
    )
    async def create(ref: str, amount: int = 1) -> None:
        sent.append(ref)

    first = await create("A-1", amount=5)
    again = await create("A-1", amount=5)
    assert (first.outcome.value, again.outcome.value) == ("completed", "skipped")
    assert sent == ["A-1"]
    record = await aledger.get("invoice:A-1")
    assert record is not None and record.kind == "invoice"
    assert json.loads(record.payload) == {"args": ["A-1"], "kwargs": {"amount": 5}}
    await aledger.aclose()


def _into(out: list[str]) -> Any:
    return lambda result: out.append(result.key)


async def test_async_reconcile_reports_progress_resumes_and_errors_as_sync() -> None:
    from actonce import Registry

    results = {}
    for side in ("sync", "async"):
        clock = FrozenClock()
        store = MemoryStore()
        ledger = Ledger(store, clock=clock)
        left_open(ledger, "post:1")
        left_open(ledger, "post:2")
        left_open(ledger, "mail:1", kind="mail")
        clock.advance(3600)
        reg = Registry()
        reg.register("post", lambda record: Confirmed() if record.key == "post:1" else Absent())

        def broken(record: Any) -> Any:
            raise RuntimeError("verifier bug")

        reg.register("mail", broken)
        seen: list[str] = []
        if side == "sync":
            report = Ledger(store, clock=clock, registry=reg).reconcile(
                progress=_into(seen), resume=lambda op_id: None
            )
        else:
            aledger = AsyncLedger(store, clock=clock, registry=reg)
            report = await aledger.reconcile(progress=_into(seen), resume=lambda op_id: None)
            await aledger.aclose()
        results[side] = (
            sorted((r.key, r.outcome.value, r.status) for r in report.results),
            report.live, report.no_verifier, sorted(report.errors), report.operations, sorted(seen),
        )  # fmt: skip
    assert results["sync"] == results["async"]
    keys = [k for k, _, _ in results["sync"][0]]
    assert sorted(results["sync"][5]) == sorted(keys) and "post:1" in keys


async def test_aprovider_retry_is_provider_retry_awaited(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 7:
            raise ConnectionError("reset")
        return "made"

    assert await aprovider_retry(flaky, attempts=7, backoff=0.5) == "made"
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    waits.clear()
    calls.clear()
    with pytest.raises(ConnectionError):
        await aprovider_retry(flaky, attempts=2, backoff=Decimal(1))  # type: ignore[arg-type]
    assert len(calls) == 2 and waits == [1]

    async def broken() -> str:
        raise KeyError("no")

    with pytest.raises(KeyError):
        await aprovider_retry(broken, retry_on=(ConnectionError,))
    for attempts in (0, 21, 1.5):
        with pytest.raises(UsageError) as caught:
            await aprovider_retry(flaky, attempts=attempts)  # type: ignore[arg-type]
        assert str(caught.value) == "attempts is a whole number from 1 to 20"

    async def fine() -> str:
        return "x"

    assert await aprovider_retry(fine, attempts=20) == "x"
    assert await aprovider_retry(fine, attempts=1) == "x"


async def test_a_decision_naming_a_step_is_judged_alike_through_either_facade() -> None:
    s, a = Side(), Side()
    for side in (s, a):
        side.flags.update(book_refused=True, release_refused=True)
    sync = Ledger(MemoryStore(), clock=s.clock)
    aledger = AsyncLedger(MemoryStore(), clock=a.clock)
    Operation(sync, "trip", s.steps()).run()
    await AsyncOperation(aledger, "trip", a.steps()).run()
    assert sync.operations.get("trip").state.value == "needs_review"
    errors = []
    for decide in (sync.operations.decide, aledger.operations.decide):
        try:
            done = decide("trip", "retry_undo", by="ana", reason="again", step="book")
            if not isinstance(done, type(sync.operations.get("trip"))):
                await done  # type: ignore[misc]
        except Exception as exc:
            errors.append((type(exc).__name__, str(exc)))
    assert len(errors) == 2 and errors[0] == errors[1], errors
    right = sync.operations.decide("trip", "retry_undo", by="ana", reason="r", step="hold")
    aright = await aledger.operations.decide(
        "trip", "retry_undo", by="ana", reason="r", step="hold"
    )
    assert _view(right) == _view(aright) and right.state.value == "compensating"
    await aledger.aclose()
