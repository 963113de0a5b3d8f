"""Canaries through operations, receipts, budget pools, firewall refusals and telemetry.

Issue 20, item 1, the write paths the first canary scenario left out: an
:class:`~actonce.Operation` whose step names, step and undo payloads,
perform failures and contact carry canaries, stopped for a person and moved
by a decision whose reason is a canary (its receipt is written and read
back); budget pools whose names carry canaries, drawn on until one refuses;
a write firewall's refusal whose URL and page hold ``user:pass@`` and
``?token=``; and the spans and metrics the OpenTelemetry SDK exports for all
of it. The caller (tests/hardening/test_canaries.py) greps every byte
actonce wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Ledger,
    NotPerformed,
    Operation,
    Policy,
    RefusalReason,
    Step,
    WriteRefusal,
    effect_key,
)

from ._gated import luhn_card

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0)


@dataclass
class Paths:
    """What the scenario left: operation ids, effect keys, pools, API answers."""

    ops: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)


class Telemetry:
    """An in-memory OpenTelemetry SDK (spans and metrics) instrumenting one ledger."""

    def __init__(self, ledger: Ledger) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        from actonce.otel import instrument

        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        instrument(ledger, tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)

    def exported(self) -> dict[str, str]:
        """Everything exported, as JSON text: spans (name, attributes, events, links,
        status) and metrics (names and points' attributes); then shut down."""
        spans = [s.to_json() for s in self.spans.get_finished_spans()]
        data = self.reader.get_metrics_data()
        metrics = data.to_json() if data is not None else ""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        return {"spans": "\n".join(spans), "metrics": metrics}


def _key(name: str) -> str:
    return effect_key(tenant="t", actor="a", kind="trip", object=name, operation="c").value


def exercise_paths(ledger: Ledger, c: Any) -> Paths:
    """Operations, receipts, pools, refusals whose fields carry canaries."""
    out = Paths()
    _operation(ledger, c, out)
    _budgets(ledger, c, out)
    stored = ledger.firewall.record(
        WriteRefusal(
            actor="agent",
            method="POST",
            url=(
                f"https://bot:{c('firewall.url.userinfo')}@shop.example/compose"
                f"?token={c('firewall.url.token')}"
            ),
            reason=RefusalReason.OUTSIDE_EFFECT,
            page=(
                f"https://ann:{c('firewall.page.userinfo')}@shop.example/inbox"
                f"?session_id={c('firewall.page.session')}#access_token={c('firewall.page.frag')}"
            ),
        )
    )
    out.answers += [repr(stored), repr(ledger.firewall.refusals(limit=10))]
    out.answers.append(repr(ledger.firewall.counts()))
    return out


def _operation(ledger: Ledger, c: Any, out: Paths) -> None:
    """hold → pay → book: the booking is refused, the void too; a person abandons it."""
    done: set[str] = set()

    def effect(step: str, *, refuse: bool = False) -> Effect:
        def perform() -> dict[str, Any]:
            if refuse:
                raise NotPerformed(
                    f"the {step} was refused: session cookie {c(f'op.{step}.refused')}"
                )
            done.add(step)
            return {"memo": f"charged card {luhn_card(c, f'op.{step}.details.memo')}"}

        def verify() -> Any:
            return (
                Confirmed(f"https://shop.example/{step}?token={c(f'op.{step}.ref')}")
                if (step in done)
                else Absent()
            )

        payload = {
            "step": step,
            "card_number": luhn_card(c, f"op.{step}.payload.card_number"),
            "memo": f"card {luhn_card(c, f'op.{step}.payload.memo', ' ')} exp 12/29",
            "passcode": c(f"op.{step}.payload.passcode"),
            "callback": f"https://ann:{c(f'op.{step}.payload.url')}@hooks.example/cb",
        }
        return Effect(_key(step), "trip", payload, perform, verify, policy=POLICY)

    op_id = "booking:canary-trip@v1"
    steps = [
        Step(f"hold (password={c('op.step.hold')})", effect("hold"), "compensatable",
             undo=effect("release")),
        Step(f"pay (token: {c('op.step.pay')})", effect("pay"), "compensatable",
             undo=effect("void", refuse=True)),
        Step("book", effect("book", refuse=True), "pivot"),
    ]  # fmt: skip
    operation = Operation(ledger, op_id, steps, contact=f"trips desk, password={c('op.contact')}")
    out.answers.append(repr(operation.run()))
    out.ops.append(op_id)
    names = ("hold", "release", "pay", "void", "book")
    out.keys += [_key(s) for s in names if ledger.get(_key(s)) is not None]
    view = ledger.operations.get(op_id)
    out.answers.append(repr(view))
    decided = ledger.operations.decide(
        op_id,
        "abandon",
        by="ana",
        reason=f"void by phone; card {luhn_card(c, 'op.decide.reason', '-')} session cookie "
        f"{c('op.decide.cookie')}",
        attempt=view.attempt,
    )
    out.answers += [repr(decided), repr(operation.receipt()), repr(ledger.receipts(limit=50))]
    receipt = operation.receipt()
    if receipt is not None:
        out.answers.append(receipt.text)
        out.answers.append(json.dumps(dict(receipt.data), default=str))


def _budgets(ledger: Ledger, c: Any, out: Paths) -> None:
    """Two pools whose names carry canaries; the second draw on one is over budget."""
    posts = f"posts token={c('budget.pool.token')}"
    money = f"spend password={c('budget.pool.password')}"
    out.answers.append(repr(ledger.budgets.define(posts, 1, window="day")))
    out.answers.append(repr(ledger.budgets.define(money, "100", unit="EUR", window=3600)))
    out.pools += [posts, money]
    for n in range(2):
        result = ledger.run(
            Effect(
                _key(f"post-{n}"),
                "post",
                {"n": n, "api_key": c(f"budget.payload.{n}")},
                lambda: None,
                lambda: Confirmed("post"),
                gate=ledger.budgets.gate(posts, money, amount=1),
                policy=POLICY,
            )
        )
        out.answers.append(repr(result))
        if ledger.get(result.key) is not None:
            out.keys.append(result.key)
    out.answers.append(repr(ledger.budgets.usage()))
    out.answers.append(repr(ledger.budgets.usage(posts, money)))


def cli_commands(paths: Paths) -> list[list[str]]:
    """The read commands that show what this scenario stored."""
    commands: list[list[str]] = [["operations"], ["budgets"], ["firewall"]]
    commands += [["operation", op] for op in paths.ops]
    commands += [["receipt", op] for op in paths.ops]
    commands += [["show", k] for k in paths.keys]
    return commands


def console_paths(paths: Paths) -> list[str]:
    """The console's pages about what this scenario stored."""
    return [*(f"/operations/{op}" for op in paths.ops), *(f"/effects/{k}" for k in paths.keys)]
