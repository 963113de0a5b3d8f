"""The ledger's own writes failing: before the commit, after it, and for real.

Marker first (invariant 2): when the claim or the executing mark cannot be
written, or its commit's outcome is unknown, nothing is performed. The run
raises, the effect is left claimed, executing or absent, and reconcile then
resolves it conservatively: a claim that never crossed the boundary is
released; an executing mark with no effect is failed only when absence is
authoritative, otherwise it goes to review. Never two accepted effects.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from actonce import (
    Effect,
    EffectRecord,
    Ledger,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    Outcome,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    Verdict,
)
from actonce.testing import FakeProvider, FaultyStore, FrozenClock

LATER = 10_000.0


def _policy(verify_after_claim: bool, authoritative: bool) -> Policy:
    return Policy(
        settle_seconds=5.0,
        absence_authoritative=authoritative,
        verify_attempts=1,
        verify_after_claim=verify_after_claim,
    )


def _is_mark(record: EffectRecord) -> bool:
    return record.status is Status.EXECUTING


# (method, which write, when, verify_after_claim, what the failed run leaves behind)
CASES = [
    ("claim", None, "before", True, None),
    ("claim", None, "before", False, None),
    ("claim", None, "after", True, Status.CLAIMED),
    ("claim", None, "after", False, Status.EXECUTING),
    ("transition", _is_mark, "before", True, Status.CLAIMED),
    ("transition", _is_mark, "after", True, Status.EXECUTING),
]
IDS = [
    "claim-before",
    "claim-as-mark-before",
    "claim-after",
    "claim-as-mark-after",
    "mark-before",
    "mark-after",
]


@pytest.mark.parametrize("authoritative", [True, False], ids=["authoritative", "conservative"])
@pytest.mark.parametrize(("method", "match", "when", "verify_after_claim", "left"), CASES, ids=IDS)
def test_failed_checkpoint_write_never_performs(
    tmp_path: Path,
    method: str,
    match: Callable[[EffectRecord], bool] | None,
    when: str,
    verify_after_claim: bool,
    left: Status | None,
    authoritative: bool,
) -> None:
    clock = FrozenClock()
    policy = _policy(verify_after_claim, authoritative)
    provider = FakeProvider(str(tmp_path / "provider.db"), clock=clock)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    store = FaultyStore(SQLiteStore(str(tmp_path / "ledger.db"), create=True))
    ledger = Ledger(store, clock=clock, registry=registry)  # type: ignore[arg-type]
    effect = provider.effect("r", policy=policy)

    store.fail(method, when=when, match=match)
    expected = LedgerUnavailable if when == "before" else LedgerOutcomeUnknown
    with pytest.raises(expected):
        ledger.run(effect)
    assert provider.calls("submit") == 0, "performed after a failed checkpoint write"
    key = provider.effect("r").key
    key = key if isinstance(key, str) else key.value
    record = ledger.get(key)
    assert (record.status if record else None) is left

    clock.advance(LATER)  # the run's lease, if any, has expired
    report = ledger.reconcile()
    assert report.unresolved == []
    record = ledger.get(key)
    after = record.status if record else None
    if left is Status.CLAIMED:
        assert after is Status.FAILED  # released: it never crossed the boundary
    elif left is Status.EXECUTING:
        assert after is (Status.FAILED if authoritative else Status.NEEDS_REVIEW)
    else:
        assert after is None

    again = ledger.run(effect)
    if after is Status.NEEDS_REVIEW:
        assert again.outcome is Outcome.NEEDS_REVIEW and not again.performed
        assert provider.accepted() == {}
    else:
        assert again.outcome is Outcome.COMPLETED and again.performed
        assert provider.accepted() == {"r": 1}
    ledger.close()
    provider.close()


def _blocker(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")  # holds the write lock until rolled back
    return conn


@pytest.mark.parametrize("verify_after_claim", [True, False], ids=["claim", "claim-as-mark"])
def test_write_lock_held_elsewhere_fails_the_claim(
    tmp_path: Path, verify_after_claim: bool
) -> None:
    clock = FrozenClock()
    provider = FakeProvider(str(tmp_path / "provider.db"), clock=clock)
    ledger = Ledger(
        SQLiteStore(str(tmp_path / "ledger.db"), busy_timeout=0.05, create=True), clock=clock
    )
    effect = provider.effect("r", policy=_policy(verify_after_claim, True))
    blocker = _blocker(tmp_path / "ledger.db")
    try:
        with pytest.raises(LedgerUnavailable):
            ledger.run(effect)
        assert provider.calls("submit") == 0
        assert ledger.list() == []
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert ledger.run(effect).outcome is Outcome.COMPLETED
    assert provider.accepted() == {"r": 1}


def test_write_lock_taken_between_claim_and_mark(tmp_path: Path) -> None:
    """The claim commits; the executing mark cannot: nothing is performed."""
    clock = FrozenClock()
    policy = _policy(True, True)
    provider = FakeProvider(str(tmp_path / "provider.db"), clock=clock)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    ledger = Ledger(
        SQLiteStore(str(tmp_path / "ledger.db"), busy_timeout=0.05, create=True),
        clock=clock,
        registry=registry,
    )
    blockers: list[sqlite3.Connection] = []

    def verify() -> Verdict:
        verdict = provider.lookup("r")
        if ledger.list(Status.CLAIMED) and not blockers:  # the check after the claim
            blockers.append(_blocker(tmp_path / "ledger.db"))
        return verdict

    base = provider.effect("r", policy=policy)
    effect = Effect(base.key, base.kind, base.payload, base.perform, verify, policy=policy)
    try:
        with pytest.raises(LedgerUnavailable):
            ledger.run(effect)
        assert blockers, "the lock was never taken"
        assert provider.calls("submit") == 0
    finally:
        for b in blockers:
            b.execute("ROLLBACK")
            b.close()
    (record,) = ledger.list()
    assert record.status is Status.CLAIMED
    clock.advance(LATER)
    ledger.reconcile()
    assert ledger.get(record.key).status is Status.FAILED  # type: ignore[union-attr]
    assert ledger.run(base).outcome is Outcome.COMPLETED
    assert provider.accepted() == {"r": 1}
