"""``Fact.freshness``: a fact is fresh until its validity window ends."""

from __future__ import annotations

from actonce import Fact, Freshness


def test_a_fact_is_fresh_inside_its_window_and_stale_outside() -> None:
    price = Fact("price", "110", observed_at=1_000.0)  # the default window for a price: 300 s
    assert price.valid_until == 1_300.0
    assert price.freshness(1_000.0) is Freshness.FRESH
    assert price.freshness(1_299.9) is Freshness.FRESH
    assert price.freshness(1_300.0) is Freshness.STALE
    # Stamped a little ahead (a refresher's clock ahead of the ledger's): only
    # the end of the window counts (docs/approvals.md, facts).
    assert price.freshness(999.0) is Freshness.FRESH
    seat = Fact("availability", True, observed_at=1_000.0, valid_until=1_010.0)
    assert seat.freshness(1_005.0) is Freshness.FRESH
    assert seat.freshness(1_011.0) is Freshness.STALE
