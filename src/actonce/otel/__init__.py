"""OpenTelemetry for actonce (``pip install 'actonce[otel]'``): spans and metrics.

::

    from actonce.otel import instrument

    ledger = open_ledger()
    instrument(ledger)        # the global tracer and meter providers, or pass your own

**Spans.** One per run of an effect, named ``execute_tool {kind}`` with the
GenAI semantic conventions' ``gen_ai.operation.name = "execute_tool"`` and
``gen_ai.tool.name = kind`` (an effect is what an agent's tool call does),
and one per reconcile, ``actonce.reconcile {kind}``. Their children:
``actonce.claim``, ``actonce.mark_executing``, ``actonce.perform``,
``actonce.verify`` (one per verification), ``actonce.record`` (the verdict's
write). The run's trace context is stored with the effect's claim
(``traceparent`` in the claim event's data); a reconcile of that effect,
hours later and in another process, carries a **span link** to it.

**Metrics.** ``actonce.effects`` (counter: runs and reconciles by
``actonce.effect.kind``, ``actonce.outcome``, ``actonce.operation``),
``actonce.verifications`` (counter, by kind and ``actonce.verdict``),
``actonce.effect.settle.duration`` (histogram, seconds from the
``executing`` mark to the settled status, ledger time), and, for a
synchronous ``Ledger``, ``actonce.effects.open`` (gauge of claimed,
executing and unknown effects, by ``actonce.status``, read from the ledger
when the metrics are collected).

**Never in telemetry**: a raw key (only ``actonce.effect.key.fingerprint``,
the first 16 hex digits of its SHA-256), a payload, a reason, an exception's
message (only ``error.type``, its class name).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.trace import Link, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from actonce import AsyncLedger, Ledger, RunResult, TelemetryRun, __version__
from actonce import Status as EffectStatus

__all__ = ["OTelTelemetry", "instrument"]

_PROPAGATOR = TraceContextTextMapPropagator()
_OPEN = (EffectStatus.CLAIMED, EffectStatus.EXECUTING, EffectStatus.UNKNOWN)


class _Scope:
    """One run or reconcile: its span, current while it lasts."""

    __slots__ = ("_attrs", "_tel", "_token", "span")

    def __init__(self, tel: OTelTelemetry, run: TelemetryRun) -> None:
        self._tel = tel
        attrs: dict[str, Any] = {
            "actonce.operation": run.operation,
            "actonce.effect.kind": run.kind,
            "actonce.effect.key.fingerprint": run.key_fingerprint,
            "actonce.run.id": run.run_id,
        }
        if run.operation == "run":
            name = f"execute_tool {run.kind}"
            attrs["gen_ai.operation.name"] = "execute_tool"
            attrs["gen_ai.tool.name"] = run.kind
        else:
            name = f"actonce.{run.operation} {run.kind}"
        links = []
        if run.origin:
            parent = trace.get_current_span(_PROPAGATOR.extract({"traceparent": run.origin}))
            origin = parent.get_span_context()
            if origin.is_valid:
                links.append(Link(origin, {"actonce.link": "original_attempt"}))
        self._attrs = {"actonce.effect.kind": run.kind, "actonce.operation": run.operation}
        self.span = tel.tracer.start_span(
            name, kind=SpanKind.INTERNAL, attributes=attrs, links=links
        )
        self._token = otel_context.attach(trace.set_span_in_context(self.span))

    def traceparent(self) -> str | None:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(self.span))
        return carrier.get("traceparent")

    def step(self, name: str, attributes: dict[str, Any]) -> Any:
        span = self._tel.tracer.start_span(f"actonce.{name}", attributes=attributes)
        # Current while it runs: what a perform or a verifier does nests under it.
        return span, otel_context.attach(trace.set_span_in_context(span)), name

    def step_end(
        self, handle: Any, attributes: dict[str, Any], error: BaseException | None
    ) -> None:
        span, token, name = handle
        otel_context.detach(token)
        span.set_attributes(attributes)
        if error is not None or "error.type" in attributes:
            span.set_status(Status(StatusCode.ERROR))  # no description: messages stay out
        span.end()
        tel = self._tel
        if name == "verify" and "actonce.verdict" in attributes:
            tel.verifications.add(
                1, {**self._attrs, "actonce.verdict": attributes["actonce.verdict"]}
            )
        settle = attributes.get("actonce.settle.seconds")
        if settle is not None:
            tel.settle.record(settle, self._attrs)

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        span = self.span
        try:
            if result is not None:
                span.set_attributes(
                    {
                        "actonce.outcome": result.outcome.value,
                        "actonce.status": result.status.value if result.status else "none",
                        "actonce.attempt": result.attempt,
                        "actonce.performed": result.performed,
                    }
                )
                self._tel.effects.add(1, {**self._attrs, "actonce.outcome": result.outcome.value})
            if error is not None:
                span.set_attribute("error.type", type(error).__name__)
                span.set_status(Status(StatusCode.ERROR))
                self._tel.effects.add(1, {**self._attrs, "actonce.outcome": "error"})
        finally:
            otel_context.detach(self._token)
            span.end()


class OTelTelemetry:
    """An :class:`actonce.Telemetry` that makes OpenTelemetry spans and metrics."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.tracer = trace.get_tracer("actonce", __version__, tracer_provider=tracer_provider)
        self.meter = metrics.get_meter("actonce", __version__, meter_provider=meter_provider)
        self.effects = self.meter.create_counter(
            "actonce.effects", unit="{effect}", description="effect runs and reconciles by outcome"
        )
        self.verifications = self.meter.create_counter(
            "actonce.verifications", unit="{verification}", description="verdicts by kind"
        )
        self.settle = self.meter.create_histogram(
            "actonce.effect.settle.duration",
            unit="s",
            description="from the executing mark to the settled status (ledger time)",
        )

    def begin(self, run: TelemetryRun) -> _Scope:
        return _Scope(self, run)

    def observe_open(self, ledger: Ledger) -> None:
        """Report ``actonce.effects.open`` from ``ledger.counts()`` at every collection."""

        def read(_options: CallbackOptions) -> Iterable[Observation]:
            counts = ledger.counts()
            return [Observation(counts.get(s, 0), {"actonce.status": s.value}) for s in _OPEN]

        self.meter.create_observable_gauge(
            "actonce.effects.open",
            callbacks=[read],
            unit="{effect}",
            description="claimed, executing and unknown effects in the ledger",
        )


def instrument(
    ledger: Ledger | AsyncLedger,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> OTelTelemetry:
    """Turn OpenTelemetry on for ``ledger`` (``ledger.telemetry = None`` turns it off)."""
    telemetry = OTelTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    if isinstance(ledger, Ledger):
        telemetry.observe_open(ledger)
    ledger.telemetry = telemetry
    return telemetry
