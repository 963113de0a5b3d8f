"""``AsyncOperator``: the same loop (the same generator), awaited; async hooks or plain ones."""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
from opworld import POLICY, Script, World

from actonce import (
    AsyncHooks,
    AsyncLedger,
    AsyncOperator,
    Effect,
    ItemClass,
    Ledger,
    MemoryStore,
    Operator,
    Registry,
    RunResult,
    RunStage,
    RunStatus,
    SQLiteStore,
    Status,
    UsageError,
)
from actonce.testing import FrozenClock
from pgtest import drop_schema, postgres_dsn


@pytest.fixture(params=["sqlite", "postgres"])
async def aledger(request: pytest.FixtureRequest, tmp_path: Path,
                  world: World) -> AsyncIterator[AsyncLedger]:  # fmt: skip
    registry = Registry()
    registry.register("post", world.verifier, policy=POLICY)
    clock = FrozenClock(1_796_032_800.0)
    if request.param == "sqlite":
        ledger = AsyncLedger(SQLiteStore(str(tmp_path / "l.db"), create=True), clock=clock,
                             registry=registry)  # fmt: skip
        yield ledger
        await ledger.aclose()
        return
    from actonce import AsyncPostgresStore

    dsn = postgres_dsn()
    schema = f"actonce_aotest_{uuid.uuid4().hex[:10]}"
    ledger = AsyncLedger(AsyncPostgresStore(dsn, schema=schema, max_size=2, min_size=0,
                                            create=True), clock=clock, registry=registry)  # fmt: skip
    try:
        yield ledger
    finally:
        await ledger.aclose()
        drop_schema(dsn, schema)


class AsyncScript(AsyncHooks[str]):
    def __init__(self, world: World, refs: list[str], gate: Any = None) -> None:
        self.world, self.refs, self.gate = world, refs, gate
        self.calls: list[str] = []

    async def observe(self) -> Iterable[str]:
        self.calls.append("observe")
        return self.refs

    async def quality(self, candidate: str) -> str | None:
        return "a repeat" if candidate.endswith("-again") else None

    async def plan(self, candidate: str) -> Effect | AsyncGenerator[Effect, RunResult]:
        base = self.world.effect(candidate, gate=self.gate)

        async def perform() -> None:
            self.world.perform(candidate)

        async def verify() -> Any:
            return self.world.verify(candidate)

        return Effect(key=base.key, kind=base.kind, payload=base.payload, perform=perform,
                      verify=verify, policy=base.policy, gate=base.gate)  # fmt: skip


async def test_async_operator_runs_the_same_loop(aledger: AsyncLedger, world: World) -> None:
    await aledger.budgets.define("original", 2)
    world.how["bad"] = "declined"
    hooks = AsyncScript(world, ["a", "a-again", "bad", "b", "c"], aledger.budgets.gate("original"))
    op = AsyncOperator(aledger, "alice-browser", hooks, kinds=("post",), ttl=60)
    summary = await op.run()
    assert summary.status is RunStatus.COMPLETED
    assert summary.counts() == {"done": 2, "skipped": {"over_budget": 1}, "failures": 1,
                                "ambiguous": 0, "hard_stops": 0, "quality_skips": 1}  # fmt: skip
    assert world.performed == {"a": 1, "b": 1}
    assert await aledger.summary(summary.run_id) == summary
    assert await op.summaries() == [summary]


async def test_async_ambiguity_blocks_the_next_run(aledger: AsyncLedger, world: World) -> None:
    world.how["a"] = "lost"
    op = AsyncOperator(aledger, "alice-browser", Script(world, ["a", "b"]), kinds=("post",))
    first = await op.run()  # plain (sync) hooks work with the async operator too
    assert first.stops[0].stage is RunStage.ACT
    assert [(i.label, i.cls) for i in first.items] == [("a", ItemClass.AMBIGUOUS)]
    second = await op.run()
    assert second.stops[0].stage is RunStage.RECONCILE
    assert world.tried == {"a"}
    record = await aledger.get(world.key("a"))
    assert record is not None and record.status is Status.UNKNOWN


async def test_an_async_generator_plans_a_thread(aledger: AsyncLedger, world: World) -> None:
    class Thread(AsyncScript):
        async def plan(self, candidate: str) -> AsyncGenerator[Effect, RunResult]:
            async def parts() -> AsyncGenerator[Effect, RunResult]:
                parent = None
                for n in range(3):
                    result = yield self.world.effect(f"{candidate}{n}", payload={"parent": parent})
                    parent = result.result_ref

            return parts()

    summary = await AsyncOperator(aledger, "t", Thread(world, ["t"]), kinds=("post",)).run()
    assert [i.label for i in summary.done] == ["t", "t #2", "t #3"]
    assert world.performed == {"t0": 1, "t1": 1, "t2": 1}


def test_async_hooks_on_a_sync_operator_are_refused_clearly(world: World) -> None:
    with Ledger(MemoryStore(), clock=FrozenClock()) as ledger:
        with pytest.raises(UsageError, match="use AsyncOperator"):
            Operator(ledger, "x", AsyncScript(world, ["a"]), kinds=("post",))  # type: ignore[arg-type]

        class Mixed(Script):
            async def observe(self) -> list[str]:  # type: ignore[override]
                return ["a"]

        summary = Operator(ledger, "x", Mixed(world, ["a"]), kinds=("post",)).run()
    assert summary.stops[0].stage is RunStage.OBSERVE
    assert "returned an awaitable" in summary.stops[0].reason
    assert world.performed == {}
