"""The write firewall's refusals in the ledger, on every backend (issue 21).

The store appends and lists them; ``ledger.firewall`` (sync and async)
stamps ledger time, keeps URLs as origin and path only, scrubs them, and
checks what it is asked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actonce import AsyncLedger, Ledger, RefusalReason, UsageError, WriteRefusal
from actonce.testing import FrozenClock

OUTSIDE, SECOND = RefusalReason.OUTSIDE_EFFECT, RefusalReason.SECOND


def refusal(actor: str = "alice", **changes: Any) -> WriteRefusal:
    fields: dict[str, Any] = {
        "actor": actor,
        "method": "POST",
        "url": "http://127.0.0.1:8765/compose",
        "reason": OUTSIDE,
        "page": "http://127.0.0.1:8765/compose",
    }
    return WriteRefusal(**(fields | changes))


def test_the_store_appends_and_lists_newest_first(store: Any) -> None:
    first = store.refusal_put(refusal(), 10.0)
    second = store.refusal_put(refusal("bob", reason=SECOND, effect_key="k1", via="cdp"), 20.0)
    third = store.refusal_put(refusal(method="DELETE"), 30.0)
    assert first.id is not None and first.id < second.id < third.id  # type: ignore[operator]
    assert (first.at, second.at) == (10.0, 20.0)
    assert store.refusal_list(None, 10, None) == [third, second, first]
    assert store.refusal_list("alice", 10, None) == [third, first]
    assert store.refusal_list(None, 1, third.id) == [second]  # the next page
    assert store.refusal_list("bob", 10, second.id) == []
    assert second.reason is SECOND and second.effect_key == "k1" and second.via == "cdp"
    assert store.refusal_counts() == {"alice": {OUTSIDE: 2}, "bob": {SECOND: 1}}


def test_the_ledger_records_at_ledger_time_without_query_or_credentials(store: Any) -> None:
    clock = FrozenClock(start=5_000.0)
    ledger = Ledger(store, clock=clock)
    stored = ledger.firewall.record(
        refusal(
            url="http://ana:pw@127.0.0.1:8765/reset/confirm?token=s3cr3t&x=1#frag",
            page="http://127.0.0.1:8765/account?session=abc",
            at=1.0,
        )
    )
    assert stored.at == 5_000.0 and stored.id is not None
    assert stored.url == "http://127.0.0.1:8765/reset/confirm"
    assert stored.page == "http://127.0.0.1:8765/account"
    assert ledger.firewall.refusals() == [stored]
    clock.advance(1)
    ledger.firewall.record(refusal("bob"))
    ledger.firewall.record(refusal("bob", reason=SECOND))
    assert ledger.firewall.totals() == {"alice": 1, "bob": 2}
    assert ledger.firewall.counts()["bob"] == {OUTSIDE: 1, SECOND: 1}
    assert [r.actor for r in ledger.firewall.refusals(actor="bob", limit=1)] == ["bob"]


def test_the_ledger_checks_what_it_is_asked(store: Any) -> None:
    ledger = Ledger(store, clock=FrozenClock())
    with pytest.raises(UsageError):
        ledger.firewall.record({"actor": "alice"})  # type: ignore[arg-type]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UsageError):
            ledger.firewall.refusals(limit=bad)  # type: ignore[arg-type]
    for before in ("3", 1.5, True):
        with pytest.raises(UsageError):
            ledger.firewall.refusals(before=before)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        ledger.firewall.refusals(actor="")
    assert ledger.firewall.refusals() == [] and ledger.firewall.totals() == {}


def test_the_async_ledger_has_the_same_names(store: Any) -> None:
    async def main() -> tuple[WriteRefusal, list[WriteRefusal], dict[str, int]]:
        ledger = AsyncLedger(store, clock=FrozenClock(start=7.0))
        stored = await ledger.firewall.record(refusal(url="http://127.0.0.1/x?q=1"))
        return stored, await ledger.firewall.refusals(actor="alice"), await ledger.firewall.totals()

    stored, listed, totals = asyncio.run(main())
    assert stored.at == 7.0 and stored.url == "http://127.0.0.1/x"
    assert listed == [stored] and totals == {"alice": 1}


@pytest.mark.parametrize(
    "changes",
    [
        {"actor": ""},
        {"method": "GET"},
        {"method": "options"},
        {"method": "PO ST"},
        {"reason": "because"},
        {"via": "Play Wright"},
        {"url": None},
        {"effect_key": 3},
    ],
)
def test_a_refusal_refuses_what_is_no_refusal(changes: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        refusal(**changes)
