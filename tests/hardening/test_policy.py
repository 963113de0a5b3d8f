"""Issue 7, item 3: a policy that cannot be compared is refused before anything runs.

``settle_seconds=nan`` compares false with everything: every settle window
counted as passed, an absence right after a lost response was taken as
proof, and the effect was performed again (three accepted effects in three
runs on memory and SQLite); ``lease_seconds=nan`` gave two owners on
PostgreSQL. Each bad value must be a :class:`UsageError` when the policy is
made, on every backend, and the external system must have seen nothing.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from actonce import ActOnceError, Ledger, Policy, Registry, UsageError
from actonce.testing import FakeProvider, Faults, FrozenClock

BAD = [
    {"settle_seconds": math.nan},
    {"settle_seconds": math.inf},
    {"settle_seconds": -1.0},
    {"settle_seconds": True},
    {"lease_seconds": math.nan},
    {"lease_seconds": 0},
    {"lease_seconds": -60},
    {"lease_seconds": math.inf},
    {"verify_backoff": math.nan},
    {"verify_backoff_max": -math.inf},
    {"verify_attempts": 0},
    {"verify_attempts": 2.5},
    {"verify_attempts": True},
    {"verify_attempts": math.nan},
    {"absence_authoritative": "yes"},
    {"verify_after_claim": None},
]


@pytest.mark.parametrize("fields", BAD, ids=repr)
def test_a_bad_policy_runs_nothing_on_any_backend(ledger_url: str, fields: dict[str, Any]) -> None:
    clock = FrozenClock()
    # Every response is lost and nothing is visible for an hour: the situation
    # in which a window that "always passed" made absence look like proof.
    provider = FakeProvider(clock=clock, faults=Faults(lose_response=1.0, visibility_delay=3600))
    base = {"absence_authoritative": True, "verify_backoff": 0.0, "verify_attempts": 1}
    refused: list[ActOnceError] = []
    with Ledger.open(ledger_url, create=True, clock=clock) as ledger:
        for _ in range(3):  # three workers' tries, a second apart
            try:
                policy = Policy(**{**base, **fields})
                ledger.run(provider.effect("r", policy=policy))
            except UsageError as exc:
                refused.append(exc)
            except ActOnceError:
                pass
            clock.advance(1)
        records = ledger.list()
    assert provider.accepted() == {}, "a bad policy let the effect through"
    assert provider.calls("submit") == 0
    assert records == []
    assert len(refused) == 3 and all("Policy." in str(e) for e in refused)


@pytest.mark.parametrize("fields", BAD[:6], ids=repr)
def test_a_bad_policy_is_refused_for_reconcile_too(fields: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        Registry().register("invoice", lambda record: None, policy=Policy(**fields))  # type: ignore[arg-type, return-value]
