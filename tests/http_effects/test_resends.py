"""What a provider with idempotency keys gets: the same request, the same key, inside the bound.

Against the real provider with keys. Each test checks the wire evidence the
ledger kept (the outcome of every send, in order), the keys the provider
saw and its ground truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from actonce import Absent, Confirmed, Ledger, Outcome, Status
from actonce.http import Provider

from .charges import charge, key_of
from .provider_app import ProviderApp
from .test_fault_matrix import wire_of


@pytest.fixture(scope="module")
def served() -> Iterator[ProviderApp]:
    with ProviderApp(keys=True) as app:
        yield app


@pytest.fixture
def keyed(served: ProviderApp) -> ProviderApp:
    return served


def _sent(app: ProviderApp, reference: str) -> list[str | None]:
    return [p["key"] for p in app.posts if p["reference"] == reference]


def test_a_send_that_hangs_is_resent_with_its_key_and_gets_the_first_answer(
    keyed: ProviderApp, ledger: Ledger, make_provider: Callable[..., Provider]
) -> None:
    provider = make_provider(keyed.url, idempotency_keys=True, timeout=0.2)
    keyed.script("HANG-1", "hang_after_commit")
    result = ledger.run(charge(provider, "HANG-1", bound=10))
    assert result.outcome is Outcome.COMPLETED
    # The first send hangs; a resend answered late times out too, and is resent.
    outcomes = [w["outcome"] for w in wire_of(ledger, result.key)]
    assert outcomes[0] == "timed out" and outcomes[-1] == 201
    assert set(outcomes[1:-1]) <= {"timed out"}
    assert set(_sent(keyed, "HANG-1")) == {key_of("HANG-1").value}
    assert keyed.count("HANG-1") == 1


def test_in_progress_is_waited_out_then_answered_with_the_one_charge(
    keyed: ProviderApp, ledger: Ledger, make_provider: Callable[..., Provider]
) -> None:
    provider = make_provider(keyed.url, idempotency_keys=True)
    keyed.script("BUSY-1", "in_progress")
    result = ledger.run(charge(provider, "BUSY-1"))
    assert result.outcome is Outcome.COMPLETED
    outcomes = [w["outcome"] for w in wire_of(ledger, result.key)]
    assert outcomes == ["connection reset", 409, 409, 201]
    assert keyed.count("BUSY-1") == 1


def test_a_refusal_of_a_resend_proves_nothing_verification_decides(
    keyed: ProviderApp, ledger: Ledger, make_provider: Callable[..., Provider]
) -> None:
    # The first send may have been processed: a 422 to the second cannot
    # say that nothing happened. Not "failed at once": verified absent.
    provider = make_provider(keyed.url, idempotency_keys=True)
    keyed.script("RESEND-422", "reset_before_commit", "status:422")
    result = ledger.run(charge(provider, "RESEND-422"))
    assert result.outcome is Outcome.FAILED and result.status is Status.FAILED
    assert "verified absent" in (result.reason or "")
    assert "OutcomeUnknown" in (result.reason or "")
    assert [w["outcome"] for w in wire_of(ledger, result.key)] == ["connection reset", 422]


def test_the_bound_ends_the_resends_and_verification_decides(
    keyed: ProviderApp, ledger: Ledger, make_provider: Callable[..., Provider]
) -> None:
    provider = make_provider(keyed.url, idempotency_keys=True, backoff=0.05)
    keyed.script("ALWAYS-500", *["error_before_commit"] * 50)
    result = ledger.run(charge(provider, "ALWAYS-500", bound=1.0, authoritative=False))
    outcomes = [w["outcome"] for w in wire_of(ledger, result.key)]
    assert len(outcomes) >= 2 and set(outcomes) == {500}
    assert len(set(_sent(keyed, "ALWAYS-500"))) == 1
    assert "within the perform's bound" in (result.reason or "")
    assert result.outcome is Outcome.NEEDS_REVIEW  # absence proves nothing by default
    assert keyed.count("ALWAYS-500") == 0


def test_a_lookup_by_key(
    keyed: ProviderApp, ledger: Ledger, make_provider: Callable[..., Provider]
) -> None:
    provider = make_provider(keyed.url, idempotency_keys=True)
    by_key = f"/v1/charges/by-key/{provider.provider_key(key_of('BYKEY-1'))}"
    assert provider.lookup(by_key, absent_on_404=True) == Absent()
    effect = provider.effect(
        key_of("BYKEY-1"),
        "charge",
        "POST",
        "/v1/charges",
        json={"reference": "BYKEY-1", "amount": 5},
        verify=lambda: provider.lookup(by_key, absent_on_404=True),
    )
    assert ledger.run(effect).outcome is Outcome.COMPLETED
    assert provider.lookup(by_key, absent_on_404=True) == Confirmed("ch_" + str(len(keyed.charges)))
