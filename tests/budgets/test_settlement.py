"""Reserve in the claim, consume on confirmed, release on proven absence, hold in doubt.

Every test reads the pool's usage from the ledger (``ledger.budgets.usage``)
and compares it with the world's ground truth: what was reserved or consumed
must cover every effect that happened or may have happened.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from actonce import (
    Ledger,
    NotPerformed,
    Outcome,
    PoolUsage,
    Status,
    UsageError,
)
from actonce.testing import FrozenClock, SimulatedCrash, crash_at

from .conftest import DOUBTFUL, World, unavailable


def usage(ledger: Ledger, name: str = "posts") -> PoolUsage:
    (found,) = ledger.budgets.usage(name)
    return found


def used(ledger: Ledger, name: str = "posts") -> tuple[Decimal, Decimal, Decimal]:
    u = usage(ledger, name)
    return u.reserved, u.consumed, u.free


def test_confirmed_consumes(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 3)
    gate = ledger.budgets.gate("posts")
    result = ledger.run(world.effect("p1", gate))
    assert result.outcome is Outcome.COMPLETED
    assert used(ledger) == (0, 1, 2)
    # Running it again is a skip: nothing more is reserved or consumed.
    assert ledger.run(world.effect("p1", gate)).outcome is Outcome.SKIPPED
    assert used(ledger) == (0, 1, 2)


def test_a_perform_stopped_before_the_boundary_releases(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 1)
    world.perform_error["p1"] = NotPerformed("the editor appended instead of replacing")
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    assert result.outcome is Outcome.FAILED
    assert world.performed == {}
    assert used(ledger) == (0, 0, 1)  # a malformed draft costs nothing


def test_proven_absence_releases(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 1)
    world.commit["p1"] = False  # the click did nothing; the authoritative page says so
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    assert (result.outcome, result.status) == (Outcome.FAILED, Status.FAILED)
    assert used(ledger) == (0, 0, 1)
    # The retry reserves again, under its own attempt, and consumes once verified.
    world.commit["p1"] = True
    again = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    assert (again.outcome, again.attempt) == (Outcome.COMPLETED, 2)
    assert used(ledger) == (0, 1, 0)


def test_unknown_holds_and_no_timeout_releases_it(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    ledger.budgets.define("posts", 1, window=10**9)  # one window for the whole test
    world.perform_error["p1"] = TimeoutError("response lost after commit")
    world.answer["p1"] = unavailable()
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    assert (result.outcome, result.status) == (Outcome.NEEDS_REVIEW, Status.UNKNOWN)
    assert world.performed == {"p1": 1}
    assert used(ledger) == (1, 0, 0)
    # Leases run out, days pass: the reservation stays, the next claim is refused.
    clock.advance(30 * 86400)
    assert used(ledger) == (1, 0, 0)
    refused = ledger.run(world.effect("p2", ledger.budgets.gate("posts")))
    assert refused.outcome is Outcome.OVER_BUDGET
    assert "budget 'posts' is spent" in (refused.reason or "")
    assert ledger.get(refused.key) is None  # refused before the claim: no record
    assert "p2" not in world.performed
    # Reconcile proves it happened: consumed, never released.
    del world.answer["p1"]
    report = ledger.reconcile()
    assert [r.status for r in report.results] == [Status.CONFIRMED]
    assert used(ledger) == (0, 1, 0)


def test_a_dead_worker_leaves_a_hold_that_reconcile_settles(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    ledger.budgets.define("posts", 2, window=10**9)
    gate = ledger.budgets.gate("posts")
    # Two workers die right after their performs: one committed, one did not.
    world.commit["gone"] = False
    for ref in ("made", "gone"):
        with crash_at("after_perform"), pytest.raises(SimulatedCrash):
            ledger.run(world.effect(ref, gate))
        assert ledger.get(world.effect(ref, gate).key.value).status is Status.EXECUTING  # type: ignore[union-attr]
    assert used(ledger) == (2, 0, 0)
    # While their leases are live, reconcile leaves them alone; the holds stay.
    assert ledger.reconcile().live == 2
    assert used(ledger) == (2, 0, 0)
    clock.advance(3600)
    report = ledger.reconcile()
    assert sorted(r.status for r in report.results) == [Status.CONFIRMED, Status.FAILED]
    assert used(ledger) == (0, 1, 1)
    assert world.performed == {"made": 1}


def test_review_happened_consumes(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 2)
    world.answer["p1"] = unavailable()
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts"), kind="doubt",
                                     policy=DOUBTFUL))  # fmt: skip
    assert result.status is Status.UNKNOWN
    del world.answer["p1"]
    world.performed.clear()  # the search index does not show it yet
    assert ledger.reconcile().results[0].status is Status.NEEDS_REVIEW
    assert used(ledger) == (1, 0, 1)
    ledger.resolve(result.key, "happened", reviewer="ana", reason="seen on the profile page",
                   result_ref="obj-p1")  # fmt: skip
    assert used(ledger) == (0, 1, 1)


def test_review_not_happened_releases(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 1)
    world.commit["p1"] = False
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts"), kind="doubt",
                                     policy=DOUBTFUL))  # fmt: skip
    assert result.status is Status.NEEDS_REVIEW  # absence proves nothing for this kind
    assert used(ledger) == (1, 0, 0)
    ledger.resolve(result.key, "not-happened", reviewer="ana", reason="not on the profile")
    assert used(ledger) == (0, 0, 1)
    # The same decision twice changes nothing more.
    ledger.resolve(result.key, "not_happened", reviewer="ana", reason="not on the profile")
    assert used(ledger) == (0, 0, 1)


def test_abandon_releases(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 1)
    world.answer["p1"] = unavailable()
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    assert result.status is Status.UNKNOWN
    ledger.resolve(result.key, "abandon", reviewer="ana", reason="the campaign was cancelled")
    assert used(ledger) == (0, 0, 1)


def test_holds_are_listed_per_attempt(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 5)
    world.commit["p1"] = False
    first = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    world.commit["p1"] = True
    ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    holds = ledger.store.holds_of(first.key)  # type: ignore[attr-defined]
    assert [(h[0], h[1], h[2], h[4]) for h in holds] == [
        (1, "budget", "posts", "released"),
        (2, "budget", "posts", "consumed"),
    ]


def test_an_unknown_pool_refuses_the_claim(ledger: Ledger, world: World) -> None:
    result = ledger.run(world.effect("p1", ledger.budgets.gate("nowhere")))
    assert result.outcome is Outcome.OVER_BUDGET
    assert "no budget pool 'nowhere'" in (result.reason or "")
    assert world.performed == {}


def test_a_gate_names_each_pool_once(ledger: Ledger) -> None:
    with pytest.raises(UsageError, match="more than once"):
        ledger.budgets.gate("posts", "original", "posts")


def test_a_count_pool_takes_whole_draws(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("posts", 3)
    result = ledger.run(world.effect("p1", ledger.budgets.gate("posts", amount="0.5")))
    assert result.outcome is Outcome.OVER_BUDGET
    assert "whole" in (result.reason or "")


def test_a_lower_limit_leaves_holds_alone_and_refuses_new_draws(
    ledger: Ledger, world: World
) -> None:
    ledger.budgets.define("posts", 3)
    for ref in ("p1", "p2"):
        assert ledger.run(world.effect(ref, ledger.budgets.gate("posts"))).done
    ledger.budgets.define("posts", 1)
    u = usage(ledger)
    assert (u.consumed, u.free, u.pool.limit) == (2, 0, 1)
    assert ledger.run(world.effect("p3", ledger.budgets.gate("posts"))).outcome is (
        Outcome.OVER_BUDGET
    )


def test_a_negative_draw_is_refused() -> None:
    from actonce import Draw

    with pytest.raises(UsageError, match="non-negative"):
        Draw("posts", Decimal(-1))
