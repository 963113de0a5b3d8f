"""Pins for the stores' mutants the area's tests let through (issue 23, item 2).

``python tests/mutants/areas.py --area _store --sample 40 --seed 1`` showed
these unstated: what a malformed row is refused with, and which column of a
count row is the count (pure functions every backend shares); then, judged
again after the stores grew: the lease a queue take answers, a run summary
stored twice, ``duplicates``, the approval-request event's data, a failed
transaction reported as not written (sync and async PostgreSQL), the
operations an intent version's closing withdraws (and who decided it), a
read-only store's refusal to queue, the driver's reason in a refused value,
and ``executemany`` scrubbing on both PostgreSQL cursors. Each was checked
to fail on its mutant. The survivors judged equivalent are named in
docs/testing.md ("Mutation score per area").
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    ApprovalStatus,
    BadLedgerURL,
    EventType,
    Gate,
    Intent,
    ItemClass,
    ItemStatus,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    RunStage,
    RunStatus,
    RunSummary,
    SQLiteStore,
    Status,
    SummaryItem,
    UsageError,
    open_store,
    scrub_stored,
)
from actonce._rules.holds import Settle
from actonce._store.rows import counts_from_rows, event_from_row, record_from_row

from .test_gates import NOW, intent, packet
from .test_gates import event as gated_event
from .test_gates import record as gated_record
from .test_store import T0, event, record


def test_a_malformed_effect_row_is_refused_with_its_reason() -> None:
    with pytest.raises(LedgerUnavailable, match=r"^the ledger holds a malformed effect row: "):
        record_from_row(["only-a-key"])


def test_a_malformed_event_row_is_refused_with_its_reason() -> None:
    with pytest.raises(LedgerUnavailable, match=r"^the ledger holds a malformed event row: "):
        event_from_row(1, ["only-a-key"])


def test_a_count_row_is_status_then_count() -> None:
    assert counts_from_rows([("confirmed", 2, 9), ("failed", "3", 9)]) == {
        Status.CONFIRMED: 2,
        Status.FAILED: 3,
    }


# --- seed 1 again, after the stores grew (every backend unless named) --------------------


def test_a_queue_take_answers_the_lease_it_gave(store: Any) -> None:
    """The row reader keeps a taken item's lease column (not ``None``)."""
    store.queue_put("mail", '{"to": "ana"}', T0)
    (item,) = store.queue_take("w1", T0 + 1, T0 + 31)
    assert (item.status, item.taken_by, item.lease_expires_at) == (ItemStatus.TAKEN, "w1", T0 + 31)


def test_a_run_summary_is_stored_once_with_one_event(store: Any) -> None:
    first = _summary("op-1", T0)
    assert store.summary_put(first) is True
    assert store.summary_put(_summary("op-1", T0 + 50)) is False  # "stored twice": nothing
    assert store.summary_get("op-1") == first
    assert [e.run_id for e in store.events("operator:alice")] == ["op-1"]


def test_duplicates_counts_the_effects_whose_verdict_saw_several_results(store: Any) -> None:
    assert store.duplicates() == 0
    for key, matches in (("k1", 1), ("k2", 2), ("k3", 3)):
        new = record(key, Status.CONFIRMED, matches=matches)
        assert store.claim(new, None, event(new, Status.CONFIRMED)).acquired
    assert store.duplicates() == 2


def test_an_approval_request_event_names_the_packets_status_and_lineage(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING), None, "run-1")
    (requested,) = store.events("approval:p1")
    assert requested.type is EventType.APPROVAL_REQUESTED and requested.run_id == "run-1"
    assert requested.data == {
        "status": "pending", "revision": 1, "replaces": None, "effect_key": "k1",
    }  # fmt: skip


def test_a_packet_stored_twice_is_refused_and_the_first_stays(store: Any) -> None:
    """The transaction failed before its commit: nothing was written, and that is known
    (``LedgerUnavailable``, never "may or may not have committed")."""
    store.intent_create(intent(), NOW, "setup")
    first = packet("k1", ApprovalStatus.PENDING)
    store.approval_put(first, None, "run-1")
    with pytest.raises(LedgerUnavailable) as refused:
        store.approval_put(packet("k2", ApprovalStatus.APPROVED), None, "run-2")
    assert not isinstance(refused.value, LedgerOutcomeUnknown)
    assert store.approval_get("p1")[0] == first
    assert [e.run_id for e in store.events("approval:p1")] == ["run-1"]


@pytest.mark.parametrize("how", ["revise", "withdraw"])
def test_closing_an_intent_version_withdraws_its_operations_once(store: Any, how: str) -> None:
    """A revision's withdrawal is decided by ``system``; a withdrawal's by its person.
    Closing the version again (its withdrawal recorded) adds no second decision."""
    store.intent_create(intent(), NOW, "setup")
    spec = '{"steps": [{"key": "k1"}]}'
    store.operation_put("op-1", intent().ref, spec, NOW, "setup")
    store.operation_put("op-other", None, spec, NOW, "setup")
    if how == "revise":
        done = store.intent_revise(intent().ref, intent(2, when="x"), ("when",), NOW + 1, "r")
        by, why = "system", "trip@v1 superseded by v2"
    else:
        done = store.intent_withdraw(intent().ref, "ana", "changed my mind", NOW + 1, "r")
        by, why = "ana", "trip@v1 withdrawn by ana: changed my mind"
    assert done.applied and done.operations == ("op-1",)
    assert store.decisions_of("op-1") == [(1, "withdraw", None, 0, by, NOW + 1, why)]
    assert store.decisions_of("op-other") == []
    assert store.operations_due(NOW + 1, 10) == ["op-1"]
    again = store.intent_withdraw(intent().ref, "bob", "again", NOW + 2, "r")
    assert again.applied and again.operations == ()
    assert len(store.decisions_of("op-1")) == 1


def test_a_decision_about_an_unknown_operation_is_not_recorded(store: Any) -> None:
    assert store.decision_put("nope", 1, "accept", None, 0, "ana", NOW, "why", "r") is False
    store.operation_put("op-1", None, "{}", NOW, "setup")
    assert store.decision_put("op-1", 1, "retry_undo", "k1", 2, "ana", NOW, "why", "r") is True
    assert store.decision_put("op-1", 1, "accept", None, 0, "bob", NOW, "late", "r") is False
    assert store.decisions_of("op-1") == [(1, "retry_undo", "k1", 2, "ana", NOW, "why")]


def test_a_read_only_store_refuses_to_queue_work(
    backend: str, store: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Refused before anything is sent (the PostgreSQL store's check: a write statement)."""
    reader = _reader(backend, tmp_path, request)
    try:
        with pytest.raises(LedgerUnavailable, match="read-only"):
            reader.queue_put("mail", "{}", T0)
    finally:
        reader.close()
    assert store.queue_counts()["queued"] == 0


# --- PostgreSQL only --------------------------------------------------------------------


def test_a_value_postgresql_cannot_hold_is_refused_with_the_drivers_reason(
    backend: str, store: Any
) -> None:
    if backend != "postgres":
        pytest.skip("PostgreSQL's text refuses NUL; SQLite's holds it")
    with pytest.raises(UsageError, match=r"of this read \(nothing was sent\): .*NUL"):
        store.get("k\x00")


def test_a_value_postgresql_cannot_hold_in_a_transaction_is_the_callers_too(
    backend: str, store: Any
) -> None:
    """Found by this pin: inside a transaction such a value was ``LedgerUnavailable``
    ("ledger transaction failed"), as if trying again could help."""
    if backend != "postgres":
        pytest.skip("PostgreSQL's text refuses NUL; SQLite's holds it")
    with pytest.raises(UsageError, match=r"of this write \(nothing was sent\): .*NUL"):
        store.intent_create(Intent("t\x00", "booking", user="ana"), NOW, "r")
    assert store.intent_list(None, None, 10) == []
    store.operation_put("op-1", None, "{}", NOW, "setup")
    with pytest.raises(UsageError, match=r"of this write \(nothing was sent\): .*NUL"):
        store.decision_put("op-1", 1, "accept", None, 0, "a\x00na", NOW, "why", "r")
    assert store.decisions_of("op-1") == []
    assert [e.type for e in store.events("operation:op-1")] == [EventType.OPERATION_STARTED]


def test_the_async_store_too_takes_such_a_value_for_the_callers(
    pg_schema: tuple[str, str], store: Any, backend: str
) -> None:
    if backend != "postgres":
        pytest.skip("the asynchronous store is PostgreSQL's")
    from actonce import AsyncPostgresStore

    async def go() -> None:
        other = AsyncPostgresStore(pg_schema[0], schema=pg_schema[1])
        try:
            with pytest.raises(UsageError, match=r"of this write \(nothing was sent\)"):
                await other.intent_create(Intent("t\x00", "booking", user="ana"), NOW, "r")
        finally:
            await other.aclose()

    asyncio.run(go())


def test_the_async_store_too_refuses_a_packet_stored_twice_as_not_written(
    pg_schema: tuple[str, str], store: Any, backend: str
) -> None:
    if backend != "postgres":
        pytest.skip("the asynchronous store is PostgreSQL's")
    from actonce import AsyncPostgresStore

    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING), None, "run-1")

    async def go() -> BaseException:
        other = AsyncPostgresStore(pg_schema[0], schema=pg_schema[1])
        try:
            with pytest.raises(LedgerUnavailable) as refused:
                await other.approval_put(packet("k2"), None, "run-2")
            return refused.value
        finally:
            await other.aclose()

    assert not isinstance(asyncio.run(go()), LedgerOutcomeUnknown)
    assert [e.run_id for e in store.events("approval:p1")] == ["run-1"]


def test_both_postgresql_cursors_scrub_what_executemany_binds(
    pg_schema: tuple[str, str],
) -> None:
    """No statement of the store uses ``executemany`` today; one that does is scrubbed too."""
    import psycopg

    from actonce._store.pg_scrubbing import AsyncScrubbingCursor, ScrubbingCursor

    dsn, _ = pg_schema
    secret = "Authorization: Bearer 0123456789abcdefghijklmnopqrstuv"
    assert scrub_stored(secret) != secret
    rows = [(1, secret), (2, "plain")]
    expected = [(1, scrub_stored(secret)), (2, "plain")]
    with psycopg.connect(dsn, cursor_factory=ScrubbingCursor) as conn:
        conn.execute("CREATE TEMP TABLE t (n int, v text)")
        conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", rows)
        assert conn.execute("SELECT n, v FROM t ORDER BY n").fetchall() == expected

    async def go() -> list[tuple[Any, ...]]:
        async with await psycopg.AsyncConnection.connect(
            dsn, cursor_factory=AsyncScrubbingCursor
        ) as conn:
            await conn.execute("CREATE TEMP TABLE t (n int, v text)")
            await conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", rows)
            cur = await conn.execute("SELECT n, v FROM t ORDER BY n")
            return await cur.fetchall()

    assert asyncio.run(go()) == expected


def _summary(run_id: str, ended: float) -> RunSummary:
    return RunSummary(
        run_id=run_id, operator="alice", owner="host:1", token=3, status=RunStatus.COMPLETED,
        started_at=ended - 5, ended_at=ended, reconciled={"confirmed": 1},
        items=(SummaryItem("a", ItemClass.DONE, RunStage.ACT, key="k" * 64, outcome="completed",
                           status="confirmed"),),
        candidates=1,
    )  # fmt: skip


# --- seed 2 (held out: judged before these were written) --------------------------------


def test_an_extension_grows_the_owners_lease_and_never_shortens_it(store: Any) -> None:
    new = record("k1", Status.EXECUTING)
    assert store.claim(new, None, event(new)).acquired
    assert store.extend("k1", (Status.EXECUTING, 1), T0 + 90) is True
    assert store.get("k1").lease_expires_at == T0 + 90
    assert store.extend("k1", (Status.EXECUTING, 1), T0 + 70) is True  # still the owner's
    assert store.get("k1").lease_expires_at == T0 + 90
    assert store.extend("k1", (Status.EXECUTING, 2), T0 + 120) is False  # another attempt's
    assert store.extend("k1", (Status.CLAIMED, 1), T0 + 120) is False
    assert store.get("k1").lease_expires_at == T0 + 90


def test_a_settling_transition_writes_only_the_fields_it_names(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    new = gated_record("k1")
    assert store.claim(
        new, None, gated_event("k1", Status.CLAIMED), gate=Gate(intent().ref)
    ).acquired
    changed = replace(new, status=Status.FAILED, updated_at=NOW + 1, reason="x", owner="other")
    done = store.transition(
        (Status.CLAIMED, 1), changed, gated_event("k1", Status.FAILED),
        settle=Settle.RELEASE, fields=("status", "updated_at"),
    )  # fmt: skip
    assert done is not None
    got = store.get("k1")
    assert (got.status, got.updated_at, got.reason, got.owner) == (
        Status.FAILED,
        NOW + 1,
        None,
        "w",
    )
    assert {h.status for h in store.holds_of("k1")} == {"released"}


def test_a_revision_closes_a_claimed_effect_with_its_reason_and_event(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    new = gated_record("k1")
    assert store.claim(
        new, None, gated_event("k1", Status.CLAIMED), gate=Gate(intent().ref)
    ).acquired
    store.intent_revise(intent().ref, intent(2, when="x"), ("when",), NOW + 1, "r")
    why = "trip@v1 superseded by v2 before this claim crossed the boundary"
    got = store.get("k1")
    assert (got.status, got.reason, got.updated_at) == (Status.FAILED, why, NOW + 1)
    last = store.events("k1")[-1]
    assert (last.type, last.from_status, last.to_status, last.fence, last.run_id) == (
        EventType.FAILED, Status.CLAIMED, Status.FAILED, 1, "r",
    )  # fmt: skip
    assert (last.message, last.data) == (why, {"superseded_by": 2})


def test_a_withdrawal_event_names_the_version_and_who(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.intent_withdraw(intent().ref, "ana", "changed my mind", NOW + 1, "r")
    last = store.events("intent:trip")[-1]
    assert last.type is EventType.INTENT_REVISED
    assert last.message == "trip@v1 withdrawn by ana: changed my mind"
    assert last.data == {"version": 1, "withdrawn": True, "by": "ana"}


def test_a_gate_naming_a_missing_packet_is_refused_with_its_name(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    for gate in (Gate(intent().ref, "nope", Decimal("1")), Gate(None, "nope", Decimal("1"))):
        result = store.claim(gated_record("k1"), None, gated_event("k1", Status.CLAIMED), gate=gate)
        assert not result.acquired and result.refused is not None
        assert result.refused.reason == "no approval packet nope"
    assert store.get("k1") is None


def test_run_summaries_list_newest_first_per_operator(store: Any) -> None:
    one, two = _summary("op-1", T0), _summary("op-2", T0 + 10)
    bob = replace(_summary("op-3", T0 + 5), operator="bob")
    for s in (one, two, bob):
        assert store.summary_put(s)
    assert store.summary_list("alice", 10) == [two, one]
    assert store.summary_list(None, 2) == [two, bob]
    assert store.summary_list("nobody", 10) == []


@pytest.mark.parametrize("fields", [None, ("status", "updated_at")])
def test_a_read_only_store_refuses_a_transition(
    backend: str,
    store: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    fields: tuple[str, ...] | None,
) -> None:
    new = record("k1")
    assert store.claim(new, None, event(new)).acquired
    done = replace(new, status=Status.FAILED, updated_at=T0 + 1)
    reader = _reader(backend, tmp_path, request)
    try:
        with pytest.raises(LedgerUnavailable, match="read-only"):
            reader.transition((Status.CLAIMED, 1), done, event(done, Status.CLAIMED), fields=fields)
    finally:
        reader.close()
    assert store.get("k1") == new


def test_a_sqlite_url_names_its_path_after_the_third_slash(tmp_path: Path) -> None:
    where = tmp_path / "ledger.db"
    store = open_store(f"sqlite:///{where}", create=True)  # sqlite:////abs/path.db
    try:
        assert store.path == str(where)
    finally:
        store.close()


def test_a_schema_that_is_no_plain_identifier_is_refused_before_connecting() -> None:
    from actonce import PostgresStore

    with pytest.raises(BadLedgerURL, match="schema name 'a-b' must be a plain identifier"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", schema="a-b")
    assert "schema" not in PostgresStore.conninfo("postgresql://u@h:5432/db?schema=s_1")


def test_the_async_store_translates_a_refused_value_and_claims_by_compare_and_set(
    pg_schema: tuple[str, str], store: Any, backend: str
) -> None:
    """Outside a transaction, a value it cannot hold is the caller's; a gated claim with
    an expectation is a compare-and-set (a reclaim of an expired claim), not an insert."""
    if backend != "postgres":
        pytest.skip("the asynchronous store is PostgreSQL's")
    from actonce import AsyncPostgresStore

    store.intent_create(intent(), NOW, "setup")
    first = gated_record("k1")
    assert store.claim(
        first, None, gated_event("k1", Status.CLAIMED), gate=Gate(intent().ref)
    ).acquired
    again = replace(first, fence=2, owner="w2", updated_at=NOW + 100)

    async def go() -> Any:
        other = AsyncPostgresStore(pg_schema[0], schema=pg_schema[1])
        try:
            with pytest.raises(UsageError, match=r"of this read \(nothing was sent\): .*NUL"):
                await other.get("k\x00")
            return await other.claim(
                again, (Status.CLAIMED, 1), gated_event("k1", Status.CLAIMED, 2),
                gate=Gate(intent().ref),
            )  # fmt: skip
        finally:
            await other.aclose()

    won = asyncio.run(go())
    assert won.acquired and store.get("k1") == again


def _reader(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """A read-only store on the ``store`` fixture's ledger."""
    if backend == "memory":
        pytest.skip("a memory store has no read-only mode")
    if backend == "sqlite":
        return SQLiteStore(str(tmp_path / "ledger.db"), readonly=True)
    from actonce import PostgresStore

    dsn, schema = request.getfixturevalue("pg_schema")
    return PostgresStore(dsn, schema=schema, readonly=True)
