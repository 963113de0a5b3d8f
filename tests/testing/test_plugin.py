"""The pytest plugin, run from a separate tiny project (``pytester``).

The plugin is found the way an installed actonce offers it: through the
``pytest11`` entry point that ``pyproject.toml`` declares (put on the path of
the inner run as a distribution of its own, so that this test does not
depend on how actonce was installed here).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from actonce import Outcome, Policy
from actonce.testing import FAULTS

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

PROJECT = '''
"""A user's own effect: a tiny shop whose orders are its ground truth."""
import pytest
from actonce import Absent, Confirmed, Effect, Policy, effect_key

ORDERS = []


def order_effect(ref, policy=None):
    def perform():
        ORDERS.append(ref)          # the shop does not deduplicate

    def verify():
        n = ORDERS.count(ref)
        return Absent() if n == 0 else Confirmed(f"order:{ref}", count=n, refs=(f"order:{ref}",) * n)

    return Effect(key=effect_key(tenant="t", actor="shop-bot", kind="order", object=ref,
                                 operation="create"),
                  kind="order", payload={"ref": ref}, perform=perform, verify=verify,
                  policy=policy or Policy())


@pytest.fixture(autouse=True)
def fresh_shop():
    ORDERS.clear()


def test_the_matrix(actonce_fault, actonce_ledger):
    report = actonce_fault.run(actonce_ledger, order_effect("A-1"))
    assert report.ok, report.explain()
    assert ORDERS.count("A-1") == actonce_fault.results


def test_a_naive_retry_is_caught(actonce_fault, actonce_ledger):
    # A "retry on error" wrapper around the perform: the matrix must catch it.
    effect = order_effect("B-1")
    original = effect.perform

    def retrying():
        try:
            return original()
        finally:
            original()

    from dataclasses import replace
    report = actonce_fault.run(actonce_ledger, replace(effect, perform=retrying))
    assert report.ok, report.explain()


def test_the_other_fixtures(actonce_clock, actonce_ledger, actonce_provider, actonce_crash):
    from actonce.testing import SimulatedCrash
    start = actonce_clock.now()
    with actonce_crash("after_mark_executing"), pytest.raises(SimulatedCrash):
        actonce_ledger.run(actonce_provider.effect("X"))
    assert actonce_provider.count("X") == 0
    assert actonce_ledger.get(actonce_provider.effect("X").key.value).status.value == "executing"
    assert actonce_clock.now() == start
'''


def _entry_point_dist(tmp: Path) -> Path:
    """A distribution that declares pyproject's pytest11 entry point (and nothing else)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    entry = data["project"]["entry-points"]["pytest11"]
    site = tmp / "site"
    dist = site / "actonce_plugin_under_test-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: actonce-plugin-under-test\nVersion: 0.0\n"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in entry.items())
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{lines}")
    return site


def test_pyproject_registers_the_plugin() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["entry-points"]["pytest11"] == {"actonce": "actonce.testing.plugin"}


def test_a_separate_project_uses_the_fixtures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_shop=PROJECT)
    site = _entry_point_dist(pytester.path)
    src = str(ROOT / "src")
    path = os.pathsep.join([str(site), src, os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    out = result.stdout.str()
    for case in FAULTS:
        assert f"test_the_matrix[{case.name}] PASSED" in out
    # The naive retry sends two orders wherever its perform is reached: the matrix
    # fails it there (a duplicate), and passes where the fault stops the perform, and
    # where a resend makes a duplicate the case expects (it is detected either way).
    caught = {"lost_response", "late_visibility", "crash_after_perform"}
    for case in FAULTS:
        verdict = "FAILED" if case.name in caught else "PASSED"
        assert f"test_a_naive_retry_is_caught[{case.name}] {verdict}" in out
    assert out.count("a duplicate was detected: 2 results exist") >= len(caught)
    result.assert_outcomes(passed=len(FAULTS) + 1 + len(FAULTS) - len(caught), failed=len(caught))


def test_expected_outcomes_follow_the_policy() -> None:
    by_name = {case.name: case for case in FAULTS}
    assert by_name["lost_response"].expected == {Outcome.COMPLETED}
    assert by_name["unavailable_verification"].expected == {Outcome.DEFERRED}
    late = by_name["late_visibility"]
    assert late.allowed(Policy(wait_for_settle=True)) == {Outcome.COMPLETED}
    proven = Policy(absence_authoritative=True, settle_seconds=0)
    assert by_name["provider_500"].allowed(proven) == {Outcome.FAILED}
