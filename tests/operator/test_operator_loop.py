"""The operator loop, stage by stage, on every backend, with a frozen clock.

Each test drives :class:`actonce.Operator` with hooks that write down what
they were asked, and compares the run's summary with the ledger's own
history and the world's ground truth.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from opworld import Script, World

from actonce import (
    EventType,
    HardStop,
    ItemClass,
    Lease,
    Ledger,
    Operator,
    Outcome,
    RunStage,
    RunStatus,
    RunSummary,
    Status,
    UsageError,
)
from actonce.testing import FrozenClock, SimulatedCrash, crash_at


def operator(ledger: Ledger, hooks: Any, **kw: Any) -> Operator[str]:
    return Operator(ledger, "alice-browser", hooks, kinds=("post", "note"), ttl=60, **kw)


def ledger_counts(ledger: Ledger, summary: RunSummary) -> dict[str, Any]:
    """What the ledger's history says this run did (events carry its run id)."""
    performed_confirmed = failed = refused = 0
    for item in summary.items:
        if item.key is None:
            continue
        for e in ledger.store.events(item.key):
            if e.run_id != summary.run_id:
                continue
            performed_confirmed += e.type is EventType.CONFIRMED and e.from_status is not None
            failed += e.type is EventType.FAILED
            refused += e.type is EventType.CLAIM_REFUSED
    keys = {i.key for i in summary.items if i.key}
    open_ = [r for r in ledger.list(limit=1000) if r.key in keys and r.status.is_open]
    in_review = [r for r in ledger.list(Status.NEEDS_REVIEW, limit=1000) if r.key in keys]
    return {"confirmed": performed_confirmed, "failed": failed, "claim_refused": refused,
            "open_or_review": len(open_) + len(in_review)}  # fmt: skip


def test_a_complete_run_counts_what_the_ledger_holds(ledger: Ledger, world: World) -> None:
    ledger.budgets.define("original", 3)
    world.how.update(bad="declined", gone="absent")
    # "old" was published by an earlier run: this one finds it done.
    assert ledger.run(world.effect("old")).done
    hooks = Script(world, ["a", "short", "old", "bad", "gone", "nothing", "b", "c", "d"],
                   gate=ledger.budgets.gate("original"), quality={"short": "too short"})  # fmt: skip
    summary = operator(ledger, hooks).run()

    assert summary.status is RunStatus.COMPLETED and summary.stops == ()
    assert [i.label for i in summary.done] == ["a", "b", "c"]
    assert summary.skipped_by_reason() == {"already_done": 1, "nothing_to_do": 1,
                                           "over_budget": 1}  # fmt: skip
    assert [i.label for i in summary.failures] == ["bad", "gone"]
    assert [(i.label, i.reason) for i in summary.quality_skips] == [("short", "too short")]
    assert summary.ambiguous == []
    assert summary.candidates == 9
    # The world: a, b, c published once each (and "old" before); nothing else.
    assert world.performed == {"old": 1, "a": 1, "b": 1, "c": 1}
    # The ledger agrees, event by event.
    assert ledger_counts(ledger, summary) == {"confirmed": 3, "failed": 2, "claim_refused": 0,
                                              "open_or_review": 0}  # fmt: skip
    (u,) = ledger.budgets.usage("original")
    assert [b for b in summary.budget if b["name"] == "original"] == [u.as_json()]
    assert (u.consumed, u.reserved, u.free) == (3, 0, 0)
    # The summary is stored as it was returned, with one event in the operator's history.
    assert ledger.summary(summary.run_id) == summary
    (event,) = ledger.store.events("operator:alice-browser")
    assert (event.type, event.run_id, event.data["counts"]) == (
        EventType.OPERATOR_RUN, summary.run_id, summary.counts(),
    )  # fmt: skip
    assert ledger.summaries("alice-browser") == [summary]


def test_a_claim_refused_by_the_budget_is_counted_once(ledger: Ledger, world: World) -> None:
    # Another worker takes the last unit between the pre-check and the claim.
    ledger.budgets.define("original", 1)
    hooks = Script(world, ["a"], gate=ledger.budgets.gate("original"))

    def steal() -> None:
        assert ledger.run(world.effect("x", gate=ledger.budgets.gate("original"))).done

    hooks.before_plan["a"] = steal
    summary = operator(ledger, hooks).run()
    (item,) = summary.items
    assert (item.cls, item.why, item.stage, item.outcome) == (
        ItemClass.SKIPPED, "over_budget", RunStage.BUDGET, None,
    )  # fmt: skip
    assert "a" not in world.performed
    # Refused at the claim instead (the pre-check saw room): the ledger says so too.
    ledger.budgets.define("original", 2)

    class Racing(Script):
        def plan(self, candidate: str) -> Any:
            base = self.world.effect(candidate, gate=ledger.budgets.gate("original"))

            def precondition() -> bool:  # between the pre-check and the claim
                assert ledger.run(world.effect("y", gate=ledger.budgets.gate("original"))).done
                return True

            return dataclasses.replace(base, precondition=precondition)

    summary2 = operator(ledger, Racing(world, ["b"])).run()
    (item2,) = summary2.items
    assert (item2.why, item2.stage, item2.outcome) == (
        "over_budget", RunStage.ACT, Outcome.OVER_BUDGET.value,
    )  # fmt: skip
    assert "b" not in world.performed
    assert ledger_counts(ledger, summary2)["claim_refused"] == 1


def test_an_ambiguous_effect_at_reconcile_blocks_new_work(ledger: Ledger, world: World) -> None:
    world.how["n1"] = "doubt"
    earlier = ledger.run(world.effect("n1", kind="note"))
    assert earlier.status is Status.NEEDS_REVIEW
    hooks = Script(world, ["a", "b"])
    summary = operator(ledger, hooks).run()

    assert summary.status is RunStatus.HARD_STOP
    (stop,) = summary.stops
    assert stop.stage is RunStage.RECONCILE
    assert stop.keys == (earlier.key,)
    assert f"note {earlier.key[:12]} is needs_review" in stop.reason
    (item,) = summary.ambiguous
    assert (item.key, item.status) == (earlier.key, "needs_review")
    assert "absence proves nothing" in (item.reason or "")
    assert hooks.calls == []  # not even the identity was asked: nothing new started
    assert world.performed == {}
    # A human decides; the next run goes on.
    ledger.resolve(earlier.key, "not_happened", reviewer="ana", reason="not on the profile")
    after = operator(ledger, Script(world, ["a"])).run()
    assert after.status is RunStatus.COMPLETED and [i.label for i in after.done] == ["a"]


def test_an_unknown_effect_that_stays_unknown_blocks_and_says_why(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    world.how["a"] = "lost"
    first = operator(ledger, Script(world, ["a", "b"])).run()
    # The run that lost the response stopped at once: "b" was never planned.
    assert first.status is RunStatus.HARD_STOP
    assert first.stops[0].stage is RunStage.ACT
    assert [(i.label, i.status) for i in first.ambiguous] == [("a", "unknown")]
    assert "no new work until it is reconciled or reviewed" in first.stops[0].reason
    assert world.tried == {"a"}
    clock.advance(120)  # its lease is over; verification is still unavailable
    hooks = Script(world, ["b"])
    second = operator(ledger, hooks).run()
    assert second.reconciled == {"unknown": 1}
    assert second.stops[0].stage is RunStage.RECONCILE
    assert "unavailable" in (second.ambiguous[0].reason or "")
    assert hooks.calls == [] and world.tried == {"a"}


def test_effects_of_other_kinds_or_owners_do_not_block(ledger: Ledger, world: World) -> None:
    world.how.update(n1="doubt", n2="doubt")
    assert ledger.run(world.effect("n1", kind="other")).status is Status.NEEDS_REVIEW
    assert ledger.run(world.effect("n2", kind="note", payload={"by": "bob"})).status is (
        Status.NEEDS_REVIEW
    )

    class Mine(Script):
        def owns(self, record: Any) -> bool:
            return bool(record.data.get("by", "alice") == "alice")

    summary = operator(ledger, Mine(world, ["a"])).run()
    assert summary.status is RunStatus.COMPLETED and len(summary.done) == 1


def test_reconcile_settles_what_a_dead_run_left_before_new_work(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    world.how["gone"] = "absent"
    # The operator dies right after a perform; so does another worker on "gone".
    with crash_at("after_perform"), pytest.raises(SimulatedCrash):
        operator(ledger, Script(world, ["made", "later"])).run()
    with crash_at("after_perform"), pytest.raises(SimulatedCrash):
        ledger.run(world.effect("gone"))
    # The crash gave the operator's lease back (its finally); the effects stay executing.
    lease = Lease(ledger, "alice-browser")
    assert lease.acquire() is True
    assert {r.status for r in ledger.list(limit=10)} == {Status.EXECUTING}
    hooks = Script(world, ["next"])
    assert operator(ledger, hooks).run().status is RunStatus.LOCKED_SKIP
    lease.release()
    # While their owners' leases are live, nothing may start.
    blocked = operator(ledger, hooks).run()
    assert blocked.stops[0].stage is RunStage.RECONCILE and blocked.reconciled == {"executing": 2}
    assert "lease is live" in (blocked.ambiguous[0].reason or "")
    assert hooks.calls == []
    clock.advance(120)  # their effect leases ran out
    summary = operator(ledger, hooks).run()
    assert summary.reconciled == {"confirmed": 1, "failed": 1}
    assert summary.status is RunStatus.COMPLETED and [i.label for i in summary.done] == ["next"]
    assert world.performed == {"made": 1, "next": 1}
    # The reconcile's writes carry the operator's run id.
    made = ledger.get(world.key("made"))
    assert made is not None and made.status is Status.CONFIRMED
    assert ledger.store.events(made.key)[-1].run_id == summary.run_id


def test_identity_doubt_is_a_hard_stop(ledger: Ledger, world: World) -> None:
    hooks = Script(world, ["a"])
    hooks.who = "signed in as bob, not alice"
    summary = operator(ledger, hooks).run()
    assert (summary.status, summary.stops[0].stage) == (RunStatus.HARD_STOP, RunStage.IDENTITY)
    assert "signed in as bob" in summary.stops[0].reason
    assert hooks.calls == ["identity"] and world.performed == {}

    class Raises(Script):
        def identity(self) -> bool | str | None:
            raise HardStop("the login wall is visible")

    summary = operator(ledger, Raises(world, ["a"])).run()
    assert summary.stops[0].reason == "identity in doubt: the login wall is visible"


def test_a_hard_stop_in_an_effect_ends_the_run(ledger: Ledger, world: World) -> None:
    world.how["b"] = "captcha"
    hooks = Script(world, ["a", "b", "c"])
    summary = operator(ledger, hooks).run()
    assert summary.status is RunStatus.HARD_STOP
    assert [(i.label, i.cls) for i in summary.items] == [
        ("a", ItemClass.DONE), ("b", ItemClass.STOPPED),
    ]  # fmt: skip
    assert "CAPTCHA" in summary.stops[0].reason
    assert "plan c" not in hooks.calls and world.performed == {"a": 1}


def test_locked_skip_does_nothing(ledger: Ledger, world: World) -> None:
    other = Lease(ledger, "alice-browser", owner="the-other-run", ttl=60)
    assert other.acquire()
    hooks = Script(world, ["a"])
    summary = operator(ledger, hooks).run()
    assert (summary.status, summary.held_by, summary.token) == (
        RunStatus.LOCKED_SKIP, "the-other-run", 0,
    )  # fmt: skip
    assert hooks.calls == [] and world.performed == {}
    assert ledger.summary(summary.run_id) == summary
    other.heartbeat()  # still the other's


def test_a_lost_lease_stops_before_the_next_mutation(
    ledger: Ledger, world: World, clock: FrozenClock
) -> None:
    hooks = Script(world, ["a", "b", "c"])
    thief = Lease(ledger, "alice-browser", owner="thief", ttl=600)

    def pause() -> None:  # the run stalls past its ttl; another run takes the lease
        clock.advance(61)
        assert thief.acquire()

    hooks.before_plan["b"] = pause
    summary = operator(ledger, hooks).run()
    assert summary.status is RunStatus.HARD_STOP
    (stop,) = summary.stops
    assert stop.stage is RunStage.HEARTBEAT and "was lost" in stop.reason
    assert world.performed == {"a": 1} and "b" not in world.tried
    assert "plan c" not in hooks.calls
    assert ledger.get(world.key("b")) is None  # no claim, no mutation of any kind
    thief.heartbeat()  # the stalled run did not release the thief's lease
    assert ledger.store.lease_get("alice-browser").owner == "thief"


def test_a_thread_runs_part_after_verified_part(ledger: Ledger, world: World) -> None:
    seen: list[Any] = []

    class Thread(Script):
        def plan(self, candidate: str) -> Any:
            parent = None
            for part in range(3):
                ref = f"{candidate}-{part}"
                result = yield self.world.effect(ref, payload={"parent": parent})
                seen.append(result.outcome)
                if not result.done:
                    return
                parent = result.result_ref

    world.how["t-1"] = "declined"
    summary = operator(ledger, Thread(world, ["t"])).run()
    assert seen == [Outcome.COMPLETED, Outcome.FAILED]
    assert [(i.label, i.cls) for i in summary.items] == [
        ("t", ItemClass.DONE), ("t #2", ItemClass.FAILED),
    ]  # fmt: skip
    assert world.performed == {"t-0": 1}
    part0 = ledger.get(world.key("t-0"))
    assert part0 is not None and part0.result_ref == "https://site/t-0"


def test_a_crash_in_a_hook_gives_the_lease_back(ledger: Ledger, world: World) -> None:
    class Interrupted(Script):
        def observe(self) -> list[str]:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        operator(ledger, Interrupted(world, ["a"])).run()
    record = ledger.store.lease_get("alice-browser")
    assert record is not None and record.owner == ""  # released in finally


def test_bad_arguments_are_refused(ledger: Ledger, world: World) -> None:
    with pytest.raises(UsageError, match="kinds"):
        Operator(ledger, "x", Script(world, []), kinds=())
    with pytest.raises(UsageError, match="ttl"):
        Operator(ledger, "x", Script(world, []), kinds=("post",), ttl=float("inf"))
    with pytest.raises(UsageError, match="name"):
        Operator(ledger, " ", Script(world, []), kinds=("post",))

    class Bad(Script):
        def plan(self, candidate: str) -> Any:
            return "not an effect"

    summary = operator(ledger, Bad(world, ["a"])).run()
    (item,) = summary.failures
    assert "plan() returns an Effect" in (item.reason or "")


def test_an_effect_of_another_kind_is_refused_before_any_claim(
    ledger: Ledger, world: World
) -> None:
    class Other(Script):
        def plan(self, candidate: str) -> Any:
            return self.world.effect(candidate, kind="invoice")

    summary = operator(ledger, Other(world, ["a"])).run()
    (item,) = summary.failures
    assert "not among this operator's kinds" in (item.reason or "")
    assert item.key == world.key("a", "invoice"), "the refused item does not name its key"
    assert (item.cls, item.stage) == (ItemClass.FAILED, RunStage.PLAN)
    assert world.performed == {} and ledger.get(world.key("a", "invoice")) is None


def test_a_run_id_used_twice_is_stored_once(ledger: Ledger, world: World) -> None:
    first = operator(ledger, Script(world, ["a"])).run(run_id="nightly-1")
    again = operator(ledger, Script(world, ["b"])).run(run_id="nightly-1")
    assert (first.stored, again.stored) == (True, False)
    assert ledger.summary("nightly-1") == first


@pytest.mark.parametrize("kind", ["post", "plain"])  # "plain": no verifier is registered
def test_a_stale_claim_never_marked_does_not_block_and_is_taken_over(
    ledger: Ledger, world: World, clock: FrozenClock, kind: str
) -> None:
    """A worker dies after its claim, before the mark: nothing was performed.

    While the dead owner's lease runs, its claim may still cross the boundary:
    new work waits. Once the lease ran out the claim is provably harmless (a
    claim is reversible until the ``executing`` mark): the next run goes on,
    with or without a verifier for its kind, and takes the key over as attempt 2.
    """

    class Kinds(Script):
        def plan(self, candidate: str) -> Any:
            return world.effect(candidate, kind=kind)

    def run(refs: list[str]) -> RunSummary:
        return Operator(ledger, "alice-browser", Kinds(world, refs), kinds=(kind,), ttl=60).run()

    with crash_at("after_claim"), pytest.raises(SimulatedCrash):
        run(["a"])
    stale = ledger.get(world.key("a", kind))
    assert stale is not None and stale.status is Status.CLAIMED and stale.executing_at is None
    blocked = run(["a"])
    assert blocked.status is RunStatus.HARD_STOP and blocked.stops[0].stage is RunStage.RECONCILE
    assert blocked.stops[0].keys == (stale.key,) and world.tried == set()
    clock.advance(120)  # the dead owner's lease ran out
    summary = run(["a"])
    assert summary.status is RunStatus.COMPLETED, summary.lines()
    assert [(i.label, i.outcome) for i in summary.done] == [("a", "completed")]
    after = ledger.get(stale.key)
    assert after is not None and after.status is Status.CONFIRMED and after.fence > stale.fence
    history = [(e.type, e.fence) for e in ledger.store.events(stale.key)]
    assert history[-3:] == [
        (EventType.CLAIMED, 2),
        (EventType.EXECUTING, 2),
        (EventType.CONFIRMED, 2),
    ]
    assert world.performed == {"a": 1}
