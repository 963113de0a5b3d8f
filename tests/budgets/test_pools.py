"""Pools: shared limits across formats, money, windows that roll over on a frozen clock."""

from __future__ import annotations

from decimal import Decimal

import pytest

from actonce import Ledger, Outcome, Pool, UsageError
from actonce._rules.budgets import window_of
from actonce.testing import FrozenClock

from .conftest import World, unavailable

FORMATS = {"text": 3, "image": 2, "thread": 2}


def define_formats(ledger: Ledger) -> None:
    for name, limit in FORMATS.items():
        ledger.budgets.define(name, limit)
    ledger.budgets.define("original", 4)


def publish(ledger: Ledger, world: World, fmt: str, ref: str) -> Outcome:
    gate = ledger.budgets.gate(fmt, "original")
    return ledger.run(world.effect(f"{fmt}-{ref}", gate)).outcome


def free(ledger: Ledger) -> dict[str, int]:
    return {u.pool.name: int(u.free) for u in ledger.budgets.usage()}


def test_a_format_limit_binds_before_the_shared_one(ledger: Ledger, world: World) -> None:
    define_formats(ledger)
    assert [publish(ledger, world, "text", str(i)) for i in range(4)] == [
        Outcome.COMPLETED, Outcome.COMPLETED, Outcome.COMPLETED, Outcome.OVER_BUDGET,
    ]  # fmt: skip
    assert free(ledger) == {"image": 2, "original": 1, "text": 0, "thread": 2}


def test_switching_labels_cannot_bypass_the_shared_limit(ledger: Ledger, world: World) -> None:
    define_formats(ledger)
    outcomes = [
        publish(ledger, world, "text", "a"),
        publish(ledger, world, "image", "a"),
        publish(ledger, world, "thread", "a"),
        publish(ledger, world, "text", "b"),
        # "original" is spent: every format is refused, whatever its own room.
        publish(ledger, world, "image", "b"),
        publish(ledger, world, "thread", "b"),
        publish(ledger, world, "text", "c"),
    ]
    assert outcomes == [Outcome.COMPLETED] * 4 + [Outcome.OVER_BUDGET] * 3
    assert len(world.performed) == 4  # the ground truth: four publications, no more
    assert free(ledger) == {"image": 1, "original": 0, "text": 1, "thread": 1}
    # A refused claim took nothing from the pools it did have room in (all or none).
    usage = {u.pool.name: (u.reserved, u.consumed) for u in ledger.budgets.usage()}
    assert usage["image"] == (0, 1) and usage["thread"] == (0, 1)


def test_money_pools_count_amounts_in_their_currency(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("ads", "100.00", unit="EUR", window="week")
    spend = ledger.budgets.gate("ads", amount="39.90")
    assert [ledger.run(world.effect(f"ad{i}", spend)).outcome for i in range(3)] == [
        Outcome.COMPLETED, Outcome.COMPLETED, Outcome.OVER_BUDGET,
    ]  # fmt: skip
    (u,) = ledger.budgets.usage("ads")
    assert (u.consumed, u.free, u.pool.unit) == (Decimal("79.80"), Decimal("20.20"), "EUR")
    refused = ledger.run(world.effect("ad9", spend))
    assert "79.80 EUR of 100.00 EUR used this week, 39.90 EUR more" in (refused.reason or "")
    assert ledger.run(world.effect("ad3", ledger.budgets.gate("ads", amount="20.20"))).done
    (u,) = ledger.budgets.usage("ads")
    assert u.free == 0


def test_the_window_rolls_over(ledger: Ledger, world: World, clock: FrozenClock) -> None:
    ledger.budgets.define("posts", 2, window="hour")
    gate = ledger.budgets.gate("posts")
    assert [ledger.run(world.effect(f"p{i}", gate)).outcome for i in range(3)] == [
        Outcome.COMPLETED, Outcome.COMPLETED, Outcome.OVER_BUDGET,
    ]  # fmt: skip
    before = clock.now()
    clock.advance(3599.0 - before % 3600)  # the last second of the hour
    assert ledger.run(world.effect("p3", gate)).outcome is Outcome.OVER_BUDGET
    clock.advance(1.0)  # the next hour, on the hour
    assert ledger.run(world.effect("p4", gate)).outcome is Outcome.COMPLETED
    (now,) = ledger.budgets.usage("posts")
    (then,) = ledger.budgets.usage("posts", at=before)
    assert (now.start, now.consumed, now.free) == (clock.now(), 1, 1)
    assert (then.start, then.consumed, then.free) == (before - before % 3600, 2, 0)


def test_a_hold_counts_in_the_window_it_was_made_in(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    ledger.budgets.define("posts", 1, window="day")
    world.answer["p1"] = unavailable()
    held = ledger.run(world.effect("p1", ledger.budgets.gate("posts")))
    assert held.outcome is Outcome.NEEDS_REVIEW
    clock.advance(86400)
    # Yesterday's hold is still held (never released by time); today has room.
    (yesterday,) = ledger.budgets.usage("posts", at=clock.now() - 86400)
    assert (yesterday.reserved, yesterday.free) == (1, 0)
    assert ledger.run(world.effect("p2", ledger.budgets.gate("posts"))).done


def test_windows_are_aligned_in_utc() -> None:
    monday = 1_796_032_800.0  # Monday 2026-11-30 10:00 UTC
    assert window_of("hour", monday) == (monday, monday + 3600)
    assert window_of("day", monday) == (monday - 36000, monday - 36000 + 86400)
    start, end = window_of("week", monday + 3 * 86400)  # Thursday
    assert (start, end - start) == (monday - 36000, 7 * 86400)
    assert window_of(900, monday + 1000) == (monday + 900, monday + 1800)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": Decimal(-1)},
        {"unit": "euros"},
        {"window": "month"},
        {"window": 0},
        {"window": float("nan")},
        {"name": " "},
    ],
)
def test_a_pool_is_checked_when_made(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"name": "posts", "limit": Decimal(3), **kwargs}
    with pytest.raises(UsageError):
        Pool(**args)  # type: ignore[arg-type]


def test_redefining_a_pool_keeps_its_history(ledger: Ledger) -> None:
    ledger.budgets.define("posts", 3)
    ledger.budgets.define("posts", 5, window="week")
    (u,) = ledger.budgets.usage("posts")
    assert (u.pool.limit, u.pool.window) == (5, "week")
    history = ledger.store.events("budget:posts")
    assert [e.data["limit"] for e in history] == ["3", "5"]
