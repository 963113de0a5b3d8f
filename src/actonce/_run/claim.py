"""The claim: precondition, the gate's refreshed facts, then one atomic claim.

A new key is claimed first and the precondition asked under the claim,
after the look (:func:`precondition_holds`, which releases the claim when
the precondition fails); a run that looks first (:func:`looks_first`: a
direct or a gated claim) asks it before its claim. :func:`claim_effect`
asks the precondition then (once per run), refreshes the
facts an approval depends on when the gate names one
(:func:`refresh_gate`), then claims the key by compare-and-set: a claim that
loses observes the winner, a gated claim the store refuses writes nothing
but its refusal. A direct claim (``verify_after_claim=False``) is the
``executing`` mark itself and performs at once.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

from .._rules import decision as d
from .._rules.approvals import ApprovalStatus, Packet, new_packet_id
from .._rules.errors import HardStop, LedgerError
from .._rules.facts import facts_json, judge
from .._rules.holds import Gate
from .._rules.lifecycle import check_transition
from .._rules.model import Event, EventType, Outcome, RunResult, Status
from .._rules.text import storable_data, world_text
from .._store.history import approval_event_key
from .ops import (
    NOW,
    PRECONDITION,
    REFRESH,
    AppendEvent,
    Claim,
    GetPacket,
    Op,
    Point,
    Refreshed,
    ReplacePacket,
    Sleep,
)
from .outcome import finish, result_of
from .perform import perform_once
from .plan import Plan, State
from .points import CrashPoint as P
from .writes import TYPE_OF, abort_before_perform, event_of, fresh_record, owns_releasable, release

__all__ = ["claim_effect", "is_gated", "looks_first", "precondition_holds", "refresh_gate"]

Sit = d.Situation


def looks_first(plan: Plan) -> bool:
    """A run that verifies before it claims: a direct claim (the mark) or a gated one (holds)."""
    return not plan.policy.verify_after_claim or is_gated(plan.gate)


def precondition_holds(
    plan: Plan, st: State, obs: d.Observation
) -> Generator[Op, Any, RunResult | None]:
    """Ask the precondition once per run; ``None``: it holds, go on.

    Asked under this run's own claim (claim first), a precondition that no
    longer holds, or that raised a hard stop, releases the claim (``failed``:
    nothing was performed, the next claim takes the key); asked before any
    claim, it ends the run with nothing claimed.
    """
    try:
        ok = yield PRECONDITION
    except HardStop as exc:
        reason = world_text(exc.reason, plan.secrets)
        yield from _release(plan, st, f"hard stop before perform: {reason}")
        yield AppendEvent(
            event_of(plan, st.record, EventType.HARD_STOP, st.tick.now, message=reason)
        )
        return result_of(Outcome.HARD_STOP, st.record, reason, st)
    st.precondition_checked = True
    if ok:
        return None
    act = d.decide(Sit.PRECONDITION_FALSE, obs)  # STOP: end without performing
    why = "precondition no longer holds"
    failed = EventType.PRECONDITION_FAILED
    yield from _release(plan, st, why)  # the note is then under the attempt given back
    yield AppendEvent(event_of(plan, st.record, failed, st.tick.now, message=why))
    return finish(st, act, Sit.PRECONDITION_FALSE, why)


def _release(plan: Plan, st: State, why: str) -> Generator[Op, Any, None]:
    if owns_releasable(st):
        yield from release(plan, st, f"{why}; released: nothing was performed")


def claim_effect(
    plan: Plan, st: State, obs: d.Observation, look_first: bool = True, blind: bool = False
) -> Generator[Op, Any, RunResult | None]:
    """Claim the key; ``None``: the loop goes on (won, lost, or a direct claim performed).

    ``blind``: the record was not read first (claim first): an insert that
    loses is how the run reads it, and is no rejection worth a note.
    """
    if look_first and plan.has_precondition and not st.precondition_checked:
        stopped = yield from precondition_holds(plan, st, obs)
        if stopped is not None:
            return stopped
    gate = plan.gate
    if gate is not None and gate.approval is not None and plan.has_refresh:
        refreshed = yield from refresh_gate(plan, st, gate)
        if isinstance(refreshed, RunResult):
            return refreshed
        gate = refreshed
    prev = st.record
    direct = not plan.policy.verify_after_claim
    status = Status.EXECUTING if direct else Status.CLAIMED
    fence = 1 if prev is None else prev.fence + 1
    check_transition(None if prev is None else prev.status, status)
    # The claim (for a direct claim, the executing mark itself) carries the
    # time of its write. A time read before a pause (a slow precondition, a
    # stopped process) would give it a lease that has already expired and a
    # settle window that has already passed: others would take the fresh mark
    # for an orphan, and absence for proof that nothing happened. So the crash
    # point before it is an operation of its own, and the time is read after it.
    yield Point(P.BEFORE_CLAIM)
    st.tick = yield NOW
    now = st.tick.now
    created = None if prev is None else prev.created_at
    new = fresh_record(plan, now, status, fence=fence, created_at=created, gated=is_gated(gate))
    event = event_of(
        plan,
        new,
        TYPE_OF[status],
        now,
        from_status=None if prev is None else prev.status,
        to_status=status,
        message=f"attempt {fence}",
    )
    expect = None if prev is None else (prev.status, prev.fence)
    after = (P.AFTER_CLAIM, P.AFTER_MARK_EXECUTING) if direct else (P.AFTER_CLAIM,)
    try:
        claim = yield Claim(new, expect, event, durable=direct, after=after, gate=gate)
    except LedgerError:
        abort_before_perform()
        raise
    if claim.refused is not None:
        refusal = claim.refused
        why = world_text(refusal.reason, plan.secrets)
        yield AppendEvent(
            event_of(plan, claim.record, EventType.CLAIM_REFUSED, now, message=why,
                     data={"waiting": refusal.waiting})
        )  # fmt: skip
        if gate is not None and gate.approval is not None and not refusal.waiting:
            # The approval's own history says it was presented and refused, too.
            yield AppendEvent(
                Event(
                    key=approval_event_key(gate.approval),
                    type=EventType.APPROVAL_REFUSED,
                    at=now,
                    fence=0,
                    run_id=plan.run_id,
                    message=f"a claim of {plan.key[:16]} under it was refused: {why}",
                    data={"via": "claim", "effect_key": plan.key},
                )
            )
        st.record = claim.record
        outcome = d.REFUSAL_OUTCOMES.get(refusal.kind, Outcome.REFUSED)
        if refusal.waiting:
            outcome = Outcome.NEEDS_APPROVAL
        return result_of(outcome, claim.record, why, st)
    st.record = claim.record
    st.verdict = None
    if claim.record is None:  # lost to a claim released meanwhile: the key is new again
        return None
    if not claim.acquired:
        if blind:
            return None
        held = f"held by {claim.record.owner}"
        yield AppendEvent(event_of(plan, claim.record, EventType.CLAIM_REJECTED, now, message=held))
        return None
    st.my_fence = fence
    st.before_claim, st.releasable = prev, not is_gated(gate)
    if direct:
        yield from perform_once(plan, st)
    return None


def is_gated(gate: Gate | None) -> bool:
    return gate is not None and not gate.empty


def refresh_gate(plan: Plan, st: State, gate: Gate) -> Generator[Op, Any, Gate | RunResult]:
    """Refresh the facts the approval depends on; decide if it still covers the commit.

    Read-only, retried with backoff like a verification. Within the approved
    boundary: the claim goes on with the refreshed amount and facts (the
    claim checks both again, in its transaction). Outside it: the packet is
    invalidated and a refreshed one issued for the user (``needs_approval``).
    A refresh that failed, or an expired session: nothing is committed,
    nothing is lost, and the approval stands (``deferred``: resume later).

    Only an ``approved`` packet is refreshed: any other (pending, held by a
    claim on its way, replaced, voided ...) goes straight to the claim, whose
    gate says what it means (wait for the answer; observe the winner;
    refused). Refreshing those would replace a packet the user has not
    answered, or one already replaced, again and again.
    """
    assert gate.approval is not None
    found = yield GetPacket(gate.approval)
    packet: Packet | None = None if found is None else found[0]
    if packet is None:
        return result_of(Outcome.REFUSED, st.record, f"no approval packet {gate.approval}", st)
    if packet.status is not ApprovalStatus.APPROVED:
        return gate
    refreshed: Refreshed | None = None
    for attempt in range(1, plan.policy.verify_attempts + 1):
        refreshed = yield REFRESH
        st.tick = refreshed.tick
        if refreshed.facts is not None or attempt == plan.policy.verify_attempts:
            break
        yield Sleep(plan.policy.backoff(attempt))
    assert refreshed is not None
    verdict = judge(
        refreshed.facts, ceiling=packet.ceiling, currency=packet.currency, now=st.tick.now
    )
    facts = None if refreshed.facts is None else facts_json(refreshed.facts)
    why = verdict.reason or "within the approved boundary"
    if refreshed.error:
        why = f"{why}: {refreshed.error}"
    why = world_text(why, plan.secrets)
    data = storable_data({"facts": facts, "packet": packet.packet_id})
    note = event_of(plan, st.record, EventType.FACTS_REFRESHED, st.tick.now, message=why, data=data)
    yield AppendEvent(note)
    if verdict.covered:
        amount = verdict.amount if verdict.amount is not None else gate.amount
        return replace(gate, amount=amount, facts=refreshed.facts or ())
    if verdict.pause:
        return result_of(Outcome.DEFERRED, st.record, f"paused, nothing lost: {why}", st)
    now = st.tick.now
    fresh = Packet(
        packet_id=new_packet_id(),
        intent=packet.intent,
        action=packet.action,
        effect_key=packet.effect_key,
        user=packet.user,
        destination=packet.destination,
        amount=verdict.amount,
        ceiling=verdict.amount if verdict.amount is not None else packet.ceiling,
        currency=packet.currency,
        details=packet.details,
        terms=packet.terms,
        facts=refreshed.facts or (),
        created_at=now,
        expires_at=now + max(1.0, packet.expires_at - packet.created_at),
        revision=packet.revision + 1,
        replaces=packet.packet_id,
    )
    replaced = yield ReplacePacket(packet, why, fresh, None, plan.run_id)
    if replaced is None:
        return result_of(
            Outcome.REFUSED, st.record, "the approval changed meanwhile; look again", st
        )
    return result_of(
        Outcome.NEEDS_APPROVAL,
        st.record,
        f"{why}: approval {packet.packet_id} invalidated, refreshed packet {fresh.packet_id} "
        "issued for approval",
        st,
    )
