"""Telemetry hooks: what a driver tells an observer about one effect attempt.

Off by default and free when off: a driver's ``telemetry`` attribute is
``None`` and ``Driver.run`` checks it once, then runs its plain loop. When it
is set, the driver runs the traced loop below: it opens one scope per run or
reconcile of an effect and one step per claim, ``executing`` mark, perform,
verification and recorded verdict, and stores the scope's trace context in
the data of the claim's event (``traceparent``), so that a reconcile hours
later can link to the attempt it settles.

The vocabulary (step names, ``actonce.*`` attributes) lives here; an
implementation maps it to spans and metrics (``actonce.otel``). What is handed
over is secret-free by construction: the key only as a fingerprint (a
truncated SHA-256), the kind, the run id, statuses, verdict names, counts,
durations and exception *type* names — never a payload, a reason or an
exception's message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .._rules.model import Confirmed, Event, RunResult, Status
from .._store.records import ClaimResult
from .ops import Claim, Perform, Performed, Transition, Verified, Verify

__all__ = [
    "STEPS",
    "Telemetry",
    "TelemetryRun",
    "TelemetryScope",
    "fingerprint",
    "origin_of",
    "step_of",
    "step_result",
]

#: The steps a scope is told about.
STEPS = ("claim", "mark_executing", "perform", "verify", "record")
_SETTLED = frozenset({Status.CONFIRMED, Status.FAILED, Status.NEEDS_REVIEW, Status.ABANDONED})


def fingerprint(key: str) -> str:
    """The key as telemetry may carry it: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class TelemetryRun:
    """What one traced run or reconcile of an effect is.

    ``operation`` is ``"run"`` or ``"reconcile"``; ``origin`` the
    ``traceparent`` stored with the effect's latest claim (reconcile: the
    attempt it settles), if any.
    """

    operation: str
    kind: str
    key_fingerprint: str
    run_id: str
    origin: str | None = None


class TelemetryScope(Protocol):
    """One run or reconcile of one effect, as an observer sees it."""

    def traceparent(self) -> str | None:
        """The W3C trace context of this attempt, stored with its claim."""

    def step(self, name: str, attributes: dict[str, Any]) -> Any:
        """A step starts (one of :data:`STEPS`); returns a handle for :meth:`step_end`."""

    def step_end(
        self, handle: Any, attributes: dict[str, Any], error: BaseException | None
    ) -> None:
        """The step ended: its result attributes, or the error that escaped it."""

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        """The run ended with ``result``, or ``error`` escaped it."""


class Telemetry(Protocol):
    """An observer of effect attempts: set it as ``ledger.telemetry``."""

    def begin(self, run: TelemetryRun) -> TelemetryScope:
        """A run or reconcile of one effect starts."""


def origin_of(events: Iterable[Event]) -> str | None:
    """The ``traceparent`` of the latest claim in an effect's history."""
    found = None
    for event in events:
        value = event.data.get("traceparent") if isinstance(event.data, dict) else None
        if isinstance(value, str):
            found = value
    return found


def step_of(op: Any, scope: TelemetryScope) -> tuple[str, dict[str, Any], Any] | None:
    """The step an operation is (name, attributes, the operation to run), or None.

    A claim carries the scope's trace context in its event's data.
    """
    kind = type(op)
    if kind is Verify:
        return "verify", {}, op
    if kind is Perform:
        return "perform", {"actonce.attempt": op.fence}, op
    if kind is Transition:
        to = op.new.status
        name = "mark_executing" if to is Status.EXECUTING else "record"
        attrs = {"actonce.attempt": op.new.fence, "actonce.status.from": op.expect[0].value,
                 "actonce.status.to": to.value}  # fmt: skip
        return name, attrs, op
    if kind is Claim:
        to = op.new.status
        attrs = {"actonce.attempt": op.new.fence, "actonce.status.to": to.value}
        if to in (Status.CLAIMED, Status.EXECUTING):
            parent = scope.traceparent()
            if parent is not None:
                data = {**op.event.data, "traceparent": parent}
                op = replace(op, event=replace(op.event, data=data))
            return "claim", attrs, op
        return "record", attrs, op
    return None


def _verdict(answer: Verified) -> dict[str, Any]:
    verdict = answer.verdict
    if isinstance(verdict, Confirmed):
        name = "duplicate" if verdict.count > 1 else "confirmed"
        return {"actonce.verdict": name, "actonce.verdict.count": verdict.count}
    attrs: dict[str, Any] = {"actonce.verdict": type(verdict).__name__.lower()}
    if answer.stop is not None:
        attrs["actonce.verdict.hard_stop"] = True
    return attrs


def step_result(name: str, answer: Any) -> dict[str, Any]:
    """The secret-free attributes of a step's answer."""
    if isinstance(answer, Verified):
        return _verdict(answer)
    if isinstance(answer, Performed):
        attrs: dict[str, Any] = {"actonce.perform.seconds": round(answer.seconds, 6)}
        if answer.error is not None:
            attrs["error.type"] = type(answer.error).__name__
        if answer.overtaken:
            attrs["actonce.perform.overtaken"] = True
        return attrs
    if isinstance(answer, ClaimResult):
        attrs = {"actonce.claim.acquired": bool(answer.acquired)}
        if answer.refused is not None:
            attrs["actonce.claim.refused"] = answer.refused.kind
        record = answer.record if answer.acquired else None
    else:  # a transition: the new record, or None when its compare-and-set lost
        attrs = {"actonce.cas.won": answer is not None}
        record = answer
    if record is not None and record.status in _SETTLED and record.executing_at is not None:
        attrs["actonce.settle.seconds"] = max(0.0, record.updated_at - record.executing_at)
    return attrs
