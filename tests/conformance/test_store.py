"""Every Store primitive behaves the same on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from actonce import Confirmed, Effect, Event, EventType, Ledger, Policy, Status
from actonce._rules.model import EffectRecord

T0 = 1_700_000_000.0


def record(key: str, status: Status = Status.CLAIMED, fence: int = 1, **kw: Any) -> EffectRecord:
    base: dict[str, Any] = dict(
        kind="post",
        owner="run-a",
        lease_expires_at=T0 + 60,
        payload='{"text":"hi"}',
        payload_hash="h" * 64,
        created_at=T0,
        updated_at=T0,
    )
    base.update(kw)
    return EffectRecord(key=key, status=status, fence=fence, **base)


def event(r: EffectRecord, frm: Status | None = None, **kw: Any) -> Event:
    return Event(
        key=r.key,
        type=EventType(r.status.value),
        at=r.updated_at,
        fence=r.fence,
        run_id=r.owner,
        from_status=frm,
        to_status=r.status,
        **kw,
    )


def test_get_missing(store: Any) -> None:
    assert store.get("nope") is None
    assert store.events("nope") == []


def test_claim_inserts_once_and_returns_the_winner_as_a_value(store: Any) -> None:
    first = record("k1", owner="a")
    won = store.claim(first, None, event(first))
    assert won.acquired and won.record == first
    second = record("k1", owner="b")
    lost = store.claim(second, None, event(second))
    assert not lost.acquired
    assert lost.record == first
    assert store.get("k1") == first
    assert [e.run_id for e in store.events("k1")] == ["a"]


def test_claim_race_between_threads_has_one_winner(store: Any) -> None:
    n = 12
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def go(i: int) -> None:
        r = record("race", owner=f"w{i}")
        barrier.wait()
        results[i] = store.claim(r, None, event(r))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if r.acquired]
    assert len(winners) == 1
    assert all(r.record == winners[0].record for r in results)
    assert len(store.events("race")) == 1


def test_claim_with_expectation_is_a_compare_and_set(store: Any) -> None:
    old = record("k", Status.FAILED, 1)
    store.claim(old, None, event(old))
    again = record("k", Status.CLAIMED, 2, owner="b", updated_at=T0 + 1)
    stale = store.claim(again, (Status.CLAIMED, 1), event(again, Status.FAILED))
    assert not stale.acquired and stale.record == old
    won = store.claim(again, (Status.FAILED, 1), event(again, Status.FAILED))
    assert won.acquired and store.get("k") == again
    late = record("k", Status.CLAIMED, 2, owner="c")
    assert not store.claim(late, (Status.FAILED, 1), event(late, Status.FAILED)).acquired
    assert [e.fence for e in store.events("k")] == [1, 2]


def test_transition_cas_and_its_event_commit_together(store: Any) -> None:
    r = record("t")
    store.claim(r, None, event(r))
    executing = replace(r, status=Status.EXECUTING, executing_at=T0 + 1, updated_at=T0 + 1)
    assert store.transition((Status.CLAIMED, 1), executing, event(executing, Status.CLAIMED)) == (
        executing
    )
    # The same move again no longer matches: nothing written, no event.
    assert (
        store.transition((Status.CLAIMED, 1), executing, event(executing, Status.CLAIMED)) is None
    )
    # A fenced-out writer (old fence) is refused too.
    zombie = replace(executing, status=Status.CONFIRMED, fence=1)
    assert store.transition((Status.EXECUTING, 0), zombie, event(zombie)) is None
    done = replace(executing, status=Status.CONFIRMED, result_ref="u/1", updated_at=T0 + 2)
    assert store.transition((Status.EXECUTING, 1), done, event(done, Status.EXECUTING)) == done
    assert store.get("t") == done
    history = store.events("t")
    assert [e.type for e in history] == [
        EventType.CLAIMED,
        EventType.EXECUTING,
        EventType.CONFIRMED,
    ]
    seqs = [e.seq for e in history]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


def test_a_transition_expecting_unknown_on_a_row_in_review_at_that_fence_changes_nothing(
    store: Any,
) -> None:
    """The row is ``needs_review`` at fence 3; a writer that still believes it ``unknown``
    at fence 3 (a reviewer's resolve, a reconcile) is refused: same fence, other status.
    Nothing changes and no event is written, whichever columns the move sets."""
    r = record("rv", Status.NEEDS_REVIEW, 3, reason="two results found")
    store.claim(r, None, event(r))
    before = store.events("rv")
    confirmed = replace(r, status=Status.CONFIRMED, result_ref="u/9", updated_at=T0 + 5)
    moved = event(confirmed, Status.UNKNOWN, message="a reviewer said it happened")
    for fields in (None, ("status", "updated_at", "reason", "result_ref")):
        got = store.transition((Status.UNKNOWN, 3), confirmed, moved, fields=fields)
        assert got is None, (
            f"a move expecting unknown at fence 3 changed a row in review ({fields})"
        )
        assert store.get("rv") == r
        assert store.events("rv") == before, "a refused move wrote an event"


def released(r: EffectRecord, to: EffectRecord | None) -> Event:
    return Event(
        key=r.key,
        type=EventType.RELEASED,
        at=r.updated_at,
        fence=r.fence,
        run_id=r.owner,
        from_status=r.status,
        to_status=None if to is None else to.status,
    )


def test_release_gives_an_unperformed_claim_back_by_compare_and_set(store: Any) -> None:
    # A claim of a new key, given back: no row, as if never claimed, and one event.
    fresh = record("rel")
    store.claim(fresh, None, event(fresh))
    assert not store.release("rel", (Status.CLAIMED, 2), None, released(fresh, None))
    assert not store.release("rel", (Status.EXECUTING, 1), None, released(fresh, None))
    assert store.get("rel") == fresh  # a stale expectation writes nothing
    assert store.release("rel", (Status.CLAIMED, 1), None, released(fresh, None))
    assert store.get("rel") is None
    assert not store.release("rel", (Status.CLAIMED, 1), None, released(fresh, None))
    assert [e.type for e in store.events("rel")] == [EventType.CLAIMED, EventType.RELEASED]
    # The next claim takes the key as new, and the counts do not see the released row.
    again = record("rel", owner="b", updated_at=T0 + 1)
    assert store.claim(again, None, event(again)).acquired
    # A re-claim of a failed attempt, given back: the failed row exactly as it was.
    old = record("rel2", Status.FAILED, 1, reason="declined")
    store.claim(old, None, event(old))
    claim = record("rel2", Status.CLAIMED, 2, owner="c", updated_at=T0 + 5)
    assert store.claim(claim, (Status.FAILED, 1), event(claim, Status.FAILED)).acquired
    assert store.release("rel2", (Status.CLAIMED, 2), old, released(claim, old))
    assert store.get("rel2") == old
    history = store.events("rel2")
    assert [(e.type, e.fence, e.to_status) for e in history] == [
        (EventType.FAILED, 1, Status.FAILED),
        (EventType.CLAIMED, 2, Status.CLAIMED),
        (EventType.RELEASED, 2, Status.FAILED),
    ]


def test_append_event_keeps_data_and_order(store: Any) -> None:
    r = record("e")
    store.claim(r, None, event(r))
    store.append_event(
        Event(key="e", type=EventType.EVIDENCE, at=T0 + 3, fence=1, run_id="x", data={"a": [1, 2]})
    )
    store.append_event(Event(key="e", type=EventType.CLAIM_REJECTED, at=T0 + 4, message="held"))
    history = store.events("e")
    assert [e.type for e in history] == [
        EventType.CLAIMED,
        EventType.EVIDENCE,
        EventType.CLAIM_REJECTED,
    ]
    assert history[1].data == {"a": [1, 2]}
    assert history[2].message == "held" and history[2].from_status is None


def test_select_open_effects_counts_and_prefix(store: Any) -> None:
    rows = [
        record("aa01", Status.CLAIMED, updated_at=T0 + 5, lease_expires_at=T0 + 30),
        record("aa02", Status.EXECUTING, updated_at=T0 + 1, lease_expires_at=T0 + 10),
        record("ab03", Status.CONFIRMED, updated_at=T0 + 3, kind="like"),
        record("b004", Status.UNKNOWN, updated_at=T0 + 2, lease_expires_at=T0 + 20),
        record("b005", Status.NEEDS_REVIEW, updated_at=T0 + 4, kind="like"),
    ]
    for r in rows:
        assert store.claim(r, None, event(r)).acquired
    assert [r.key for r in store.select()] == ["aa02", "b004", "ab03", "b005", "aa01"]
    assert [r.key for r in store.select(limit=2)] == ["aa02", "b004"]
    assert [r.key for r in store.select([Status.CONFIRMED, Status.NEEDS_REVIEW])] == [
        "ab03",
        "b005",
    ]
    assert [r.key for r in store.select(None, 100, "like")] == ["ab03", "b005"]
    assert [r.key for r in store.select([Status.CLAIMED], 100, "like")] == []
    assert [r.key for r in store.open_effects()] == ["aa02", "b004", "aa01"]
    assert store.counts() == {
        Status.CLAIMED: 1,
        Status.EXECUTING: 1,
        Status.CONFIRMED: 1,
        Status.UNKNOWN: 1,
        Status.NEEDS_REVIEW: 1,
    }
    assert store.match_prefix("aa") == ["aa01", "aa02"]
    assert store.match_prefix("a", 10) == ["aa01", "aa02", "ab03"]
    assert store.match_prefix("b00", 1) == ["b004"]
    assert store.match_prefix("c") == []
    assert len(store.ledger_id) == 32


def test_ledger_runs_one_effect_end_to_end(store: Any) -> None:
    performed: list[int] = []
    ledger = Ledger(store)
    effect = Effect(
        key="e2e",
        kind="post",
        payload={"text": "hello"},
        perform=lambda: performed.append(1),
        verify=lambda: Confirmed("post/1") if performed else __import__("actonce").Absent(),
        policy=Policy(verify_after_claim=True),
    )
    first = ledger.run(effect)
    second = ledger.run(effect)
    assert first.performed and first.done
    assert second.done and not second.performed
    assert performed == [1]
    assert [e.type for e in ledger.events("e2e")][:3] == [
        EventType.CLAIMED,
        EventType.EXECUTING,
        EventType.CONFIRMED,
    ]


def test_select_pages_by_keyset_over_several_statuses(store: Any) -> None:
    # Ties on updated_at are broken by the key; a page starts strictly after
    # the (updated_at, key) of the previous page's last row.
    rows = [
        record(f"k{i:02d}", status, updated_at=T0 + i // 2, kind="like" if i % 3 else "post")
        for i, status in enumerate([Status.UNKNOWN, Status.NEEDS_REVIEW, Status.CONFIRMED] * 4)
    ]
    for r in rows:
        assert store.claim(r, None, event(r)).acquired
    wanted = [Status.UNKNOWN, Status.NEEDS_REVIEW]
    expected = [r.key for r in rows if r.status in wanted]
    seen: list[str] = []
    after = None
    while True:
        page = store.select(wanted, 3) if after is None else store.select(wanted, 3, None, after)
        if not page:
            break
        assert len(page) <= 3
        seen += [r.key for r in page]
        after = (page[-1].updated_at, page[-1].key)
    assert seen == expected
    likes = store.select(wanted, 100, "like", (T0 + 1, "k02"))
    assert [r.key for r in likes] == [
        r.key for r in rows[3:] if r.status in wanted and r.kind == "like"
    ]
    assert store.counts(wanted) == {Status.UNKNOWN: 4, Status.NEEDS_REVIEW: 4}
    assert store.counts([Status.FAILED]) == {Status.FAILED: 0}
    assert store.counts()[Status.CONFIRMED] == 4
