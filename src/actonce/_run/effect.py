"""The effect protocol, written once as a generator of typed operations.

Theory of operation. ``run_effect`` and ``reconcile_effect`` never do I/O.
They *yield* what they need (an :mod:`~actonce._run.ops` operation: a store
primitive, a verification, the precondition, the perform, the time, a pause,
a crash point) and receive the answer; the drivers in ``drive`` execute the
operations, and the explorer answers them itself. Every choice between steps
is asked of the decision table (``decide``), every outcome of ``outcome_of``;
every write goes through :func:`~actonce._run.writes.move` or the claim
(:mod:`actonce._run.claim`), which check the lifecycle and compare-and-set
on (status, fence) with their one event.

The order for one effect (seed 001, "Write the Claim Before the Click"),
claim first: atomic claim (the record read only when it loses) → verify (the one look before the
boundary, under the claim: confirmed is recorded, unavailable releases the
claim) → precondition → durable ``executing`` mark → lease check → perform
once (the driver extends the lease meanwhile) → verify with backoff, the
owner's settle window counted from the end of its perform → confirm, fail,
unknown or review. A run that must look before it claims (a direct claim,
whose claim is the mark; a gated claim, whose claim takes holds) verifies
first and checks the precondition before its claim (``LOOK_FIRST``). A ledger
error before the mark aborts without performing; a perform that finds its
claim superseded afterwards raises the alarm (``needs_review``) instead of
settling anything.

The steps live in modules named for them: the run's plan and memory
(``plan``), the claim (``claim``), the mark and the perform (``perform``),
verification and its verdicts (``verify``), the one way to write (``writes``)
and what a run reports (``outcome``). This module is the loop between them.
"""

from __future__ import annotations

from .._rules import decision as d
from .._rules.errors import PayloadMismatch
from .._rules.model import EffectRecord, EventType, Outcome
from .claim import claim_effect, looks_first, precondition_holds
from .ops import NOW, AppendEvent, Get, Tick
from .outcome import claim_refused, finish, held_reason, reason_of, result_of
from .perform import mark_and_perform
from .plan import Plan, State, Steps
from .verify import (
    apply_move,
    defer,
    raise_alarm,
    record_confirmed,
    stop_before_boundary,
    verify_round,
)
from .writes import event_of, owns_releasable, release

__all__ = ["Plan", "Steps", "needs_reconcile", "reconcile_effect", "run_effect"]

Sit, Act = d.Situation, d.Action
_MAX_STEPS = 40
_RECONCILABLE = frozenset({Sit.STALE_CLAIM, Sit.ORPHANED, Sit.UNKNOWN})
# The actions the loop tells apart, as module globals (an enum class's attribute
# hook makes ``Act.VERIFY`` several times slower to look up than a global).
_VERIFY, _EXECUTE, _CLAIM, _DEFER = Act.VERIFY, Act.EXECUTE, Act.CLAIM, Act.DEFER
_RECORD_CONFIRMED, _ALARM, _RELEASE = Act.RECORD_CONFIRMED, Act.ALARM, Act.RELEASE
_MOVES, _decide = d.MOVES, d.decide


# --- entry points ---------------------------------------------------------------


def run_effect(plan: Plan) -> Steps:
    """Run one effect: at most one perform, or an explicit unknown state.

    Claim first: the key is claimed as new at once (``INSERT ... ON CONFLICT
    DO NOTHING``); the record is read only when that insert loses. A run that
    looks first (a direct or a gated claim) reads the record, then decides.
    """
    tick: Tick = yield NOW
    st = State(None, tick, False)
    if looks_first(plan):
        st.record = yield Get(plan.key)
    else:
        yield from claim_effect(plan, st, d.Observation.NOT_CHECKED, look_first=False, blind=True)
    record = st.record
    if record is not None and record.payload_hash != plan.payload_hash:
        why = f"refused payload {plan.payload_hash}"
        now = st.tick.now
        yield AppendEvent(event_of(plan, record, EventType.PAYLOAD_MISMATCH, now, message=why))
        raise PayloadMismatch(plan.key, record.payload_hash, plan.payload_hash)
    return (yield from _loop(plan, st))


def needs_reconcile(record: EffectRecord, now: float, *, trusted: bool = True) -> bool:
    """True for a stale claim, an orphaned executing mark or an unknown outcome."""
    return d.situation_of(record, now=now, my_fence=None, trusted=trusted) in _RECONCILABLE


def reconcile_effect(plan: Plan, record: EffectRecord) -> Steps:
    """Resolve one unfinished effect by verification; never performs or claims."""
    tick: Tick = yield NOW
    if not needs_reconcile(record, tick.now, trusted=tick.trusted):
        why = "owner's lease is live" if tick.trusted else "the ledger clock stepped"
        return result_of(Outcome.DEFERRED, record, f"{why}; left alone")
    return (yield from _loop(plan, State(record, tick, True)))


# --- the loop ---------------------------------------------------------------------


def _loop(plan: Plan, st: State) -> Steps:
    reconcile = st.reconcile
    look_first = looks_first(plan)
    for _ in range(_MAX_STEPS):
        sit = st.situation()
        obs = st.observation(plan.policy)
        act = _decide(sit, obs, look_first)
        if act is _VERIFY:
            yield from verify_round(plan, st, sit)
            if st.hard_stop is not None and not st.performed and not reconcile:
                return (yield from stop_before_boundary(plan, st))
            continue
        if act is _EXECUTE:
            if plan.has_precondition and not st.precondition_checked:
                stopped = yield from precondition_holds(plan, st, obs)
                if stopped is not None:
                    return stopped
            yield from mark_and_perform(plan, st)
            continue
        if act is _CLAIM:
            if reconcile or st.hard_stop is not None or st.performed:
                return finish(st, act, sit, claim_refused(st))
            result = yield from claim_effect(plan, st, obs, look_first)
            if result is not None:
                return result
            continue
        if act is _DEFER:
            return (yield from defer(plan, st, sit))
        if act is _RELEASE and owns_releasable(st):
            # My own claim, nothing performed, the look unavailable: the row goes
            # back to what the claim found (a new key, or the failed attempt it
            # re-claimed), and the run defers as if it had never claimed.
            yield from release(plan, st, reason_of(plan, act, st))
            return (yield from defer(plan, st, sit))
        if act is not _RECORD_CONFIRMED and act not in _MOVES:
            return finish(st, act, sit, held_reason(st, act))  # FINISHED, HOLD: nothing to write
        # What the run returns is what its move stores: asked before the move,
        # which changes the record an alarm's reason names.
        reason = None if act is _RECORD_CONFIRMED else reason_of(plan, act, st)
        if act is _RECORD_CONFIRMED:
            moved = yield from record_confirmed(plan, st)
        elif act is _ALARM:
            moved = yield from raise_alarm(plan, st)
        else:
            moved = yield from apply_move(plan, st, act)
        if moved:
            outcome = st.end(act, sit)
            if outcome is not None:
                return result_of(outcome, st.record, reason, st)
    return result_of(Outcome.DEFERRED, st.record, "the record kept changing; try again", st)
