"""Verification by lookup counts matches: one, several (a duplicate), none, or unavailable."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from actonce import Absent, Confirmed, Ledger, Outcome, Status, Unavailable, UsageError
from actonce.http import Provider, counted

from .charges import charge
from .conftest import closed_port
from .provider_app import ProviderApp


def test_counted() -> None:
    assert counted([]) == Absent()
    assert counted([{"id": "ch_1"}]) == Confirmed("ch_1")
    two = counted([{"id": "ch_1"}, {"id": "ch_2"}])
    assert two == Confirmed("ch_1", count=2, refs=("ch_1", "ch_2"))
    assert counted([{"n": 7}], ref=lambda m: f"obj-{m['n']}") == Confirmed("obj-7")
    with pytest.raises(UsageError):
        counted("ch_1")  # type: ignore[arg-type]


def test_a_lookup_counts_what_the_provider_holds(
    app: ProviderApp, make_provider: Callable[..., Provider]
) -> None:
    provider = make_provider(app.url)

    def look() -> object:
        return provider.lookup("/v1/charges", params={"reference": "L-1"}, items="data")

    assert look() == Absent()
    app.add("L-1")
    assert isinstance(look(), Confirmed) and look().count == 1  # type: ignore[attr-defined]
    app.add("L-1")
    assert look().count == 2  # type: ignore[attr-defined]
    big = provider.lookup(
        "/v1/charges", params={"reference": "L-1"}, items="data", match=lambda c: c["amount"] > 5
    )
    assert big == Absent()  # both are of amount 1


def test_a_duplicate_is_never_a_silent_success(
    app: ProviderApp, ledger: Ledger, make_provider: Callable[..., Provider]
) -> None:
    app.add("DUP-1")
    app.add("DUP-1")
    result = ledger.run(charge(make_provider(app.url, idempotency_keys=app.keys), "DUP-1"))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.NEEDS_REVIEW
    assert "duplicate detected: 2 matching results" in (result.reason or "")
    assert [p for p in app.posts if p["reference"] == "DUP-1"] == []  # nothing sent
    assert ledger.duplicates() == 1


def test_a_failed_lookup_is_unavailable_never_absent(
    app: ProviderApp, make_provider: Callable[..., Provider]
) -> None:
    down = make_provider(f"http://127.0.0.1:{closed_port()}")
    verdict = down.lookup("/v1/charges", params={"reference": "x"}, items="data")
    assert isinstance(verdict, Unavailable) and "ConnectError" in verdict.reason
    provider = make_provider(app.url)
    assert provider.lookup("/nowhere") == Unavailable("lookup answered 404 Not Found")
    unreadable = provider.lookup("/v1/charges", params={"reference": "x"}, items="results")
    assert isinstance(unreadable, Unavailable) and "KeyError" in unreadable.reason
    no_list = provider.lookup("/v1/charges", params={"reference": "x"}, items=lambda b: b)
    assert isinstance(no_list, Unavailable) and "not a list" in no_list.reason
