"""Every form a plan may take, the hooks' defaults, and the operators' refusals, on memory.

``plan()`` returns an Effect, a list of effects, a generator that is sent
each result, ``None``, or (async) an async generator; anything else is
refused by name. The default hooks own every record, rank as observed,
label with ``str`` and skip nothing. The sync and async operators each
refuse the other's ledger, and a bad ``run_id``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterable
from typing import Any

import pytest
from opworld import World

from actonce import (
    AsyncHooks,
    AsyncLedger,
    AsyncOperator,
    Effect,
    Hooks,
    ItemClass,
    Ledger,
    MemoryStore,
    Operator,
    Registry,
    RunResult,
    RunStatus,
    UsageError,
)
from actonce.testing import FrozenClock


def _ledger(world: World) -> Ledger:
    registry = Registry()
    registry.register("post", world.verifier)
    return Ledger(MemoryStore(), clock=FrozenClock(1_796_032_800.0), registry=registry)


class Plain(Hooks[str]):
    """Only what must be given: the defaults of every other stage are under test."""

    def __init__(self, world: World, refs: list[str], plans: dict[str, Any]) -> None:
        self.world, self.refs, self.plans = world, refs, plans
        self.sent: list[Any] = []

    def observe(self) -> Iterable[str]:
        return self.refs

    def plan(self, candidate: str) -> Any:
        made = self.plans[candidate]
        return made() if callable(made) else made


def _run(world: World, refs: list[str], plans: dict[str, Any]) -> Any:
    ledger = _ledger(world)
    hooks = Plain(world, refs, plans)
    return Operator(ledger, "poster", hooks, kinds=("post",)).run(), hooks


def test_each_plan_form_runs_its_effects(world: World) -> None:
    sent: list[str] = []

    def gen() -> Generator[Effect, RunResult, None]:
        first = yield world.effect("g1")
        sent.append(first.outcome.value)
        yield world.effect("g2")

    summary, _ = _run(world, ["one", "many", "gen", "none"], {
        "one": world.effect("one"),
        "many": lambda: [world.effect("m1"), world.effect("m2")],
        "gen": gen,
        "none": None,
    })  # fmt: skip
    assert summary.status is RunStatus.COMPLETED
    assert world.performed == {"one": 1, "m1": 1, "m2": 1, "g1": 1, "g2": 1}
    assert sent == ["completed"]  # the generator was sent its first effect's result
    # Defaults: labels are str(candidate), order as observed, nothing skipped for quality.
    done = [i.label for i in summary.items if i.cls is ItemClass.DONE]
    assert done == ["one", "many", "many #2", "gen", "gen #2"]
    assert list(summary.quality_skips) == []


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ("text", "plan() returns an Effect, effects, a generator of effects or None, not str"),
        ({"k": 1}, "plan() returns an Effect, effects, a generator of effects or None, not dict"),
        (7, "plan() returns an Effect, effects, a generator of effects or None, not int"),
        ([1], "a plan's effects are actonce.Effect values, not int"),
    ],
    ids=["str", "dict", "int", "list of int"],
)
def test_a_plan_of_another_shape_is_refused_by_name(world: World, plan: Any, message: str) -> None:
    ledger = _ledger(world)
    op = Operator(ledger, "poster", Plain(world, ["x"], {"x": plan}), kinds=("post",))
    summary = op.run()
    (item,) = summary.items
    assert (item.label, item.cls, item.stage.value) == ("x", ItemClass.FAILED, "plan")
    assert item.reason == f"could not plan it, nothing was done: UsageError: {message}"
    assert world.performed == {}


@pytest.mark.parametrize("run_id", ["", " ", "r" * 201, 5])
def test_a_bad_run_id_is_refused(world: World, run_id: Any) -> None:
    op = Operator(_ledger(world), "poster", Plain(world, [], {}), kinds=("post",))
    with pytest.raises(UsageError) as caught:
        op.run(run_id=run_id)
    assert str(caught.value) == "run_id must be a non-empty string (at most 200 characters)"
    assert op.run(run_id="r" * 200).run_id == "r" * 200
    assert op.run().run_id.startswith("op-")


def test_each_operator_refuses_the_other_ledger(world: World) -> None:
    hooks = Plain(world, [], {})
    aledger = AsyncLedger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError) as caught:
        Operator(aledger, "p", hooks, kinds=("post",))  # type: ignore[arg-type]
    assert str(caught.value) == "Operator needs a Ledger: use AsyncOperator with an AsyncLedger"
    with pytest.raises(UsageError) as caught:
        AsyncOperator(_ledger(world), "p", hooks, kinds=("post",))  # type: ignore[arg-type]
    assert str(caught.value) == "AsyncOperator needs an AsyncLedger: use Operator with a Ledger"


def test_summaries_are_this_operators_newest_first_up_to_the_limit(world: World) -> None:
    ledger = _ledger(world)
    op = Operator(ledger, "poster", Plain(world, [], {}), kinds=("post",))
    other = Operator(ledger, "mailer", Plain(world, [], {}), kinds=("post",))
    runs = []
    for _ in range(3):
        runs.append(op.run().run_id)
        ledger.clock.advance(1)  # type: ignore[attr-defined]
    other.run()
    assert [s.run_id for s in op.summaries()] == runs[::-1]
    assert [s.run_id for s in op.summaries(limit=2)] == runs[:0:-1]
    assert op.name == "poster"


class AsyncPlain(AsyncHooks[str]):
    def __init__(self, world: World, refs: list[str]) -> None:
        self.world, self.refs = world, refs
        self.sent: list[str] = []

    async def observe(self) -> Iterable[str]:
        return self.refs

    async def plan(self, candidate: str) -> AsyncGenerator[Effect, RunResult]:
        async def steps() -> AsyncGenerator[Effect, RunResult]:
            first = yield self.world.effect(f"{candidate}1")
            self.sent.append(first.outcome.value)
            yield self.world.effect(f"{candidate}2")

        return steps()


async def test_an_async_generator_plan_is_sent_each_result_and_defaults_hold(
    world: World,
) -> None:
    registry = Registry()
    registry.register("post", world.verifier)
    aledger = AsyncLedger(MemoryStore(), clock=FrozenClock(1_796_032_800.0), registry=registry)
    hooks = AsyncPlain(world, ["a", "b"])
    op = AsyncOperator(aledger, "poster", hooks, kinds=("post",))
    summary = await op.run()
    assert summary.status is RunStatus.COMPLETED
    assert world.performed == {"a1": 1, "a2": 1, "b1": 1, "b2": 1}
    assert hooks.sent == ["completed", "completed"]
    assert [i.label for i in summary.items] == ["a", "a #2", "b", "b #2"]
    assert op.name == "poster"
    assert [s.run_id for s in await op.summaries(limit=1)] == [summary.run_id]
    with pytest.raises(UsageError, match="run_id must be a non-empty string"):
        await op.run(run_id="")
    await aledger.aclose()
