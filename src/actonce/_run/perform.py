"""The boundary: the durable ``executing`` mark, then the perform, once.

:func:`mark_and_perform` writes the mark (fsynced: after it, a crash leaves
an orphan that reconcile verifies) and performs; a claim that is its own
mark (``verify_after_claim=False``) performs at once (:func:`perform_once`).
An owner never starts a perform once its lease has expired, and what the
perform did (returned, raised, declined, was overtaken meanwhile) is the
run's to report.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from .._rules.errors import HardStop, LedgerError, NotPerformed
from .._rules.model import Status
from .._rules.text import world_text
from .ops import NOW, Evidence, Get, Op, Perform, Performed, Point
from .plan import Plan, State
from .points import CrashPoint as P
from .writes import abort_before_perform, move

__all__ = ["mark_and_perform", "perform_once"]


def mark_and_perform(plan: Plan, st: State) -> Generator[Op, Any, None]:
    yield Point(P.BEFORE_MARK_EXECUTING)
    st.tick = yield NOW  # the mark carries the time of its write (see claim_effect)
    now = st.tick.now
    try:
        moved = yield from move(
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
        abort_before_perform()
        raise
    if not moved:
        st.verdict = None
        return
    yield from perform_once(plan, st)


def perform_once(plan: Plan, st: State) -> Generator[Op, Any, None]:
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
