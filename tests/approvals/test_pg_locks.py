"""PostgreSQL: gated transactions take their row locks in one order, so none deadlocks.

The interleaving that deadlocked: a transition that releases a stale claim's
holds (it locks the effect row, then reads the intent) against a revision of
that intent (it locks the intent row, then the old version's claimed effects).
Both transactions are driven statement by statement on two connections: the
transition takes the effect row, the revision takes the intent row and waits
for the effect row; then the transition goes on. It must finish, and so must
the revision after it, and the packet must end voided.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from decimal import Decimal
from typing import Any

import psycopg

from actonce import (
    ApprovalStatus,
    Draw,
    Event,
    EventType,
    Gate,
    Intent,
    Packet,
    Pool,
    PostgresStore,
    Status,
)
from actonce._rules.holds import Settle
from actonce._rules.model import EffectRecord
from actonce._store import gated_ops
from actonce._store import postgres_ops as ops

NOW = 1_000.0


def run_steps(
    conn: psycopg.Connection[Any], work: Any, stop_after: int | None = None, answer: Any = None
) -> Any:
    """Run statement work on ``conn`` (inside its open transaction), ``stop_after`` statements.

    Stopped, it returns ``(work, answer)``: resume with ``run_steps(conn, work, answer=answer)``.
    """
    done = 0
    while True:
        try:
            stmt = work.send(answer)
        except StopIteration as stop:
            return stop.value
        cur = conn.execute(stmt.sql, stmt.params)
        answer = (cur.rowcount, cur.fetchall() if cur.description else [])
        done += 1
        if stop_after is not None and done == stop_after:
            return work, answer


def _wait_for_a_lock(dsn: str, pid: int, thread: threading.Thread, outcome: object) -> None:
    """Until backend ``pid`` waits for a lock (a condition, observed; at most 30 s)."""
    with psycopg.connect(dsn, autocommit=True) as watch:
        deadline = time.monotonic() + 30
        while True:
            row = watch.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row is not None and row[0] == "Lock":
                return
            assert time.monotonic() < deadline and thread.is_alive(), outcome
            time.sleep(0.01)  # sync-ok: polling pg_stat_activity for the lock wait


def test_a_revision_and_a_releasing_transition_do_not_deadlock(
    pg_schema: tuple[str, str],
) -> None:
    dsn, schema = pg_schema
    store = PostgresStore(dsn, schema=schema, create=True)
    v1 = Intent("trip", "booking", user="ana", price_ceiling=Decimal(120), currency="EUR")
    store.intent_create(v1, NOW, "setup")
    packet = Packet(packet_id="p1", intent=v1.ref, action="book", effect_key="k1", user="ana",
                    amount=Decimal(110), currency="EUR", created_at=NOW, expires_at=NOW + 3600,
                    status=ApprovalStatus.APPROVED)  # fmt: skip
    store.approval_put(packet, None, "setup")
    claimed = EffectRecord(key="k1", kind="book", status=Status.CLAIMED, fence=1, owner="w",
                           lease_expires_at=NOW + 60, payload="{}", payload_hash="h",
                           created_at=NOW, updated_at=NOW, gated=True)  # fmt: skip
    event = Event(key="k1", type=EventType.CLAIMED, at=NOW, fence=1, run_id="w",
                  to_status=Status.CLAIMED)  # fmt: skip
    assert store.claim(claimed, None, event, gate=Gate(v1.ref, "p1", Decimal(110))).acquired
    store.close()

    options = f"-c search_path={schema}"
    a = psycopg.connect(dsn, options=options)
    b = psycopg.connect(dsn, options=options)
    b_pid = b.info.backend_pid
    released = replace(claimed, status=Status.FAILED, updated_at=NOW + 1)
    fail_event = Event(key="k1", type=EventType.FAILED, at=NOW + 1, fence=1, run_id="r",
                       from_status=Status.CLAIMED, to_status=Status.FAILED)  # fmt: skip
    transition = ops.transition_settled((Status.CLAIMED, 1), released, fail_event, Settle.RELEASE)
    revision = ops.pg(gated_ops.intent_revise(v1.ref, replace(v1, version=2, when="x"),
                                              ("when",), NOW + 1, "rev"))  # fmt: skip
    outcome: dict[str, Any] = {}

    def revise() -> None:
        try:
            outcome["revision"] = run_steps(b, revision)
            b.commit()
        except psycopg.Error as exc:
            outcome["revision_error"] = exc
            b.rollback()

    try:
        # The transition takes the effect row (its compare-and-set) ...
        paused, answer = run_steps(a, transition, stop_after=1)
        assert answer[0] == 1
        # ... the revision takes the intent row and waits for the effect row ...
        thread = threading.Thread(target=revise)
        thread.start()
        _wait_for_a_lock(dsn, b_pid, thread, outcome)  # the revision waits for a lock
        # ... and the transition goes on: it must not wait for the intent row.
        try:
            outcome["transition"] = run_steps(a, paused, answer=answer)
            a.commit()
        except psycopg.Error as exc:
            outcome["transition_error"] = exc
            a.rollback()
        thread.join(60)
        assert not thread.is_alive()
    finally:
        a.close()
        b.close()
    assert "transition_error" not in outcome and "revision_error" not in outcome, outcome
    assert outcome["transition"] is not None
    # The revision ran after the release: the packet, approved again, is void now.
    assert outcome["revision"].applied and outcome["revision"].closed == ()
    assert outcome["revision"].voided == ("p1",)
    check = PostgresStore(dsn, schema=schema)
    try:
        assert check.approval_get("p1")[0].status is ApprovalStatus.VOIDED
        assert check.get("k1").status is Status.FAILED
    finally:
        check.close()


def _claim_drawing(key: str, pools: tuple[str, ...]) -> Any:
    claimed = EffectRecord(key=key, kind="book", status=Status.CLAIMED, fence=1, owner=key,
                           lease_expires_at=NOW + 60, payload="{}", payload_hash="h",
                           created_at=NOW, updated_at=NOW, gated=True)  # fmt: skip
    event = Event(key=key, type=EventType.CLAIMED, at=NOW, fence=1, run_id=key,
                  to_status=Status.CLAIMED)  # fmt: skip
    gate = Gate(draws=tuple(Draw(p, Decimal(10)) for p in pools))
    return ops.claim_gated(claimed, None, event, gate)


def _run_until_a_pool_is_locked(conn: psycopg.Connection[Any], work: Any) -> Any:
    """Run ``work``'s statements until one has locked a budget pool row; the rest is left."""
    answer: Any = None
    while True:
        stmt = work.send(answer)
        cur = conn.execute(stmt.sql, stmt.params)
        answer = (cur.rowcount, cur.fetchall() if cur.description else [])
        if "FROM pools" in stmt.sql and "FOR UPDATE" in stmt.sql:
            return work, answer


def test_two_claims_drawing_on_two_pools_in_opposite_orders_do_not_deadlock(
    pg_schema: tuple[str, str],
) -> None:
    """One gated claim draws on pools [a, b], the other on [b, a], on two connections.
    The first takes its first pool's lock and pauses; the second runs until it waits for
    a lock; then the first goes on. Both must finish: pools are locked in name order,
    whatever order the gate names them in (else: a ring, and PostgreSQL kills one)."""
    dsn, schema = pg_schema
    store = PostgresStore(dsn, schema=schema, create=True)
    for name in ("a", "b"):
        store.pool_define(Pool(name, Decimal(100), "EUR"), NOW, "setup")
    store.close()
    options = f"-c search_path={schema}"
    first = psycopg.connect(dsn, options=options)
    second = psycopg.connect(dsn, options=options)
    second_pid = second.info.backend_pid
    outcome: dict[str, Any] = {}

    def claim_second() -> None:
        try:
            outcome["second"] = run_steps(second, _claim_drawing("k2", ("b", "a")))
            second.commit()
        except psycopg.Error as exc:
            outcome["second_error"] = exc
            second.rollback()

    try:
        paused, answer = _run_until_a_pool_is_locked(first, _claim_drawing("k1", ("a", "b")))
        thread = threading.Thread(target=claim_second)
        thread.start()
        _wait_for_a_lock(dsn, second_pid, thread, outcome)  # the second claim waits
        try:
            outcome["first"] = run_steps(first, paused, answer=answer)
            first.commit()
        except psycopg.Error as exc:
            outcome["first_error"] = exc
            first.rollback()
        thread.join(60)
        assert not thread.is_alive()
    finally:
        first.close()
        second.close()
    errors = {k: v for k, v in outcome.items() if k.endswith("_error")}
    assert not errors, f"two claims on pools [a, b] and [b, a] deadlocked: {errors}"
    assert outcome["first"].acquired and outcome["second"].acquired
    check = PostgresStore(dsn, schema=schema)
    try:
        assert [u.reserved for u in check.budget_usage(["a", "b"], NOW)] == [20, 20]
    finally:
        check.close()
