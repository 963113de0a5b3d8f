"""``Ledger.open`` / ``AsyncLedger.open``: a ledger at a URL, with what it was given
(issue 23 item 2, the facades area).

Opened from a URL, a ledger keeps the clock, registry, fingerprint key and
signing keys it was handed, shows the URL, refuses writes when read-only and
a missing file unless asked to create it. A file ledger in ``tmp_path``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    FingerprintKey,
    Ledger,
    LedgerNotFound,
    LedgerUnavailable,
    Registry,
    SigningKeys,
    Status,
)
from actonce.testing import FrozenClock

FP = FingerprintKey("f1", b"\x01" * 16)
SK = SigningKeys.parse("k1:" + "ab" * 16)


def _effect(key: str) -> Effect:
    return Effect(key=key, kind="pin", payload={}, perform=lambda: None,
                  verify=lambda: Confirmed("x"))  # fmt: skip


def test_a_ledger_opened_at_a_url_keeps_what_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    with pytest.raises(LedgerNotFound) as err:
        Ledger.open(str(path))
    assert str(err.value) == (
        f"no ledger at {path}: create it with `actonce init --ledger {path}` or "
        "open_ledger(url, create=True)"
    )
    clock, registry = FrozenClock(start=5.0), Registry()
    with Ledger.open(f"sqlite:///{path}", create=True, clock=clock, registry=registry,
                     fingerprint_key=FP, signing_keys=SK) as ledger:  # fmt: skip
        assert ledger.url == f"sqlite:///{path}"
        assert (ledger.clock, ledger.registry, ledger.fingerprint_key) == (clock, registry, FP)
        assert ledger.approvals.keys is SK
        assert ledger.run(_effect("k")).status is Status.CONFIRMED
        assert ledger.get("k").updated_at == 5.0  # type: ignore[union-attr]
    with Ledger.open(str(path), readonly=True) as reader:
        assert reader.url == str(path) and reader.get("k").status is Status.CONFIRMED  # type: ignore[union-attr]
        with pytest.raises(LedgerUnavailable) as err2:
            reader.run(Effect(key="k2", kind="pin", payload={}, perform=lambda: None,
                              verify=Absent))  # fmt: skip
        assert str(err2.value) == f"the ledger {path} is open read-only"


def test_an_async_ledger_opened_at_a_url_keeps_what_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    clock, registry = FrozenClock(start=7.0), Registry()

    async def main() -> None:
        with pytest.raises(LedgerNotFound):
            AsyncLedger.open(str(path))
        async with AsyncLedger.open(str(path), create=True, clock=clock, registry=registry,
                                    fingerprint_key=FP, signing_keys=SK) as ledger:  # fmt: skip
            assert ledger.url == str(path)
            assert (ledger.clock, ledger.registry, ledger.fingerprint_key) == (clock, registry, FP)
            assert ledger.approvals.keys is SK
            assert (await ledger.run(_effect("k"))).status is Status.CONFIRMED
            assert (await ledger.get("k")).updated_at == 7.0  # type: ignore[union-attr]
        reader = AsyncLedger.open(str(path), readonly=True)
        try:
            with pytest.raises(LedgerUnavailable) as err:
                await reader.run(Effect(key="k3", kind="pin", payload={}, perform=lambda: None,
                                        verify=Absent))  # fmt: skip
            assert str(err.value) == f"the ledger {path} is open read-only"
            assert (await reader.get("k")).status is Status.CONFIRMED  # type: ignore[union-attr]
        finally:
            await reader.aclose()

    asyncio.run(main())


def test_leaving_a_ledger_closes_its_store() -> None:
    from actonce import LedgerUnavailable, MemoryStore

    store = MemoryStore()
    with Ledger(store) as ledger:
        assert ledger.get("k") is None
    with pytest.raises(LedgerUnavailable) as err:
        store.get("k")
    assert str(err.value) == "ledger read failed: Cannot operate on a closed database."
    other = MemoryStore()

    async def main() -> None:
        async with AsyncLedger(other) as aledger:
            assert await aledger.get("k") is None

    asyncio.run(main())
    with pytest.raises(LedgerUnavailable):
        other.get("k")
