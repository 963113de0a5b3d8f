"""What an operator run says when reconcile leaves work unsettled, and when its ledger
fails at the end (issue 23 item 2, the ``_run`` area's sample dev-run-1).

The stop names at most five of the effects in doubt, then how many more; a
run whose budget, review count or summary the ledger cannot give still ends,
with no budget, no review count and its summary marked not stored.
A frozen clock, the world of ``opworld``, memory only where a store fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from opworld import Script, World
from test_operator_loop import operator

from actonce import ItemClass, Ledger, LedgerError, MemoryStore, RunStage, RunStatus, Status
from actonce.testing import FrozenClock


def _lost(ledger: Ledger, world: World, refs: list[str]) -> list[str]:
    keys = []
    for ref in refs:
        world.how[ref] = "lost"
        result = ledger.run(world.effect(ref))
        assert result.status is Status.UNKNOWN
        keys.append(result.key)
    return keys


def _words(keys: tuple[str, ...]) -> str:
    shown = "; ".join(f"post {k[:12]} is unknown" for k in keys[:5])
    more = f" (and {len(keys) - 5} more)" if len(keys) > 5 else ""
    return (
        f"{len(keys)} effect(s) of this operator may have happened and are not settled: "
        f"{shown}{more}; reconcile or review them before new work"
    )


@pytest.mark.parametrize("n", [1, 5, 6, 8])
def test_the_stop_names_five_effects_in_doubt_and_counts_the_rest(
    ledger: Ledger, world: World, clock: FrozenClock, n: int
) -> None:
    refs = [f"lost{i}" for i in range(n)]
    keys = _lost(ledger, world, refs)
    clock.advance(120)  # their leases are over: reconcile looks, the page still times out
    summary = operator(ledger, Script(world, ["fresh"])).run()
    assert summary.status is RunStatus.HARD_STOP
    (stop,) = summary.stops
    assert stop.stage is RunStage.RECONCILE
    assert sorted(stop.keys) == sorted(keys)
    assert stop.reason == _words(stop.keys), stop.reason
    if n <= 5:
        assert "more)" not in stop.reason
    else:
        assert f" (and {n - 5} more); reconcile" in stop.reason
    items = summary.ambiguous
    assert [i.key for i in items] == list(stop.keys)
    assert all(i.cls is ItemClass.AMBIGUOUS and i.status == "unknown" for i in items)
    assert "fresh" not in world.tried  # no new work


class Failing(MemoryStore):
    """A ledger that can no longer say budgets, reviews or keep a summary."""

    def budget_usage(self, names: Any, now: float) -> Any:
        raise LedgerError("budget table locked")

    def operations_in(self, state: str, limit: int) -> Any:
        raise LedgerError("operations table locked")

    def summary_put(self, summary: Any) -> bool:
        raise LedgerError("summaries table locked")


def test_a_run_whose_ledger_fails_at_the_end_still_ends(world: World, clock: FrozenClock) -> None:
    with Ledger(Failing(), clock=clock) as ledger:
        summary = operator(ledger, Script(world, ["a"])).run()
    assert summary.status is RunStatus.COMPLETED
    assert summary.budget == ()
    assert "in_review" not in summary.operations
    assert summary.stored is False
    assert world.performed == {"a": 1}


def test_a_run_says_how_many_operations_wait_for_a_person(ledger: Ledger, world: World) -> None:
    summary = operator(ledger, Script(world, ["a"])).run()
    assert summary.operations["in_review"] == 0
    assert summary.stored is True and summary.budget == ()
