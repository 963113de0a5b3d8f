"""The operator's summary items, pinned where the ``_run`` area's mutation sample found
them loose (issue 23 item 2, seed 2): what an item says when its kind has no verifier,
and when its plan makes no effect (the key a refused effect of another kind names is
checked in test_operator_loop.py).
Every backend, a frozen clock, the world of ``opworld``.
"""

from __future__ import annotations

from opworld import Script, World
from test_operator_loop import operator

from actonce import ItemClass, Ledger, Registry, RunStage, Status
from actonce.testing import FrozenClock


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
