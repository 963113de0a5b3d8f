"""Pins for the stores' mutants the area's tests let through (issue 23, item 2).

``python tests/mutants/areas.py --area _store --sample 40 --seed 1`` showed
these unstated: what a malformed row is refused with, and which column of a
count row is the count. Pure functions every backend shares.
"""

from __future__ import annotations

import pytest

from actonce import LedgerUnavailable, Status
from actonce._store.rows import counts_from_rows, event_from_row, record_from_row


def test_a_malformed_effect_row_is_refused_with_its_reason() -> None:
    with pytest.raises(LedgerUnavailable, match=r"^the ledger holds a malformed effect row: "):
        record_from_row(["only-a-key"])


def test_a_malformed_event_row_is_refused_with_its_reason() -> None:
    with pytest.raises(LedgerUnavailable, match=r"^the ledger holds a malformed event row: "):
        event_from_row(1, ["only-a-key"])


def test_a_count_row_is_status_then_count() -> None:
    assert counts_from_rows([("confirmed", 2, 9), ("failed", "3", 9)]) == {
        Status.CONFIRMED: 2,
        Status.FAILED: 3,
    }
