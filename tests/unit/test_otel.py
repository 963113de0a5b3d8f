"""OpenTelemetry: spans per step, metrics, a link from reconcile, nothing secret.

With the OTel SDK's in-memory span exporter and metric reader.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from actonce import (
    AsyncLedger,
    Ledger,
    Outcome,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    TelemetryRun,
    UsageError,
)
from actonce.otel import instrument
from actonce.testing import FakeProvider, Faults, FrozenClock, MemoryStore

SECRET_REF = "ORDER-SECRET-9201"  # in the payload and the key's fields: never in telemetry


class OTel:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        assert data is not None
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = (point.count, point.sum)  # a histogram
                        out.setdefault(metric.name, []).append((dict(point.attributes), value))
        return out


@pytest.fixture
def otel() -> Iterator[OTel]:
    o = OTel()
    yield o
    o.tracer_provider.shutdown()
    o.meter_provider.shutdown()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


def _open(clock: FrozenClock, otel: OTel, provider: FakeProvider, store: Any = None) -> Ledger:
    registry = Registry()
    registry.register("invoice", provider.verifier, policy=Policy(verify_attempts=1))
    ledger = Ledger(store or MemoryStore(), clock=clock, registry=registry)
    instrument(ledger, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    return ledger


def _effect(provider: FakeProvider, **policy: Any) -> Any:
    return provider.effect(
        SECRET_REF,
        kind="invoice",
        payload={"amount": "120.00", "note": "for Ana Secret"},
        policy=Policy(verify_backoff=0.01, **policy),
    )


def everything(otel: OTel) -> str:
    """Every name, attribute, event and link of every span, and every metric point."""
    parts = []
    for span in otel.finished():
        parts.append(span.name)
        parts.append(json.dumps(dict(span.attributes or {}), default=str))
        for event in span.events:
            parts.append(event.name + json.dumps(dict(event.attributes or {}), default=str))
        for link in span.links:
            parts.append(json.dumps(dict(link.attributes or {}), default=str))
        parts.append(str(span.status.description))
    parts.append(json.dumps(otel.metrics(), default=str))
    return "\n".join(parts)


def test_one_run_is_a_tree_of_steps(otel: OTel, clock: FrozenClock) -> None:
    provider = FakeProvider(clock=clock)
    ledger = _open(clock, otel, provider)
    effect = _effect(provider)
    result = ledger.run(effect)
    assert result.outcome is Outcome.COMPLETED
    spans = otel.finished()
    root = next(s for s in spans if s.parent is None)
    assert root.name == "execute_tool invoice"
    assert root.attributes is not None
    assert root.attributes["gen_ai.operation.name"] == "execute_tool"
    assert root.attributes["gen_ai.tool.name"] == "invoice"
    assert root.attributes["actonce.outcome"] == "completed"
    assert root.attributes["actonce.performed"] is True
    fp = root.attributes["actonce.effect.key.fingerprint"]
    assert isinstance(fp, str) and len(fp) == 16 and fp not in effect.key.value
    children = [s.name for s in sorted(spans, key=lambda s: s.start_time or 0) if s.parent]
    assert children == [  # claim first: one look under the claim, one after the perform
        "actonce.claim",
        "actonce.verify",
        "actonce.mark_executing",
        "actonce.perform",
        "actonce.verify",
        "actonce.record",
    ]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in spans if s is not root)  # fmt: skip
    verdicts = [s.attributes["actonce.verdict"] for s in spans if s.name == "actonce.verify"]  # type: ignore[index]
    assert verdicts == ["absent", "confirmed"]
    record = next(s for s in spans if s.name == "actonce.record")
    assert record.attributes is not None and record.attributes["actonce.status.to"] == "confirmed"
    # The claim's event carries the attempt's trace context.
    claim = next(e for e in ledger.store.events(effect.key.value) if e.type.value == "claimed")
    trace_id = f"{root.context.trace_id:032x}"
    assert claim.data["traceparent"].split("-")[1] == trace_id
    assert root.attributes["actonce.run.id"] == claim.run_id  # the run the history names
    assert SECRET_REF not in everything(otel) and "Ana Secret" not in everything(otel)
    assert effect.key.value not in everything(otel)


def test_metrics_count_outcomes_verdicts_settle_time_and_open_effects(
    otel: OTel, clock: FrozenClock
) -> None:
    provider = FakeProvider(clock=clock)
    ledger = _open(clock, otel, provider)
    assert ledger.run(_effect(provider)).outcome is Outcome.COMPLETED
    provider.faults = Faults(lose_response=1.0, visibility_delay=100.0)
    late = provider.effect("late-1", kind="invoice", policy=Policy(verify_attempts=1))
    assert ledger.run(late).status is Status.UNKNOWN
    m = otel.metrics()
    outcomes = {a["actonce.outcome"]: v for a, v in m["actonce.effects"]}
    assert outcomes == {"completed": 1, "needs_review": 1}
    verdicts = {a["actonce.verdict"]: v for a, v in m["actonce.verifications"]}
    assert verdicts == {"absent": 3, "confirmed": 1}  # 1 + 2 absent (under the claim, after)
    assert next(v for _a, v in m["actonce.effect.settle.duration"])[0] == 1  # one settled
    assert {a["actonce.status"]: v for a, v in m["actonce.effects.open"]} == {
        "claimed": 0, "executing": 0, "unknown": 1
    }  # fmt: skip
    clock.advance(200)
    ledger.reconcile()
    m = otel.metrics()
    assert {a["actonce.status"]: v for a, v in m["actonce.effects.open"]}["unknown"] == 0
    reconciled = [v for a, v in m["actonce.effects"] if a["actonce.operation"] == "reconcile"]
    assert reconciled == [1]


def test_reconcile_hours_later_links_to_the_original_attempt(
    otel: OTel, clock: FrozenClock, tmp_path: Any
) -> None:
    path = str(tmp_path / "ledger.db")
    provider = FakeProvider(clock=clock, faults=Faults(lose_response=1.0, visibility_delay=3600))
    first = _open(clock, otel, provider, SQLiteStore(path, create=True))
    assert first.run(_effect(provider, verify_attempts=1)).status is Status.UNKNOWN
    first.close()
    original = next(s for s in otel.finished() if s.parent is None)
    otel.spans.clear()
    clock.advance(4 * 3600)  # hours later, another process: a new ledger on the same file
    later = _open(clock, otel, provider, SQLiteStore(path))
    report = later.reconcile()
    assert [r.status for r in report.results] == [Status.CONFIRMED]
    root = next(s for s in otel.finished() if s.parent is None)
    assert root.name == "actonce.reconcile invoice"
    assert root.context.trace_id != original.context.trace_id  # its own trace ...
    assert [(lk.context.trace_id, lk.context.span_id) for lk in root.links] == [
        (original.context.trace_id, original.context.span_id)  # ... linked to the attempt
    ]
    assert root.attributes is not None
    assert (
        root.attributes["actonce.effect.key.fingerprint"]
        == original.attributes["actonce.effect.key.fingerprint"]  # type: ignore[index]
    )
    later.close()


def test_errors_carry_their_type_never_their_message(otel: OTel, clock: FrozenClock) -> None:
    provider = FakeProvider(clock=clock, faults=Faults(fail_before_commit=1.0))
    ledger = _open(clock, otel, provider)
    ledger.run(_effect(provider, verify_attempts=1))
    perform = next(s for s in otel.finished() if s.name == "actonce.perform")
    assert perform.attributes is not None and perform.attributes["error.type"] == "ProviderError"
    assert "HTTP 500" not in everything(otel) and SECRET_REF not in everything(otel)


def test_async_ledger_is_traced_too(otel: OTel, clock: FrozenClock) -> None:
    provider = FakeProvider(clock=clock)

    async def go() -> None:
        ledger = AsyncLedger(MemoryStore(), clock=clock)
        instrument(ledger, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
        assert (await ledger.run(_effect(provider))).outcome is Outcome.COMPLETED
        await ledger.aclose()

    asyncio.run(go())
    names = sorted(s.name for s in otel.finished())
    assert names.count("actonce.verify") == 2 and "execute_tool invoice" in names


class Counting:
    def __init__(self) -> None:
        self.runs: list[TelemetryRun] = []

    def begin(self, run: TelemetryRun) -> Any:
        self.runs.append(run)
        raise AssertionError("telemetry is off: begin must not be called")


def test_off_means_not_called_and_nothing_stored(clock: FrozenClock) -> None:
    provider = FakeProvider(clock=clock)
    ledger = Ledger(MemoryStore(), clock=clock)
    assert ledger.telemetry is None
    counting = Counting()
    ledger.telemetry = counting  # type: ignore[assignment]
    ledger.telemetry = None
    effect = _effect(provider)
    assert ledger.run(effect).outcome is Outcome.COMPLETED
    assert counting.runs == []
    assert all("traceparent" not in e.data for e in ledger.store.events(effect.key.value))
    with pytest.raises(UsageError):
        ledger.telemetry = object()  # type: ignore[assignment]
