"""What the facades pass on: keys read from the environment, a ledger's
registry and clock, ``once``'s payload, the async twins' answers.

Each test states what a user sees through the public API when a facade
hands its argument on, so a facade that drops one (a registry not passed,
a key file not read) fails here, not in production.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    Ledger,
    MemoryStore,
    Policy,
    Registry,
    UsageError,
)
from actonce._approvals import signing_keys_from_env
from actonce._effect import fingerprint_key_from_env
from actonce.testing import FrozenClock

from .open_effects import left_open

HEX = "00112233445566778899aabbccddeeff"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ACTONCE_APPROVAL_KEYS",
        "ACTONCE_APPROVAL_KEYS_FILE",
        "ACTONCE_FINGERPRINT_KEY",
        "ACTONCE_FINGERPRINT_KEY_FILE",
    ):
        monkeypatch.delenv(name, raising=False)


def test_signing_keys_come_from_the_variable_first_then_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert signing_keys_from_env() is None
    path = tmp_path / "keys"
    path.write_text(f"  k2:{HEX}ff , k1:{HEX}\n", encoding="utf-8")
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS_FILE", str(path))
    from_file = signing_keys_from_env()
    assert from_file is not None
    assert from_file.keys == (("k2", bytes.fromhex(HEX + "ff")), ("k1", bytes.fromhex(HEX)))
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS", f"k9:{HEX}")
    from_var = signing_keys_from_env()
    assert from_var is not None and from_var.keys == (("k9", bytes.fromhex(HEX)),)


def test_a_signing_key_file_that_cannot_be_read_or_holds_no_key_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope"
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS_FILE", str(missing))
    with pytest.raises(UsageError) as caught:
        signing_keys_from_env()
    assert str(caught.value) == f"cannot read the key file {missing}: No such file or directory"
    bad = tmp_path / "bad"
    bad.write_text("k1", encoding="utf-8")
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS_FILE", str(bad))
    with pytest.raises(UsageError) as caught:
        signing_keys_from_env()
    assert str(caught.value) == f"the key file {bad} must hold 'kid:hex[,kid:hex...]'"
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS", "k1:zz")
    with pytest.raises(UsageError) as caught:
        signing_keys_from_env()
    assert str(caught.value) == "ACTONCE_APPROVAL_KEYS must hold 'kid:hex[,kid:hex...]'"
    empty = tmp_path / "empty"
    empty.write_text("\n", encoding="utf-8")
    monkeypatch.delenv("ACTONCE_APPROVAL_KEYS")
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS_FILE", str(empty))
    assert signing_keys_from_env() is None


def test_the_fingerprint_key_comes_from_the_variable_first_then_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fingerprint_key_from_env() is None
    path = tmp_path / "fp"
    path.write_text(f"\n fp1:{HEX} \n", encoding="utf-8")
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(path))
    key = fingerprint_key_from_env()
    assert key is not None and (key.key_id, key.secret) == ("fp1", bytes.fromhex(HEX))
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY", f"fp2:{HEX}")
    key = fingerprint_key_from_env()
    assert key is not None and key.key_id == "fp2"
    # The ledger and the queue take it when given none.
    ledger = Ledger(MemoryStore())
    assert ledger.fingerprint_key is not None and ledger.fingerprint_key.key_id == "fp2"


def test_a_short_fingerprint_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY", "fp1:00ff")
    with pytest.raises(UsageError, match="at least 16 bytes"):
        fingerprint_key_from_env()


@pytest.mark.parametrize("text", ["fp1", f"fp1{HEX}", "fp1:zz", f"fp1;{HEX}"])
def test_a_fingerprint_key_that_is_no_key_is_refused_naming_its_source(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY", text)
    with pytest.raises(UsageError) as caught:
        fingerprint_key_from_env()
    assert str(caught.value).startswith("ACTONCE_FINGERPRINT_KEY must hold '<key id>:<hex key>'")
    monkeypatch.delenv("ACTONCE_FINGERPRINT_KEY")
    path = tmp_path / "fp"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(path))
    with pytest.raises(UsageError) as caught:
        fingerprint_key_from_env()
    assert str(caught.value).startswith(f"the key file {path} must hold '<key id>:<hex key>'")
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(tmp_path / "gone"))
    with pytest.raises(UsageError) as caught:
        fingerprint_key_from_env()
    assert str(caught.value) == (
        f"cannot read the key file {tmp_path / 'gone'}: No such file or directory"
    )


def test_once_stores_the_arguments_as_the_payload_unless_told_otherwise() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    sent: list[tuple[str, int]] = []

    @ledger.once(
        kind="invoice",
        key=lambda ref, amount=1: f"invoice:{ref}",
        verify=lambda ref, amount=1: Confirmed() if (ref, amount) in sent else Absent(),
        policy=Policy(settle_seconds=0, absence_authoritative=True),
    )
    def create(ref: str, amount: int = 1) -> None:
        sent.append((ref, amount))

    assert create("A-1", amount=5).outcome.value == "completed"
    record = ledger.get("invoice:A-1")
    assert record is not None and record.kind == "invoice"
    assert json.loads(record.payload) == {"args": ["A-1"], "kwargs": {"amount": 5}}

    @ledger.once(
        kind="invoice",
        key=lambda ref: f"invoice:{ref}",
        verify=lambda ref: Absent(),
        payload=lambda ref: {"ref": ref},
    )
    def other(ref: str) -> None:
        sent.append((ref, 0))

    other("B-2")
    stored = ledger.get("invoice:B-2")
    assert stored is not None and json.loads(stored.payload) == {"ref": "B-2"}


def test_open_hands_its_registry_and_clock_to_the_ledger(tmp_path: Path) -> None:
    reg = Registry()
    clock = FrozenClock()
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with pytest.raises(Exception, match="create"):
        Ledger.open(url)  # not created unless asked
    ledger = Ledger.open(url, create=True, registry=reg, clock=clock)
    try:
        assert ledger.registry is reg and ledger.clock is clock and ledger.url == url
    finally:
        ledger.close()
    ro = Ledger.open(url, readonly=True)
    try:
        from actonce import registry as default

        assert ro.registry is default
    finally:
        ro.close()


async def test_async_open_hands_its_registry_and_clock_to_the_ledger(tmp_path: Path) -> None:
    reg = Registry()
    clock = FrozenClock()
    url = f"sqlite:///{tmp_path / 'a.db'}"
    with pytest.raises(Exception, match="create"):
        await AsyncLedger.open(url).aclose()
    ledger = AsyncLedger.open(url, create=True, registry=reg, clock=clock)
    try:
        assert ledger.registry is reg and ledger.clock is clock
    finally:
        await ledger.aclose()


async def test_async_reconcile_names_open_effects_without_a_verifier() -> None:
    clock = FrozenClock()
    store = MemoryStore()
    sync = Ledger(store, clock=clock)

    left_open(sync)
    clock.advance(3600)
    ledger = AsyncLedger(store, clock=clock, registry=Registry())
    report = await ledger.reconcile()
    assert report.no_verifier == ("post:1",)
    assert report.results == () and report.errors == ()
    assert Ledger(store, clock=clock, registry=Registry()).reconcile().no_verifier == ("post:1",)
    await ledger.aclose()


class _ServerStore(MemoryStore):
    """A memory store with a database server's clock, far from this machine's."""

    def __init__(self, at: float) -> None:
        super().__init__()
        self.at, self.reads = at, 0

    def server_time(self) -> float:
        self.reads += 1
        return self.at


def _post(key: str) -> Effect:
    return Effect(key, "post", {}, lambda: None, lambda: Absent(), policy=Policy(settle_seconds=0))


def test_a_ledger_on_a_server_keeps_the_servers_time_read_once_a_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _ServerStore(2_000_000_000.0)
    ledger = Ledger(store)
    ledger.run(_post("p1"))
    ledger.run(_post("p2"))
    assert store.reads == 1  # read once; the next minute counts on from it
    for key in ("p1", "p2"):
        record = ledger.get(key)
        assert record is not None and 2_000_000_000.0 <= record.created_at < 2_000_000_060.0
    import actonce._ledger_base as base

    monkeypatch.setattr(base, "ANCHOR_EVERY", 0.0)  # a minute has passed at every run
    ledger.run(_post("p3"))
    assert store.reads == 2
    # A clock given is the ledger's: the server's is not read.
    given = _ServerStore(2_000_000_000.0)
    Ledger(given, clock=FrozenClock()).run(_post("p4"))
    assert given.reads == 0


async def test_an_async_ledger_on_a_server_keeps_the_servers_time_too() -> None:
    store = _ServerStore(2_000_000_000.0)
    ledger = AsyncLedger(store)
    await ledger.run(_post("p1"))
    await ledger.run(_post("p2"))
    assert store.reads == 1
    record = await ledger.get("p2")
    assert record is not None and 2_000_000_000.0 <= record.created_at < 2_000_000_060.0
    await ledger.aclose()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"fingerprint_key": "k:00"}, "fingerprint_key must be a FingerprintKey, not str"),
        ({"registry": {}}, "registry must be a Registry, not dict"),
    ],
    ids=["fingerprint key", "registry"],
)
def test_a_ledger_refuses_a_configuration_of_the_wrong_type(
    kw: dict[str, Any], message: str
) -> None:
    for make in (Ledger, AsyncLedger):
        with pytest.raises(UsageError) as caught:
            make(MemoryStore(), **kw)
        assert str(caught.value) == message


def test_a_ledger_refuses_to_run_what_is_no_effect_and_telemetry_without_begin() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError) as caught:
        ledger.run({"key": "k"})  # type: ignore[arg-type]
    assert str(caught.value) == "run() takes an actonce.Effect, not dict"
    with pytest.raises(UsageError) as caught:
        ledger.telemetry = object()  # type: ignore[assignment]
    assert str(caught.value) == "telemetry needs a begin(run) method (see actonce.Telemetry)"
    assert ledger.telemetry is None
    assert ledger.url == "(a store given directly)"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x.approvals.list("nope"),
         "an approval status is one of pending, approved, denied, expired, voided, "
         "invalidated, held, consumed, not 'nope'"),
        (lambda x: x.intents.list("nope"),
         "an intent status is one of current, superseded, not 'nope'"),
    ],
    ids=["approval status", "intent status"],
)  # fmt: skip
def test_a_status_filter_that_is_no_status_names_the_statuses(call: Any, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        call(Ledger(MemoryStore(), clock=FrozenClock()))
    assert str(caught.value) == message


def test_an_effect_key_holding_a_secret_is_refused_in_full_words() -> None:
    with pytest.raises(UsageError) as caught:
        _post("post?token=abcdefgh12345678")
    assert str(caught.value) == (
        "the effect key holds what looks like a secret (a token, a password=..., "
        "credentials in a URL, digits that pass a card number's check); the ledger "
        "would keep it as 'post?token=[redacted]', so keys that differ only there would "
        "be one effect: build it with effect_key(...), which hashes its fields"
    )


async def test_async_budgets_define_as_sync_ones() -> None:
    sync = Ledger(MemoryStore(), clock=FrozenClock())
    aledger = AsyncLedger(MemoryStore(), clock=FrozenClock())
    made = sync.budgets.define("spend", "500", unit="EUR", window=3600)
    amade = await aledger.budgets.define("spend", "500", unit="EUR", window=3600)
    assert made == amade and made.unit == "EUR" and str(made.limit) == "500"
    assert sync.budgets.usage() == await aledger.budgets.usage()
    with pytest.raises(UsageError, match="a budget pool needs a limit"):
        await aledger.budgets.define("spend", None)  # type: ignore[arg-type]
    await aledger.aclose()
