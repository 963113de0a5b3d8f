"""Pins for behaviours an independent planting run found unpinned (issue 23, item 1).

Each test states one behaviour; each has a plant in ``tests/mutants/plants.py``
that it must catch (``python tests/mutants/check_plants.py --cheap``).
"""

from __future__ import annotations

from dataclasses import replace

from actonce import (
    Effect,
    Event,
    EventType,
    InvalidTransition,
    Ledger,
    MemoryStore,
    Unavailable,
    effect_key,
)
from actonce._rules.decision import Observation, observe
from actonce._rules.model import Absent, EffectRecord, Policy, Status
from actonce._rules.secrets import REDACTED, scrub_text
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
