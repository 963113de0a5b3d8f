"""A reconcile pass over the open effects, shared by both ledgers.

The pass reads the open effects once, then :func:`triage` splits them: the
ones to verify (an expired claim, an orphaned ``executing`` mark, an unknown
outcome, each with the plan and the verifier its kind registered), the ones
still live (an owner's lease runs), the ones no verifier is registered for.
Each is then reconciled by :func:`actonce._run.effect.reconcile_effect`; one
whose reconcile fails is reported (:func:`failed`) and the pass goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._rules.errors import UsageError
from .._rules.model import EffectRecord, Outcome, RunResult
from .._rules.text import world_text
from .callables import Callables
from .effect import needs_reconcile
from .plan import Plan

__all__ = ["Lookup", "Work", "check_progress", "failed", "triage"]

#: The plan and the verifier reconcile follows for one record (``None``: no verifier).
Lookup = Callable[[EffectRecord], tuple[Plan, Callable[[], Any]] | None]
Work = list[tuple[Plan, EffectRecord, Callables]]


def triage(
    records: Iterable[EffectRecord], now: float, trusted: bool, lookup: Lookup
) -> tuple[Work, int, list[str]]:
    """Split open effects into work for reconcile, live ones and unverifiable ones."""
    work: Work = []
    live, missing = 0, []
    for record in records:
        if not needs_reconcile(record, now, trusted=trusted):
            live += 1
            continue
        found = lookup(record)
        if found is None:
            missing.append(record.key)
            continue
        plan, verify = found
        work.append((plan, record, Callables(verify=verify)))
    return work, live, missing


def failed(record: EffectRecord, exc: Exception) -> tuple[RunResult, tuple[str, str]]:
    """What the pass reports of an effect whose reconcile failed: deferred, and why."""
    message = world_text(f"reconcile of this effect failed: {type(exc).__name__}: {exc}")
    result = RunResult(
        Outcome.DEFERRED, record.key, record.status, record.result_ref, message, record.fence
    )
    return result, (record.key, message)


def check_progress(progress: Any) -> None:
    """A pass's ``progress`` is a callable or ``None``."""
    if progress is not None and not callable(progress):
        raise UsageError(f"progress must be callable or None, not {progress!r}")
