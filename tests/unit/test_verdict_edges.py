"""What a run records and reports around its verdicts, pinned where mutation testing
found it loose (issue 7).

A skip's reason (an abandoned effect, a confirmation that said what the perform
raised); a duplicate's reason and stored references, cut to their limits;
evidence stored with a verdict, scrubbed and cut; how long the owner waits
inside its settle window (to its end, never for an unavailable verifier); the
perform's duration; a run that takes over a stale claim; the precondition,
asked once per run; the fields a fresh record starts with; and a confirmation
by someone else, which leaves the owner's lease alone. See docs/testing.md,
"Mutation testing". Memory store and a SQLite file, a frozen clock, the world
of ``test_rule_edges``; nothing here waits.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from actonce import (
    Confirmed,
    EventType,
    HardStop,
    NotPerformed,
    Outcome,
    Policy,
    Status,
    Store,
)
from actonce.testing import FrozenClock

from .test_rule_edges import POLICY, World, edge, ledger, stale_claim

SECRET = "hunter2-CANARY"


def secret_edge(world: World, ref: str, **kw: Any) -> Any:
    """``edge`` whose payload carries a secret value the world may echo back."""
    return replace(edge(world, ref, **kw), payload={"ref": ref, "password": SECRET})


# --- the reason of a skip ----------------------------------------------------------------------


def test_a_run_of_an_abandoned_effect_reports_the_reviewers_reason(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    doubt = lg.run(edge(world, "given-up", perform=lambda: None))  # not found: in doubt
    assert doubt.status is Status.UNKNOWN
    clock.advance(POLICY.lease_seconds + 1)
    lg.resolve("edge:given-up", "abandon", reviewer="ana", reason="customer cancelled")
    again = lg.run(edge(world, "given-up"))
    assert again.outcome is Outcome.ABANDONED and again.status is Status.ABANDONED
    stored = store.get("edge:given-up")
    assert stored is not None and again.reason == stored.reason
    assert again.reason is not None and "customer cancelled" in again.reason
    assert world.made == []


def test_a_skip_of_a_confirmation_that_noted_an_error_gives_no_reason(
    store: Store, clock: FrozenClock
) -> None:
    """The record of a confirmation says what the perform raised; a later run that finds
    it confirmed is a plain skip: the note is history, not the skip's reason."""
    world = World()
    lg = ledger(store, clock, world)

    def perform() -> None:
        world.made.append("noted")
        raise TimeoutError("no answer in 30 s")

    assert lg.run(edge(world, "noted", perform=perform)).outcome is Outcome.COMPLETED
    stored = store.get("edge:noted")
    assert stored is not None and stored.reason is not None  # the note is on the record
    again = lg.run(edge(world, "noted"))
    assert again.outcome is Outcome.SKIPPED and again.reason is None


# --- a duplicate: its reason and what it stores -------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "reason", "refs"),
    [
        (
            Confirmed("r/0", count=7, refs=tuple(f"r/{i}" for i in range(7))),
            "duplicate detected: 7 matching results (r/0, r/1, r/2, r/3, r/4)",
            [f"r/{i}" for i in range(7)],
        ),
        (
            Confirmed("r/0", count=25, refs=tuple(f"r/{i}" for i in range(25))),
            "duplicate detected: 25 matching results (r/0, r/1, r/2, r/3, r/4)",
            [f"r/{i}" for i in range(20)],  # at most 20 stored
        ),
        (Confirmed("only-ref", count=2), "duplicate detected: 2 matching results (only-ref)", []),
        (Confirmed(None, count=3), "duplicate detected: 3 matching results ()", []),
        (
            Confirmed("x" * 400, count=2, refs=("x" * 400, "y")),
            f"duplicate detected: 2 matching results ({'x' * 400}, y)",
            ["x" * 299 + "…", "y"],  # each stored ref is cut to 300 characters
        ),
    ],
    ids=["seven", "twenty-five", "ref-only", "no-ref", "long-ref"],
)
def test_what_a_duplicate_says_and_stores(
    store: Store, clock: FrozenClock, verdict: Confirmed, reason: str, refs: list[str]
) -> None:
    world = World()
    result = ledger(store, clock, world).run(replace(edge(world, "dup"), verify=lambda: verdict))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.reason == reason
    claimed, event = store.events("edge:dup")  # claim first: found under the claim
    assert claimed.type is EventType.CLAIMED
    assert event.data["duplicate"] == {"count": verdict.count, "refs": refs}
    assert (event.fence, event.to_status) == (1, Status.NEEDS_REVIEW)
    stored = store.get("edge:dup")
    assert stored is not None and stored.matches == verdict.count


def test_a_duplicates_reference_is_stored_without_the_payloads_secrets(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    two = Confirmed(f"obj?owner={SECRET}", count=2)
    ledger(store, clock, world).run(replace(secret_edge(world, "dup-secret"), verify=lambda: two))
    stored = store.get("edge:dup-secret")
    assert stored is not None and stored.result_ref is not None
    assert stored.result_ref.startswith("obj?owner=") and SECRET not in stored.result_ref


# --- evidence stored with a verdict ---------------------------------------------------------


def _shot(label: str) -> str:
    return f"shots/{label}/{SECRET}/" + "z" * 600


@pytest.mark.parametrize(
    ("perform_raises", "verdict_type"),
    [(True, EventType.CONFIRMED), (False, EventType.UNKNOWN)],
    ids=["confirmed-after-error", "unknown"],
)
def test_evidence_is_stored_scrubbed_and_cut_to_500_characters(
    store: Store, clock: FrozenClock, perform_raises: bool, verdict_type: EventType
) -> None:
    world = World()

    def perform() -> None:
        if perform_raises:
            world.made.append("shot")  # it happened, then the page broke
            raise RuntimeError("page crashed")

    effect = secret_edge(world, "shot", perform=perform, evidence=_shot)
    ledger(store, clock, world).run(effect)
    [event] = [e for e in store.events("edge:shot") if e.type is verdict_type]
    evidence = event.data["evidence"]
    assert evidence.startswith("shots/") and SECRET not in evidence
    assert len(evidence) == 500 and evidence.endswith("…")


# --- waiting inside the settle window ------------------------------------------------------


def looks_at(world: World, clock: FrozenClock, ref: str) -> tuple[list[float], Any]:
    times: list[float] = []

    def verify() -> Any:
        times.append(clock.monotonic())
        return world.verify(ref)

    return times, verify


def test_the_last_pause_ends_exactly_at_the_end_of_the_settle_window(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    policy = Policy(
        settle_seconds=1.0,
        absence_authoritative=True,
        wait_for_settle=True,
        verify_attempts=1,
        verify_backoff=0.6,
    )
    times, verify = looks_at(world, clock, "w1")
    effect = replace(edge(world, "w1", perform=lambda: None, policy=policy), verify=verify)
    result = ledger(store, clock, world).run(effect)
    assert result.outcome is Outcome.FAILED
    end = times[1]  # under the claim; the perform ends here (a frozen clock)
    assert [round(t - end, 6) for t in times[1:]] == [0.0, 0.6, 1.0]


def test_an_unavailable_verifier_is_not_waited_for_inside_the_window(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    policy = Policy(settle_seconds=10.0, wait_for_settle=True, verify_attempts=2)
    times, verify = looks_at(world, clock, "w2")

    def perform() -> None:
        world.down = "HTTP 503"

    effect = replace(edge(world, "w2", perform=perform, policy=policy), verify=verify)
    result = ledger(store, clock, world).run(effect)
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.UNKNOWN
    assert len(times) == 3  # one look under the claim, two after the perform: verify_attempts


# --- the perform's duration ----------------------------------------------------------------


def test_the_perform_is_timed_to_the_millisecond(store: Store, clock: FrozenClock) -> None:
    world = World()

    def perform() -> None:
        clock.advance(1.23456)
        world.made.append("timed")

    ledger(store, clock, world).run(edge(world, "timed", perform=perform))
    [event] = [e for e in store.events("edge:timed") if e.type is EventType.CONFIRMED]
    assert event.data["perform"]["seconds"] == 1.235


def test_a_perform_error_is_stored_cut_to_500_characters(store: Store, clock: FrozenClock) -> None:
    world = World()

    def perform() -> None:
        raise RuntimeError("e" * 600)

    ledger(store, clock, world).run(edge(world, "long-error", perform=perform))
    [event] = [e for e in store.events("edge:long-error") if e.type is EventType.UNKNOWN]
    error = event.data["perform"]["error"]
    assert error.startswith("RuntimeError: eee") and len(error) == 500


# --- the claim: a stale claim taken over; the precondition, once -------------------------------


def test_a_run_releases_a_stale_claim_and_claims_the_effect_itself(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    stale_claim(store, clock, world, "taken-over")
    result = ledger(store, clock, world).run(edge(world, "taken-over"))
    assert result.outcome is Outcome.COMPLETED and result.attempt == 2
    assert world.made == ["taken-over"]
    types = [e.type for e in store.events("edge:taken-over")]
    assert types.count(EventType.FAILED) == 1 and types.count(EventType.CLAIMED) == 2


def test_the_precondition_is_asked_once_per_run_even_when_the_claim_loses(
    store: Store, clock: FrozenClock
) -> None:
    """While this run asks its precondition (under its claim), the claim goes stale and
    reconcile releases it (failed, re-claimable): this run's mark loses, it claims
    again (attempt 2), looks again, and does not ask the precondition a second time."""
    world = World()
    asked: list[int] = []

    def precondition() -> bool:
        asked.append(1)
        clock.advance(POLICY.lease_seconds + 1)
        [released] = ledger(store, clock, world).reconcile().results
        assert released.status is Status.FAILED and released.attempt == 1
        return True

    result = ledger(store, clock, world).run(edge(world, "raced", precondition=precondition))
    assert result.outcome is Outcome.COMPLETED and result.attempt == 2
    assert asked == [1]
    assert world.made == ["raced"]
    claims = [e.fence for e in store.events("edge:raced") if e.type is EventType.CLAIMED]
    assert claims == [1, 2]


def _false() -> bool:
    return False


def _stop() -> bool:
    raise HardStop("wrong account")


@pytest.mark.parametrize(
    ("precondition", "outcome", "event_type"),
    [
        (_false, Outcome.FAILED, EventType.PRECONDITION_FAILED),
        (_stop, Outcome.HARD_STOP, EventType.HARD_STOP),
    ],
    ids=["false", "hard-stop"],
)
def test_a_precondition_that_stops_a_retry_reports_the_failed_attempt(
    store: Store, clock: FrozenClock, precondition: Any, outcome: Outcome, event_type: EventType
) -> None:
    world = World()
    lg = ledger(store, clock, world)

    def decline() -> None:
        raise NotPerformed("form closed")

    assert lg.run(edge(world, "retry", perform=decline)).status is Status.FAILED
    clock.advance(1)
    result = lg.run(edge(world, "retry", precondition=precondition))
    assert result.outcome is outcome
    assert (result.key, result.status, result.attempt) == ("edge:retry", Status.FAILED, 1)
    [note] = [e for e in store.events("edge:retry") if e.type is event_type]
    assert (note.fence, note.at) == (1, clock.now())


# --- the fields a fresh record starts with; someone else's lease ---------------------------


def test_a_claimed_record_and_a_record_found_first_start_clean(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    seen: list[Any] = []

    def look() -> Any:
        seen.append(store.get("edge:fresh"))
        return world.verify("fresh")

    lg.run(replace(edge(world, "fresh"), verify=look))
    claimed = seen[0]  # the look under the claim, before the mark
    assert claimed.status is Status.CLAIMED
    assert (claimed.executing_at, claimed.matches, claimed.gated) == (None, 0, False)
    world.made.append("first")
    lg.run(edge(world, "first"))
    found = store.get("edge:first")
    assert found is not None and found.status is Status.CONFIRMED
    assert (found.executing_at, found.matches, found.gated) == (None, 1, False)
    claim, event = store.events("edge:first")  # found by the look under the claim
    assert (claim.type, event.type, event.fence) == (EventType.CLAIMED, EventType.CONFIRMED, 1)


def test_confirming_someone_elses_live_effect_leaves_its_lease(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    other: list[Any] = []

    def perform() -> None:
        world.made.append("theirs")
        lease = store.get("edge:theirs")
        assert lease is not None
        other.append(
            (lease.lease_expires_at, ledger(store, clock, world).run(edge(world, "theirs")))
        )

    owner = ledger(store, clock, world).run(edge(world, "theirs", perform=perform))
    # The owner finds the confirmation recorded by the other run: it still performed.
    assert owner.outcome is Outcome.COMPLETED and owner.performed
    [(lease, result)] = other
    assert result.outcome is Outcome.SKIPPED and result.status is Status.CONFIRMED
    assert lease > clock.now()  # the owner's lease was live when the other run confirmed
    stored = store.get("edge:theirs")
    assert stored is not None and stored.lease_expires_at == lease


def test_an_owner_whose_claim_went_stale_before_its_mark_claims_again(
    store: Store, clock: FrozenClock
) -> None:
    """The look between the claim and the mark outlasts the lease; reconcile releases
    the stale claim meanwhile. The owner's mark loses: it looks again, claims anew
    (attempt 2) and performs once."""
    world = World()
    looks: list[int] = []

    def slow_look() -> Any:
        looks.append(1)
        if len(looks) == 1:  # the look under the claim
            clock.advance(POLICY.lease_seconds + 1)
            [released] = ledger(store, clock, world).reconcile().results
            assert released.status is Status.FAILED
        return world.verify("stale-mark")

    effect = replace(edge(world, "stale-mark"), verify=slow_look)
    result = ledger(store, clock, world).run(effect)
    assert result.outcome is Outcome.COMPLETED and result.attempt == 2
    assert world.made == ["stale-mark"]
