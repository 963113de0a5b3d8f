"""The facades' calls no test of the area reached (issue 23 item 2, dev-facades-1's map):
an operation withdrawn through ``ledger.operations``, an async packet's link, an async
operator's defaults and its async-generator plan, an operator's own summaries.

Memory store, a frozen clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncHooks,
    AsyncLedger,
    AsyncOperation,
    AsyncOperator,
    Confirmed,
    Effect,
    Hooks,
    Intent,
    ItemClass,
    Ledger,
    MemoryStore,
    Operation,
    OperationState,
    Policy,
    Registry,
    RunResult,
    SigningKeys,
    Status,
    Step,
    Unavailable,
)
from actonce._run import points
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0,
                absence_authoritative=True)  # fmt: skip
KEYS = SigningKeys.parse("k1:" + "ab" * 16)


class World:
    def __init__(self) -> None:
        self.made: list[str] = []
        self.lost: set[str] = set()

    def effect(self, key: str) -> Effect:
        def perform() -> None:
            self.made.append(key)
            if key in self.lost:
                raise TimeoutError("lost")

        def verify() -> Any:
            if key in self.lost and key in self.made:
                return Unavailable("down")
            return Confirmed(f"r-{key}") if key in self.made else Absent()

        return Effect(key=key, kind="post", payload={"k": key}, perform=perform, verify=verify,
                      policy=POLICY)  # fmt: skip


@pytest.mark.parametrize("is_async", [False, True])
def test_an_operation_is_withdrawn_through_the_ledger(is_async: bool) -> None:
    world = World()
    clock = FrozenClock(start=1_000.0)

    async def main() -> tuple[Any, ...]:
        ledger: Any = (AsyncLedger if is_async else Ledger)(MemoryStore(), clock=clock)
        cls = AsyncOperation if is_async else Operation

        async def call(value: Any) -> Any:
            return await value if is_async else value

        book = world.effect("book-1")
        points.arm("after_claim")  # another worker claimed the pivot and stopped: it waits
        try:
            with pytest.raises(points.SimulatedCrash):
                await call(ledger.run(book))
        finally:
            points.disarm()
        first = await call(cls(ledger, "op-1", [Step("book", book, "pivot")]).run())
        view = await call(ledger.operations.withdraw("op-1", by=" ana ", reason=" not now "))
        again = await call(ledger.operations.withdraw("op-1", by="ana", reason="not now"))
        return first.state, view, again

    first, view, again = asyncio.run(main())
    assert first is OperationState.IN_PROGRESS
    decided = view.decisions[-1]
    assert (decided.decision.value, decided.by, decided.reason, decided.n) == (
        "withdraw", "ana", "not now", 1,
    )  # fmt: skip
    assert len(again.decisions) == 1  # the same decision again: the state as it is
    assert world.made == []


def test_an_async_packet_s_link_answers_it() -> None:
    async def main() -> Any:
        ledger = AsyncLedger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
        trip = Intent("trip", "booking", user="ana", currency="EUR")
        await ledger.intents.put(trip)
        req = await ledger.approvals.request(trip, "pay", "k", amount="5")
        link = await ledger.approvals.link(req.packet.packet_id)
        assert link == req.link
        return await ledger.approvals.answer_link(link, "approve", by="ana")

    got = asyncio.run(main())
    assert (got.answer.value, got.status.value) == ("accepted", "approved")


class Drafts(AsyncHooks[str]):
    """Only what an async operator must be told; every other stage is the default."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.results: list[RunResult | None] = []

    async def observe(self) -> list[str]:
        return ["t"]

    async def plan(self, candidate: str) -> AsyncGenerator[Effect, RunResult]:
        first = yield self.world.effect(f"{candidate}-1")
        self.results.append(first)
        second = yield self.world.effect(f"{candidate}-2")
        self.results.append(second)


def test_an_async_operator_with_default_stages_and_an_async_generator_plan() -> None:
    world = World()
    hooks = Drafts(world)

    async def main() -> tuple[Any, Any]:
        registry = Registry()
        registry.register("post", lambda record: world.effect(record.key).verify(), policy=POLICY)
        clock = FrozenClock(start=1_000.0)
        ledger = AsyncLedger(MemoryStore(), clock=clock, registry=registry)
        world.lost.add("old-1")
        await ledger.run(world.effect("old-1"))  # unknown: the default owns() claims it
        operator = AsyncOperator(ledger, "ops", hooks, kinds=("post",), ttl=60)
        blocked = await operator.run(run_id="run-1")
        world.lost.clear()  # now visible: reconcile settles it
        clock.advance(60.0)
        done = await operator.run(run_id="run-2")
        return blocked, (done, await operator.summaries(), await operator.summaries(limit=1))

    blocked, (done, summaries, last) = asyncio.run(main())
    assert blocked.stops and blocked.stops[0].keys == ("old-1",)
    assert done.reconciled == {"confirmed": 1}
    assert [(i.label, i.cls) for i in done.items] == [
        ("t", ItemClass.DONE),
        ("t #2", ItemClass.DONE),
    ]
    assert [r.status for r in hooks.results if r is not None] == [
        Status.CONFIRMED,
        Status.CONFIRMED,
    ]
    assert [s.run_id for s in summaries] == ["run-2", "run-1"]
    assert [s.run_id for s in last] == ["run-2"]


class Plain(Hooks[str]):
    def observe(self) -> list[str]:
        return []

    def plan(self, candidate: str) -> Any:
        return None


def test_an_operator_s_summaries_are_its_own_newest_first() -> None:
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    mine = Operator_(ledger, "mine")
    other = Operator_(ledger, "other")
    for run_id in ("a", "b", "c"):
        mine.run(run_id=f"mine-{run_id}")
        clock.advance(1.0)
    other.run(run_id="other-a")
    assert [s.run_id for s in mine.summaries()] == ["mine-c", "mine-b", "mine-a"]
    assert [s.run_id for s in mine.summaries(limit=2)] == ["mine-c", "mine-b"]
    assert [s.run_id for s in other.summaries()] == ["other-a"]


def Operator_(ledger: Ledger, name: str) -> Any:
    from actonce import Operator

    return Operator(ledger, name, Plain(), kinds=("post",))


@pytest.mark.parametrize("is_async", [False, True])
def test_a_decision_names_the_step_it_is_about(is_async: bool) -> None:
    world = World()
    world.lost.add("unhold-1")

    async def main() -> tuple[Any, list[str]]:
        ledger: Any = (AsyncLedger if is_async else Ledger)(MemoryStore(), clock=FrozenClock())
        cls = AsyncOperation if is_async else Operation

        async def call(value: Any) -> Any:
            return await value if is_async else value

        book = Effect(key="book-1", kind="post", payload={}, perform=lambda: None,
                      verify=Absent, policy=POLICY)  # fmt: skip
        steps = [Step("hold", world.effect("hold-1"), "compensatable",
                      undo=world.effect("unhold-1")),
                 Step("book", book, "pivot")]  # fmt: skip
        first = await call(cls(ledger, "op-2", steps).run())
        assert first.state is OperationState.NEEDS_REVIEW
        errors = []
        for step in ("nope", "book"):
            try:
                await call(ledger.operations.decide("op-2", "undone_by_hand", by="ana",
                                                    reason="done", step=step, attempt=1))  # fmt: skip
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        done = await call(ledger.operations.decide("op-2", "undone_by_hand", by="ana",
                                                   reason="done", step="hold", attempt=1))  # fmt: skip
        return done, errors

    done, errors = asyncio.run(main())
    assert errors == [
        "UsageError: the operation has no step 'nope'",
        "InvalidTransition: operation op-2: the operation stands at hold, not at book",
    ]
    assert done.state is OperationState.COMPENSATED
    assert (done.decisions[-1].step, done.decisions[-1].attempt) == ("hold", 1)
