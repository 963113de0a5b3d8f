"""The one way a run writes its record, and the pieces of a write.

Every change of a record goes through :func:`move` (a compare-and-set on
(status, fence) with its one event, checked against the lifecycle; the
record is reloaded when the CAS loses) or through a claim
(:mod:`actonce._run.claim`), whose fresh record is :func:`fresh_record`,
or, for this run's own unperformed claim, through :func:`release` (the row
given back as it was before the claim, or no row at all).
A failed checkpoint write before the perform aborts the run
(:func:`abort_before_perform`): nothing is performed after it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from .._rules import decision as d
from .._rules.holds import settlement
from .._rules.lifecycle import check_transition
from .._rules.model import (
    EffectRecord,
    Event,
    EventType,
    Status,
    _evolve_record,
    new_event,
    new_record,
)
from .._rules.text import world_text
from .ops import Get, Op, Point, Release, Transition
from .plan import Plan, State
from .points import CrashPoint as P

__all__ = [
    "RECORDED",
    "TYPE_OF",
    "abort_before_perform",
    "event_of",
    "fresh_record",
    "lease_back",
    "move",
    "owns_releasable",
    "release",
]

Sit, Obs, Act = d.Situation, d.Observation, d.Action
RECORDED = (P.AFTER_RECORD,)
TYPE_OF = {s: EventType(s.value) for s in Status}
evolve_record = _evolve_record


def move(
    plan: Plan,
    st: State,
    to: Status,
    reason: str | None,
    *,
    data: dict[str, Any] | None = None,
    durable: bool = False,
    before: P | None = None,
    after: tuple[P, ...] | None = None,
    **changes: Any,
) -> Generator[Op, Any, bool]:
    """Compare-and-set the current record to ``to``; reload it when the CAS loses."""
    cur = st.record
    assert cur is not None
    check_transition(cur.status, to)
    now = st.tick.now
    text = None if reason is None else world_text(reason, plan.secrets)
    settle = settlement(to) if cur.gated else None
    changes["status"], changes["reason"], changes["updated_at"] = to, text, now
    new = evolve_record(cur, changes)
    event = new_event(
        plan.key, TYPE_OF[to], now, cur.fence, plan.run_id, cur.status, to, text, data or {}, None
    )
    got = yield Transition(
        (cur.status, cur.fence),
        new,
        event,
        durable=durable,
        before=before,
        after=RECORDED if after is None else after,
        settle=settle,
        fields=tuple(changes),
    )
    if got is None:
        st.record = yield Get(plan.key)
        return False
    st.record = got
    return True


def owns_releasable(st: State) -> bool:
    """This run's own ungated claim, boundary not crossed: a release gives the row back."""
    record = st.record
    return (
        st.releasable
        and record is not None
        and record.status is Status.CLAIMED
        and record.fence == st.my_fence
        and not record.gated
    )


def release(plan: Plan, st: State, reason: str) -> Generator[Op, Any, bool]:
    """Give back this run's unperformed claim: the row as it was before it, or none.

    A claim is reversible until the ``executing`` mark: nothing was
    performed, so the key returns to the state the claim found (a new key,
    or the failed attempt it re-claimed), indistinguishable from never
    claimed but for the two events in its history. Compare-and-set on the
    claim's (status, fence); the record is reloaded when it loses.
    """
    cur = st.record
    assert cur is not None and owns_releasable(st)
    before = st.before_claim
    to = None if before is None else before.status
    check_transition(cur.status, to)
    text = world_text(reason, plan.secrets)
    event = new_event(
        plan.key, EventType.RELEASED, st.tick.now, cur.fence, plan.run_id, cur.status, to,
        text, {}, None,
    )  # fmt: skip
    yield Point(P.BEFORE_RECORD)
    won = yield Release(plan.key, (cur.status, cur.fence), before, event)
    if not won:
        st.record = yield Get(plan.key)
        return False
    yield Point(P.AFTER_RECORD)
    st.record = before
    st.releasable = False
    return True


def fresh_record(
    plan: Plan,
    now: float,
    status: Status,
    *,
    fence: int,
    result_ref: str | None = None,
    created_at: float | None = None,
    matches: int = 0,
    gated: bool = False,
    reason: str | None = None,
) -> EffectRecord:
    record: EffectRecord = new_record(
        plan.key,
        plan.kind,
        status,
        fence,
        plan.run_id,
        now + plan.policy.lease_seconds,
        plan.payload,
        plan.payload_hash,
        plan.scope,
        result_ref,
        reason,
        now if created_at is None else created_at,
        now,
        now if status is Status.EXECUTING else None,
        matches,
        gated,
    )
    return record


def event_of(
    plan: Plan,
    record: EffectRecord | None,
    type_: EventType,
    now: float,
    *,
    from_status: Status | None = None,
    to_status: Status | None = None,
    message: str | None = None,
    data: dict[str, Any] | None = None,
) -> Event:
    """An event of this run about ``record`` (attempt 0 without one), built once."""
    fence = 0 if record is None else record.fence
    event: Event = new_event(
        plan.key, type_, now, fence, plan.run_id, from_status, to_status, message,
        {} if data is None else data, None,
    )  # fmt: skip
    return event


def lease_back(st: State) -> dict[str, Any]:
    # An owner that performed and now records a verdict gives its lease back:
    # reconcile need not wait for it to run out.
    record = st.record
    if record is not None and st.performed and record.fence == st.my_fence:
        return {"lease_expires_at": min(st.tick.now, record.lease_expires_at)}
    return {}


def abort_before_perform() -> None:
    # The one rule for a failed checkpoint write: never perform. Asked of the
    # table so that the rule has one home; the caller re-raises the error.
    if d.decide(Sit.LEDGER_FAILED, Obs.NOT_CHECKED) is not Act.ABORT:  # pragma: no cover
        raise AssertionError("the decision table lost its ABORT cell")
