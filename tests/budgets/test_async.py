"""``AsyncLedger.budgets``: the same pools, reservations and settlements, awaited.

SQLite runs through the thread adapter, PostgreSQL on its async store; the
protocol is the same generator either way.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    NotPerformed,
    Outcome,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    Unavailable,
    Verdict,
    effect_key,
)
from actonce.testing import FrozenClock
from pgtest import drop_schema, postgres_dsn

POLICY = Policy(settle_seconds=0.0, absence_authoritative=True, verify_attempts=2,
                verify_backoff=0.1)  # fmt: skip


@pytest.fixture(params=["sqlite", "postgres"])
async def aledger(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncLedger]:
    clock = FrozenClock(1_796_032_800.0)
    registry = Registry()
    done: dict[str, bool] = {}
    registry.register("post", lambda r: _verdict(done, r.data["ref"]), policy=POLICY)
    if request.param == "sqlite":
        store: Any = SQLiteStore(str(tmp_path / "ledger.db"), create=True)
        ledger = AsyncLedger(store, clock=clock, registry=registry)
        ledger.done = done  # type: ignore[attr-defined]
        yield ledger
        await ledger.aclose()
        return
    from actonce import AsyncPostgresStore

    dsn = postgres_dsn()
    schema = f"actonce_abtest_{uuid.uuid4().hex[:10]}"
    ledger = AsyncLedger(
        AsyncPostgresStore(dsn, schema=schema, max_size=2, min_size=0, create=True),
        clock=clock,
        registry=registry,
    )
    ledger.done = done  # type: ignore[attr-defined]
    try:
        yield ledger
    finally:
        await ledger.aclose()
        drop_schema(dsn, schema)


def _verdict(done: dict[str, bool], ref: str) -> Verdict:
    if ref not in done:
        return Absent()
    return Confirmed(f"obj-{ref}") if done[ref] else Unavailable("slow")


def effect(ledger: AsyncLedger, ref: str, how: str = "ok") -> Effect:
    done: dict[str, bool] = ledger.done  # type: ignore[attr-defined]

    async def perform() -> None:
        if how == "declined":
            raise NotPerformed("the form was not what we expected")
        done[ref] = how == "ok"  # "lost": happened, but verification cannot tell yet

    async def verify() -> Verdict:
        return _verdict(done, ref)

    return Effect(
        key=effect_key(tenant="t", actor="a", kind="post", object=ref, operation="create"),
        kind="post",
        payload={"ref": ref},
        perform=perform,
        verify=verify,
        policy=POLICY,
        gate=ledger.budgets.gate("posts", "original"),
    )


async def test_async_reserve_consume_release_hold(aledger: AsyncLedger) -> None:
    await aledger.budgets.define("posts", 3)
    await aledger.budgets.define("original", 2)
    ok = await aledger.run(effect(aledger, "p1"))
    declined = await aledger.run(effect(aledger, "p2", "declined"))
    lost = await aledger.run(effect(aledger, "p3", "lost"))
    assert [ok.outcome, declined.outcome, lost.outcome] == [
        Outcome.COMPLETED, Outcome.FAILED, Outcome.NEEDS_REVIEW,
    ]  # fmt: skip
    assert lost.status is Status.UNKNOWN
    usage = {u.pool.name: (u.reserved, u.consumed, u.free) for u in await aledger.budgets.usage()}
    assert usage == {"original": (1, 1, 0), "posts": (1, 1, 1)}
    refused = await aledger.run(effect(aledger, "p4"))
    assert refused.outcome is Outcome.OVER_BUDGET
    assert "'original' is spent" in (refused.reason or "")
    # A reviewer says the lost one happened: consumed.
    await aledger.resolve(lost.key, "happened", reviewer="ana", reason="seen on the site")
    (original,) = await aledger.budgets.usage("original")
    assert (original.reserved, original.consumed) == (0, 2)


async def test_async_reconcile_settles_the_hold(aledger: AsyncLedger) -> None:
    await aledger.budgets.define("posts", 1)
    await aledger.budgets.define("original", 1)
    lost = await aledger.run(effect(aledger, "p1", "lost"))
    assert lost.status is Status.UNKNOWN
    aledger.done["p1"] = True  # type: ignore[attr-defined]  # the index caught up
    report = await aledger.reconcile()
    assert [r.status for r in report.results] == [Status.CONFIRMED]
    (posts,) = await aledger.budgets.usage("posts")
    assert (posts.reserved, posts.consumed, posts.free) == (0, 1, 0)
