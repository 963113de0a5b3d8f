"""An ``Effect``'s fields, the ledger's fingerprint key and ``ledger.once``, stated whole
(issue 23 item 2, the facades area).

Every field an effect is given is checked when it is made, each refusal in
its own words; a key that looks like a secret is refused showing only its
stored form. The fingerprint key comes from the caller, else from
``ACTONCE_FINGERPRINT_KEY`` or the file ``ACTONCE_FINGERPRINT_KEY_FILE``
names. ``once`` turns a function into an effect whose default payload is its
arguments. Memory store, a frozen clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    FingerprintKey,
    InvalidKey,
    Ledger,
    MemoryStore,
    Policy,
    Registry,
    Status,
    UsageError,
)
from actonce.testing import FrozenClock


def _effect(**changes: Any) -> Effect:
    fields: dict[str, Any] = {"key": "k", "kind": "pin", "payload": {},
                              "perform": lambda: None, "verify": Absent}  # fmt: skip
    return Effect(**(fields | changes))


SECRETLY = (
    "the effect key holds what looks like a secret (a token, a password=..., credentials in a "
    "URL, digits that pass a card number's check); the ledger would keep it as {stored!r}, so "
    "keys that differ only there would be one effect: build it with effect_key(...), which "
    "hashes its fields"
)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"key": ""}, UsageError, "an effect needs a key (a non-empty string or an EffectKey)"),
        ({"key": "  "}, UsageError, "an effect needs a key (a non-empty string or an EffectKey)"),
        ({"key": 5}, UsageError, "an effect needs a key (a non-empty string or an EffectKey)"),
        ({"key": "a\x00"}, UsageError, "the effect key cannot contain a NUL character"),
        ({"key": "order password=hunter2"}, InvalidKey,
         SECRETLY.format(stored="order password=[redacted]")),
        ({"key": "card 4111111111111111"}, InvalidKey, SECRETLY.format(stored="card [redacted]")),
        ({"kind": ""}, UsageError, "an effect needs a kind (a non-empty string)"),
        ({"kind": " "}, UsageError, "an effect needs a kind (a non-empty string)"),
        ({"kind": 3}, UsageError, "an effect needs a kind (a non-empty string)"),
        ({"kind": "a\x00"}, UsageError, "the kind cannot contain a NUL character"),
        ({"perform": None}, UsageError, "an effect needs a callable perform, not None"),
        ({"verify": "x"}, UsageError, "an effect needs a callable verify, not 'x'"),
        ({"gate": "g"}, UsageError, "gate must be an actonce.Gate, not str"),
        ({"refresh": lambda: 1}, UsageError,
         "refresh needs a gate with the approval whose facts it refreshes"),
        ({"precondition": 3}, UsageError, "precondition must be callable or None, not 3"),
        ({"evidence": "e"}, UsageError, "evidence must be callable or None, not 'e'"),
        ({"policy": {}}, UsageError, "policy must be a Policy, not dict"),
        ({"secret_fields": "password"}, UsageError,
         "secret_fields must be a sequence of names, not the string 'password' "
         "(did you mean ('password',)?)"),
    ],
)  # fmt: skip
def test_an_effect_refuses_what_it_cannot_run(
    changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as err:
        _effect(**changes)
    assert str(err.value) == message


def test_a_long_secret_key_shows_only_the_start_of_its_stored_form() -> None:
    key = "password=hunter2 " + "x" * 300
    with pytest.raises(InvalidKey) as err:
        _effect(key=key)
    stored = ("password=[redacted] " + "x" * 300)[:120]
    assert str(err.value) == SECRETLY.format(stored=stored)
    assert "hunter2" not in str(err.value)


def test_an_effect_keeps_what_it_was_given() -> None:
    effect = _effect(precondition=lambda: True, evidence=lambda label: None,
                     secret_fields=["card"])  # fmt: skip
    assert effect.secret_fields == ("card",)
    assert isinstance(effect.policy, Policy) and effect.gate is None and effect.refresh is None


def test_run_takes_only_an_effect() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError) as err:
        ledger.run({"key": "k"})  # type: ignore[arg-type]
    assert str(err.value) == "run() takes an actonce.Effect, not dict"


def test_a_ledger_checks_its_fingerprint_key_and_registry() -> None:
    with pytest.raises(UsageError) as err:
        Ledger(MemoryStore(), fingerprint_key=b"k" * 16)  # type: ignore[arg-type]
    assert str(err.value) == "fingerprint_key must be a FingerprintKey, not bytes"
    with pytest.raises(UsageError) as err:
        Ledger(MemoryStore(), registry={})  # type: ignore[arg-type]
    assert str(err.value) == "registry must be a Registry, not dict"
    with pytest.raises(UsageError) as err:
        Ledger(MemoryStore()).telemetry = object()  # type: ignore[assignment]
    assert str(err.value) == "telemetry needs a begin(run) method (see actonce.Telemetry)"


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("ACTONCE_FINGERPRINT_KEY", raising=False)
    monkeypatch.delenv("ACTONCE_FINGERPRINT_KEY_FILE", raising=False)
    return monkeypatch


def test_the_fingerprint_key_comes_from_the_caller_then_the_environment(
    no_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Ledger(MemoryStore()).fingerprint_key is None
    no_env.setenv("ACTONCE_FINGERPRINT_KEY", " k1:" + "ab" * 16 + " ")
    assert Ledger(MemoryStore()).fingerprint_key == FingerprintKey("k1", bytes.fromhex("ab" * 16))
    given = FingerprintKey("mine", b"\x01" * 16)
    assert Ledger(MemoryStore(), fingerprint_key=given).fingerprint_key is given
    path = tmp_path / "fp.key"
    path.write_text("k2:" + "cd" * 16 + "\n", encoding="utf-8")
    no_env.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(path))
    # the variable wins over the file
    assert Ledger(MemoryStore()).fingerprint_key.key_id == "k1"  # type: ignore[union-attr]
    no_env.delenv("ACTONCE_FINGERPRINT_KEY")
    assert Ledger(MemoryStore()).fingerprint_key == FingerprintKey("k2", bytes.fromhex("cd" * 16))


NO_KEY = "ACTONCE_FINGERPRINT_KEY must hold '<key id>:<hex key>' (at least 16 bytes of hex)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("k1", NO_KEY),
        ("k1:zz", NO_KEY),
        ("k1:", "a fingerprint key needs at least 16 bytes"),
        ("k1:abab", "a fingerprint key needs at least 16 bytes"),
        (":" + "ab" * 16, "a fingerprint key id is 1-32 characters of [A-Za-z0-9._-]"),
    ],
)
def test_a_fingerprint_key_that_is_no_key_is_refused(
    no_env: pytest.MonkeyPatch, text: str, message: str
) -> None:
    no_env.setenv("ACTONCE_FINGERPRINT_KEY", text)
    with pytest.raises(UsageError) as err:
        Ledger(MemoryStore())
    assert str(err.value) == message


def test_a_key_file_that_cannot_be_read_or_holds_no_key_is_refused(
    no_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.key"
    no_env.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(missing))
    with pytest.raises(UsageError) as err:
        Ledger(MemoryStore())
    assert str(err.value) == f"cannot read the key file {missing}: No such file or directory"
    bad = tmp_path / "bad.key"
    bad.write_text("no key here", encoding="utf-8")
    no_env.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(bad))
    with pytest.raises(UsageError) as err:
        Ledger(MemoryStore())
    assert str(err.value) == (
        f"the key file {bad} must hold '<key id>:<hex key>' (at least 16 bytes of hex)"
    )
    empty = tmp_path / "empty.key"
    empty.write_text("  \n", encoding="utf-8")
    no_env.setenv("ACTONCE_FINGERPRINT_KEY_FILE", str(empty))
    assert Ledger(MemoryStore()).fingerprint_key is None


def test_once_makes_a_function_an_effect_of_its_arguments() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    made: list[tuple[str, int]] = []

    @ledger.once(kind="invoice", key=lambda ref, n=1: f"inv-{ref}",
                 verify=lambda ref, n=1: Confirmed(ref) if made else Absent(),
                 policy=Policy(verify_attempts=1))  # fmt: skip
    def create(ref: str, n: int = 1) -> None:
        made.append((ref, n))

    assert create.__name__ == "create"
    result = create("A", n=2)
    assert (result.status, result.result_ref, made) == (Status.CONFIRMED, "A", [("A", 2)])
    record = ledger.get("inv-A")
    assert record is not None
    assert (record.kind, record.payload) == ("invoice", '{"args":["A"],"kwargs":{"n":2}}')

    @ledger.once(kind="note", key=lambda ref: f"note-{ref}", verify=lambda ref: Absent(),
                 payload=lambda ref: {"ref": ref.upper()})  # fmt: skip
    def note(ref: str) -> None:
        return None

    unsure = note("b")
    assert unsure.status is Status.UNKNOWN  # the default policy: absence proves nothing
    assert ledger.get("note-b").payload == '{"ref":"B"}'  # type: ignore[union-attr]


def test_reconcile_follows_the_registered_kind_s_policy_and_verifier() -> None:
    clock = FrozenClock(start=1_000.0)
    registry = Registry()
    seen: list[str] = []

    def verifier(record: Any) -> Any:
        seen.append(record.key)
        return Confirmed(f"found-{record.key}")

    registry.register("pin", verifier, policy=Policy(verify_attempts=1))
    ledger = Ledger(MemoryStore(), clock=clock, registry=registry)
    made: list[int] = []

    def perform() -> None:
        made.append(1)
        raise TimeoutError("lost")

    lost = ledger.run(_effect(perform=perform, policy=Policy(verify_attempts=1)))
    assert lost.status is Status.UNKNOWN
    clock.advance(3_600.0)
    report = ledger.reconcile()
    [result] = report.results
    assert (result.status, result.result_ref, seen) == (Status.CONFIRMED, "found-k", ["k"])
    last = ledger.events("k")[-1]
    assert last.run_id.startswith("reconcile-") and len(last.run_id) > len("reconcile-")


@pytest.mark.parametrize("is_async", [False, True])
def test_a_run_is_named_as_given(is_async: bool) -> None:
    import asyncio

    from actonce import AsyncLedger

    async def main() -> tuple[set[str], list[str]]:
        ledger: Any = (AsyncLedger if is_async else Ledger)(MemoryStore(), clock=FrozenClock())

        async def call(value: Any) -> Any:
            return await value if is_async else value

        await call(ledger.run(_effect(verify=lambda: Confirmed("x")), run_id="my-run-1"))
        runs = {e.run_id for e in await call(ledger.events("k"))}
        errors = []
        for bad in ("", "a\x00", 5):
            try:
                await call(ledger.run(_effect(), run_id=bad))
            except UsageError as exc:
                errors.append(str(exc))
        return runs, errors

    runs, errors = asyncio.run(main())
    assert runs == {"my-run-1"}
    assert errors == [
        "run_id must be a non-empty string, not ''",
        "run_id cannot contain a NUL character",
        "run_id must be a non-empty string, not 5",
    ]
