"""The operator's summary items, pinned where the ``_run`` area's mutation sample found
them loose (issue 23 item 2, seed 2): what an item says when its kind has no verifier,
when its plan makes no effect, and which key a refused effect of another kind names.
Every backend, a frozen clock, the world of ``opworld``.
"""

from __future__ import annotations

from typing import Any

from opworld import Script, World

from actonce import ItemClass, Ledger, Operator, Registry, RunStage, Status
from actonce.testing import FrozenClock


def operator(ledger: Ledger, hooks: Any) -> Operator[str]:
    return Operator(ledger, "alice-browser", hooks, kinds=("post", "note"), ttl=60)


def test_an_effect_in_doubt_whose_kind_has_no_verifier_says_so(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    world.how["a"] = "lost"
    lost = ledger.run(world.effect("a"))
    assert lost.status is Status.UNKNOWN
    clock.advance(120)  # its lease is over
    blind = Ledger(ledger.store, clock=clock, registry=Registry())  # knows no kind
    summary = operator(blind, Script(world, ["b"])).run()
    (item,) = summary.ambiguous
    assert (item.key, item.status, item.stage) == (lost.key, "unknown", RunStage.RECONCILE)
    assert item.reason == "no verifier registered for kind 'post'", item.reason
    assert world.tried == {"a"}


def test_a_candidate_whose_plan_makes_no_effect_is_skipped_with_a_reason(
    ledger: Ledger, world: World
) -> None:
    summary = operator(ledger, Script(world, ["nothing"])).run()
    (item,) = summary.items
    assert (item.label, item.cls, item.stage, item.why) == (
        "nothing",
        ItemClass.SKIPPED,
        RunStage.PLAN,
        "nothing_to_do",
    )
    assert item.reason == "the plan made no effect", item.reason


def test_an_effect_of_another_kind_is_refused_under_its_own_key(
    ledger: Ledger, world: World
) -> None:
    class Other(Script):
        def plan(self, candidate: str) -> Any:
            return self.world.effect(candidate, kind="invoice")

    summary = operator(ledger, Other(world, ["a"])).run()
    (item,) = summary.failures
    assert item.key == world.key("a", "invoice"), "the refused item does not name its key"
    assert (item.cls, item.stage) == (ItemClass.FAILED, RunStage.PLAN)
