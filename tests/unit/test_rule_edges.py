"""Edges of the rules and the protocol that mutation testing found unpinned (issue 7).

Each test pins one behaviour a surviving mutant changed without any fast
test noticing: a keyword argument the classification forgot, a reason a
run reports, a reconcile that must never claim. See docs/testing.md,
"Mutation testing".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EventType,
    HardStop,
    Ledger,
    NotPerformed,
    Outcome,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    Store,
    Unavailable,
)
from actonce._rules.decision import Situation, situation_of
from actonce._rules.keys import is_name
from actonce._rules.lifecycle import By, is_durable
from actonce._rules.model import EffectRecord
from actonce._run.effect import needs_reconcile
from actonce.testing import FrozenClock, SimulatedCrash, crash_at

NOW = 1000.0
POLICY = Policy(settle_seconds=5.0, absence_authoritative=True, verify_attempts=1)


def record(status: Status, *, fence: int = 3, lease: float = NOW + 10) -> EffectRecord:
    return EffectRecord(
        key="k",
        kind="edge",
        status=status,
        fence=fence,
        owner="w",
        lease_expires_at=lease,
        payload="{}",
        payload_hash="h",
        executing_at=NOW - 1 if status is not Status.CLAIMED else None,
    )


# --- pure rules ------------------------------------------------------------------------------


def test_situation_of_passes_declined_and_performed_on() -> None:
    mine = record(Status.EXECUTING)
    assert situation_of(mine, now=NOW, my_fence=3) is Situation.PERFORMED
    assert situation_of(mine, now=NOW, my_fence=3, declined=True) is Situation.DECLINED
    overtaken = record(Status.EXECUTING, fence=4)
    assert situation_of(overtaken, now=NOW, my_fence=3) is Situation.BUSY
    assert situation_of(overtaken, now=NOW, my_fence=3, performed=True) is Situation.OVERTAKEN


def test_needs_reconcile_trusts_the_clock_unless_told_not_to() -> None:
    orphan = record(Status.EXECUTING, lease=NOW - 1)
    assert needs_reconcile(orphan, NOW)  # the default: a trusted clock
    assert not needs_reconcile(orphan, NOW, trusted=False)  # stepped: the lease counts as live
    assert not needs_reconcile(record(Status.EXECUTING), NOW)  # live lease
    assert needs_reconcile(record(Status.UNKNOWN), NOW)


@pytest.mark.parametrize(
    ("to", "by", "durable"),
    [
        (Status.EXECUTING, By.OWNER, True),  # the mark before a perform is fsynced
        (Status.CONFIRMED, By.OWNER, False),
        (Status.FAILED, By.VERIFIER, False),
        (Status.CONFIRMED, By.HUMAN, True),  # a reviewer's decision is fsynced
        (Status.ABANDONED, By.HUMAN, True),
    ],
)
def test_which_writes_are_durable(to: Status, by: By, durable: bool) -> None:
    assert is_durable(to, by) is durable


def test_is_name_says_whether_a_name_could_be_stored() -> None:
    assert is_name("invoice-42")
    assert not is_name("a\x00b")
    assert not is_name("\ud800")
    assert not is_name(42)


# --- protocol: the reasons a run reports -----------------------------------------------------


class World:
    def __init__(self) -> None:
        self.made: list[str] = []
        self.stop: str | None = None
        self.down: str | None = None

    def verify(self, ref: str) -> Any:
        if self.stop is not None:
            raise HardStop(self.stop)
        if self.down is not None:
            return Unavailable(self.down)
        return Confirmed(ref) if ref in self.made else Absent()


def edge(world: World, ref: str, **kw: Any) -> Effect:
    return Effect(
        key=f"edge:{ref}",
        kind="edge",
        payload={"ref": ref},
        perform=kw.pop("perform", lambda: world.made.append(ref)),
        verify=lambda: world.verify(ref),
        policy=kw.pop("policy", POLICY),
        **kw,
    )


def ledger(store: Store, clock: FrozenClock, world: World) -> Ledger:
    reg = Registry()
    reg.register("edge", lambda r: world.verify(r.data["ref"]), policy=POLICY)
    return Ledger(store, clock=clock, registry=reg)


def stale_claim(store: Store, clock: FrozenClock, world: World, ref: str) -> None:
    """A worker claims ``ref`` and dies right after; its lease then runs out."""
    with pytest.raises(SimulatedCrash), crash_at("after_claim"):
        ledger(store, clock, world).run(edge(world, ref))
    clock.advance(POLICY.lease_seconds + 1)


def test_a_skip_of_a_confirmed_effect_gives_no_reason(store: Store, clock: FrozenClock) -> None:
    world = World()
    lg = ledger(store, clock, world)
    assert lg.run(edge(world, "a")).outcome is Outcome.COMPLETED
    again = lg.run(edge(world, "a"))
    assert again.outcome is Outcome.SKIPPED and again.reason is None


def test_a_held_effect_reports_the_records_reason(store: Store, clock: FrozenClock) -> None:
    world = World()
    lg = ledger(store, clock, world)
    world.made += ["dup", "dup"]  # two results: a duplicate, sent to review
    world_verify = world.verify
    world.verify = lambda ref: Confirmed(ref, count=2, refs=(ref, ref))  # type: ignore[method-assign]
    first = lg.run(edge(world, "dup"))
    assert first.outcome is Outcome.NEEDS_REVIEW
    world.verify = world_verify  # type: ignore[method-assign]
    held = lg.run(edge(world, "dup"))
    stored = store.get("edge:dup")
    assert stored is not None and stored.status is Status.NEEDS_REVIEW
    # Found by the look under the claim, the duplicate's reason is the record's.
    assert stored.reason == "duplicate detected: 2 matching results (dup, dup)"
    assert held.outcome is Outcome.NEEDS_REVIEW and held.reason == stored.reason
    assert held.status is Status.NEEDS_REVIEW


def test_a_hard_stop_seen_before_the_claim_is_recorded_and_claims_nothing(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    lg.run(edge(world, "first"))  # an unrelated record, so the store is not empty
    world.stop = "login wall is visible"
    result = lg.run(edge(world, "stop"))
    assert result.outcome is Outcome.HARD_STOP
    assert result.reason == "hard stop: login wall is visible"
    assert result.status is None and store.get("edge:stop") is None  # nothing claimed
    assert world.made == ["first"]


def test_a_hard_stop_seen_after_the_claim_releases_it(store: Store, clock: FrozenClock) -> None:
    """The look under the re-claim of a failed attempt sees a login wall: the run's
    own claim is released back to that failed attempt and nothing is performed."""
    world = World()
    lg = ledger(store, clock, world)

    def decline() -> None:
        raise NotPerformed("the form was never sent")

    first = lg.run(edge(world, "after-claim", perform=decline))
    assert first.status is Status.FAILED and first.attempt == 1
    before = store.get("edge:after-claim")
    world.stop = "CAPTCHA is visible"
    result = lg.run(edge(world, "after-claim"))
    assert result.outcome is Outcome.HARD_STOP
    assert result.reason == "hard stop: CAPTCHA is visible"
    stored = store.get("edge:after-claim")
    assert stored == before, "the release did not give back the failed attempt it re-claimed"
    assert result.status is Status.FAILED and result.attempt == 1
    [released] = [e for e in store.events("edge:after-claim") if e.type is EventType.RELEASED]
    assert (released.fence, released.from_status, released.to_status) == (
        2,
        Status.CLAIMED,
        Status.FAILED,
    )
    assert released.message is not None and "released: nothing was performed" in released.message
    assert world.made == []


def test_a_hard_stop_on_someone_elses_record_is_only_noted(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    stale_claim(store, clock, world, "theirs")  # their claim went stale
    world.stop = "restricted account"
    result = lg.run(edge(world, "theirs"))
    assert result.outcome is Outcome.HARD_STOP and result.status is Status.CLAIMED
    [note] = [e for e in store.events("edge:theirs") if e.type is EventType.HARD_STOP]
    assert note.message == "seen by verification: restricted account"
    assert (note.fence, note.at) == (1, clock.now())  # noted under their attempt
    stored = store.get("edge:theirs")
    assert stored is not None and stored.status is Status.CLAIMED and stored.fence == 1


def test_the_reasons_a_run_defers(store: Store, clock: FrozenClock) -> None:
    world = World()
    lg = ledger(store, clock, world)
    world.down = "HTTP 503"
    down = lg.run(edge(world, "down"))
    assert down.outcome is Outcome.DEFERRED
    assert down.reason == "verification unavailable: HTTP 503"
    notes = [e for e in store.events("edge:down") if e.type is EventType.VERIFICATION_UNAVAILABLE]
    assert [e.message for e in notes] == ["HTTP 503"]
    world.down = None

    def perform() -> None:
        # While this owner performs, another run finds the effect busy.
        busy.append(ledger(store, clock, world).run(edge(world, "busy")))
        world.made.append("busy")

    busy: list[Any] = []
    lg.run(edge(world, "busy", perform=perform))
    [other] = busy
    assert other.outcome is Outcome.DEFERRED
    assert other.reason == "another worker owns this effect"


# --- reconcile -------------------------------------------------------------------------------


def test_reconcile_releases_a_stale_claim_and_never_claims(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    stale_claim(store, clock, world, "stale")
    report = lg.reconcile()
    [result] = report.results
    assert result.outcome is Outcome.FAILED and result.status is Status.FAILED
    stored = store.get("edge:stale")
    assert stored is not None and stored.status is Status.FAILED and stored.fence == 1
    assert world.made == []


def test_a_clock_step_during_a_reconcile_pass_leaves_the_rest_alone(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """The verifier of the first orphan steps the ledger clock: the next orphans,
    triaged before the step, are left alone, with the reason."""
    store = SQLiteStore(str(tmp_path / "step.db"), create=True)
    world = World()
    lg = ledger(store, clock, world)
    for ref in ("o1", "o2"):
        with pytest.raises(SimulatedCrash), crash_at("after_mark_executing"):
            lg.run(edge(world, ref))
    clock.advance(POLICY.lease_seconds + POLICY.settle_seconds + 1)
    stepped: list[str] = []

    def verify(r: EffectRecord) -> Any:
        if not stepped:
            stepped.append(r.key)
            clock.step(-3600)  # NTP steps the ledger's clock back an hour
        return Absent()

    reg = Registry()
    reg.register("edge", verify, policy=POLICY)
    report = Ledger(store, clock=clock, registry=reg).reconcile()
    by_key = {r.key: r for r in report.results}
    [other] = [k for k in ("edge:o1", "edge:o2") if k not in stepped]
    left = by_key[other]
    assert left.outcome is Outcome.DEFERRED
    assert left.reason == "the ledger clock stepped; left alone"
    assert left.status is Status.EXECUTING and left.key == other
    stored = store.get(other)
    assert stored is not None and stored.status is Status.EXECUTING
    store.close()


# --- what a move stores: its reason, the perform's facts, a duplicate's count ----------------


def test_a_move_stores_its_reason_and_the_facts_of_the_perform(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    lost = edge(world, "lost", perform=lambda: {"sent": 1})  # the request never arrived
    result = lg.run(lost)
    stored = store.get("edge:lost")
    assert stored is not None and stored.status is Status.UNKNOWN
    assert stored.reason == result.reason == "outcome not proven yet"
    [moved] = [e for e in store.events("edge:lost") if e.type is EventType.UNKNOWN]
    assert moved.message == "outcome not proven yet"
    assert moved.from_status is Status.EXECUTING and moved.to_status is Status.UNKNOWN
    perform = moved.data["perform"]
    assert perform["seconds"] == 0.0 and perform["details"] == {"sent": 1}


def two_matches(ref: str) -> Any:
    return Confirmed(f"{ref}/1", count=2, refs=(f"{ref}/1", f"{ref}/2"))


def test_a_duplicate_found_before_any_claim_is_recorded_with_its_count_and_refs(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    effect = edge(world, "twice")
    dup = replace(effect, verify=lambda: two_matches("twice"))
    result = lg.run(dup)
    assert result.outcome is Outcome.NEEDS_REVIEW and not result.performed
    assert result.status is Status.NEEDS_REVIEW and result.attempt == 1
    assert result.reason == "duplicate detected: 2 matching results (twice/1, twice/2)"
    stored = store.get("edge:twice")
    assert stored is not None
    assert (stored.status, stored.fence, stored.matches, stored.result_ref) == (
        Status.NEEDS_REVIEW,
        1,
        2,
        "twice/1",
    )
    claimed, event = store.events("edge:twice")  # claim first: found under the claim
    assert claimed.type is EventType.CLAIMED
    assert event.type is EventType.NEEDS_REVIEW and event.from_status is Status.CLAIMED
    assert event.message == result.reason
    assert event.data["duplicate"] == {"count": 2, "refs": ["twice/1", "twice/2"]}
    assert world.made == []


def test_a_duplicate_found_after_the_perform_goes_to_review_with_its_count(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    made: list[int] = []
    effect = edge(world, "resent", perform=lambda: made.append(1))
    dup = replace(effect, verify=lambda: two_matches("resent") if made else Absent())
    result = lg.run(dup)
    assert result.outcome is Outcome.NEEDS_REVIEW and result.performed
    stored = store.get("edge:resent")
    assert stored is not None and stored.status is Status.NEEDS_REVIEW
    assert stored.matches == 2 and stored.result_ref == "resent/1"
    assert stored.reason == "duplicate detected: 2 matching results (resent/1, resent/2)"
    [event] = [e for e in store.events("edge:resent") if e.type is EventType.NEEDS_REVIEW]
    assert event.from_status is Status.EXECUTING
    assert event.data["duplicate"] == {"count": 2, "refs": ["resent/1", "resent/2"]}
    assert "seconds" in event.data["perform"]


# --- what a confirmation stores ----------------------------------------------------------------


def test_a_result_found_before_any_claim_is_recorded_as_such(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    world.made.append("early")
    lg = ledger(store, clock, world)
    result = lg.run(edge(world, "early"))
    assert result.outcome is Outcome.SKIPPED and result.status is Status.CONFIRMED
    stored = store.get("edge:early")
    assert stored is not None
    assert (stored.fence, stored.matches, stored.result_ref) == (1, 1, "early")
    claimed, event = store.events("edge:early")  # claim first: found under the claim
    assert claimed.type is EventType.CLAIMED and stored.executing_at is None
    assert event.type is EventType.CONFIRMED and event.to_status is Status.CONFIRMED
    assert event.message == "result existed before the perform"
    assert event.data["result_ref"] == "early"


def test_a_confirmation_after_a_raising_perform_says_what_it_raised(
    store: Store, clock: FrozenClock
) -> None:
    world = World()

    def perform() -> None:
        world.made.append("raised")
        raise TimeoutError("no answer in 30 s")

    result = ledger(store, clock, world).run(edge(world, "raised", perform=perform))
    assert result.outcome is Outcome.COMPLETED and result.status is Status.CONFIRMED
    [event] = [e for e in store.events("edge:raised") if e.type is EventType.CONFIRMED]
    assert event.message == "confirmed; the perform raised TimeoutError: no answer in 30 s"
    assert event.data["result_ref"] == "raised"
    assert event.data["perform"]["error"] == "TimeoutError: no answer in 30 s"
    assert result.reason is None


# --- the reasons reconcile stores ---------------------------------------------------------------


def _orphan(store: Store, clock: FrozenClock, world: World, ref: str, policy: Policy) -> None:
    with pytest.raises(SimulatedCrash), crash_at("after_mark_executing"):
        ledger(store, clock, world).run(edge(world, ref, policy=policy))


@pytest.mark.parametrize(
    ("authoritative", "down", "status", "reason"),
    [
        (True, None, Status.FAILED, "verified absent after the settle window"),
        (
            False,
            None,
            Status.NEEDS_REVIEW,
            "still absent after the settle window; absence proves nothing here",
        ),
        (
            True,
            "HTTP 503",
            Status.UNKNOWN,
            "outcome not proven yet (verification unavailable: HTTP 503)",
        ),
    ],
)
def test_the_reason_reconcile_stores(
    store: Store,
    clock: FrozenClock,
    authoritative: bool,
    down: str | None,
    status: Status,
    reason: str,
) -> None:
    world = World()
    policy = Policy(settle_seconds=5.0, absence_authoritative=authoritative, verify_attempts=1)
    _orphan(store, clock, world, "orphan", policy)
    clock.advance(policy.lease_seconds + policy.settle_seconds + 1)
    world.down = down
    reg = Registry()
    reg.register("edge", lambda r: world.verify(r.data["ref"]), policy=policy)
    [result] = Ledger(store, clock=clock, registry=reg).reconcile().results
    stored = store.get("edge:orphan")
    assert stored is not None and stored.status is status
    assert stored.reason == result.reason == reason


def test_a_released_stale_claim_says_nothing_was_performed(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    stale_claim(store, clock, world, "claimed")
    [result] = ledger(store, clock, world).reconcile().results
    stored = store.get("edge:claimed")
    assert stored is not None and stored.status is Status.FAILED
    assert stored.reason == result.reason == "released before perform: nothing was performed"


def test_a_declined_perform_says_it_stopped_before_the_boundary(
    store: Store, clock: FrozenClock
) -> None:
    from actonce import NotPerformed

    world = World()

    def decline() -> None:
        raise NotPerformed("the form never opened")

    result = ledger(store, clock, world).run(edge(world, "declined", perform=decline))
    assert result.outcome is Outcome.FAILED
    assert result.reason == (
        "perform stopped before the boundary, nothing was performed: "
        "NotPerformed: the form never opened"
    )


# --- secrets never reach a message ------------------------------------------------------------


def test_secret_values_are_scrubbed_from_errors_stops_and_refs(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """The payload's secret values, echoed back by the world (an exception, a hard
    stop, a verifier's reason or result reference), are stored scrubbed."""
    secret = "hunter2-CANARY"
    path = tmp_path / "scrub.db"
    store = SQLiteStore(str(path), create=True)
    world = World()
    lg = ledger(store, clock, world)

    def with_secret(ref: str, **kw: Any) -> Effect:
        base = edge(world, ref, **kw)
        return replace(base, payload={"ref": ref, "password": secret})

    def leaky() -> None:
        raise RuntimeError(f"login failed for password {secret}")

    lg.run(with_secret("err", perform=leaky))
    world.stop = f"wrong account: {secret}"
    lg.run(with_secret("stop"))
    world.stop = None
    world.down = f"upstream said {secret}"
    lg.run(with_secret("down"))
    world.down = None
    made = with_secret("ref")
    lg.run(replace(made, verify=lambda: Confirmed(f"obj/{secret}")))
    world.made.append("dup")
    lg.run(
        replace(
            with_secret("dup"), verify=lambda: Confirmed("d", count=2, refs=(f"d/{secret}", "e"))
        )
    )
    stopper = with_secret(
        "late-stop", perform=lambda: (_ for _ in ()).throw(HardStop(f"CAPTCHA {secret}"))
    )
    lg.run(stopper)
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(path.name))
    assert secret.encode() not in raw, "a secret value echoed by the world was stored"


# --- evidence: asked when a performed effect raised or is not confirmed ------------------------


def test_evidence_is_asked_when_a_performed_effect_raised_or_is_not_confirmed(
    store: Store, clock: FrozenClock
) -> None:
    from actonce import NotPerformed

    world = World()
    lg = ledger(store, clock, world)
    asked: list[str] = []

    def evidence(label: str) -> str:
        asked.append(label)
        return f"shots/{label}.png"

    def boom() -> None:
        raise RuntimeError("page crashed")

    lg.run(edge(world, "boom", perform=boom, evidence=evidence))
    assert asked == ["perform-error"]  # the page as the error left it, before verifying
    [moved] = [e for e in store.events("edge:boom") if e.type is EventType.UNKNOWN]
    assert moved.data["evidence"] == "shots/perform-error.png"

    asked.clear()
    lg.run(edge(world, "quiet", perform=lambda: None, evidence=evidence))
    assert asked == ["unknown"]  # performed, not confirmed: the verdict's label
    [moved] = [e for e in store.events("edge:quiet") if e.type is EventType.UNKNOWN]
    assert moved.data["evidence"] == "shots/unknown.png"

    asked.clear()

    def decline() -> None:
        raise NotPerformed("no form")

    lg.run(edge(world, "declined", perform=decline, evidence=evidence))
    # Stopped before the boundary: no "perform-error" shot, but the failed record
    # shows the page where it stopped.
    assert asked == ["failed"]
    [moved] = [e for e in store.events("edge:declined") if e.type is EventType.FAILED]
    assert moved.data["evidence"] == "shots/failed.png"
    asked.clear()
    lg.run(edge(world, "fine", evidence=evidence))
    assert asked == []  # confirmed: no evidence needed


# --- the claim: precondition, hard stop, a re-claim --------------------------------------------


def test_a_false_precondition_is_recorded_and_claims_nothing(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    result = ledger(store, clock, world).run(edge(world, "pre", precondition=lambda: False))
    assert result.outcome is Outcome.FAILED and result.status is None
    assert store.get("edge:pre") is None  # the claim was given back
    claimed, released, event = store.events("edge:pre")
    assert (claimed.type, released.type) == (EventType.CLAIMED, EventType.RELEASED)
    assert event.type is EventType.PRECONDITION_FAILED
    assert event.message == result.reason and result.reason


def test_a_hard_stop_in_the_precondition_is_recorded_scrubbed(
    store: Store, clock: FrozenClock
) -> None:
    world = World()

    def precondition() -> bool:
        raise HardStop("wrong account: s3cret-PIN")

    base = edge(world, "pre-stop", precondition=precondition)
    effect = replace(base, payload={"ref": "pre-stop", "pin": "s3cret-PIN"})
    result = ledger(store, clock, world).run(effect)
    assert result.outcome is Outcome.HARD_STOP and result.status is None
    assert result.reason is not None and "s3cret-PIN" not in result.reason
    assert result.reason.startswith("wrong account: ")
    claimed, released, event = store.events("edge:pre-stop")
    assert (claimed.type, released.type) == (EventType.CLAIMED, EventType.RELEASED)
    assert event.type is EventType.HARD_STOP and event.message == result.reason
    assert released.message is not None and "s3cret-PIN" not in released.message


def test_a_reclaim_keeps_the_first_creation_time_and_counts_attempts(
    store: Store, clock: FrozenClock
) -> None:
    world = World()
    lg = ledger(store, clock, world)
    from actonce import NotPerformed

    def decline() -> None:
        raise NotPerformed("not now")

    lg.run(edge(world, "again", perform=decline))
    first = store.get("edge:again")
    assert first is not None and first.status is Status.FAILED
    clock.advance(30)
    result = lg.run(edge(world, "again"))
    assert result.outcome is Outcome.COMPLETED and result.attempt == 2
    now = store.get("edge:again")
    assert now is not None and now.fence == 2 and now.created_at == first.created_at
    claims = [e for e in store.events("edge:again") if e.type is EventType.CLAIMED]
    assert [e.message for e in claims] == ["attempt 1", "attempt 2"]
    assert claims[1].from_status is Status.FAILED
