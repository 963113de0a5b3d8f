"""What the effect protocol knows of one effect, and what one run of it has seen.

:class:`Plan` is prepared by the ledger (:func:`actonce._effect.plan_of`) and
never changes during a run; :class:`State` is the run's memory, which the
steps of :mod:`actonce._run.effect` read and update: the record as last
seen, the time, the verdict, whether this run performed and what the
perform said. ``State`` asks the decision table (``_rules.decision``) where
the run stands (:meth:`State.situation`, :meth:`State.observation`) and what
an action ends in (:meth:`State.end`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from .._rules import decision as d
from .._rules.decision import observation as _observation
from .._rules.decision import situation as _situation
from .._rules.holds import Gate
from .._rules.model import EffectRecord, Outcome, Policy, RunResult, Verdict
from .ops import Op, Performed, Tick

__all__ = ["Plan", "State", "Steps"]

Steps = Generator[Op, Any, RunResult]


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


@dataclass(slots=True)
class State:
    """What one run of an effect has seen and done so far (the loop's memory)."""

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
    #: The record this run's own ungated claim replaced (``None``: no row), kept
    #: so that a release gives it back; ``releasable`` is False until it claims.
    before_claim: EffectRecord | None = None
    releasable: bool = False

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
