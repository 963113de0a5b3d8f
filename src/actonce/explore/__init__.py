"""``actonce explore``: every interleaving of the real protocol, within bounds.

The effect protocol is a generator that never does I/O, so the explorer runs
the real code (``run_effect``, ``reconcile_effect``, ``resolve``), not a model
of it: workers, a reconciler and a human reviewer step operation by operation
against one in-memory store, one fake world and one virtual clock, and at
every step the explorer may also crash an actor, fail a ledger write (before
or after its commit), jump the clock past the settle window or every lease,
and answer each verification in every way the world allows. See
docs/explore.md.

>>> from actonce.explore import Bounds, explore
>>> report = explore(Bounds(workers=1, crashes=1, ticks=1, reviews=0))
>>> report.ok and report.complete
True
"""

from __future__ import annotations

from ._cli import main
from ._machine import Build, Violation
from ._search import Finding, Report, random_walks, replay, walk_trace
from ._search import explore as _explore
from ._world import PERFORMS, Bounds
from .faults import FAULTS, Fault, build

__all__ = [
    "FAULTS",
    "INVARIANTS",
    "PERFORMS",
    "Bounds",
    "Build",
    "Fault",
    "Finding",
    "Report",
    "Violation",
    "build",
    "explore",
    "main",
    "random_walks",
    "regression_test",
    "replay",
    "walk_trace",
]

#: The invariants checked at every step (and, for the last three, when all runs are over).
INVARIANTS = {
    "at_most_one_accepted": "at most one accepted effect per key unless a human re-opened it (DESIGN 1)",
    "mark_before_perform": "no perform without this attempt's committed executing mark (DESIGN 2)",
    "one_perform_per_run": "a run performs at most once: no retried side effect (DESIGN 3)",
    "no_superseded_fence_write": "an overtaken owner writes nothing but more caution (DESIGN 4)",
    "one_event_per_change": "every state change appends exactly one event (DESIGN 5)",
    "never_reclaim_executing_or_unknown": "a claim only takes a new key, a failed one or an expired claim",
    "terminal_changes_only_by_human": "confirmed, abandoned and needs_review change only by a human",
    "failed_means_absent": "failed is recorded only while the world holds no accepted effect",
    "mark_carries_write_time": "a claim or executing mark is written with a live lease",
    "protocol_raises_only_ledger_errors": "a run ends by returning, or with a ledger error",
    "no_effect_left_open": "once nothing crashes, a calm reconcile settles the effect",
    "settles_truthfully": "what it settles on agrees with the world",
}


def explore(
    bounds: Bounds | None = None,
    fault: str | None = None,
    *,
    stop_at_first: bool = True,
    max_states: int | None = None,
    progress: object = None,
) -> Report:
    """Explore every state within ``bounds`` of the real protocol (or a test build).

    ``fault``: one of :data:`FAULTS` (a historical bug put back), or ``None``.
    ``progress(states, depth, seconds)`` is called after each level.
    """
    return _explore(
        bounds or Bounds(),
        build(fault),
        stop_at_first=stop_at_first,
        max_states=max_states,
        progress=progress,  # type: ignore[arg-type]
    )


def regression_test(
    finding: Finding, bounds: Bounds | None = None, fault: str | None = None
) -> str:
    """The source of a pytest test that replays ``finding`` and asserts it is gone.

    Paste it into a test file: it fails while the trace still breaks the
    invariant, and passes (the trace no longer possible, or harmless) once
    the bug is fixed.
    """
    b = bounds or Bounds()
    args = ", ".join(
        f"{name}={getattr(b, name)!r}"
        for name in (
            "workers", "runs", "reconciles", "reviews", "crashes", "failed_writes", "ticks",
            "performs", "verify_after_claim", "review_binds_attempt",
        )
    )  # fmt: skip
    name = f"test_explored_{finding.invariant}"
    return f'''
from actonce import UsageError
from actonce.explore import Bounds, build, replay

TRACE = {finding.trace_text!r}


def {name}() -> None:
    """{finding.invariant}: {finding.message}"""
    try:
        steps = replay(TRACE, Bounds({args}), build({fault!r}))
    except UsageError:
        return  # the trace is no longer possible: the protocol changed
    broken = [v for _, vs in steps for v in vs if v.invariant == {finding.invariant!r}]
    assert not broken, "\\n".join(text for text, _ in steps)
'''.lstrip()
