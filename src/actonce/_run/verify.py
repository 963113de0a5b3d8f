"""Verification, and the verdicts it leads to.

:func:`verify_round` asks the verifier (read-only, retried with backoff
while worth it, the owner's settle window counted from the end of its
perform); the loop of :mod:`actonce._run.effect` then asks the decision
table what the verdict means, and the writes here record it: confirmed
(:func:`record_confirmed`), a move the table names (:func:`apply_move`:
failed, unknown, review, a duplicate), the alarm of an owner that performed
after being overtaken (:func:`raise_alarm`), a hard stop seen before the
boundary (:func:`stop_before_boundary`), or nothing at all (:func:`defer`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from .._rules import decision as d
from .._rules.lifecycle import check_transition
from .._rules.model import Confirmed, EventType, Outcome, Policy, Status, Unavailable
from .._rules.text import world_text
from .ops import VERIFY, AppendEvent, Claim, Evidence, Op, Sleep, Verified
from .outcome import finish, perform_data, reason_of, result_of
from .plan import Plan, State, Steps
from .points import CrashPoint as P
from .writes import (
    RECORDED,
    TYPE_OF,
    event_of,
    fresh_record,
    lease_back,
    move,
    owns_releasable,
    release,
)

__all__ = [
    "apply_move",
    "defer",
    "raise_alarm",
    "record_confirmed",
    "settle_left",
    "stop_before_boundary",
    "verify_round",
]

Obs, Act = d.Observation, d.Action


def verify_round(plan: Plan, st: State, sit: d.Situation) -> Generator[Op, Any, None]:
    """One verification round: read-only, retried with backoff while worth it.

    A verifier's ``HardStop`` before this run's perform (a login wall, a
    CAPTCHA, the wrong account) ends the round at once and sets the run's
    hard stop; after the perform, and in reconcile, it is ``Unavailable``.
    With ``Policy.wait_for_settle`` the owner goes on past
    ``verify_attempts`` while the result is absent inside its settle window,
    never past the window's end.
    """
    policy = plan.policy
    attempt = 1
    while True:
        verified: Verified = yield VERIFY
        st.verdict, st.tick = verified.verdict, verified.tick
        if verified.stop is not None and not st.performed and not st.reconcile:
            st.hard_stop = world_text(verified.stop, plan.secrets)
            return
        obs = st.observation(policy)
        if (sit, obs) not in d.RETRYABLE:
            return
        pause = policy.backoff(attempt)
        if attempt >= policy.verify_attempts:
            left = settle_left(policy, st, obs)
            if left is None:
                return
            pause = min(pause, left)
        yield Sleep(pause)
        attempt += 1


def settle_left(policy: Policy, st: State, obs: d.Observation) -> float | None:
    """Seconds of the owner's settle window still to wait (None: do not wait)."""
    done = st.done
    if not policy.wait_for_settle or obs is not Obs.ABSENT_UNSETTLED or done is None:
        return None
    return max(0.0, policy.settle_seconds - (st.tick.mono - done.ended.mono))


def stop_before_boundary(plan: Plan, st: State) -> Steps:
    """A hard stop seen by verification before this run's perform: no mutation.

    Nothing was performed. A claim of this run's own is released (``failed``:
    re-claimable at once); anything else is left as it is, with the stop in
    its history.
    """
    reason = st.hard_stop
    assert reason is not None
    record = st.record
    mine = record is not None and record.fence == st.my_fence
    if mine and record is not None and record.status is Status.CLAIMED:
        why = f"hard stop before perform: {reason}; released: nothing was performed"
        if owns_releasable(st):
            yield from release(plan, st, why)
            note = f"seen by verification: {reason}"  # under the attempt given back
            yield AppendEvent(
                event_of(plan, st.record, EventType.HARD_STOP, st.tick.now, message=note)
            )
        else:
            yield from move(plan, st, Status.FAILED, why, before=P.BEFORE_RECORD)
    else:
        why = f"seen by verification: {reason}"
        yield AppendEvent(event_of(plan, record, EventType.HARD_STOP, st.tick.now, message=why))
    return result_of(Outcome.HARD_STOP, st.record, f"hard stop: {reason}", st)


def defer(plan: Plan, st: State, sit: d.Situation) -> Steps:
    verdict = st.verdict
    if isinstance(verdict, Unavailable):
        why = world_text(verdict.reason, plan.secrets)
        unavailable = EventType.VERIFICATION_UNAVAILABLE
        yield AppendEvent(event_of(plan, st.record, unavailable, st.tick.now, message=why))
        reason = f"verification unavailable: {why}"
    elif not st.tick.trusted:
        reason = "the ledger clock stepped: another owner's lease counts as live"
    else:
        reason = "another worker owns this effect"
    return finish(st, Act.DEFER, sit, reason)


def record_confirmed(plan: Plan, st: State) -> Generator[Op, Any, bool]:
    verdict = st.verdict
    assert isinstance(verdict, Confirmed)
    ref = None if verdict.result_ref is None else world_text(verdict.result_ref, plan.secrets)
    data = perform_data(plan, st)
    data["result_ref"] = ref
    if st.evidence:
        data["evidence"] = world_text(st.evidence, plan.secrets, limit=500)
    if st.record is None:
        new = fresh_record(plan, st.tick.now, Status.CONFIRMED, fence=1, result_ref=ref, matches=1)
        event = event_of(
            plan, new, EventType.CONFIRMED, st.tick.now, to_status=Status.CONFIRMED,
            message="result existed before any claim", data=data,
        )  # fmt: skip
        claim = yield Claim(new, None, event, before=P.BEFORE_RECORD, after=RECORDED)
        st.record = claim.record
        return bool(claim.acquired)
    message = (
        None if st.perform_error is None else f"confirmed; the perform raised {st.perform_error}"
    )
    if owns_releasable(st):  # found by the look under this run's claim
        message = "result existed before the perform"
    return (
        yield from move(
            plan,
            st,
            Status.CONFIRMED,
            message,
            data=data,
            before=P.BEFORE_RECORD,
            result_ref=ref,
            matches=1,
            **lease_back(st),
        )
    )


def apply_move(plan: Plan, st: State, act: d.Action) -> Generator[Op, Any, bool]:
    to = d.MOVES[act]
    reason = reason_of(plan, act, st)
    data = perform_data(plan, st)
    verdict = st.verdict
    if act is Act.RECORD_DUPLICATE and isinstance(verdict, Confirmed):
        refs = [world_text(r, plan.secrets, limit=300) for r in verdict.refs[:20]]
        data["duplicate"] = {"count": verdict.count, "refs": refs}
        changes: dict[str, Any] = {"matches": verdict.count}
        if verdict.result_ref is not None:
            changes["result_ref"] = world_text(verdict.result_ref, plan.secrets)
        if st.record is None:
            check_transition(None, to)
            new = fresh_record(plan, st.tick.now, to, fence=1, reason=reason, **changes)
            event = event_of(
                plan, new, TYPE_OF[to], st.tick.now, to_status=to, message=reason, data=data
            )
            claim = yield Claim(new, None, event, before=P.BEFORE_RECORD, after=RECORDED)
            st.record = claim.record
            return bool(claim.acquired)
    else:
        changes = {}
    wanted = to is not Status.FAILED or st.declined
    if st.performed and plan.has_evidence and st.evidence is None and wanted:
        st.evidence = yield Evidence(to.value)
    if st.evidence:
        data["evidence"] = world_text(st.evidence, plan.secrets, limit=500)
    return (
        yield from move(
            plan, st, to, reason, data=data, before=P.BEFORE_RECORD, **changes, **lease_back(st)
        )
    )


def raise_alarm(plan: Plan, st: State) -> Generator[Op, Any, bool]:
    """A superseded owner performed: the one write it may make is more caution."""
    record = st.record
    assert record is not None
    reason = reason_of(plan, Act.ALARM, st)
    data = perform_data(plan, st)
    data["alarm"] = {"attempt": st.my_fence, "current_attempt": record.fence}
    if record.status in (Status.CONFIRMED, Status.NEEDS_REVIEW, Status.ABANDONED):
        # Nothing more cautious to move to (a terminal status is a human's
        # or a verifier's to change): say it in the history.
        overtaken = EventType.OVERTAKEN
        yield AppendEvent(event_of(plan, record, overtaken, st.tick.now, message=reason, data=data))
        return True
    return (
        yield from move(plan, st, Status.NEEDS_REVIEW, reason, data=data, before=P.BEFORE_RECORD)
    )
