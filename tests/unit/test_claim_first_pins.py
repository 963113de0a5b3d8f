"""Claim first, pinned where the protocol's mutation run found it loose (issue 22 item 2).

The paths claim first added or changed, each with what it must write and
report: a hard stop seen by the look under a claim (released, or failed when
the claim is gated and cannot be given back), a precondition that stops a
claimed run, a release that loses its compare-and-set, a duplicate found by
the first look of a run that looks before it claims, and a held record that
says nothing of its own. See docs/testing.md, "Mutation testing". Memory store
and a SQLite file, a frozen clock, the world of ``test_rule_edges``; nothing
here waits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from actonce import (
    Absent,
    Budgets,
    Confirmed,
    Effect,
    EventType,
    HardStop,
    NotPerformed,
    Outcome,
    Status,
    Store,
    Unavailable,
)
from actonce._rules.model import EffectRecord, Event
from actonce.testing import FrozenClock, observing

from .test_rule_edges import POLICY, World, edge, ledger

RELEASED = "released: nothing was performed"


def looks(*answers: Callable[[], Any]) -> Callable[[], Any]:
    """A verifier that answers with ``answers`` in turn (the last one from then on)."""
    asked: list[int] = []

    def verify() -> Any:
        asked.append(1)
        return answers[min(len(asked), len(answers)) - 1]()

    return verify


def stop(reason: str) -> Callable[[], Any]:
    def wall() -> Any:
        raise HardStop(reason)

    return wall


def of(store: Store, key: str, type_: EventType) -> list[Event]:
    return [e for e in store.events(key) if e.type is type_]


def run_seen(lg: Any, effect: Effect) -> tuple[Any, list[str]]:
    """``lg.run(effect)`` and the crash points it passed, in order."""
    seen: list[str] = []
    with observing(lambda point: seen.append(str(getattr(point, "value", point)))):
        result = lg.run(effect)
    return result, seen


# --- a hard stop seen by the look under the claim ------------------------------------------


def test_a_hard_stop_under_a_new_claim_is_noted_after_the_release(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    result = lg.run(replace(edge(world, "wall"), verify=stop("login wall is visible")))
    assert (
        result.outcome is Outcome.HARD_STOP and result.reason == "hard stop: login wall is visible"
    )
    assert store.get("edge:wall") is None, "the claim of a new key was not given back"
    types = [e.type for e in store.events("edge:wall")]
    assert types == [EventType.CLAIMED, EventType.RELEASED, EventType.HARD_STOP], types
    [released] = of(store, "edge:wall", EventType.RELEASED)
    assert released.message == f"hard stop before perform: login wall is visible; {RELEASED}"
    assert (released.from_status, released.to_status, released.fence) == (Status.CLAIMED, None, 1)
    assert released.data == {}, "a release's event carries an empty mapping, as every event does"
    [note] = of(store, "edge:wall", EventType.HARD_STOP)
    assert note.message == "seen by verification: login wall is visible", (
        "the hard stop's note lost what verification saw"
    )
    assert note.fence == 0 and note.at == clock.now()  # under no attempt: the key has no record
    assert world.made == []


def test_a_hard_stop_under_a_gated_claim_fails_it_and_gives_the_draw_back(
    store: Store, clock: FrozenClock
) -> None:
    """A gated claim looks first, then claims (taking its budget draw), then looks again
    under the claim. A wall seen by that second look cannot release the claim (its draw
    would vanish with the row): the attempt is failed, recorded at the record's crash
    points, and the draw goes back to the pool, so the next run claims and performs."""
    world = World()
    lg = ledger(store, clock, world)
    lg.budgets.define("posts", 1)
    effect = replace(edge(world, "gated"), gate=Budgets.gate("posts"))
    result, seen = run_seen(lg, replace(effect, verify=looks(Absent, stop("CAPTCHA"))))
    assert result.outcome is Outcome.HARD_STOP and result.reason == "hard stop: CAPTCHA"
    assert not result.performed and world.made == []
    stored = store.get("edge:gated")
    assert stored is not None and stored.status is Status.FAILED and stored.fence == 1, stored
    assert stored.reason == f"hard stop before perform: CAPTCHA; {RELEASED}"
    [failed] = of(store, "edge:gated", EventType.FAILED)
    assert failed.message == stored.reason and failed.to_status is Status.FAILED
    assert seen == ["before_claim", "after_claim", "before_record", "after_record"], seen
    assert [u.used for u in lg.budgets.usage("posts")] == [0], "the failed claim kept its draw"
    again = lg.run(effect)
    assert again.outcome is Outcome.COMPLETED and world.made == ["gated"]


# --- a precondition asked under the claim ---------------------------------------------------


def test_a_precondition_that_no_longer_holds_releases_the_claim_with_its_reason(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    result = lg.run(edge(world, "pre", precondition=lambda: False))
    assert result.outcome is Outcome.FAILED and result.reason == "precondition no longer holds"
    assert store.get("edge:pre") is None
    [released] = of(store, "edge:pre", EventType.RELEASED)
    assert released.message == f"precondition no longer holds; {RELEASED}"
    [note] = of(store, "edge:pre", EventType.PRECONDITION_FAILED)
    assert note.message == "precondition no longer holds"


def test_a_precondition_that_raises_a_hard_stop_releases_the_claim_with_its_reason(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    result = lg.run(edge(world, "pre-stop", precondition=stop("account suspended")))
    assert result.outcome is Outcome.HARD_STOP and result.reason == "account suspended"
    [released] = of(store, "edge:pre-stop", EventType.RELEASED)
    assert released.message == f"hard stop before perform: account suspended; {RELEASED}"
    [note] = of(store, "edge:pre-stop", EventType.HARD_STOP)
    assert note.message == "account suspended"


# --- a release that loses ------------------------------------------------------------------


def test_a_release_that_loses_reports_the_record_as_it_now_is(
    store: Store, clock: FrozenClock
) -> None:
    """While this run's look is out, its claim goes stale and another run takes the key
    over, performs and confirms it. The look comes back unavailable: the release finds
    the row changed, changes nothing, and the run reports the record as it is now."""
    world = World()
    lg = ledger(store, clock, world)

    def slow_look() -> Any:
        clock.advance(POLICY.lease_seconds + 1)  # this run's claim runs out meanwhile
        other = ledger(store, clock, world).run(edge(world, "lost"))
        assert other.outcome is Outcome.COMPLETED and other.attempt == 2, other
        return Unavailable("HTTP 503")

    result = lg.run(replace(edge(world, "lost"), verify=slow_look))
    assert (
        result.outcome is Outcome.DEFERRED and result.reason == "verification unavailable: HTTP 503"
    )
    assert result.status is Status.CONFIRMED and result.attempt == 2, (
        "the run did not report the record the lost release found"
    )
    stored = store.get("edge:lost")
    assert stored is not None and stored.status is Status.CONFIRMED and stored.fence == 2
    assert of(store, "edge:lost", EventType.RELEASED) == []
    assert world.made == ["lost"]


# --- a duplicate found by a run that looks before it claims -------------------------------


def test_a_duplicate_found_before_a_direct_claim_is_recorded_for_review(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    policy = replace(POLICY, verify_after_claim=False)  # the claim is the mark: look first
    dup = Confirmed("post:1", count=2, refs=("post:1", "post:2"))
    result, seen = run_seen(lg, replace(edge(world, "dup", policy=policy), verify=lambda: dup))
    assert result.outcome is Outcome.NEEDS_REVIEW and not result.performed
    assert seen == ["before_record", "after_record"], seen
    stored = store.get("edge:dup")
    assert stored is not None, "the duplicate found first was not recorded"
    assert (stored.status, stored.fence, stored.matches, stored.result_ref) == (
        Status.NEEDS_REVIEW,
        1,
        2,
        "post:1",
    )
    assert stored.updated_at == clock.now() and stored.kind == "edge"
    assert stored.reason == result.reason and result.reason is not None
    assert "duplicate detected: 2 matching results" in result.reason
    [event] = store.events("edge:dup")
    assert (event.type, event.to_status, event.fence, event.at) == (
        EventType.NEEDS_REVIEW,
        Status.NEEDS_REVIEW,
        1,
        clock.now(),
    )
    assert event.message == stored.reason
    assert event.data.get("duplicate") == {"count": 2, "refs": ["post:1", "post:2"]}
    assert world.made == []


# --- a held record that says nothing of its own ------------------------------------------


def test_a_held_record_without_a_reason_reports_an_unresolved_outcome(
    store: Store, clock: FrozenClock
) -> None:
    """A record in doubt written without a reason (an older ledger, a tool of one's own):
    a run holds and says why, instead of returning no reason at all."""
    world = World()
    lg = ledger(store, clock, world)
    done = lg.run(edge(world, "held", perform=lambda: None))  # performed, not found
    assert done.status is Status.UNKNOWN
    record = store.get("edge:held")
    assert record is not None
    silent: EffectRecord = replace(record, reason=None)
    note = Event("edge:held", EventType.UNKNOWN, clock.now(), record.fence, "a-tool",
                 Status.UNKNOWN, Status.UNKNOWN)  # fmt: skip
    assert store.transition((record.status, record.fence), silent, note) is not None
    world.down = "HTTP 503"  # the look cannot settle it: the run holds
    held = lg.run(edge(world, "held"))
    assert (held.outcome, held.status, held.performed) == (
        Outcome.NEEDS_REVIEW,
        Status.UNKNOWN,
        False,
    ), held
    assert held.reason == "outcome unresolved", held.reason


def test_a_declined_then_confirmed_run_is_unaffected_by_a_release(
    store: Store, clock: FrozenClock
) -> None:
    """Sanity for the pins above: a failed attempt re-claimed and confirmed by its look
    is recorded under the claim (no release, no second perform)."""
    world = World()
    lg = ledger(store, clock, world)

    def decline() -> None:
        raise NotPerformed("not sent")

    assert lg.run(edge(world, "again", perform=decline)).status is Status.FAILED
    world.made.append("again")  # it was sent after all
    found = lg.run(edge(world, "again"))
    assert found.outcome is Outcome.SKIPPED and found.status is Status.CONFIRMED
    assert of(store, "edge:again", EventType.RELEASED) == []


def test_a_result_found_before_a_direct_claim_is_recorded_confirmed(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    world.made.append("found")  # it exists before this run
    policy = replace(POLICY, verify_after_claim=False)  # the claim is the mark: look first
    result, seen = run_seen(lg, edge(world, "found", policy=policy))
    assert result.outcome is Outcome.SKIPPED and not result.performed
    assert (result.status, result.attempt, result.result_ref) == (Status.CONFIRMED, 1, "found")
    assert seen == ["before_record", "after_record"], seen
    stored = store.get("edge:found")
    assert stored is not None, "the result found first was not recorded"
    assert (stored.status, stored.fence, stored.matches, stored.result_ref, stored.kind) == (
        Status.CONFIRMED,
        1,
        1,
        "found",
        "edge",
    )
    assert stored.updated_at == clock.now() and stored.executing_at is None
    assert stored.gated is False, "an ungated run's record says it is gated"
    [event] = store.events("edge:found")
    assert (event.type, event.to_status, event.fence, event.message) == (
        EventType.CONFIRMED,
        Status.CONFIRMED,
        1,
        "result existed before any claim",
    )
    assert event.data.get("result_ref") == "found"
    assert world.made == ["found"]


# --- a run that looks before it claims: its precondition, a claim it loses -------------


def test_a_direct_claims_precondition_is_asked_once_before_the_claim(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    policy = replace(POLICY, verify_after_claim=False)  # the claim is the mark: look first
    asked: list[int] = []

    def no_longer() -> bool:
        asked.append(1)
        return False

    result, seen = run_seen(lg, edge(world, "pre-direct", policy=policy, precondition=no_longer))
    assert result.outcome is Outcome.FAILED and result.reason == "precondition no longer holds"
    assert asked == [1], f"the precondition was asked {len(asked)} times"
    assert store.get("edge:pre-direct") is None and seen == [], seen  # nothing claimed
    assert world.made == []
    assert lg.run(edge(world, "pre-direct", policy=policy)).outcome is Outcome.COMPLETED


def test_a_direct_claims_precondition_that_raises_a_hard_stop_claims_nothing(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    policy = replace(POLICY, verify_after_claim=False)
    effect = edge(world, "stop-direct", policy=policy, precondition=stop("account locked"))
    result = lg.run(effect)
    assert result.outcome is Outcome.HARD_STOP and result.reason == "account locked"
    assert store.get("edge:stop-direct") is None and world.made == []


def test_a_direct_claim_that_loses_notes_who_holds_the_key(
    store: Store, clock: FrozenClock
) -> None:
    """A run that looks first finds nothing; before its claim lands another run claims,
    performs and confirms the key. The claim loses, the loss is noted under the
    winner's attempt, and the run then finds the result: it performs nothing."""
    world = World()
    lg = ledger(store, clock, world)
    policy = replace(POLICY, verify_after_claim=False)
    other: list[Any] = []

    def first_look() -> Any:
        if not other:  # the other run gets in between this look and this claim
            other.append(ledger(store, clock, world).run(edge(world, "race", policy=policy)))
        return Absent()  # what this look saw, before the other run got in

    got = lg.run(
        replace(
            edge(world, "race", policy=policy),
            verify=looks(first_look, lambda: world.verify("race")),
        )
    )
    [won] = other
    assert won.outcome is Outcome.COMPLETED
    assert got.outcome is Outcome.SKIPPED and got.status is Status.CONFIRMED, got
    stored = store.get("edge:race")
    assert stored is not None
    rejected = of(store, "edge:race", EventType.CLAIM_REJECTED)
    assert [(e.message, e.fence) for e in rejected] == [(f"held by {stored.owner}", 1)], rejected
    assert world.made == ["race"]


def test_a_claim_given_back_for_an_unavailable_look_says_why(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    world.down = "HTTP 503"
    result = lg.run(edge(world, "down"))
    assert (
        result.outcome is Outcome.DEFERRED and result.reason == "verification unavailable: HTTP 503"
    )
    assert store.get("edge:down") is None
    [released] = of(store, "edge:down", EventType.RELEASED)
    assert released.message == (
        "released before perform: nothing was performed (verification unavailable: HTTP 503)"
    ), released.message
