"""Typing probe: exercises the public API with types; checked by ``mypy --strict``.

Never run: only type-checked (``tests/unit/test_public_api.py`` does it).
"""

from __future__ import annotations

import actonce
from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    EffectKey,
    EffectRecord,
    Event,
    Ledger,
    Outcome,
    Policy,
    ReconcileReport,
    Resolution,
    RunResult,
    Status,
    Unavailable,
    Verdict,
    canonical_json,
    effect_key,
    open_ledger,
    registry,
)
from actonce.testing import FakeProvider, FrozenClock, MemoryStore


def verify() -> Verdict:
    return Absent()


async def averify() -> Verdict:
    return Confirmed("ref-1")


def perform() -> None:
    pass


def record_verifier(record: EffectRecord) -> Verdict:
    return Unavailable(f"cannot look up {record.key}")


def sync_api() -> None:
    key: EffectKey = effect_key(tenant="t", actor="a", kind="post", object="o", operation="create")
    text: str = canonical_json({"b": 1})
    effect = Effect(
        key=key,
        kind="post",
        payload={"text": text},
        perform=perform,
        verify=verify,
        precondition=lambda: True,
        policy=Policy(settle_seconds=1.0, absence_authoritative=True),
        secret_fields=("text",),
    )
    registry.register("post", record_verifier, policy=Policy())
    with Ledger(MemoryStore(), clock=FrozenClock()) as ledger:
        result: RunResult = ledger.run(effect, run_id="r1")
        outcome: Outcome = result.outcome
        done: bool = result.done
        status: Status | None = result.status
        report: ReconcileReport = ledger.reconcile(limit=10)
        unresolved: list[RunResult] = report.unresolved
        record: EffectRecord = ledger.resolve(
            key.value, Resolution.HAPPENED, reviewer="ana", reason="seen"
        )
        found: EffectRecord = ledger.find(key.value[:8])
        maybe: EffectRecord | None = ledger.get(key.value)
        events: list[Event] = ledger.events(key.value)
        listed: list[EffectRecord] = ledger.list(Status.CONFIRMED, kind="post", limit=5)
        counts: dict[Status, int] = ledger.counts()
        del outcome, done, status, unresolved, record, found, maybe, events, listed, counts
    opened: Ledger = open_ledger("memory://")
    opened.close()
    provider = FakeProvider()
    fake: Effect = provider.effect("ref")
    del fake
    version: str = actonce.__version__
    del version


async def async_api() -> None:
    effect = Effect(key="k", kind="post", payload=[1, 2], perform=perform, verify=averify)
    async with AsyncLedger(MemoryStore()) as ledger:
        result: RunResult = await ledger.run(effect)
        report: ReconcileReport = await ledger.reconcile()
        record: EffectRecord = await ledger.resolve(
            "k", "not_happened", reviewer="ana", reason="nothing there"
        )
        maybe: EffectRecord | None = await ledger.get("k")
        events: list[Event] = await ledger.events("k")
        counts: dict[Status, int] = await ledger.counts()
        del result, report, record, maybe, events, counts


class Drafts(actonce.Hooks[str]):
    def observe(self) -> list[str]:
        return ["hello"]

    def plan(self, candidate: str) -> actonce.EffectPlan:
        return Effect(key=candidate, kind="post", payload={}, perform=perform, verify=verify)


class AsyncDrafts(actonce.AsyncHooks[int]):
    async def observe(self) -> list[int]:
        return [1]

    async def plan(self, candidate: int) -> actonce.EffectPlan:
        return None


def operator_api() -> None:
    with Ledger(MemoryStore(), clock=FrozenClock()) as ledger:
        pool: actonce.Pool = ledger.budgets.define("original", 10, window="day")
        usages: list[actonce.PoolUsage] = ledger.budgets.usage("original")
        gate: actonce.Gate = ledger.budgets.gate("original", amount=1)
        op: actonce.Operator[str] = actonce.Operator(ledger, "bot", Drafts(), kinds=("post",))
        summary: actonce.RunSummary = op.run()
        status: actonce.RunStatus = summary.status
        items: list[actonce.SummaryItem] = summary.done + summary.failures
        stops: tuple[actonce.RunStop, ...] = summary.stops
        stored: actonce.RunSummary | None = ledger.summary(summary.run_id)
        recent: list[actonce.RunSummary] = ledger.summaries("bot", limit=5)
        text: list[str] = summary.lines()
        del pool, usages, gate, status, items, stops, stored, recent, text


async def async_operator_api() -> None:
    async with AsyncLedger(MemoryStore()) as ledger:
        op = actonce.AsyncOperator(ledger, "bot", AsyncDrafts(), kinds=("post",))
        summary: actonce.RunSummary = await op.run()
        usages: list[actonce.PoolUsage] = await ledger.budgets.usage()
        del summary, usages


def http_api() -> None:
    from actonce.http import NotSent, OutcomeUnknown, Provider, counted

    key = effect_key(tenant="t", actor="a", kind="charge", object="ORDER-1", operation="create")
    with Provider("https://api.example.com", idempotency_keys=True) as api:
        lookup: Verdict = api.lookup("/v1/charges", params={"reference": "ORDER-1"}, items="data")
        effect: Effect = api.effect(
            key,
            "charge",
            "POST",
            "/v1/charges",
            json={"reference": "ORDER-1"},
            verify=lambda: api.lookup("/v1/charges", params={"reference": "ORDER-1"}),
            policy=Policy(absence_authoritative=True),
        )
        provider_key: str = api.provider_key(key)
        verdict: Verdict = counted([{"id": "ch_1"}], ref="id")
        errors: tuple[type[Exception], ...] = (NotSent, OutcomeUnknown)
        del lookup, effect, provider_key, verdict, errors


async def async_http_api() -> None:
    from actonce.http import AsyncProvider

    async with (
        AsyncProvider("https://api.example.com") as api,
        AsyncLedger(MemoryStore()) as ledger,
    ):

        async def exists() -> Verdict:
            return await api.lookup("/v1/charges", params={"reference": "ORDER-1"}, items="data")

        effect = api.effect("order-1", "charge", "POST", "/v1/charges", json={}, verify=exists)
        result: RunResult = await ledger.run(effect)
        del result
