"""A ledger written before the claim-first change (issue 22) still reconciles.

``tests/fixtures/pre_claimfirst.sqlite`` was written by main's code at schema
0010 (``tests/fixtures/make_old_ledger.py``): a stale claim, two orphaned
``executing`` marks, an unknown outcome, finished effects and a finished
operation. The current code opens a copy, reconciles it by verification and
runs its finished effects again without performing them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EffectRecord,
    Ledger,
    Outcome,
    PayloadMismatch,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    Verdict,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "pre_claimfirst.sqlite"
FOUND = ("orphan-performed", "unknown-outcome")


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURE, path)
    reg = Registry()

    def verify(record: EffectRecord) -> Verdict:
        return Confirmed("found") if record.key in FOUND else Absent()

    reg.register("fixture", verify, policy=Policy(absence_authoritative=True))
    led = Ledger(SQLiteStore(str(path)), registry=reg)
    yield led
    led.close()


def test_the_fixture_holds_every_state_reconcile_acts_on() -> None:
    store = SQLiteStore(str(FIXTURE), readonly=True)
    try:
        assert store.schema_version() == 10
        got = {k: store.get(k) for k in ("stale-claim", "orphan-mark", "unknown-outcome")}
        assert {k: r.status for k, r in got.items() if r is not None} == {
            "stale-claim": Status.CLAIMED,
            "orphan-mark": Status.EXECUTING,
            "unknown-outcome": Status.UNKNOWN,
        }
    finally:
        store.close()


def test_an_old_ledger_reconciles_by_verification(ledger: Ledger) -> None:
    report = ledger.reconcile()
    assert report.errors == () and report.no_verifier == ()
    outcomes = {r.key: (r.outcome, r.status, r.performed) for r in report.results}
    assert outcomes == {
        "stale-claim": (Outcome.FAILED, Status.FAILED, False),
        "orphan-mark": (Outcome.FAILED, Status.FAILED, False),
        "orphan-performed": (Outcome.SKIPPED, Status.CONFIRMED, False),
        "unknown-outcome": (Outcome.SKIPPED, Status.CONFIRMED, False),
    }
    assert ledger.reconcile().results == ()  # nothing left open


def test_finished_effects_of_an_old_ledger_are_not_performed_again(ledger: Ledger) -> None:
    performed: list[str] = []
    for key in ("done-performed", "done-already", "op-pay"):
        effect = Effect(
            key=key, kind="fixture", payload={"key": key}, perform=lambda k=key: performed.append(k),
            verify=lambda: Absent(),
        )  # fmt: skip
        result = ledger.run(effect)
        assert (result.outcome, result.status) == (Outcome.SKIPPED, Status.CONFIRMED)
    assert performed == []
    changed = Effect(key="done-performed", kind="fixture", payload={"key": "other"},
                     perform=lambda: None, verify=lambda: Absent())  # fmt: skip
    with pytest.raises(PayloadMismatch):
        ledger.run(changed)
