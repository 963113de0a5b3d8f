"""Protocol scenarios through ``Ledger.run`` and ``AsyncLedger.run``.

Every test here runs four ways: {memory, SQLite file} x {sync, async}. The
fake provider is the ground truth: ``provider.count(ref)`` is the number of
effects the outside world accepted.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from actonce import (
    Effect,
    EventType,
    HardStop,
    InvalidTransition,
    Outcome,
    PayloadMismatch,
    Policy,
    SQLiteStore,
    Status,
    Store,
    UnknownEffect,
    UsageError,
)
from actonce.testing import FakeProvider, FrozenClock

from .conftest import Facade

REF = "invoice-42"
#: Transition events: the ones that record a state change.
TRANSITION_TYPES = {EventType(s.value) for s in Status}


def transitions(store: Store, key: str) -> list[tuple[Status | None, Status | None]]:
    return [(e.from_status, e.to_status) for e in store.events(key) if e.type in TRANSITION_TYPES]


def types(store: Store, key: str) -> list[EventType]:
    return [e.type for e in store.events(key)]


def key_of(effect: Effect) -> str:
    return str(effect.key)


# --- happy paths ----------------------------------------------------------------------


def test_happy_path_with_verify_after_claim_takes_three_commits(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = provider.effect(REF)
    result = ledger.run(effect)
    assert result.outcome is Outcome.COMPLETED
    assert result.performed and result.done
    assert result.status is Status.CONFIRMED
    assert result.result_ref == "obj-1"
    assert result.attempt == 1
    assert provider.count(REF) == 1
    # Claim first: one look under the claim, before the boundary, one after the perform.
    assert provider.calls("lookup") == 2
    assert transitions(store, key_of(effect)) == [
        (None, Status.CLAIMED),
        (Status.CLAIMED, Status.EXECUTING),
        (Status.EXECUTING, Status.CONFIRMED),
    ]
    assert len(store.events(key_of(effect))) == 3


def test_happy_path_without_reverify_takes_two_commits(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = provider.effect(REF, policy=Policy(verify_after_claim=False))
    result = ledger.run(effect)
    assert result.outcome is Outcome.COMPLETED
    assert provider.count(REF) == 1
    assert provider.calls("lookup") == 2, "a direct claim was marked without a look first"
    assert transitions(store, key_of(effect)) == [
        (None, Status.EXECUTING),
        (Status.EXECUTING, Status.CONFIRMED),
    ]
    assert len(store.events(key_of(effect))) == 2
    record = store.get(key_of(effect))
    assert record is not None and record.executing_at is not None


def test_already_confirmed_is_skipped_without_perform(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = provider.effect(REF)
    ledger.run(effect)
    lookups = provider.calls("lookup")
    again = ledger.run(effect)
    assert again.outcome is Outcome.SKIPPED
    assert not again.performed
    assert again.result_ref == "obj-1"
    assert provider.calls("submit") == 1
    assert provider.calls("lookup") == lookups  # a confirmed record needs no look
    assert len(store.events(key_of(effect))) == 3


def test_result_found_before_claim_is_recorded_and_skipped(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.submit(REF)  # made by someone else, earlier
    effect = provider.effect(REF)
    result = ledger.run(effect)
    assert result.outcome is Outcome.SKIPPED
    assert not result.performed
    assert provider.count(REF) == 1
    record = store.get(key_of(effect))
    assert record is not None
    assert record.status is Status.CONFIRMED
    assert record.result_ref == "obj-1"
    # Claim first: the look that finds it runs under the claim, which records it.
    assert transitions(store, key_of(effect)) == [
        (None, Status.CLAIMED),
        (Status.CLAIMED, Status.CONFIRMED),
    ]
    assert record.fence == 1 and record.executing_at is None  # never crossed the boundary
    # Recording it again is idempotent: the second run reads, writes nothing.
    assert ledger.run(effect).outcome is Outcome.SKIPPED
    assert len(store.events(key_of(effect))) == 2


# --- lost responses and late visibility -------------------------------------------------


def test_lost_response_is_verified_and_completed(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.lose_response = 1.0
    effect = provider.effect(REF)
    result = ledger.run(effect)
    assert result.outcome is Outcome.COMPLETED
    assert provider.count(REF) == 1
    assert provider.calls("submit") == 1
    assert transitions(store, key_of(effect))[-1] == (Status.EXECUTING, Status.CONFIRMED)


def test_late_visibility_goes_unknown_then_reconcile_confirms(
    ledger: Facade, store: Store, provider: FakeProvider, clock: FrozenClock
) -> None:
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 100.0
    effect = provider.effect(REF)  # default policy: 4 verify attempts, well inside 5 s
    result = ledger.run(effect)
    assert result.outcome is Outcome.NEEDS_REVIEW
    assert result.status is Status.UNKNOWN
    assert provider.count(REF) == 1
    # A second run must not perform again while the outcome is unknown.
    again = ledger.run(effect)
    assert not again.performed
    assert again.status is Status.UNKNOWN
    assert provider.calls("submit") == 1

    clock.advance(200.0)  # past the settle window and the visibility delay
    report = ledger.reconcile()
    assert [r.key for r in report.results] == [key_of(effect)]
    assert report.results[0].status is Status.CONFIRMED
    assert report.unresolved == []
    record = store.get(key_of(effect))
    assert record is not None and record.status is Status.CONFIRMED
    assert record.result_ref == "obj-1"
    assert provider.count(REF) == 1
    assert transitions(store, key_of(effect))[-2:] == [
        (Status.EXECUTING, Status.UNKNOWN),
        (Status.UNKNOWN, Status.CONFIRMED),
    ]


def test_reconcile_leaves_live_leases_alone(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.visibility_delay = 100.0
    effect = provider.effect(REF)
    assert ledger.run(effect).status is Status.UNKNOWN
    report = ledger.reconcile()  # unknown is reconciled at once (no owner to wait for)
    assert report.results and report.results[0].status is Status.UNKNOWN


def test_authoritative_absence_after_settle_fails_then_rerun_completes(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.fail_before_commit = 1.0
    policy = Policy(settle_seconds=1.0, absence_authoritative=True)
    effect = provider.effect(REF, policy=policy)
    first = ledger.run(effect)
    assert first.outcome is Outcome.FAILED
    assert first.status is Status.FAILED
    assert first.performed
    assert "ProviderError" in (first.reason or "")
    assert provider.count(REF) == 0

    provider.faults.fail_before_commit = 0.0
    second = ledger.run(effect)
    assert second.outcome is Outcome.COMPLETED
    assert second.attempt == 2
    assert provider.count(REF) == 1
    assert provider.calls("submit") == 2
    assert transitions(store, key_of(effect)) == [
        (None, Status.CLAIMED),
        (Status.CLAIMED, Status.EXECUTING),
        (Status.EXECUTING, Status.FAILED),
        (Status.FAILED, Status.CLAIMED),
        (Status.CLAIMED, Status.EXECUTING),
        (Status.EXECUTING, Status.CONFIRMED),
    ]
    fences = [e.fence for e in store.events(key_of(effect))]
    assert fences == [1, 1, 1, 2, 2, 2]


def test_absence_inside_the_settle_window_is_not_failure(
    ledger: Facade, provider: FakeProvider
) -> None:
    provider.faults.fail_before_commit = 1.0
    policy = Policy(settle_seconds=60.0, absence_authoritative=True)
    result = ledger.run(provider.effect(REF, policy=policy))
    assert result.outcome is Outcome.NEEDS_REVIEW
    assert result.status is Status.UNKNOWN


def test_non_authoritative_absence_goes_to_review(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.fail_before_commit = 1.0
    effect = provider.effect(REF, policy=Policy(settle_seconds=1.0))
    result = ledger.run(effect)
    assert result.outcome is Outcome.NEEDS_REVIEW
    assert result.status is Status.NEEDS_REVIEW
    provider.faults.fail_before_commit = 0.0
    again = ledger.run(effect)
    assert again.outcome is Outcome.NEEDS_REVIEW
    assert not again.performed
    assert provider.calls("submit") == 1


# --- before the claim --------------------------------------------------------------------


def test_unavailable_verification_under_the_claim_defers_and_gives_the_key_back(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.unavailable = 1.0
    effect = provider.effect(REF)
    result = ledger.run(effect)
    assert result.outcome is Outcome.DEFERRED
    assert "unavailable" in (result.reason or "")
    # The claim is released back to no record: as if never claimed (but its history).
    assert store.get(key_of(effect)) is None, "an unperformed claim was left behind"
    assert provider.calls("submit") == 0
    assert provider.calls("lookup") == effect.policy.verify_attempts
    assert types(store, key_of(effect)) == [
        EventType.CLAIMED,
        EventType.RELEASED,
        EventType.VERIFICATION_UNAVAILABLE,
    ]
    # The next run claims the key as new (attempt 1 again) and completes.
    provider.faults.unavailable = 0.0
    again = ledger.run(effect)
    assert again.outcome is Outcome.COMPLETED and again.attempt == 1
    assert provider.count(REF) == 1


def test_unavailable_verification_before_a_direct_claim_defers_without_claim(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.unavailable = 1.0
    effect = provider.effect(REF, policy=Policy(verify_after_claim=False))
    result = ledger.run(effect)
    assert result.outcome is Outcome.DEFERRED
    assert "unavailable" in (result.reason or "")
    assert store.get(key_of(effect)) is None
    assert provider.calls("submit") == 0
    assert types(store, key_of(effect)) == [EventType.VERIFICATION_UNAVAILABLE]


def test_verifier_exception_counts_as_unavailable(ledger: Facade, provider: FakeProvider) -> None:
    def broken() -> None:
        raise ConnectionError("no route")

    effect = replace(provider.effect(REF), verify=broken)  # type: ignore[arg-type]
    result = ledger.run(effect)
    assert result.outcome is Outcome.DEFERRED
    assert "ConnectionError" in (result.reason or "")
    assert provider.calls("submit") == 0


def test_precondition_false_fails_and_gives_the_claim_back(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = replace(provider.effect(REF), precondition=lambda: False)
    result = ledger.run(effect)
    assert result.outcome is Outcome.FAILED, "the precondition was not asked under the claim"
    assert result.reason == "precondition no longer holds"
    assert store.get(key_of(effect)) is None
    assert provider.calls("submit") == 0
    assert types(store, key_of(effect)) == [
        EventType.CLAIMED,
        EventType.RELEASED,
        EventType.PRECONDITION_FAILED,
    ]


def test_precondition_true_proceeds(ledger: Facade, provider: FakeProvider) -> None:
    asked: list[int] = []

    def holds() -> bool:
        asked.append(1)
        return True

    effect = replace(provider.effect(REF), precondition=holds)
    assert ledger.run(effect).outcome is Outcome.COMPLETED
    assert asked == [1]


def test_hard_stop_in_precondition_stops_without_claim(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    def login_wall() -> bool:
        raise HardStop("login wall")

    effect = replace(provider.effect(REF), precondition=login_wall)
    result = ledger.run(effect)
    assert result.outcome is Outcome.HARD_STOP
    assert result.reason == "login wall"
    assert store.get(key_of(effect)) is None
    assert provider.calls("submit") == 0
    assert types(store, key_of(effect)) == [
        EventType.CLAIMED,
        EventType.RELEASED,
        EventType.HARD_STOP,
    ]


def test_hard_stop_in_perform_is_never_performed_again(
    ledger: Facade, store: Store, provider: FakeProvider, clock: FrozenClock
) -> None:
    performed: list[int] = []

    def captcha() -> None:
        performed.append(1)
        raise HardStop("captcha")

    effect = replace(provider.effect(REF), perform=captcha)
    result = ledger.run(effect)
    assert result.outcome is Outcome.HARD_STOP
    assert "captcha" in (result.reason or "")
    assert result.status is Status.UNKNOWN  # it may have happened
    for _ in range(3):
        clock.advance(100.0)
        again = ledger.run(effect)
        assert not again.performed
    assert performed == [1]


def test_payload_mismatch_is_refused_before_any_claim_and_recorded(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = provider.effect(REF, payload={"amount": 10})
    ledger.run(effect)
    other = provider.effect(REF, payload={"amount": 11})
    assert other.key == effect.key
    with pytest.raises(PayloadMismatch) as info:
        ledger.run(other)
    assert info.value.key == key_of(effect)
    assert info.value.stored_hash != info.value.given_hash
    assert isinstance(info.value, UsageError)
    assert provider.calls("submit") == 1
    assert types(store, key_of(effect))[-1] is EventType.PAYLOAD_MISMATCH
    assert len(transitions(store, key_of(effect))) == 3
    record = store.get(key_of(effect))
    assert record is not None and record.status is Status.CONFIRMED


def test_ledger_write_failure_before_the_mark_never_performs(
    store: Store, clock: FrozenClock, provider: FakeProvider
) -> None:
    from actonce import Ledger, LedgerUnavailable
    from actonce.testing import FaultyStore

    faulty = FaultyStore(store)
    faulty.fail("transition", match=lambda r: r.status is Status.EXECUTING)
    ledger = Ledger(faulty, clock=clock)
    effect = provider.effect(REF)
    with pytest.raises(LedgerUnavailable):
        ledger.run(effect)
    assert provider.calls("submit") == 0
    record = store.get(key_of(effect))
    assert record is not None and record.status is Status.CLAIMED


# --- resolve -----------------------------------------------------------------------------------


def _to_review(ledger: Facade, provider: FakeProvider) -> Effect:
    provider.faults.fail_before_commit = 1.0
    effect = provider.effect(REF, policy=Policy(settle_seconds=1.0))
    assert ledger.run(effect).status is Status.NEEDS_REVIEW
    provider.faults.fail_before_commit = 0.0
    return effect


def test_resolve_happened_confirms_and_twice_answers_the_state(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = _to_review(ledger, provider)
    key = key_of(effect)
    got = ledger.resolve(key, "happened", reviewer="ana", reason="seen in the UI", result_ref="r9")
    assert got.status is Status.CONFIRMED and got.result_ref == "r9"
    n = len(store.events(key))
    again = ledger.resolve(key, "happened", reviewer="ana", reason="clicked twice")
    assert again.status is Status.CONFIRMED
    assert len(store.events(key)) == n  # the same decision twice writes nothing
    last = store.events(key)[-1]
    assert last.run_id == "review:ana"
    assert last.data["reviewer"] == "ana"
    # Resolving a confirmed effect the other way is refused.
    with pytest.raises(InvalidTransition):
        ledger.resolve(key, "not_happened", reviewer="bo", reason="?")
    with pytest.raises(InvalidTransition):
        ledger.resolve(key, "abandon", reviewer="bo", reason="?")
    assert ledger.run(effect).outcome is Outcome.SKIPPED
    assert provider.calls("submit") == 1


def test_resolve_not_happened_reopens_and_next_run_performs_once_more(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = _to_review(ledger, provider)
    key = key_of(effect)
    got = ledger.resolve(key, "not_happened", reviewer="ana", reason="nothing in the account")
    assert got.status is Status.FAILED
    result = ledger.run(effect)
    assert result.outcome is Outcome.COMPLETED
    assert result.attempt == 2
    assert provider.calls("submit") == 2
    assert provider.count(REF) == 1
    assert ledger.run(effect).outcome is Outcome.SKIPPED
    assert provider.calls("submit") == 2


def test_resolve_abandon_is_terminal(ledger: Facade, store: Store, provider: FakeProvider) -> None:
    effect = _to_review(ledger, provider)
    key = key_of(effect)
    got = ledger.resolve(key, "abandon", reviewer="ana", reason="customer cancelled")
    assert got.status is Status.ABANDONED
    assert ledger.resolve(key, "abandon", reviewer="ana", reason="again").status is Status.ABANDONED
    result = ledger.run(effect)
    assert result.outcome is Outcome.ABANDONED
    assert not result.performed
    assert provider.calls("submit") == 1
    with pytest.raises(InvalidTransition):
        ledger.resolve(key, "happened", reviewer="ana", reason="changed my mind")


def test_resolve_an_unknown_effect(ledger: Facade, provider: FakeProvider) -> None:
    provider.faults.visibility_delay = 100.0
    effect = provider.effect(REF)
    assert ledger.run(effect).status is Status.UNKNOWN
    got = ledger.resolve(key_of(effect), "happened", reviewer="ana", reason="seen")
    assert got.status is Status.CONFIRMED


def test_resolve_needs_reviewer_and_reason(ledger: Facade, provider: FakeProvider) -> None:
    effect = _to_review(ledger, provider)
    with pytest.raises(UsageError):
        ledger.resolve(key_of(effect), "happened", reviewer=" ", reason="x")
    with pytest.raises(UsageError):
        ledger.resolve(key_of(effect), "happened", reviewer="ana", reason="")
    with pytest.raises(UsageError, match="a decision is one of"):
        ledger.resolve(key_of(effect), "maybe", reviewer="ana", reason="x")


def test_resolve_a_running_effect_is_refused(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    effect = provider.effect(REF)
    ledger.run(effect)
    with pytest.raises(InvalidTransition):
        ledger.resolve(key_of(effect), "not_happened", reviewer="ana", reason="x")


# --- lookups ----------------------------------------------------------------------------------


def test_key_prefix_lookup(ledger: Facade, provider: FakeProvider) -> None:
    effect = provider.effect(REF)
    ledger.run(effect)
    key = key_of(effect)
    assert ledger.find(key[:8]).key == key
    assert ledger.find(key).key == key
    assert [e.to_status for e in ledger.events(key[:6])][-1] is Status.CONFIRMED
    with pytest.raises(UnknownEffect):
        ledger.find(key[:3])  # too short to be a prefix
    with pytest.raises(UnknownEffect):
        ledger.find("ffffffffffff" if not key.startswith("f") else "000000000000")
    assert ledger.get("nope") is None


def test_ambiguous_prefix_is_refused(ledger: Facade, provider: FakeProvider) -> None:
    for suffix in ("1", "2"):
        effect = replace(provider.effect(REF + suffix), key="abcdef-" + suffix)
        ledger.run(effect)
    with pytest.raises(UnknownEffect, match="ambiguous"):
        ledger.find("abcdef")
    assert ledger.find("abcdef-2").key == "abcdef-2"
    assert ledger.counts() == {Status.CONFIRMED: 2}
    assert [r.key for r in ledger.list("confirmed")] == ["abcdef-1", "abcdef-2"]
    assert ledger.list(Status.FAILED) == []


def test_list_pages_by_keyset_and_counts_chosen_statuses(
    ledger: Facade, provider: FakeProvider, clock: FrozenClock
) -> None:
    for i in range(5):
        # Even ones fail before the provider commits: absence that proves nothing.
        provider.faults.fail_before_commit = 1.0 if i % 2 == 0 else 0.0
        effect = provider.effect(f"{REF}-{i}", policy=Policy(settle_seconds=1.0))
        ledger.run(replace(effect, key=f"page-{i}"))
        clock.advance(10.0)
    statuses = [r.status for r in ledger.list()]
    assert set(statuses) == {Status.NEEDS_REVIEW, Status.CONFIRMED}
    review = ["page-0", "page-2", "page-4"]
    first = ledger.list(["needs_review", Status.UNKNOWN], limit=2)
    assert [r.key for r in first] == review[:2]
    rest = ledger.list(["needs_review", Status.UNKNOWN], limit=2, after=first[-1])
    assert [r.key for r in rest] == review[2:]
    same = ledger.list(Status.NEEDS_REVIEW, after=(first[-1].updated_at, first[-1].key))
    assert [r.key for r in same] == review[2:]
    assert ledger.counts(["needs_review", "unknown"]) == {Status.NEEDS_REVIEW: 3, Status.UNKNOWN: 0}
    assert ledger.counts() == {Status.NEEDS_REVIEW: 3, Status.CONFIRMED: 2}
    for bad in ({"after": (1.0,)}, {"after": ("1", "k")}, {"after": (float("nan"), "k")}):
        with pytest.raises(UsageError):
            ledger.list(**bad)
    with pytest.raises(UsageError):
        ledger.list([])
    with pytest.raises(UsageError):
        ledger.counts(["confirmed", "nope"])


# --- secrets at rest (SQLite only: read the raw file) ----------------------------------------


def test_secrets_never_reach_the_sqlite_file(
    tmp_path: Path, clock: FrozenClock, provider: FakeProvider
) -> None:
    from actonce import Ledger

    secrets = {
        "password": "hunter2-PLAINTEXT-1",
        "token": "tok-PLAINTEXT-2",
        "cookie": "sid=PLAINTEXT-3",
        "card_number": "4111111111111111",
        "nested": {"deep": [{"access_token": "PLAINTEXT-4"}], "Cookie": "PLAINTEXT-5"},
        "pin_code": "PLAINTEXT-6",  # declared by the effect
        "billing": {"iban": "PLAINTEXT-7"},  # declared by dotted path
    }
    path = tmp_path / "secret.db"
    ledger = Ledger(SQLiteStore(str(path), create=True), clock=clock)
    base = provider.effect(REF, payload=secrets)
    effect = replace(base, secret_fields=("pin_code", "billing.iban"))
    assert ledger.run(effect).outcome is Outcome.COMPLETED
    # A mismatching payload and a review path write more rows and events.
    # (Secret values take no part in a payload's identity: the change that
    # makes it mismatch is a plain field; the new password must not leak.)
    changed = replace(effect, payload={**secrets, "password": "PLAINTEXT-8", "note": "other"})
    with pytest.raises(PayloadMismatch):
        ledger.run(changed)
    record = ledger.get(key_of(effect))
    assert record is not None and '"$secret":"redacted"' in record.payload
    ledger.close()

    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("secret.db"))
    assert len(raw) > 0
    for needle in ("PLAINTEXT", "hunter2", "4111111111111111"):
        assert needle.encode() not in raw, needle
    # Equal secrets give equal fingerprints: a re-run with the same payload is the same effect.
    again = Ledger(SQLiteStore(str(path), create=True), clock=clock)
    assert again.run(effect).outcome is Outcome.SKIPPED
    again.close()
