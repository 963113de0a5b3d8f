"""The effect protocol's paths, pinned where mutation testing found them loose (issue 7).

Each test pins what one path of a run or of reconcile does that a surviving
mutant changed without any fast test noticing (``docs/testing.md``,
"Mutation testing"): the crash points a path passes (where the crash suite
kills processes: a point a path stops passing is a crash window no test
covers any more), a lease that ends exactly as the perform would start, what
a clean perform and its confirmation store, what the alarm of an overtaken
owner stores, and the reasons a run and reconcile give when the ledger clock
has stepped. Memory store and a SQLite file (the ``store`` fixture), a
frozen clock, the world of ``test_rule_edges``; nothing here waits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    EventType,
    HardStop,
    Ledger,
    NotPerformed,
    Outcome,
    PayloadMismatch,
    Registry,
    Status,
    Store,
)
from actonce.testing import FrozenClock, SimulatedCrash, crash_at, observing

from .test_rule_edges import POLICY, World, edge, ledger, stale_claim, two_matches

# --- the crash points each path passes, in order -----------------------------------------------

CLAIM = ["before_claim", "after_claim"]
MARK = ["before_mark_executing", "after_mark_executing"]
RECORD = ["before_record", "after_record"]


def noting(seen: list[str]) -> Callable[[Any], None]:
    """A crash-point observer that appends each point's name to ``seen``."""
    return lambda point: seen.append(str(getattr(point, "value", point)))


def points(do: Callable[[], Any]) -> list[str]:
    seen: list[str] = []
    with observing(noting(seen)):
        do()
    return seen


def _performed_and_confirmed(lg: Ledger, world: World) -> Any:
    return lg.run(edge(world, "p1"))


def _found_before_any_claim(lg: Ledger, world: World) -> Any:
    world.made.append("p2")
    return lg.run(edge(world, "p2"))


def _duplicate_before_any_claim(lg: Ledger, world: World) -> Any:
    return lg.run(replace(edge(world, "p3"), verify=lambda: two_matches("p3")))


def _performed_not_found(lg: Ledger, world: World) -> Any:
    return lg.run(edge(world, "p4", perform=lambda: None))


def _stop_after_the_claim(lg: Ledger, world: World) -> Any:
    looks: list[int] = []

    def verify() -> Any:
        looks.append(1)
        if len(looks) == 1:  # the look under the claim, before the mark
            raise HardStop("CAPTCHA is visible")
        return Absent()

    return lg.run(replace(edge(world, "p5"), verify=verify))


def _direct_claim(lg: Ledger, world: World) -> Any:
    policy = replace(POLICY, verify_after_claim=False)
    return lg.run(edge(world, "p6", policy=policy))


@pytest.mark.parametrize(
    ("path", "outcome", "expected"),
    [
        (_performed_and_confirmed, Outcome.COMPLETED, CLAIM + MARK + ["after_perform", *RECORD]),
        # Claim first: a result found by the first look is recorded under the claim.
        (_found_before_any_claim, Outcome.SKIPPED, CLAIM + RECORD),
        (_duplicate_before_any_claim, Outcome.NEEDS_REVIEW, CLAIM + RECORD),
        (_performed_not_found, Outcome.NEEDS_REVIEW, CLAIM + MARK + ["after_perform", *RECORD]),
        (_stop_after_the_claim, Outcome.HARD_STOP, CLAIM + RECORD),
        # The claim is the mark itself: no separate mark, no look between them.
        (
            _direct_claim,
            Outcome.COMPLETED,
            [*CLAIM, "after_mark_executing", "after_perform", *RECORD],
        ),
    ],
    ids=["confirmed", "found-first", "duplicate-first", "not-found", "stop-after-claim", "direct"],
)
def test_the_crash_points_a_path_passes(
    store: Store,
    clock: FrozenClock,
    path: Callable[[Ledger, World], Any],
    outcome: Outcome,
    expected: list[str],
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    results: list[Any] = []
    assert points(lambda: results.append(path(lg, world))) == expected
    assert results[0].outcome is outcome


def test_a_crash_before_the_verdict_is_recorded_leaves_it_to_reconcile(
    store: Store, clock: FrozenClock
) -> None:
    """Killed right before its verdict is written, the owner leaves its executing mark:
    reconcile confirms what it performed, and nothing is performed again."""
    world = World()
    lg = ledger(store, clock, world)
    with pytest.raises(SimulatedCrash), crash_at("before_record"):
        lg.run(edge(world, "late"))
    stored = store.get("edge:late")
    assert stored is not None and stored.status is Status.EXECUTING
    clock.advance(POLICY.lease_seconds + 1)
    [result] = lg.reconcile().results
    assert result.status is Status.CONFIRMED and world.made == ["late"]


# --- the perform: a lease that ends as it would start; a clean perform -------------------------


def test_an_owner_whose_lease_ends_as_the_perform_would_start_does_not_perform(
    store: Store, clock: FrozenClock
) -> None:
    """The process stops right after its mark, for exactly its lease (a paused VM): at
    the lease's last instant it no longer owns the effect, so it performs nothing."""
    world = World()
    lg = ledger(store, clock, world)

    def pause(point: Any) -> None:
        if str(getattr(point, "value", point)) == "after_mark_executing":
            clock.advance(POLICY.lease_seconds)

    with observing(pause):
        result = lg.run(edge(world, "paused"))
    assert world.made == []
    assert result.outcome is Outcome.FAILED and not result.performed
    assert result.reason == (
        "perform stopped before the boundary, nothing was performed: "
        "the lease expired before perform started"
    )
    stored = store.get("edge:paused")
    assert stored is not None and stored.status is Status.FAILED
    assert stored.reason == result.reason


def test_the_mark_renews_the_lease_a_slow_look_after_the_claim_used_up(
    store: Store, clock: FrozenClock
) -> None:
    """The look between the claim and the mark takes 20 s: the mark carries its own time
    and a full lease from it, so the perform starts with the whole lease ahead."""
    world = World()
    looks: list[int] = []
    during: list[Any] = []

    def slow_look() -> Any:
        looks.append(1)
        if len(looks) == 1:  # the look under the claim
            clock.advance(20)
        return world.verify("slow-look")

    def perform() -> None:
        during.append(store.get("edge:slow-look"))
        world.made.append("slow-look")

    claimed_at = clock.now()
    effect = replace(edge(world, "slow-look", perform=perform), verify=slow_look)
    assert ledger(store, clock, world).run(effect).outcome is Outcome.COMPLETED
    [mark] = during
    assert mark.executing_at == claimed_at + 20
    assert mark.lease_expires_at == mark.executing_at + POLICY.lease_seconds


def test_a_clean_perform_and_its_confirmation_store_no_error(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    result = ledger(store, clock, world).run(edge(world, "clean"))
    assert result.outcome is Outcome.COMPLETED and result.reason is None
    stored = store.get("edge:clean")
    assert stored is not None
    assert (stored.status, stored.reason, stored.matches) == (Status.CONFIRMED, None, 1)
    assert stored.lease_expires_at <= clock.now()  # the owner gave its lease back
    [confirmed] = [e for e in store.events("edge:clean") if e.type is EventType.CONFIRMED]
    assert confirmed.message is None
    assert confirmed.data["perform"] == {"seconds": 0.0}


def test_a_confirmation_without_a_reference_stores_none(store: Store, clock: FrozenClock) -> None:
    world = World()
    made: list[int] = []
    effect = edge(world, "no-ref", perform=lambda: made.append(1))
    result = ledger(store, clock, world).run(
        replace(effect, verify=lambda: Confirmed() if made else Absent())
    )
    assert result.outcome is Outcome.COMPLETED and result.result_ref is None
    stored = store.get("edge:no-ref")
    assert stored is not None and stored.result_ref is None


# --- the overtaken owner's alarm ---------------------------------------------------------------


OVERTAKEN_BY_FAILED = (
    "attempt 1 performed after being overtaken (the effect was failed under attempt 1); "
    "it may have happened twice: a human decides"
)


def test_the_alarm_of_an_overtaken_owner_says_why_and_what_it_did(
    store: Store, clock: FrozenClock
) -> None:
    """The perform outlasts lease + settle; reconcile fails the effect meanwhile. The
    owner's one write is the alarm: the review's reason, the perform's details (its
    secrets scrubbed), at the crash point before a record."""
    world = World()
    secret = "pw-CANARY-77"
    seen: list[str] = []

    def slow() -> dict[str, str]:
        clock.advance(POLICY.lease_seconds + POLICY.settle_seconds + 1)
        ledger(store, clock, world).reconcile()
        world.made.append("slow")
        seen.clear()  # the points from here on are the owner's
        return {"page": "booked", "echo": f"password {secret}"}

    base = edge(world, "slow", perform=slow)
    effect = replace(base, payload={"ref": "slow", "password": secret})
    with observing(noting(seen)):
        result = ledger(store, clock, world).run(effect)
    # Its verdict (unknown: absent inside the window) loses the compare-and-set;
    # reloaded, the record says it was overtaken: the alarm is written instead.
    assert seen == ["after_perform", "before_record", *RECORD]
    assert result.outcome is Outcome.NEEDS_REVIEW and result.performed
    stored = store.get("edge:slow")
    assert stored is not None and stored.status is Status.NEEDS_REVIEW
    assert stored.reason == OVERTAKEN_BY_FAILED
    [alarm] = [e for e in store.events("edge:slow") if e.type is EventType.NEEDS_REVIEW]
    assert alarm.message == OVERTAKEN_BY_FAILED
    details = alarm.data["perform"]["details"]
    assert details["page"] == "booked" and secret not in details["echo"]


def test_the_alarm_returns_the_reason_it_stores(store: Store, clock: FrozenClock) -> None:
    world = World()

    def slow() -> None:
        clock.advance(POLICY.lease_seconds + POLICY.settle_seconds + 1)
        ledger(store, clock, world).reconcile()
        world.made.append("found-failed")

    result = ledger(store, clock, world).run(edge(world, "found-failed", perform=slow))
    assert result.outcome is Outcome.NEEDS_REVIEW
    assert result.reason == OVERTAKEN_BY_FAILED


def test_the_alarm_on_a_settled_record_is_noted_under_the_current_attempt(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    second: list[Any] = []

    def slow() -> None:
        clock.advance(POLICY.lease_seconds + POLICY.settle_seconds + 1)
        ledger(store, clock, world).reconcile()  # absent: failed
        second.append(ledger(store, clock, world).run(edge(world, "twice")))
        world.made.append("twice")

    result = ledger(store, clock, world).run(edge(world, "twice", perform=slow))
    assert second[0].attempt == 2 and result.outcome is Outcome.NEEDS_REVIEW
    [note] = [e for e in store.events("edge:twice") if e.type is EventType.OVERTAKEN]
    assert note.fence == 2 and note.at == clock.now()


# --- someone else's record: what a run notes on it -----------------------------------------


def test_an_unavailable_look_at_someone_elses_record_is_noted_under_its_attempt(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    busy: list[Any] = []

    def perform() -> None:
        world.down = "HTTP 503"
        busy.append(ledger(store, clock, world).run(edge(world, "shared")))
        world.down = None
        world.made.append("shared")

    lg.run(edge(world, "shared", perform=perform))
    assert busy[0].outcome is Outcome.DEFERRED
    assert busy[0].reason == "verification unavailable: HTTP 503"
    [note] = [
        e for e in store.events("edge:shared") if e.type is EventType.VERIFICATION_UNAVAILABLE
    ]
    assert (note.fence, note.message) == (1, "HTTP 503")


# --- a stepped ledger clock -------------------------------------------------------------------


def test_a_run_after_a_clock_step_counts_anothers_lease_as_live(
    store: Store, clock: FrozenClock
) -> None:
    """While the owner performs, the ledger clock steps forward an hour: its lease looks
    long expired, but a stepped clock proves nothing; another run keeps its hands off."""
    world = World()
    other: list[Any] = []

    def perform() -> None:
        clock.step(3600)
        other.append(ledger(store, clock, world).run(edge(world, "stepped")))
        world.made.append("stepped")

    ledger(store, clock, world).run(edge(world, "stepped", perform=perform))
    [result] = other
    assert result.outcome is Outcome.DEFERRED and not result.performed
    assert result.reason == "the ledger clock stepped: another owner's lease counts as live"
    assert world.made == ["stepped"]


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (3600.0, "the ledger clock stepped; left alone"),
        # Back by less than the step bound: the clock is trusted, and by it the
        # owner's lease has not run out yet.
        (-0.8, "owner's lease is live; left alone"),
    ],
    ids=["stepped", "live-again"],
)
def test_reconcile_leaves_an_orphan_alone_when_the_time_moved_after_triage(
    store: Store, clock: FrozenClock, step: float, reason: str
) -> None:
    world = World()
    for ref in ("o1", "o2"):
        with pytest.raises(SimulatedCrash), crash_at("after_mark_executing"):
            ledger(store, clock, world).run(edge(world, ref))
    clock.advance(POLICY.lease_seconds + 0.5)  # both orphaned, by half a second
    looked: list[str] = []

    def verify(record: Any) -> Any:
        if not looked:
            clock.step(step)
        looked.append(record.key)
        return Absent()

    reg = Registry()
    reg.register("edge", verify, policy=POLICY)
    report = Ledger(store, clock=clock, registry=reg).reconcile()
    [other] = [r for r in report.results if r.key != looked[0]]
    assert looked == [looked[0]]  # the second orphan was not looked at
    assert other.outcome is Outcome.DEFERRED and other.reason == reason
    assert other.status is Status.EXECUTING
    stored = store.get(other.key)
    assert stored is not None and stored.status is Status.EXECUTING


# --- races the loop must end: a record that keeps changing; reconcile never claims ----------


def test_a_run_whose_every_claim_loses_gives_up_without_performing(
    store: Store, clock: FrozenClock
) -> None:
    """Right before each of this run's claims another worker claims the key and declines
    (failed, re-claimable): every claim of this run loses to a newer attempt. The run
    gives up after a bounded number of steps instead of chasing the record forever."""
    world = World()
    others: list[Any] = []
    inside: list[int] = []

    def decline() -> None:
        raise NotPerformed("form closed")

    def churn(point: Any) -> None:
        if str(getattr(point, "value", point)) == "before_claim" and not inside:
            inside.append(1)
            try:
                others.append(
                    ledger(store, clock, world).run(edge(world, "churn", perform=decline))
                )
            finally:
                inside.pop()

    with observing(churn):
        result = ledger(store, clock, world).run(edge(world, "churn"))
    assert result.outcome is Outcome.DEFERRED and not result.performed
    assert result.reason == "the record kept changing; try again"
    stored = store.get("edge:churn")
    assert stored is not None and stored.status is Status.FAILED
    assert (result.key, result.status, result.attempt) == ("edge:churn", Status.FAILED, len(others))
    assert world.made == []


def test_reconcile_that_loses_its_release_to_a_declined_retry_never_claims(
    store: Store, clock: FrozenClock
) -> None:
    """While reconcile verifies a stale claim, a worker retries the effect, takes the
    claim over and declines (failed, re-claimable). Reconcile's release loses; it finds
    a key anyone may claim, and leaves it: reconcile never claims, never performs."""
    world = World()
    stale_claim(store, clock, world, "race")
    retries: list[Any] = []

    def decline() -> None:
        raise NotPerformed("form closed")

    def verify(record: Any) -> Any:
        if not retries:
            retries.append(ledger(store, clock, world).run(edge(world, "race", perform=decline)))
        return Absent()

    reg = Registry()
    reg.register("edge", verify, policy=POLICY)
    [result] = Ledger(store, clock=clock, registry=reg).reconcile().results
    assert retries[0].outcome is Outcome.FAILED and retries[0].attempt == 2
    assert result.outcome is Outcome.FAILED and not result.performed
    assert result.reason == "released: nothing was performed"
    assert (result.status, result.attempt) == (Status.FAILED, 2)
    assert world.made == []
    stored = store.get("edge:race")
    assert stored is not None and (stored.status, stored.fence) == (Status.FAILED, 2)


# --- what a run notes without a record, and on a record of another payload --------------------


def test_a_note_without_a_record_is_under_attempt_0(store: Store, clock: FrozenClock) -> None:
    world = World()
    world.stop = "login wall is visible"
    ledger(store, clock, world).run(edge(world, "no-record"))
    claimed, released, note = store.events("edge:no-record")  # the claim given back
    assert (claimed.type, released.type) == (EventType.CLAIMED, EventType.RELEASED)
    assert (note.type, note.fence) == (EventType.HARD_STOP, 0)
    assert store.get("edge:no-record") is None


def test_a_payload_mismatch_is_noted_on_the_record_it_was_refused_by(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    lg.run(edge(world, "mine"))
    other = replace(edge(world, "mine"), payload={"ref": "mine", "extra": 1})
    with pytest.raises(PayloadMismatch) as raised:
        lg.run(other)
    [note] = [e for e in store.events("edge:mine") if e.type is EventType.PAYLOAD_MISMATCH]
    assert note.fence == 1
    assert note.message == f"refused payload {raised.value.given_hash}"
