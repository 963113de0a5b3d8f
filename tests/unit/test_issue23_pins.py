"""Pins for behaviours an independent planting run found unpinned (issue 23, item 1).

Each test states one behaviour; each has a plant in ``tests/mutants/plants.py``
that it must catch (``python tests/mutants/check_plants.py --cheap``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from actonce import (
    AsyncLedger,
    Confirmed,
    Effect,
    Event,
    EventType,
    InvalidTransition,
    Ledger,
    LedgerUnavailable,
    MemoryStore,
    Outcome,
    RunResult,
    Unavailable,
    effect_key,
)
from actonce._rules.decision import Observation, observe
from actonce._rules.model import Absent, EffectRecord, Policy, Status
from actonce._rules.operations import Next, OperationState, Role, StepState, assess
from actonce._rules.operator import ItemClass, classify
from actonce._rules.receipts import StepView, build_receipt
from actonce._rules.secrets import REDACTED, scrub_text
from actonce._run import points
from actonce._run.reconcile import triage
from actonce.chaos._report import ChaosReport
from actonce.console._guard import safe_next
from actonce.console._sessions import MAX_SECONDS, Sessions
from actonce.testing import FrozenClock

NOW = 1000.0


def test_a_non_owner_never_counts_the_owners_window_from_its_own_perform() -> None:
    # The record is executing at fence 3; we held fence 2 and performed 5 s ago.
    # Our own perform says nothing about when the owner's request may leave.
    record = EffectRecord(
        key="k",
        kind="fake",
        status=Status.EXECUTING,
        fence=3,
        owner="other",
        lease_expires_at=NOW + 10,
        payload="{}",
        payload_hash="h",
        executing_at=NOW - 1,
    )
    seen = observe(
        Absent(),
        record,
        policy=Policy(settle_seconds=2, absence_authoritative=True),
        now=NOW,
        my_fence=2,
        since_perform=5,
    )
    assert seen is Observation.ABSENT_UNSETTLED, "a non-owner counted the window from its perform"


def test_scrub_text_removes_a_jwt_standing_alone() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    scrubbed = scrub_text(jwt)
    assert jwt not in scrubbed, "a JWT alone in a text was kept"
    assert REDACTED in scrubbed
    assert jwt not in scrub_text(f"saw {jwt} in the page")


def test_safe_next_refuses_a_protocol_relative_target() -> None:
    assert safe_next("//evil.example/x") == "/", "safe_next let an off-site target through"
    assert safe_next("/\\evil.example") == "/"
    assert safe_next("/queue?x=1") == "/queue?x=1"


def test_happened_about_attempt_1_is_refused_on_a_record_confirmed_at_a_newer_fence() -> None:
    clock = FrozenClock()
    store = MemoryStore()
    ledger = Ledger(store, clock=clock)
    policy = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0)
    verdicts: list[object] = [Absent()]
    effect = Effect(
        key=effect_key(tenant="t", actor="a", kind="order", object="O-9", operation="create"),
        kind="order",
        payload={"ref": "O-9"},
        perform=lambda: None,
        verify=lambda: verdicts.pop(0) if verdicts else Unavailable("the lookup is down"),
        policy=replace(policy, verify_after_claim=False),
    )
    ledger.run(effect)
    record = ledger.get(effect.key.value)
    assert record is not None and record.status is Status.UNKNOWN and record.fence == 1
    # Attempt 2 landed and was confirmed meanwhile.
    confirmed = replace(record, status=Status.CONFIRMED, fence=2, updated_at=clock.now())
    event = Event(key=record.key, type=EventType.CONFIRMED, at=clock.now(), fence=2, run_id="r2",
                  from_status=Status.UNKNOWN, to_status=Status.CONFIRMED, message="attempt 2")  # fmt: skip
    assert store.transition((Status.UNKNOWN, 1), confirmed, event) is not None
    try:
        ledger.resolve(record.key, "happened", reviewer="ana", reason="seen", attempt=1)
    except InvalidTransition as exc:
        assert "attempt 2 now, not the attempt 1" in str(exc)
    else:
        raise AssertionError("a decision about attempt 1 was answered on attempt 2's record")


def test_a_console_session_used_every_hour_still_ends_at_its_maximum_lifetime() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    session = sessions.start("ana")
    while now[0] + 3600.0 < MAX_SECONDS:
        now[0] += 3600.0
        assert sessions.get(session.id) is session  # never idle for long
    now[0] = MAX_SECONDS
    assert sessions.get(session.id) is None, "a session used every hour outlived MAX_SECONDS"


def test_a_run_that_declined_then_performed_on_its_next_claim_reports_completed() -> None:
    # Attempt 1's lease runs out between its executing mark and its perform (the
    # run declines: nothing performed); its mark "failed" loses to another
    # worker's; the key is free, the run claims it again and performs.
    clock = FrozenClock()
    store = MemoryStore()
    ledger = Ledger(store, clock=clock)
    made: list[str] = []
    passes: list[str] = []

    def racing_worker(point: str) -> None:
        passes.append(point)
        if point == "after_mark_executing" and passes.count(point) == 1:
            clock.advance(61.0)  # past attempt 1's lease: its perform never starts
        if point == "before_record" and passes.count(point) == 1:
            record = store.get(effect.key.value)
            assert record is not None and record.status is Status.EXECUTING
            failed = replace(record, status=Status.FAILED, updated_at=clock.now())
            event = Event(key=record.key, type=EventType.FAILED, at=clock.now(), fence=1,
                          run_id="other", from_status=Status.EXECUTING, to_status=Status.FAILED,
                          message="another worker marked it first")  # fmt: skip
            assert store.transition((Status.EXECUTING, 1), failed, event) is not None

    effect = Effect(
        key=effect_key(tenant="t", actor="a", kind="order", object="O-7", operation="create"),
        kind="order",
        payload={"ref": "O-7"},
        perform=lambda: made.append("O-7"),
        verify=lambda: Confirmed("order:O-7") if made else Absent(),
        policy=Policy(settle_seconds=0.0, lease_seconds=60.0, verify_backoff=0.0),
    )
    previous = points.observe(racing_worker)
    try:
        result = ledger.run(effect)
    finally:
        points.observe(previous)
    assert made == ["O-7"] and result.attempt == 2
    assert result.outcome is Outcome.COMPLETED, (
        f"a run that declined once reported {result.outcome.value} ({result.reason}) for the "
        "perform of its next claim"
    )
    assert result.status is Status.CONFIRMED


# --- the heartbeat during a perform: a takeover is re-read, an unavailable ledger is not one ---

#: A lease whose heartbeat (a third of it, in real time) beats while the perform waits for
#: it; ledger time stays frozen unless the test moves it.
BEATING = Policy(lease_seconds=0.3, settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0)


class Beaten(MemoryStore):
    """A store that says what each lease extension of the owner's heartbeat answered."""

    def __init__(self, unavailable: int = 0) -> None:
        super().__init__()
        self.unavailable = unavailable  # the first n extensions raise LedgerUnavailable
        self.answers: list[str] = []
        self.refused = threading.Event()
        self.extended = threading.Event()

    def extend(self, key: str, expect: tuple[Status, int], lease_expires_at: float) -> bool:
        if self.unavailable:
            self.unavailable -= 1
            self.answers.append("unavailable")
            raise LedgerUnavailable("the ledger is restarting")
        ok = super().extend(key, expect, lease_expires_at)
        self.answers.append("extended" if ok else "refused")
        (self.extended if ok else self.refused).set()
        return ok


def _beaten_effect(driver: str, ref: str, perform: Callable[[], None], looks: list[str]) -> Effect:
    async def aperform() -> None:
        await asyncio.to_thread(perform)  # the event loop stays free for the beat task

    return Effect(
        key=effect_key(tenant="t", actor="a", kind="order", object=ref, operation="create"),
        kind="order",
        payload={"ref": ref},
        perform=perform if driver == "sync" else aperform,
        verify=lambda: looks.append("look") or Absent(),
        policy=BEATING,
    )


def _run(driver: str, store: MemoryStore, clock: FrozenClock, effect: Effect) -> RunResult:
    if driver == "sync":
        return Ledger(store, clock=clock).run(effect)  # closing it would close the store

    async def go() -> RunResult:
        return await AsyncLedger(store, clock=clock).run(effect)

    return asyncio.run(go())


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_perform_overtaken_meanwhile_rereads_the_record_before_any_verdict(
    driver: str,
) -> None:
    # Another worker takes the row over while the perform runs; the owner's heartbeat
    # finds it changed. The perform then returns normally: the owner must look the
    # record up again (and raise the alarm) before judging anything from its stale copy
    # (which would have it verify as if the row were still its own).
    clock = FrozenClock()
    store = Beaten()
    looks: list[str] = []

    def taken_over_meanwhile() -> None:
        record = store.get(key)
        assert record is not None and record.status is Status.EXECUTING
        failed = replace(record, status=Status.FAILED, updated_at=clock.now())
        event = Event(key=key, type=EventType.FAILED, at=clock.now(), fence=record.fence,
                      run_id="other", from_status=Status.EXECUTING, to_status=Status.FAILED,
                      message="another worker's reconcile")  # fmt: skip
        assert store.transition((Status.EXECUTING, record.fence), failed, event) is not None
        before.extend(looks)
        assert store.refused.wait(timeout=30), "the heartbeat never beat"

    before: list[str] = []
    effect = _beaten_effect(driver, "O-8", taken_over_meanwhile, looks)
    key = effect.key.value
    result = _run(driver, store, clock, effect)
    assert result.performed and result.outcome is Outcome.NEEDS_REVIEW, result
    assert looks == before, (
        "the owner verified from its stale record after the heartbeat found it overtaken"
    )
    [alarm] = [e for e in store.events(key) if "alarm" in (e.data or {})]
    assert alarm.data["perform"]["overtaken"] is True


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_heartbeat_whose_extension_finds_the_ledger_unavailable_is_not_overtaken(
    driver: str,
) -> None:
    # The first lease extension raises LedgerUnavailable: the row is still the owner's,
    # so the next beat tries again, and the perform is not reported overtaken.
    clock = FrozenClock()
    store = Beaten(unavailable=1)
    made: list[str] = []
    beaten: list[bool] = []

    def perform() -> None:
        beaten.append(store.extended.wait(timeout=10))  # the beat after the unavailable one
        made.append("O-9")

    effect = _beaten_effect(driver, "O-9", perform, [])
    effect = replace(effect, verify=lambda: Confirmed("order:O-9") if made else Absent())
    result = _run(driver, store, clock, effect)
    assert beaten == [True], f"the heartbeat stopped after an unavailable ledger: {store.answers}"
    assert store.answers[:2] == ["unavailable", "extended"]
    assert result.outcome is Outcome.COMPLETED, result
    performed = [
        e.data["perform"] for e in store.events(effect.key.value) if "perform" in (e.data or {})
    ]
    assert performed and not any(p.get("overtaken") for p in performed), (
        "an unavailable ledger during a lease extension marked the perform overtaken"
    )


def test_reconcile_triage_counts_an_expired_executing_mark_live_on_an_untrusted_clock() -> None:
    # Ledger time stepped: an executing mark whose lease looks expired may belong to an
    # owner still performing. Triage hands reconcile no work for it and counts it live.
    record = EffectRecord(
        key="k",
        kind="fake",
        status=Status.EXECUTING,
        fence=1,
        owner="other",
        lease_expires_at=NOW - 30,
        payload="{}",
        payload_hash="h",
        executing_at=NOW - 90,
    )
    looked: list[str] = []

    def lookup(found: EffectRecord) -> None:
        looked.append(found.key)  # a kind with no verifier: reported missing

    work, live, missing = triage([record], NOW, False, lookup)
    assert (work, missing, looked) == ([], [], []) and live == 1, (
        "triage sent an executing mark to reconcile although the clock is untrusted"
    )
    work, live, missing = triage([record], NOW, True, lookup)  # a trusted clock: an orphan
    assert (live, missing) == (0, ["k"])


@pytest.mark.parametrize("unknown_first", [True, False], ids=["unknown-older", "unknown-newer"])
def test_an_operation_with_a_step_compensated_and_a_step_unknown_stops_at_the_unknown_one(
    unknown_first: bool,
) -> None:
    # The pivot failed for good: compensation undoes the verified steps, newest first.
    # One step is undone already; the other is unknown — it may not have happened, so it
    # is never undone blindly, and the operation is never "compensated" past it.
    unknown = StepState("charge", Role.COMPENSATABLE, Status.UNKNOWN, attempts=1, has_undo=True)
    undone = StepState("hold", Role.COMPENSATABLE, Status.CONFIRMED, attempts=1,
                       has_undo=True, undo=Status.CONFIRMED, undo_attempts=1)  # fmt: skip
    pivot = StepState("book", Role.PIVOT, Status.FAILED, attempts=1)
    steps = [unknown, undone, pivot] if unknown_first else [undone, unknown, pivot]
    seen = assess(steps)
    assert seen.state is not OperationState.COMPENSATED, (
        f"an operation with a step unknown was reported compensated: {seen.reason}"
    )
    assert (seen.state, seen.next) == (OperationState.NEEDS_REVIEW, Next.STOP)
    assert steps[seen.index or 0] is unknown and "charge is unknown" in seen.reason


def test_a_receipt_copies_only_the_allowlisted_fields_of_an_intent_and_its_approvals() -> None:
    canary = "tok_live_4f3a9c1e77d2"  # a field no receipt names: it must not be copied
    intent = {"intent_id": "trip", "version": 1, "kind": "booking", "provider": "Lakeside",
              "currency": "EUR", "api_token": canary}  # fmt: skip
    packet = {"packet_id": "apv-1", "status": "approved", "amount": "110", "ceiling": "120",
              "currency": "EUR", "api_token": canary}  # fmt: skip
    step = StepView("book", Role.PIVOT, "k", record=None)
    receipt = build_receipt("op-1", assess([StepState("book", Role.PIVOT)]), [step],
                            intent=intent, approval=packet, approvals=[packet], now=NOW)  # fmt: skip
    assert canary not in json.dumps(receipt.data, default=str), (
        "a receipt copied a field it does not name (api_token)"
    )
    assert canary not in receipt.text
    assert receipt.data["intent"]["provider"] == "Lakeside"  # the allowlisted ones are copied


def _chaos_report(**found: int) -> ChaosReport:
    return ChaosReport(
        backend="sqlite", workers=2, schedules=1, intents=10, seed=1, duplicates=0, lost=0,
        unresolved=0, inconsistent=0, crash_points_hit={}, kills=0, random_kills=0, zombies=0,
        pauses=0, worker_errors=0, statuses={"confirmed": 10}, rounds=1, accepted=10, wall_s=1.0,
        **found,
    )  # fmt: skip


def test_a_chaos_report_with_an_unmarked_perform_is_not_ok() -> None:
    assert _chaos_report().ok  # the control: nothing found
    assert not _chaos_report(unmarked=1).ok, (
        "a chaos report with a perform the ledger never marked was ok"
    )


def test_a_hard_stop_after_the_executing_mark_is_classified_ambiguous() -> None:
    # The stop came after the mark: the effect may have happened. Before it, nothing did.
    for status in (Status.EXECUTING, Status.UNKNOWN):
        after = RunResult(Outcome.HARD_STOP, "k", status, None, "hard stop: a CAPTCHA", 1)
        assert classify(after) == (ItemClass.AMBIGUOUS, None), (
            f"a hard stop after the mark ({status}) was classified {classify(after)[0]}"
        )
    before = RunResult(Outcome.HARD_STOP, "k", Status.FAILED, None, "hard stop: a CAPTCHA", 1)
    assert classify(before) == (ItemClass.STOPPED, None)
