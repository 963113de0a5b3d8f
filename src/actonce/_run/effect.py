"""The effect protocol, written once as a generator of typed operations.

Theory of operation. ``run_effect`` and ``reconcile_effect`` never do I/O.
They *yield* what they need (an :mod:`~actonce._run.ops` operation: a store
primitive, a verification, the precondition, the perform, the time, a pause,
a crash point) and receive the answer; the drivers in ``drive`` execute the
operations, and the explorer answers them itself. Every choice between steps
is asked of the decision table (``decide``), every outcome of ``outcome_of``;
every write goes through :func:`_move` or :func:`_claim`, which check the
lifecycle and compare-and-set on (status, fence) with their one event.

The order for one effect (seed 001, "Write the Claim Before the Click"):
load → verify → precondition → atomic claim → verify again → durable
``executing`` mark → lease check → perform once (the driver extends the
lease meanwhile) → verify with backoff, the owner's settle window counted
from the end of its perform → confirm, fail, unknown or review. A ledger
error before the mark aborts without performing; a perform that finds its
claim superseded afterwards raises the alarm (``needs_review``) instead of
settling anything.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any

from .._rules import decision as d
from .._rules.approvals import ApprovalStatus, Packet, new_packet_id
from .._rules.errors import HardStop, LedgerError, NotPerformed, PayloadMismatch
from .._rules.facts import facts_json, judge
from .._rules.holds import Gate, settlement
from .._rules.lifecycle import check_transition
from .._rules.model import (
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
    _evolve_record,
    new_event,
    new_record,
)
from .._rules.text import storable_data, world_text
from .._store.history import approval_event_key
from .ops import (
    NOW,
    PRECONDITION,
    REFRESH,
    VERIFY,
    AppendEvent,
    Claim,
    Evidence,
    Get,
    GetPacket,
    Op,
    Perform,
    Performed,
    Point,
    Refreshed,
    ReplacePacket,
    Sleep,
    Tick,
    Transition,
    Verified,
)
from .points import CrashPoint as P

__all__ = ["Plan", "needs_reconcile", "reconcile_effect", "run_effect"]

Steps = Generator[Op, Any, RunResult]
Sit, Obs, Act = d.Situation, d.Observation, d.Action
_situation, _observation = d.situation, d.observation


@dataclass(frozen=True, slots=True)
class Plan:
    """What the protocol knows of one effect, prepared by the ledger.

    ``secrets`` are the values redacted from the payload: kept in memory
    only, to scrub them out of messages about this effect.
    """

    key: str
    kind: str
    payload: str
    payload_hash: str
    scope: str
    policy: Policy
    run_id: str
    has_precondition: bool = False
    has_evidence: bool = False
    secrets: tuple[str, ...] = ()
    gate: Gate | None = None
    has_refresh: bool = False


_MAX_STEPS = 40
_RECORDED = (P.AFTER_RECORD,)
_TYPE_OF = {s: EventType(s.value) for s in Status}
_evolve = _evolve_record
_RECONCILABLE = frozenset({Sit.STALE_CLAIM, Sit.ORPHANED, Sit.UNKNOWN})


# --- entry points ---------------------------------------------------------------


def run_effect(plan: Plan) -> Steps:
    """Run one effect: at most one perform, or an explicit unknown state."""
    tick: Tick = yield NOW
    record: EffectRecord | None = yield Get(plan.key)
    if record is not None and record.payload_hash != plan.payload_hash:
        event = _event(plan, record, EventType.PAYLOAD_MISMATCH, tick.now)
        yield AppendEvent(_with(event, message=f"refused payload {plan.payload_hash}"))
        raise PayloadMismatch(plan.key, record.payload_hash, plan.payload_hash)
    return (yield from _loop(plan, record, tick, reconcile=False))


def needs_reconcile(record: EffectRecord, now: float, *, trusted: bool = True) -> bool:
    """True for a stale claim, an orphaned executing mark or an unknown outcome."""
    return d.situation_of(record, now=now, my_fence=None, trusted=trusted) in _RECONCILABLE


def reconcile_effect(plan: Plan, record: EffectRecord) -> Steps:
    """Resolve one unfinished effect by verification; never performs or claims."""
    tick: Tick = yield NOW
    if not needs_reconcile(record, tick.now, trusted=tick.trusted):
        why = "owner's lease is live" if tick.trusted else "the ledger clock stepped"
        return _result(Outcome.DEFERRED, record, f"{why}; left alone")
    return (yield from _loop(plan, record, tick, reconcile=True))


# --- the loop ---------------------------------------------------------------------


@dataclass(slots=True)
class _State:
    record: EffectRecord | None
    tick: Tick
    reconcile: bool
    verdict: Verdict | None = None
    my_fence: int | None = None
    performed: bool = False
    done: Performed | None = None
    perform_error: str | None = None
    hard_stop: str | None = None
    declined: bool = False
    precondition_checked: bool = False
    evidence: str | None = None

    def situation(self) -> d.Situation:
        tick = self.tick
        return _situation(
            self.record, tick.now, self.my_fence, self.declined, self.performed, tick.trusted
        )

    def observation(self, policy: Policy) -> d.Observation:
        done, tick = self.done, self.tick
        since = None if done is None else tick.mono - done.ended.mono
        return _observation(
            self.verdict, self.record, policy, tick.now, self.my_fence, since, tick.trusted
        )

    def end(self, action: d.Action, sit: d.Situation) -> Outcome | None:
        return d.outcome_of(
            action,
            sit,
            reconcile=self.reconcile,
            performed=self.performed,
            hard_stop=self.hard_stop is not None,
            status=None if self.record is None else self.record.status,
        )


def _loop(plan: Plan, record: EffectRecord | None, tick: Tick, *, reconcile: bool) -> Steps:
    st = _State(record, tick, reconcile)
    for _ in range(_MAX_STEPS):
        sit = st.situation()
        obs = st.observation(plan.policy)
        act = d.decide(sit, obs)
        if act is Act.VERIFY:
            yield from _verify(plan, st, sit)
            if st.hard_stop is not None and not st.performed and not reconcile:
                return (yield from _stop_before_boundary(plan, st))
            continue
        if act is Act.EXECUTE:
            yield from _execute(plan, st)
            continue
        if act is Act.CLAIM:
            if reconcile or st.hard_stop is not None or st.performed:
                return _finish(st, act, sit, _claim_refused(st))
            result = yield from _claim(plan, st, obs)
            if result is not None:
                return result
            continue
        if act is Act.RECORD_CONFIRMED:
            moved = yield from _record_confirmed(plan, st)
        elif act is Act.ALARM:
            moved = yield from _alarm(plan, st)
        elif act in d.MOVES:
            moved = yield from _apply_move(plan, st, act)
        elif act is Act.DEFER:
            return (yield from _defer(plan, st, sit))
        else:  # FINISHED, HOLD: nothing to write
            return _finish(st, act, sit, _held_reason(st, act))
        if moved:
            outcome = st.end(act, sit)
            if outcome is not None:
                reason = None if act is Act.RECORD_CONFIRMED else _reason_of(plan, act, st)
                return _result(outcome, st.record, reason, st)
    return _result(Outcome.DEFERRED, st.record, "the record kept changing; try again", st)


def _finish(st: _State, act: d.Action, sit: d.Situation, reason: str | None) -> RunResult:
    outcome = st.end(act, sit)
    assert outcome is not None  # FINISHED, HOLD, DEFER and a refused CLAIM all end the run
    return _result(outcome, st.record, reason, st)


def _claim_refused(st: _State) -> str:
    if st.hard_stop is not None:  # invariant 9: no further mutation in this run
        return f"hard stop: {st.hard_stop}"
    if st.performed:  # invariant 3: a perform is never retried within a run
        return f"failed after this run's perform ({st.perform_error}); replan"
    return "released: nothing was performed"


def _held_reason(st: _State, act: d.Action) -> str | None:
    record = st.record
    if record is None or (act is Act.FINISHED and record.status is Status.CONFIRMED):
        return None
    if act is Act.HOLD:
        return record.reason or "outcome unresolved"
    return record.reason


def _verify(plan: Plan, st: _State, sit: d.Situation) -> Generator[Op, Any, None]:
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
            left = _settle_left(policy, st, obs)
            if left is None:
                return
            pause = min(pause, left)
        yield Sleep(pause)
        attempt += 1


def _settle_left(policy: Policy, st: _State, obs: d.Observation) -> float | None:
    """Seconds of the owner's settle window still to wait (None: do not wait)."""
    done = st.done
    if not policy.wait_for_settle or obs is not Obs.ABSENT_UNSETTLED or done is None:
        return None
    return max(0.0, policy.settle_seconds - (st.tick.mono - done.ended.mono))


def _stop_before_boundary(plan: Plan, st: _State) -> Steps:
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
        yield from _move(plan, st, Status.FAILED, why, before=P.BEFORE_RECORD)
    else:
        event = _event(plan, record, EventType.HARD_STOP, st.tick.now)
        yield AppendEvent(_with(event, message=f"seen by verification: {reason}"))
    return _result(Outcome.HARD_STOP, st.record, f"hard stop: {reason}", st)


def _defer(plan: Plan, st: _State, sit: d.Situation) -> Steps:
    verdict = st.verdict
    if isinstance(verdict, Unavailable):
        why = world_text(verdict.reason, plan.secrets)
        event = _event(plan, st.record, EventType.VERIFICATION_UNAVAILABLE, st.tick.now)
        yield AppendEvent(_with(event, message=why))
        reason = f"verification unavailable: {why}"
    elif not st.tick.trusted:
        reason = "the ledger clock stepped: another owner's lease counts as live"
    else:
        reason = "another worker owns this effect"
    return _finish(st, Act.DEFER, sit, reason)


def _record_confirmed(plan: Plan, st: _State) -> Generator[Op, Any, bool]:
    verdict = st.verdict
    assert isinstance(verdict, Confirmed)
    ref = None if verdict.result_ref is None else world_text(verdict.result_ref, plan.secrets)
    data = _perform_data(plan, st)
    data["result_ref"] = ref
    if st.evidence:
        data["evidence"] = world_text(st.evidence, plan.secrets, limit=500)
    if st.record is None:
        new = _fresh(plan, st.tick.now, Status.CONFIRMED, fence=1, result_ref=ref, matches=1)
        event = _event(plan, new, EventType.CONFIRMED, st.tick.now)
        event = _with(
            event, to_status=Status.CONFIRMED, message="result existed before any claim", data=data
        )
        claim = yield Claim(new, None, event, before=P.BEFORE_RECORD, after=_RECORDED)
        st.record = claim.record
        return bool(claim.acquired)
    message = (
        None if st.perform_error is None else f"confirmed; the perform raised {st.perform_error}"
    )
    return (
        yield from _move(
            plan,
            st,
            Status.CONFIRMED,
            message,
            data=data,
            before=P.BEFORE_RECORD,
            result_ref=ref,
            matches=1,
            **_lease(st),
        )
    )


def _claim(plan: Plan, st: _State, obs: d.Observation) -> Generator[Op, Any, RunResult | None]:
    if plan.has_precondition and not st.precondition_checked:
        try:
            ok = yield PRECONDITION
        except HardStop as exc:
            reason = world_text(exc.reason, plan.secrets)
            event = _event(plan, st.record, EventType.HARD_STOP, st.tick.now)
            yield AppendEvent(_with(event, message=reason))
            return _result(Outcome.HARD_STOP, st.record, reason, st)
        st.precondition_checked = True
        if not ok:
            act = d.decide(Sit.PRECONDITION_FALSE, obs)  # STOP: end without claiming
            why = "precondition no longer holds"
            event = _event(plan, st.record, EventType.PRECONDITION_FAILED, st.tick.now)
            yield AppendEvent(_with(event, message=why))
            return _finish(st, act, Sit.PRECONDITION_FALSE, why)
    gate = plan.gate
    if gate is not None and gate.approval is not None and plan.has_refresh:
        refreshed = yield from _refresh(plan, st, gate)
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
    new = _fresh(plan, now, status, fence=fence, created_at=created, gated=_gated(gate))
    event = _with(
        _event(plan, new, EventType(status.value), now),
        from_status=None if prev is None else prev.status,
        to_status=status,
        message=f"attempt {fence}",
    )
    expect = None if prev is None else (prev.status, prev.fence)
    after = (P.AFTER_CLAIM, P.AFTER_MARK_EXECUTING) if direct else (P.AFTER_CLAIM,)
    try:
        claim = yield Claim(new, expect, event, durable=direct, after=after, gate=gate)
    except LedgerError:
        _abort()
        raise
    if claim.refused is not None:
        refusal = claim.refused
        why = world_text(refusal.reason, plan.secrets)
        refused = _event(plan, claim.record, EventType.CLAIM_REFUSED, now)
        yield AppendEvent(_with(refused, message=why, data={"waiting": refusal.waiting}))
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
        return _result(outcome, claim.record, why, st)
    assert claim.record is not None
    st.record = claim.record
    st.verdict = None
    if not claim.acquired:
        held = _event(plan, claim.record, EventType.CLAIM_REJECTED, now)
        yield AppendEvent(_with(held, message=f"held by {claim.record.owner}"))
        return None
    st.my_fence = fence
    if direct:
        yield from _perform(plan, st)
    return None


def _gated(gate: Gate | None) -> bool:
    return gate is not None and not gate.empty


def _refresh(plan: Plan, st: _State, gate: Gate) -> Generator[Op, Any, Gate | RunResult]:
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
        return _result(Outcome.REFUSED, st.record, f"no approval packet {gate.approval}", st)
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
    note = _event(plan, st.record, EventType.FACTS_REFRESHED, st.tick.now)
    facts = None if refreshed.facts is None else facts_json(refreshed.facts)
    why = verdict.reason or "within the approved boundary"
    if refreshed.error:
        why = f"{why}: {refreshed.error}"
    why = world_text(why, plan.secrets)
    yield AppendEvent(
        _with(note, message=why, data=storable_data({"facts": facts, "packet": packet.packet_id}))
    )
    if verdict.covered:
        amount = verdict.amount if verdict.amount is not None else gate.amount
        return replace(gate, amount=amount, facts=refreshed.facts or ())
    if verdict.pause:
        return _result(Outcome.DEFERRED, st.record, f"paused, nothing lost: {why}", st)
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
        return _result(Outcome.REFUSED, st.record, "the approval changed meanwhile; look again", st)
    return _result(
        Outcome.NEEDS_APPROVAL,
        st.record,
        f"{why}: approval {packet.packet_id} invalidated, refreshed packet {fresh.packet_id} "
        "issued for approval",
        st,
    )


def _abort() -> None:
    # The one rule for a failed checkpoint write: never perform. Asked of the
    # table so that the rule has one home; the caller re-raises the error.
    if d.decide(Sit.LEDGER_FAILED, Obs.NOT_CHECKED) is not Act.ABORT:  # pragma: no cover
        raise AssertionError("the decision table lost its ABORT cell")


def _execute(plan: Plan, st: _State) -> Generator[Op, Any, None]:
    yield Point(P.BEFORE_MARK_EXECUTING)
    st.tick = yield NOW  # the mark carries the time of its write (see _claim)
    now = st.tick.now
    try:
        moved = yield from _move(
            plan,
            st,
            Status.EXECUTING,
            None,
            durable=True,
            after=(P.AFTER_MARK_EXECUTING,),
            executing_at=now,
            lease_expires_at=now + plan.policy.lease_seconds,
        )
    except LedgerError:
        _abort()
        raise
    if not moved:
        st.verdict = None
        return
    yield from _perform(plan, st)


def _perform(plan: Plan, st: _State) -> Generator[Op, Any, None]:
    # An owner never starts a perform once its lease has expired: past it,
    # reconcile may already have proven absence and re-opened the key (the
    # settle window of non-owners runs from the lease's end, see observe()).
    record = st.record
    assert record is not None
    # What the perform did belongs to this attempt: a run that declined once,
    # lost the race to mark it failed and claimed the key again must not carry
    # "declined" over to a perform that did run.
    st.declined = False
    st.perform_error = None
    st.tick = yield NOW
    if st.tick.now >= record.lease_expires_at:
        st.declined = True
        st.perform_error = "the lease expired before perform started"
        st.verdict = None
        return
    policy = plan.policy
    done: Performed = yield Perform(
        plan.key, record.fence, policy.lease_seconds, policy.heartbeat_seconds
    )
    st.performed = True
    st.done = done
    st.tick = done.ended
    st.verdict = None
    error = done.error
    if error is not None:
        st.perform_error = world_text(f"{type(error).__name__}: {error}", plan.secrets, limit=500)
        if isinstance(error, HardStop):
            st.hard_stop = world_text(error.reason, plan.secrets)
        st.declined = isinstance(error, NotPerformed)
        if plan.has_evidence and not st.declined:
            # The page as the error left it, before verification navigates away.
            st.evidence = yield Evidence("perform-error")
    if done.overtaken:
        # A lease extension found the row changed: see who holds it now.
        st.record = yield Get(plan.key)


def _apply_move(plan: Plan, st: _State, act: d.Action) -> Generator[Op, Any, bool]:
    to = d.MOVES[act]
    reason = _reason_of(plan, act, st)
    data = _perform_data(plan, st)
    verdict = st.verdict
    if act is Act.RECORD_DUPLICATE and isinstance(verdict, Confirmed):
        refs = [world_text(r, plan.secrets, limit=300) for r in verdict.refs[:20]]
        data["duplicate"] = {"count": verdict.count, "refs": refs}
        changes: dict[str, Any] = {"matches": verdict.count}
        if verdict.result_ref is not None:
            changes["result_ref"] = world_text(verdict.result_ref, plan.secrets)
        if st.record is None:
            check_transition(None, to)
            new = _fresh(plan, st.tick.now, to, fence=1, **changes)
            event = _with(
                _event(plan, new, EventType(to.value), st.tick.now),
                to_status=to,
                message=reason,
                data=data,
            )
            claim = yield Claim(new, None, event, before=P.BEFORE_RECORD, after=_RECORDED)
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
        yield from _move(
            plan, st, to, reason, data=data, before=P.BEFORE_RECORD, **changes, **_lease(st)
        )
    )


def _alarm(plan: Plan, st: _State) -> Generator[Op, Any, bool]:
    """A superseded owner performed: the one write it may make is more caution."""
    record = st.record
    assert record is not None
    reason = _reason_of(plan, Act.ALARM, st)
    data = _perform_data(plan, st)
    data["alarm"] = {"attempt": st.my_fence, "current_attempt": record.fence}
    if record.status in (Status.CONFIRMED, Status.NEEDS_REVIEW, Status.ABANDONED):
        # Nothing more cautious to move to (a terminal status is a human's
        # or a verifier's to change): say it in the history.
        event = _with(
            _event(plan, record, EventType.OVERTAKEN, st.tick.now), message=reason, data=data
        )
        yield AppendEvent(event)
        return True
    return (
        yield from _move(plan, st, Status.NEEDS_REVIEW, reason, data=data, before=P.BEFORE_RECORD)
    )


def _lease(st: _State) -> dict[str, Any]:
    # An owner that performed and now records a verdict gives its lease back:
    # reconcile need not wait for it to run out.
    record = st.record
    if record is not None and st.performed and record.fence == st.my_fence:
        return {"lease_expires_at": min(st.tick.now, record.lease_expires_at)}
    return {}


def _perform_data(plan: Plan, st: _State) -> dict[str, Any]:
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


def _reason_of(plan: Plan, act: d.Action, st: _State) -> str:
    """Why the run ended where it did: storable and scrubbed, as returned and as stored."""
    return world_text(_why(act, st), plan.secrets)


def _why(act: d.Action, st: _State) -> str:
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


def _move(
    plan: Plan,
    st: _State,
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
    new = _evolve(cur, changes)
    event = new_event(
        plan.key, _TYPE_OF[to], now, cur.fence, plan.run_id, cur.status, to, text, data or {}, None
    )
    got = yield Transition(
        (cur.status, cur.fence),
        new,
        event,
        durable=durable,
        before=before,
        after=_RECORDED if after is None else after,
        settle=settle,
        fields=tuple(changes),
    )
    if got is None:
        st.record = yield Get(plan.key)
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
    matches: int = 0,
    gated: bool = False,
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
        None,
        now if created_at is None else created_at,
        now,
        now if status is Status.EXECUTING else None,
        matches,
        gated,
    )
    return record


def _event(plan: Plan, record: EffectRecord | None, type_: EventType, now: float) -> Event:
    fence = 0 if record is None else record.fence
    event: Event = new_event(plan.key, type_, now, fence, plan.run_id, None, None, None, {}, None)
    return event


def _with(event: Event, **changes: Any) -> Event:
    new: Event = new_event(
        event.key,
        event.type,
        event.at,
        event.fence,
        event.run_id,
        changes.get("from_status", event.from_status),
        changes.get("to_status", event.to_status),
        changes.get("message", event.message),
        changes.get("data", event.data),
        None,
    )
    return new


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
