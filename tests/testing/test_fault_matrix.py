"""The fault matrix catches each bug docs/testing.md says it catches, and passes a correct effect.

One test per row of the page's table "What the matrix catches": the whole matrix
runs against an effect with that one bug, and exactly the cases the row names fail
(a case that stops catching it, or a case that fails a correct effect, fails here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from actonce import Absent, Confirmed, Effect, Ledger, Policy, Verdict, effect_key
from actonce._registry import Registry
from actonce.testing import FAULTS, FaultReport, FrozenClock, MemoryStore
from actonce.testing.faults import LATE_SECONDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def _counting(orders: list[str], ref: str) -> Callable[[], Verdict]:
    def verify() -> Verdict:
        n = orders.count(ref)
        return Absent() if n == 0 else Confirmed(f"order:{ref}", count=n, refs=(ref,) * n)

    return verify


def _first_match(orders: list[str], ref: str) -> Callable[[], Verdict]:
    def verify() -> Verdict:  # the bug: it stops at the first match
        return Confirmed(f"order:{ref}") if ref in orders else Absent()

    return verify


def _order(orders: list[str], ref: str = "A-1", policy: Policy | None = None) -> Effect:
    return Effect(
        key=effect_key(tenant="t", actor="shop-bot", kind="order", object=ref, operation="create"),
        kind="order",
        payload={"ref": ref},
        perform=lambda: orders.append(ref),
        verify=_counting(orders, ref),
        policy=policy or Policy(),
    )


def _matrix(make: Callable[[list[str]], Effect]) -> dict[str, FaultReport]:
    """Every case against a fresh system and ledger; the reports by case name."""
    reports = {}
    for case in FAULTS:
        orders: list[str] = []
        clock = FrozenClock()
        ledger = Ledger(MemoryStore(), clock=clock, registry=Registry())
        try:
            reports[case.name] = case.run(ledger, make(orders))
        finally:
            ledger.close()
    return reports


def _failing(reports: dict[str, FaultReport]) -> set[str]:
    return {name for name, report in reports.items() if not report.ok}


@pytest.mark.parametrize(
    "policy",
    [
        Policy(),
        Policy(settle_seconds=10, absence_authoritative=True),
        Policy(settle_seconds=10, absence_authoritative=True, wait_for_settle=True),
        Policy(settle_seconds=2 * LATE_SECONDS, absence_authoritative=True),
    ],
    ids=["default", "authoritative-10s", "wait-for-settle", "authoritative-shortest"],
)
def test_a_correct_effect_passes_every_case(policy: Policy) -> None:
    reports = _matrix(lambda orders: _order(orders, policy=policy))
    assert _failing(reports) == set(), [r.explain() for r in reports.values() if not r.ok]


def test_a_perform_that_retries_on_its_own_is_caught() -> None:
    def make(orders: list[str]) -> Effect:
        effect = _order(orders)
        once = effect.perform

        def retrying() -> None:
            try:
                once()
            finally:
                once()  # "retry on error": it sends again whatever happened

        return replace(effect, perform=retrying)

    reports = _matrix(make)
    assert _failing(reports) == {"lost_response", "late_visibility", "crash_after_perform"}
    assert "a duplicate was detected: 2 results exist" in reports["lost_response"].explain()


@pytest.mark.parametrize("settle", [0.0, LATE_SECONDS / 4])
def test_an_authoritative_absence_without_a_settle_window_is_caught(settle: float) -> None:
    policy = Policy(absence_authoritative=True, settle_seconds=settle)
    reports = _matrix(lambda orders: _order(orders, policy=policy))
    assert _failing(reports) == {"late_visibility"}
    text = reports["late_visibility"].explain()
    assert "run reported failed" in text and "the ledger settled on failed" in text


def test_a_verifier_that_finds_the_first_of_two_results_is_caught() -> None:
    def make(orders: list[str]) -> Effect:
        return replace(_order(orders), verify=_first_match(orders, "A-1"))

    reports = _matrix(make)
    assert _failing(reports) == {"resent_request"}
    text = reports["resent_request"].explain()
    assert "verify counted 1 result(s)" in text
    assert "two results exist, but the ledger settled on confirmed" in text


def test_a_resent_request_leaves_two_results_and_counts_one_perform() -> None:
    (case,) = [c for c in FAULTS if c.name == "resent_request"]
    orders: list[str] = []
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), registry=Registry())
    report = case.run(ledger, _order(orders))
    ledger.close()
    assert orders == ["A-1", "A-1"] and case.results == 2
    assert report.ok and report.performs == 1 and report.settled is not None
    assert report.settled.value == "needs_review"


def test_the_page_names_every_case_and_every_bug_this_file_tests() -> None:
    text = DOC.read_text(encoding="utf-8")
    for case in FAULTS:
        assert f"| `{case.name}` |" in text
    for test in (
        "test_a_perform_that_retries_on_its_own_is_caught",
        "test_an_authoritative_absence_without_a_settle_window_is_caught",
        "test_a_verifier_that_finds_the_first_of_two_results_is_caught",
    ):
        assert f"`{test}`" in text
