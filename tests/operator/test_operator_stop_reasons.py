"""Why an operator run stopped, or skipped a candidate, in its own words (issue 23 item 2).

The ``_run`` area's sample (dev-run-1) found the operator's stop reasons
unstated beyond a few words: each stage that fails says which stage, what
failed (an exception by its type and message, a hard stop by its reason) and
that nothing was done after it. Memory stores, a frozen clock, the world of
``opworld``; a failing store is a ``MemoryStore`` whose one primitive raises.
"""

from __future__ import annotations

from typing import Any

import pytest
from opworld import Script, World
from test_operator_loop import operator

from actonce import (
    HardStop,
    ItemClass,
    Lease,
    Ledger,
    LedgerError,
    MemoryStore,
    Registry,
    RunStage,
    RunStatus,
)
from actonce._store.records import LeaseResult
from actonce.testing import FrozenClock


class Knobs(Script):
    """A script whose hooks raise (or answer) what a test sets in ``fail``."""

    def __init__(self, world: World, refs: list[str], **fail: Any) -> None:
        super().__init__(world, refs)
        self.fail = fail

    def _maybe(self, name: str, default: Any) -> Any:
        if name not in self.fail:
            return default()
        value = self.fail[name]
        if isinstance(value, BaseException):
            raise value
        return value

    def identity(self) -> bool | str | None:
        return self._maybe("identity", super().identity)  # type: ignore[no-any-return]

    def observe(self) -> Any:
        return self._maybe("observe", super().observe)

    def rank(self, candidates: list[str]) -> Any:
        return self._maybe("rank", lambda: candidates)

    def label(self, candidate: str) -> str:
        return self._maybe("label", lambda: f"post {candidate}")  # type: ignore[no-any-return]

    def quality(self, candidate: str) -> str | None:
        return self._maybe("quality", lambda: super(Knobs, self).quality(candidate))  # type: ignore[no-any-return]

    def plan(self, candidate: str) -> Any:
        return self._maybe("plan", lambda: super(Knobs, self).plan(candidate))


def _run(world: World, clock: FrozenClock, hooks: Any, store: Any = None) -> Any:
    with Ledger(store or MemoryStore(), clock=clock, registry=Registry()) as ledger:
        return operator(ledger, hooks).run()


def _stop(summary: Any) -> tuple[RunStage, str]:
    (stop,) = summary.stops
    assert summary.status is RunStatus.HARD_STOP
    return stop.stage, stop.reason


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (HardStop("signed in as bob"), "signed in as bob"),
        (RuntimeError("no page"), "RuntimeError: no page"),
        (False, "not confirmed"),
        ("", "not confirmed"),
        ("the login wall is visible", "the login wall is visible"),
    ],
)
def test_identity_in_doubt_stops_before_anything(
    world: World, clock: FrozenClock, answer: Any, why: str
) -> None:
    hooks = Knobs(world, ["a"], identity=answer)
    summary = _run(world, clock, hooks)
    assert _stop(summary) == (RunStage.IDENTITY, f"identity in doubt: {why}")
    assert "observe" not in hooks.calls and world.tried == set()


@pytest.mark.parametrize("answer", [True, None])
def test_identity_true_or_unsaid_goes_on(world: World, clock: FrozenClock, answer: Any) -> None:
    summary = _run(world, clock, Knobs(world, ["a"], identity=answer))
    assert summary.status is RunStatus.COMPLETED and world.performed == {"a": 1}


@pytest.mark.parametrize(
    ("hook", "stage"), [("observe", RunStage.OBSERVE), ("rank", RunStage.RANK)]
)
@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (RuntimeError("the feed is down"), "RuntimeError: the feed is down"),
        (None, "UsageError: it returned None, not its candidates (an empty list: none)"),
        (HardStop("a CAPTCHA screen"), "a CAPTCHA screen"),
    ],
)
def test_a_listing_that_fails_stops_with_nothing_done(
    world: World, clock: FrozenClock, hook: str, stage: RunStage, answer: Any, why: str
) -> None:
    summary = _run(world, clock, Knobs(world, ["a"], **{hook: answer}))
    assert _stop(summary) == (stage, f"{hook} failed, nothing was done: {why}")
    assert world.tried == set() and summary.candidates == 0


def test_an_empty_listing_is_a_completed_run(world: World, clock: FrozenClock) -> None:
    summary = _run(world, clock, Knobs(world, ["a"], observe=[]))
    assert summary.status is RunStatus.COMPLETED and summary.items == ()


def test_a_quality_gate_that_raises_skips_the_candidate(world: World, clock: FrozenClock) -> None:
    summary = _run(world, clock, Knobs(world, ["a"], quality=ValueError("no score")))
    (item,) = summary.items
    assert (item.label, item.cls, item.stage) == (
        "post a",
        ItemClass.QUALITY_SKIP,
        RunStage.QUALITY,
    )
    assert item.reason == "the quality gate raised ValueError: no score; not acted on"
    assert summary.status is RunStatus.COMPLETED and world.tried == set()


def test_a_label_that_raises_falls_back_to_the_candidate(world: World, clock: FrozenClock) -> None:
    summary = _run(world, clock, Knobs(world, ["a"], label=KeyError("x")))
    (item,) = summary.items
    assert item.label == "'a'" and item.cls is ItemClass.DONE


def test_a_plan_that_raises_fails_the_candidate_and_goes_on(
    world: World, clock: FrozenClock
) -> None:
    summary = _run(world, clock, Knobs(world, ["a", "b"], plan=ValueError("no draft")))
    assert [(i.label, i.cls, i.stage, i.reason) for i in summary.items] == [
        ("post a", ItemClass.FAILED, RunStage.PLAN,
         "could not plan it, nothing was done: ValueError: no draft"),
        ("post b", ItemClass.FAILED, RunStage.PLAN,
         "could not plan it, nothing was done: ValueError: no draft"),
    ]  # fmt: skip
    assert summary.status is RunStatus.COMPLETED


def test_a_plan_that_hard_stops_stops_the_run(world: World, clock: FrozenClock) -> None:
    summary = _run(world, clock, Knobs(world, ["a", "b"], plan=HardStop("the account is locked")))
    (item,) = summary.items
    assert (item.label, item.cls, item.stage, item.reason) == (
        "post a", ItemClass.STOPPED, RunStage.PLAN, "the account is locked",
    )  # fmt: skip
    assert _stop(summary) == (RunStage.PLAN, "post a: the account is locked")


# --- the lease ----------------------------------------------------------------------------------


class NoLease(MemoryStore):
    def lease_acquire(self, name: str, owner: str, now: float, expires_at: float) -> Any:
        raise LedgerError("leases table locked")


class NoRenew(MemoryStore):
    def lease_renew(self, *args: Any) -> Any:
        raise LedgerError("leases table locked")


def test_a_lease_the_ledger_cannot_give_stops_the_run(world: World, clock: FrozenClock) -> None:
    hooks = Knobs(world, ["a"])
    summary = _run(world, clock, hooks, NoLease())
    assert _stop(summary) == (
        RunStage.LEASE,
        "the lease could not be taken: LedgerError: leases table locked",
    )
    assert summary.token == 0 and summary.held_by is None and hooks.calls == []


def test_a_lease_the_ledger_cannot_renew_stops_before_any_mutation(
    world: World, clock: FrozenClock
) -> None:
    hooks = Knobs(world, ["a"])
    summary = _run(world, clock, hooks, NoRenew())
    assert _stop(summary) == (
        RunStage.HEARTBEAT,
        "the lease could not be renewed (LedgerError: leases table locked); stopped "
        "before any further mutation",
    )
    assert world.tried == set() and hooks.calls == []


def test_a_lease_taken_over_meanwhile_stops_before_any_mutation(
    world: World, clock: FrozenClock
) -> None:
    store = MemoryStore()
    with Ledger(store, clock=clock, registry=Registry()) as ledger:
        hooks = Knobs(world, ["a"])

        def take_over() -> list[str]:
            clock.advance(120)  # the run's lease (ttl 60) expires
            assert Lease(ledger, "alice-browser", owner="thief", ttl=60).acquire()
            return ["a"]

        hooks.fail["observe"] = None
        hooks.observe = take_over  # type: ignore[method-assign]
        summary = operator(ledger, hooks).run()
    assert _stop(summary) == (
        RunStage.HEARTBEAT,
        "lease 'alice-browser' was lost (it expired and another run took it over); "
        "stopped before any further mutation",
    )
    assert world.tried == set()


def test_a_held_lease_is_a_locked_skip_naming_its_holder(world: World, clock: FrozenClock) -> None:
    with Ledger(MemoryStore(), clock=clock, registry=Registry()) as ledger:
        assert Lease(ledger, "alice-browser", owner="x" * 300, ttl=60).acquire()
        summary = operator(ledger, Knobs(world, ["a"])).run()
    assert summary.status is RunStatus.LOCKED_SKIP and summary.stops == ()
    assert summary.held_by == "x" * 199 + "…"


class NoClaims(MemoryStore):
    """A ledger that cannot record a claim."""

    def claim(self, *args: Any, **kwargs: Any) -> Any:
        raise LedgerError("disk full")


def test_a_step_the_ledger_cannot_record_stops_the_run_with_its_item(
    world: World, clock: FrozenClock
) -> None:
    summary = _run(world, clock, Knobs(world, ["a", "b"]), NoClaims())
    (item,) = summary.items
    assert (item.label, item.cls, item.stage, item.reason) == (
        "post a", ItemClass.STOPPED, RunStage.ACT, "LedgerError: disk full",
    )  # fmt: skip
    assert item.key == world.key("a")
    stage, reason = _stop(summary)
    assert (stage, reason) == (
        RunStage.ACT,
        "post a: the ledger could not record a step (LedgerError: disk full); nothing was "
        "performed after the failure",
    )
    assert summary.stops[0].keys == (world.key("a"),)
    assert world.tried == set()


class NoHolder(MemoryStore):
    """A lease refused by a store that cannot say who holds it (its row gone meanwhile)."""

    def lease_acquire(self, name: str, owner: str, now: float, expires_at: float) -> Any:
        return LeaseResult(False, None)  # type: ignore[arg-type]


def test_a_lease_held_by_no_one_the_store_can_name_is_held_by_another_run(
    world: World, clock: FrozenClock
) -> None:
    hooks = Knobs(world, ["a"])
    summary = _run(world, clock, hooks, NoHolder())
    assert summary.status is RunStatus.LOCKED_SKIP and summary.stops == ()
    assert (summary.held_by, summary.token, summary.items) == ("another run", 0, ())
    assert hooks.calls == [] and world.tried == set()
