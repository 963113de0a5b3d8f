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
    Event,
    EventType,
    Gate,
    Intent,
    Packet,
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
        with psycopg.connect(dsn, autocommit=True) as watch:
            deadline = time.monotonic() + 30
            while True:  # a condition, observed: the revision is waiting for a lock
                row = watch.execute(
                    "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (b_pid,)
                ).fetchone()
                if row is not None and row[0] == "Lock":
                    break
                assert time.monotonic() < deadline and thread.is_alive(), outcome
                time.sleep(0.01)  # sync-ok: polling pg_stat_activity for the lock wait
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
