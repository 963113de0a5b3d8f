"""What a run of an effect reports: its result, and why it ended where it did.

The outcome of an action is the decision table's (``State.end``, i.e.
``_rules.decision.outcome_of``); this module shapes the
:class:`~actonce.RunResult` around it (:func:`result_of`, :func:`finish`)
and writes the reasons, storable and scrubbed of the effect's secrets, as
returned and as stored (:func:`reason_of`), and what a perform did, as its
events record it (:func:`perform_data`).
"""

from __future__ import annotations

from typing import Any

from .._rules import decision as d
from .._rules.model import Confirmed, EffectRecord, Outcome, RunResult, Status, Unavailable
from .._rules.text import storable_data, world_text
from .plan import Plan, State

__all__ = [
    "claim_refused",
    "finish",
    "held_reason",
    "perform_data",
    "reason_of",
    "result_of",
    "why_of",
]

Act = d.Action


def result_of(
    outcome: Outcome, record: EffectRecord | None, reason: str | None, st: State | None = None
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


def finish(st: State, act: d.Action, sit: d.Situation, reason: str | None) -> RunResult:
    outcome = st.end(act, sit)
    assert outcome is not None  # FINISHED, HOLD, DEFER and a refused CLAIM all end the run
    return result_of(outcome, st.record, reason, st)


def claim_refused(st: State) -> str:
    if st.hard_stop is not None:  # invariant 9: no further mutation in this run
        return f"hard stop: {st.hard_stop}"
    if st.performed:  # invariant 3: a perform is never retried within a run
        return f"failed after this run's perform ({st.perform_error}); replan"
    return "released: nothing was performed"


def held_reason(st: State, act: d.Action) -> str | None:
    record = st.record
    if record is None or (act is Act.FINISHED and record.status is Status.CONFIRMED):
        return None
    if act is Act.HOLD:
        return record.reason or "outcome unresolved"
    return record.reason


def reason_of(plan: Plan, act: d.Action, st: State) -> str:
    """Why the run ended where it did: storable and scrubbed, as returned and as stored."""
    return world_text(why_of(act, st), plan.secrets)


def why_of(act: d.Action, st: State) -> str:
    verdict = st.verdict
    if act is Act.RECORD_CONFIRMED:
        return "confirmed"
    if act is Act.MARK_FAILED and st.declined:
        return f"perform stopped before the boundary, nothing was performed: {st.perform_error}"
    if act is Act.ALARM:
        record = st.record
        current = "?" if record is None else f"{record.status} under attempt {record.fence}"
        return (
            f"attempt {st.my_fence} performed after being overtaken (the effect was {current}); "
            "it may have happened twice: a human decides"
        )
    if act is Act.RECORD_DUPLICATE and isinstance(verdict, Confirmed):
        refs = ", ".join(verdict.refs[:5]) or verdict.result_ref or ""
        return f"duplicate detected: {verdict.count} matching results ({refs})"
    why = {
        Act.RELEASE: "released before perform: nothing was performed",
        Act.MARK_FAILED: "verified absent after the settle window",
        Act.MARK_UNKNOWN: "outcome not proven yet",
        Act.NEEDS_REVIEW: "still absent after the settle window; absence proves nothing here",
    }[act]
    if isinstance(verdict, Unavailable):
        why += f" (verification unavailable: {verdict.reason})"
    if st.hard_stop:
        why = f"hard stop: {st.hard_stop}; {why}"
    elif st.perform_error:
        why = f"perform raised {st.perform_error}; {why}"
    return why


def perform_data(plan: Plan, st: State) -> dict[str, Any]:
    done = st.done
    if done is None:
        return {}
    info: dict[str, Any] = {"seconds": round(done.seconds, 3)}
    if st.perform_error is not None:
        info["error"] = st.perform_error
    if done.details:
        info["details"] = storable_data(done.details, plan.secrets)
    if done.overtaken:
        info["overtaken"] = True
    return {"perform": info}
