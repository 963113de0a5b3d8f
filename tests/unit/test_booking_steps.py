"""The booking steps' provider retry, without a browser (a scripted session).

A keyed step resends only a submit the provider answered with a server
error, with the same key; once a submit has left, a later attempt that stops
before its click proves nothing (found by the booking demo: the first submit
committed behind its 500, the resend found the offer sold out).
"""

from __future__ import annotations

from typing import Any

from actonce import Intent, Ledger, NotPerformed, Operation, OperationState, Status
from actonce.browser import OutcomeUnknown, ProviderBusy, Trip, booking_steps
from actonce.testing import FrozenClock, MemoryStore

TRIP = Trip("trip@v1", "harbor-double", "2030-05-01", 2, 1, 25000, "ana@example.com")


class Bound:
    def __init__(self, session: Session, kind: str) -> None:
        self.session, self.kind = session, kind

    def perform(self) -> dict[str, Any]:
        script = self.session.script.get(self.kind, [])
        step = script.pop(0) if script else "ok"
        self.session.performs.append(self.kind)
        details = {"wire": [{"outcome": 303}], "sent": 1, "refused": 0}
        if step in ("500", "500c"):  # a server error (500c: after the commit)
            details["wire"] = [{"outcome": 500}]
            if step == "500c":
                self.session.made[self.kind] = self.session.made.get(self.kind, 0) + 1
            exc = OutcomeUnknown("no confirmation")
            exc.__cause__ = ProviderBusy("server error")
            exc.details = details  # type: ignore[attr-defined]
            raise exc
        if step == "before-click":
            err = NotPerformed("no hold form (sold out?)")
            err.details = {"wire": [], "sent": 0, "refused": 0}  # type: ignore[attr-defined]
            raise err
        self.session.made[self.kind] = self.session.made.get(self.kind, 0) + 1
        return details

    def verify(self) -> Any:
        from actonce import Absent, Confirmed

        if self.session.made.get(self.kind):
            return Confirmed(f"/{self.kind}/1")
        return Absent()

    def evidence(self, label: str) -> None:
        return None


class Session:
    username = "ana"

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.performs: list[str] = []
        self.made: dict[str, int] = {}

    def effect(self, site: Any) -> Bound:
        return Bound(self, site.kind)


def _ledger() -> tuple[Ledger, Intent]:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    return ledger, ledger.intents.put(Intent("trip", "booking", user="ana"))


def _run(session: Session, **options: Any) -> tuple[Operation, Ledger]:
    ledger, intent = _ledger()
    steps = booking_steps(session, TRIP, intent, tenant="t", retry_backoff=0, **options)  # type: ignore[arg-type]
    return Operation(ledger, "op", steps), ledger


def test_a_5xx_is_resent_with_the_same_step_and_nothing_else_is() -> None:
    session = Session({"pay": ["500", "500"]})
    op, _ = _run(session)
    assert op.run().state is OperationState.COMPLETE
    assert session.performs.count("pay") == 3 and session.made["pay"] == 1


def test_a_resend_that_stops_before_its_click_is_unknown_not_failed() -> None:
    # The first submit commits behind its 500; the resend finds the offer sold out.
    session = Session({"hold": ["500c", "before-click"]})
    op, ledger = _run(session)
    result = op.run()
    hold = ledger.get(op.plan.steps[0].plan.key)
    assert hold is not None and hold.status is Status.CONFIRMED  # verified, never "failed"
    events = [e.type.value for e in ledger.events(hold.key)]
    assert "failed" not in events
    assert result.state is OperationState.COMPLETE


def test_without_retries_a_5xx_is_an_unknown_outcome() -> None:
    session = Session({"book": ["500"]})
    op, _ = _run(session, provider_retries=1)
    op.run()
    assert session.performs.count("book") == 1


def test_the_keyed_steps_give_the_provider_their_own_effect_key() -> None:
    # Pin (issue 23): the book step's site effect once lost its provider key.
    _, intent = _ledger()
    steps = booking_steps(Session({}), TRIP, intent, tenant="t")  # type: ignore[arg-type]
    for step in steps[:3]:
        key = step.effect.key
        assert step.effect.payload["provider_key"] == getattr(key, "value", key), (
            f"{step.name}: a resend is safe only if the provider sees the step's own key"
        )


def test_booking_operation_runs_the_trips_four_steps_under_the_intent_version() -> None:
    # Pin (issue 23): booking_operation once passed the intent where the trip goes.
    from actonce.browser import booking_operation

    ledger, intent = _ledger()
    op = booking_operation(ledger, Session({}), TRIP, intent, tenant="t", retry_backoff=0)  # type: ignore[arg-type]
    assert op.op_id == f"booking:{intent.ref}"
    assert [s.name for s in op.plan.steps] == ["hold", "pay", "book", "notify"]
    assert op.run().state is OperationState.COMPLETE, "the four steps should all go through"
