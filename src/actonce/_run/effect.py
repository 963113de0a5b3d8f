"""The run protocol, written once as a generator of operations.

Theory of operation. ``run_effect`` and ``reconcile_effect`` never do I/O.
They *yield* what they need (a store primitive, a verification, the
precondition, the perform, a pause, the time, a crash point) and receive the
answer; a sync driver and an async driver in ``_ledger`` execute the
operations. Every choice between steps is asked of the decision table
(``_decision.decide``); every write goes through :func:`_move`, which checks
the lifecycle and compare-and-sets on (status, fence) with its event.

The order for one effect (seed 001, "Write the Claim Before the Click"):
load → verify → precondition → atomic claim → verify again → durable
``executing`` mark → perform once → verify with backoff → confirm, fail,
unknown or review. A ledger error before the mark aborts without performing.
"""

from __future__ import annotations

import enum
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any

from . import _decision as d
from ._errors import HardStop, LedgerError, NotPerformed, PayloadMismatch
from ._lifecycle import check_transition
from ._model import (
    Confirmed,
    EffectRecord,
    Event,
    EventType,
    Outcome,
    Policy,
    RunResult,
    Status,
    Unavailable,
    Verdict,
)

__all__ = [
    "NOW",
    "PERFORM",
    "PRECONDITION",
    "VERIFY",
    "Call",
    "Evidence",
    "Mode",
    "Op",
    "Plan",
    "Point",
    "Sleep",
    "needs_reconcile",
    "reconcile_effect",
    "run_effect",
]


# --- operations ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """Call store primitive ``method`` with ``args``; answer: its return value."""

    method: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Sleep:
    """Pause (between two read-only verification attempts)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Evidence:
    """Capture evidence under ``label``; answer: a reference or ``None``."""

    label: str


@dataclass(frozen=True, slots=True)
class Point:
    """Pass a named crash point."""

    name: str


class _Simple(enum.Enum):
    NOW = "now"  # answer: the time
    VERIFY = "verify"  # answer: a Verdict (exceptions become Unavailable)
    PRECONDITION = "precondition"  # answer: bool (HardStop is thrown back in)
    PERFORM = "perform"  # answer: the exception perform raised, or None


NOW, VERIFY, PRECONDITION, PERFORM = (
    _Simple.NOW,
    _Simple.VERIFY,
    _Simple.PRECONDITION,
    _Simple.PERFORM,
)
Op = Call | Sleep | Evidence | Point | _Simple
Steps = Generator[Op, Any, RunResult]


class Mode(enum.Enum):
    RUN = "run"
    RECONCILE = "reconcile"


@dataclass(frozen=True, slots=True)
class Plan:
    """What the protocol knows of one effect, prepared by the ledger."""

    key: str
    kind: str
    payload: str
    payload_hash: str
    scope: str
    policy: Policy
    run_id: str
    has_precondition: bool = False
    has_evidence: bool = False


_MAX_STEPS = 40
_RECONCILABLE = frozenset({d.Situation.STALE_CLAIM, d.Situation.ORPHANED, d.Situation.UNKNOWN})


# --- entry points ---------------------------------------------------------------


def run_effect(plan: Plan) -> Steps:
    """Run one effect: at most one perform, or an explicit unknown state."""
    now = yield NOW
    record: EffectRecord | None = yield Call("get", (plan.key,))
    if record is not None and record.payload_hash != plan.payload_hash:
        yield Call(
            "append_event",
            (
                _event(
                    plan,
                    record,
                    EventType.PAYLOAD_MISMATCH,
                    now,
                    message=f"refused payload {plan.payload_hash}",
                ),
            ),
        )
        raise PayloadMismatch(plan.key, record.payload_hash, plan.payload_hash)
    return (yield from _loop(plan, record, now, Mode.RUN))


def needs_reconcile(record: EffectRecord, now: float) -> bool:
    """True for a stale claim, an orphaned executing mark or an unknown outcome."""
    return d.situation_of(record, now=now, my_fence=None) in _RECONCILABLE


def reconcile_effect(plan: Plan, record: EffectRecord) -> Steps:
    """Resolve one unfinished effect by verification; never performs or claims."""
    now = yield NOW
    if not needs_reconcile(record, now):
        return _result(Outcome.DEFERRED, record, "owner's lease is live; left alone")
    return (yield from _loop(plan, record, now, Mode.RECONCILE))


# --- the loop ---------------------------------------------------------------------


@dataclass
class _State:
    record: EffectRecord | None
    now: float
    verdict: Verdict | None = None
    my_fence: int | None = None
    performed: bool = False
    perform_error: str | None = None
    hard_stop: str | None = None
    declined: bool = False
    precondition_checked: bool = False


def _loop(plan: Plan, record: EffectRecord | None, now: float, mode: Mode) -> Steps:
    st = _State(record, now)
    for _ in range(_MAX_STEPS):
        sit = d.situation_of(st.record, now=st.now, my_fence=st.my_fence, declined=st.declined)
        obs = d.observe(st.verdict, st.record, policy=plan.policy, now=st.now, my_fence=st.my_fence)
        act = d.decide(sit, obs)

        if act is d.Action.VERIFY:
            yield from _verify(plan, st, sit)
            continue
        if act is d.Action.FINISHED:
            assert st.record is not None
            done = st.record.status is Status.CONFIRMED
            outcome = Outcome.SKIPPED if done else Outcome.ABANDONED
            if done and st.performed:
                outcome = Outcome.COMPLETED
            return _result(outcome, st.record, None if done else st.record.reason, st)
        if act is d.Action.HOLD:
            reason = (st.record.reason if st.record else None) or "outcome unresolved"
            return _result(Outcome.NEEDS_REVIEW, st.record, reason, st)
        if act is d.Action.DEFER:
            return (yield from _defer(plan, st, sit, obs))
        if act is d.Action.RECORD_CONFIRMED:
            result = yield from _record_confirmed(plan, st)
            if result is not None:
                return result
            continue
        if act is d.Action.CLAIM:
            if mode is Mode.RECONCILE:
                return _result(Outcome.FAILED, st.record, "released: nothing was performed", st)
            if st.hard_stop:  # invariant 9: no further mutation in this run
                return _result(Outcome.HARD_STOP, st.record, f"hard stop: {st.hard_stop}", st)
            if st.performed:  # invariant 3: a perform is never retried within a run
                reason = f"failed after this run's perform ({st.perform_error}); replan"
                return _result(Outcome.FAILED, st.record, reason, st)
            result = yield from _claim(plan, st, obs)
            if result is not None:
                return result
            continue
        if act is d.Action.EXECUTE:
            yield from _execute(plan, st)
            continue
        if act in _MOVES:
            result = yield from _apply_move(plan, st, act, sit, mode)
            if result is not None:
                return result
            continue
        raise AssertionError(f"unhandled action {act}")  # pragma: no cover
    return _result(Outcome.DEFERRED, st.record, "the record kept changing; try again", st)


_MOVES = {
    d.Action.RELEASE: Status.FAILED,
    d.Action.MARK_FAILED: Status.FAILED,
    d.Action.MARK_UNKNOWN: Status.UNKNOWN,
    d.Action.NEEDS_REVIEW: Status.NEEDS_REVIEW,
}


def _verify(plan: Plan, st: _State, sit: d.Situation) -> Generator[Op, Any, None]:
    """One verification round: read-only, retried with backoff while worth it."""
    attempt = 1
    while True:
        st.verdict = yield VERIFY
        st.now = yield NOW
        obs = d.observe(st.verdict, st.record, policy=plan.policy, now=st.now, my_fence=st.my_fence)
        if (sit, obs) not in d.RETRYABLE or attempt >= plan.policy.verify_attempts:
            return
        yield Sleep(plan.policy.backoff(attempt))
        attempt += 1


def _defer(plan: Plan, st: _State, sit: d.Situation, obs: d.Observation) -> Steps:
    if isinstance(st.verdict, Unavailable):
        yield Call(
            "append_event",
            (
                _event(
                    plan,
                    st.record,
                    EventType.VERIFICATION_UNAVAILABLE,
                    st.now,
                    message=st.verdict.reason,
                ),
            ),
        )
        reason = f"verification unavailable: {st.verdict.reason}"
    else:
        reason = "another worker owns this effect"
    return _result(Outcome.DEFERRED, st.record, reason, st)


def _record_confirmed(plan: Plan, st: _State) -> Generator[Op, Any, RunResult | None]:
    assert isinstance(st.verdict, Confirmed)
    ref = st.verdict.result_ref
    yield Point("before_record")
    if st.record is None:
        new = _fresh(plan, st.now, Status.CONFIRMED, fence=1, result_ref=ref)
        claim = yield Call(
            "claim",
            (
                new,
                None,
                _event(
                    plan,
                    new,
                    EventType.CONFIRMED,
                    st.now,
                    to_status=Status.CONFIRMED,
                    message="result existed before any claim",
                    data={"result_ref": ref},
                ),
            ),
        )
        st.record = claim.record
        if not claim.acquired:
            return None
        yield Point("after_record")
        return _result(Outcome.SKIPPED, st.record, None, st)
    moved = yield from _move(plan, st, Status.CONFIRMED, None, result_ref=ref)
    if not moved:
        return None
    yield Point("after_record")
    outcome = Outcome.COMPLETED if st.performed else Outcome.SKIPPED
    return _result(outcome, st.record, None, st)


def _claim(plan: Plan, st: _State, obs: d.Observation) -> Generator[Op, Any, RunResult | None]:
    if plan.has_precondition and not st.precondition_checked:
        try:
            ok = yield PRECONDITION
        except HardStop as exc:
            return (yield from _hard_stop_before(plan, st, exc.reason))
        st.precondition_checked = True
        if not ok:
            assert d.decide(d.Situation.PRECONDITION_FALSE, obs) is d.Action.STOP
            yield Call(
                "append_event",
                (
                    _event(
                        plan,
                        st.record,
                        EventType.PRECONDITION_FAILED,
                        st.now,
                        message="precondition no longer holds",
                    ),
                ),
            )
            return _result(Outcome.FAILED, st.record, "precondition no longer holds", st)
    prev = st.record
    direct = not plan.policy.verify_after_claim
    status = Status.EXECUTING if direct else Status.CLAIMED
    fence = 1 if prev is None else prev.fence + 1
    check_transition(None if prev is None else prev.status, status)
    expect = None if prev is None else (prev.status, prev.fence)
    yield Point("before_claim")
    # The claim (for a direct claim, the executing mark itself) carries the
    # time of its write. A time read before a pause (a slow precondition, a
    # stopped process) would give it a lease that has already expired and a
    # settle window that has already passed: others would take the fresh mark
    # for an orphan, and absence for proof that nothing happened.
    st.now = yield NOW
    new = _fresh(plan, st.now, status, fence=fence, created_at=prev.created_at if prev else None)
    event = _event(
        plan,
        new,
        EventType(status.value),
        st.now,
        from_status=None if prev is None else prev.status,
        to_status=status,
        message=f"attempt {fence}",
    )
    try:
        claim = yield Call("claim", (new, expect, event))
    except LedgerError:
        _abort_before_perform()
        raise
    st.record = claim.record
    st.verdict = None
    if not claim.acquired:
        yield Call(
            "append_event",
            (
                _event(
                    plan,
                    claim.record,
                    EventType.CLAIM_REJECTED,
                    st.now,
                    message=f"held by {claim.record.owner}",
                ),
            ),
        )
        return None
    st.my_fence = fence
    yield Point("after_claim")
    if direct:
        yield Point("after_mark_executing")
        yield from _perform(plan, st)
    return None


def _execute(plan: Plan, st: _State) -> Generator[Op, Any, None]:
    assert st.record is not None
    yield Point("before_mark_executing")
    st.now = yield NOW  # the mark carries the time of its write (see _claim)
    try:
        moved = yield from _move(
            plan,
            st,
            Status.EXECUTING,
            None,
            executing_at=st.now,
            lease_expires_at=st.now + plan.policy.lease_seconds,
        )
    except LedgerError:
        _abort_before_perform()
        raise
    if not moved:
        st.verdict = None
        return
    yield Point("after_mark_executing")
    yield from _perform(plan, st)


def _perform(plan: Plan, st: _State) -> Generator[Op, Any, None]:
    # An owner never starts a perform once its lease has expired: past it,
    # reconcile may already have proven absence and re-opened the key (the
    # settle window of non-owners runs from the lease's end, see observe()).
    assert st.record is not None
    # What the perform did belongs to this attempt: a run that declined once,
    # lost the race to mark it failed and claimed the key again must not carry
    # "declined" over to a perform that did run.
    st.declined = False
    st.perform_error = None
    st.now = yield NOW
    if st.now >= st.record.lease_expires_at:
        st.declined = True
        st.perform_error = "the lease expired before perform started"
        st.verdict = None
        return
    error = yield PERFORM
    st.performed = True
    yield Point("after_perform")
    if error is not None:
        st.perform_error = f"{type(error).__name__}: {error}"
        if isinstance(error, HardStop):
            st.hard_stop = error.reason
        st.declined = isinstance(error, NotPerformed)
    st.verdict = None
    st.now = yield NOW


def _apply_move(
    plan: Plan, st: _State, act: d.Action, sit: d.Situation, mode: Mode
) -> Generator[Op, Any, RunResult | None]:
    to = _MOVES[act]
    reason = _reason(act, st)
    data: dict[str, Any] = {}
    if st.performed and plan.has_evidence and (to is not Status.FAILED or st.declined):
        ref = yield Evidence(f"{to.value}")
        if ref:
            data["evidence"] = ref
    yield Point("before_record")
    lease: dict[str, float] = {}
    if st.record is not None and _mine(st) and st.performed:
        lease["lease_expires_at"] = min(st.now, st.record.lease_expires_at)
    moved = yield from _move(plan, st, to, reason, data=data, **lease)
    if not moved:
        return None
    yield Point("after_record")
    if act is d.Action.RELEASE:
        if sit is d.Situation.STALE_CLAIM and mode is Mode.RUN:
            return None  # the key is free again: claim it under the next fence
        if mode is Mode.RECONCILE:
            return _result(Outcome.FAILED, st.record, reason, st)
        return _result(Outcome.DEFERRED, st.record, reason, st)
    if act is d.Action.MARK_FAILED and not st.hard_stop:
        return _result(Outcome.FAILED, st.record, reason, st)
    outcome = Outcome.HARD_STOP if st.hard_stop else Outcome.NEEDS_REVIEW
    return _result(outcome, st.record, reason, st)


def _mine(st: _State) -> bool:
    return st.record is not None and st.my_fence is not None and st.record.fence == st.my_fence


def _reason(act: d.Action, st: _State) -> str:
    verdict = st.verdict
    if act is d.Action.MARK_FAILED and st.declined:
        return f"perform stopped before the boundary, nothing was performed: {st.perform_error}"
    why = {
        d.Action.RELEASE: "released before perform: nothing was performed",
        d.Action.MARK_FAILED: "verified absent after the settle window",
        d.Action.MARK_UNKNOWN: "outcome not proven yet",
        d.Action.NEEDS_REVIEW: "still absent after the settle window; absence proves nothing here",
    }[act]
    if isinstance(verdict, Unavailable):
        why += f" (verification unavailable: {verdict.reason})"
    if st.hard_stop:
        why = f"hard stop: {st.hard_stop}; {why}"
    elif st.perform_error:
        why = f"perform raised {st.perform_error}; {why}"
    return why


def _hard_stop_before(plan: Plan, st: _State, reason: str) -> Steps:
    yield Call(
        "append_event", (_event(plan, st.record, EventType.HARD_STOP, st.now, message=reason),)
    )
    return _result(Outcome.HARD_STOP, st.record, reason, st)


def _abort_before_perform() -> None:
    # The one rule for a failed checkpoint write: never perform. Ask the table
    # so that the rule has one home; the caller re-raises the ledger error.
    assert d.decide(d.Situation.LEDGER_FAILED, d.Observation.NOT_CHECKED) is d.Action.ABORT


def _move(
    plan: Plan,
    st: _State,
    to: Status,
    reason: str | None,
    *,
    data: dict[str, Any] | None = None,
    **changes: Any,
) -> Generator[Op, Any, bool]:
    """Compare-and-set the current record to ``to``; reload it when the CAS loses."""
    cur = st.record
    assert cur is not None
    check_transition(cur.status, to)
    new = replace(cur, status=to, reason=reason, updated_at=st.now, **changes)
    event = _event(
        plan,
        cur,
        EventType(to.value),
        st.now,
        from_status=cur.status,
        to_status=to,
        message=reason,
        data=data or ({"result_ref": new.result_ref} if to is Status.CONFIRMED else None),
    )
    got = yield Call("transition", ((cur.status, cur.fence), new, event))
    if got is None:
        st.record = yield Call("get", (plan.key,))
        return False
    st.record = got
    return True


# --- helpers --------------------------------------------------------------------------


def _fresh(
    plan: Plan,
    now: float,
    status: Status,
    *,
    fence: int,
    result_ref: str | None = None,
    created_at: float | None = None,
) -> EffectRecord:
    return EffectRecord(
        key=plan.key,
        kind=plan.kind,
        status=status,
        fence=fence,
        owner=plan.run_id,
        lease_expires_at=now + plan.policy.lease_seconds,
        payload=plan.payload,
        payload_hash=plan.payload_hash,
        scope=plan.scope,
        result_ref=result_ref,
        reason=None,
        created_at=now if created_at is None else created_at,
        updated_at=now,
        executing_at=now if status is Status.EXECUTING else None,
    )


def _event(
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
    return Event(
        key=plan.key,
        type=type_,
        at=now,
        fence=0 if record is None else record.fence,
        run_id=plan.run_id,
        from_status=from_status,
        to_status=to_status,
        message=message,
        data=data or {},
    )


def _result(
    outcome: Outcome, record: EffectRecord | None, reason: str | None, st: _State | None = None
) -> RunResult:
    return RunResult(
        outcome=outcome,
        key="" if record is None else record.key,
        status=None if record is None else record.status,
        result_ref=None if record is None else record.result_ref,
        reason=reason,
        attempt=0 if record is None else record.fence,
        performed=bool(st and st.performed),
    )
