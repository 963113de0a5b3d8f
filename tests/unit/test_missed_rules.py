"""Protocol rules that a planted bug once broke while the suite stayed green (issue 7).

Each test names the rule; ``tests/mutants/plants.py`` names the bug it
catches. They run on memory and on a SQLite file, sync and async, with a
frozen clock: nothing here waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    EventType,
    Ledger,
    NotPerformed,
    Outcome,
    PayloadMismatch,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    Store,
)
from actonce.testing import FrozenClock

#: Authoritative absence, a settle window far shorter than the lease.
POLICY = Policy(settle_seconds=5.0, absence_authoritative=True, verify_attempts=1)


class World:
    """The outside world: the results that exist, and who looked for them."""

    def __init__(self) -> None:
        self.made: list[str] = []
        self.looks: list[str] = []

    def verify(self, ref: str, who: str = "run") -> Any:
        self.looks.append(who)
        return Confirmed(ref) if ref in self.made else Absent()

    def record_verifier(self, record: Any) -> Any:
        return self.verify(record.data["ref"], "reconcile")


def effect(world: World, ref: str, *, perform: Any = None, **payload: Any) -> Effect:
    return Effect(
        key=f"missed:{ref}",
        kind="missed",
        payload={"ref": ref, **payload},
        perform=perform or (lambda: world.made.append(ref)),
        verify=lambda: world.verify(ref),
        policy=POLICY,
    )


def registry(world: World, policy: Policy = POLICY) -> Registry:
    reg = Registry()
    reg.register("missed", world.record_verifier, policy=policy)
    return reg


@pytest.fixture(params=["sync", "async"])
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(driver: str, store: Store, clock: FrozenClock, what: Any, reg: Registry) -> Any:
    """``Ledger(...).run(effect)`` or ``.reconcile()`` (``what=None``), sync or async."""
    if driver == "sync":
        ledger = Ledger(store, clock=clock, registry=reg)
        return ledger.run(what) if what is not None else ledger.reconcile()

    async def go() -> Any:
        aledger = AsyncLedger(store, clock=clock, registry=reg)
        return await (aledger.run(what) if what is not None else aledger.reconcile())

    return asyncio.run(go())


# --- reconcile leaves a live lease alone ----------------------------------------------------


def test_reconcile_leaves_an_effect_whose_lease_is_live_alone(
    store: Store, clock: FrozenClock
) -> None:
    """Another worker's reconcile, run while the owner performs, neither looks nor writes."""
    world = World()
    reports: list[Any] = []
    ref = "live-1"

    def perform() -> None:
        # The owner is mid-perform: its executing mark is written, its lease live.
        before = store.get(f"missed:{ref}")
        reports.append(Ledger(store, clock=clock, registry=registry(world)).reconcile())
        assert store.get(f"missed:{ref}") == before, "reconcile wrote to a live effect"
        world.made.append(ref)

    result = Ledger(store, clock=clock, registry=registry(world)).run(
        effect(world, ref, perform=perform)
    )
    [report] = reports
    assert "reconcile" not in world.looks and report.results == (), (
        f"reconcile looked at an effect whose owner is still performing: {report.results}"
    )
    assert report.live == 1
    assert result.outcome is Outcome.COMPLETED and world.made == [ref]


# --- a payload mismatch is checked against every record, a failed one too -------------------


def test_a_failed_record_still_refuses_another_payload(
    store: Store, clock: FrozenClock, driver: str
) -> None:
    world = World()
    reg = registry(world)

    def decline() -> None:
        raise NotPerformed("the form never opened")

    first = run(driver, store, clock, effect(world, "pay-1", perform=decline, amount=10), reg)
    assert first.status is Status.FAILED  # re-openable: the key may be claimed again
    other = effect(world, "pay-1", amount=11)  # the same key, another payload
    with pytest.raises(PayloadMismatch):
        run(driver, store, clock, other, reg)
    assert world.made == []
    record = store.get("missed:pay-1")
    assert record is not None and record.status is Status.FAILED
    assert record.data["amount"] == 10


# --- declared secret names match at any depth ---------------------------------------------


def test_a_declared_plain_name_is_secret_at_any_depth(
    tmp_path: Path, clock: FrozenClock, driver: str
) -> None:
    path = tmp_path / "declared.db"
    store = SQLiteStore(str(path), create=True)
    world = World()
    payload = {
        # "iban" is no secret name of actonce's own: only the declaration makes it one.
        "payer": {"iban": "PLAINTEXT-IBAN-NESTED"},
        "steps": [{"form": {"iban": "PLAINTEXT-IBAN-LIST"}}],
    }
    base = effect(world, "secret-1", **payload)
    declared = Effect(
        key=base.key,
        kind=base.kind,
        payload=base.payload,
        perform=base.perform,
        verify=base.verify,
        policy=POLICY,
        secret_fields=("iban",),
    )
    assert run(driver, store, clock, declared, registry(world)).outcome is Outcome.COMPLETED
    record = store.get("missed:secret-1")
    store.close()
    assert record is not None
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(path.name))
    for where in ("NESTED", "LIST"):
        needle = f"PLAINTEXT-IBAN-{where}"
        assert needle not in record.payload and needle.encode() not in raw, (
            f"the declared secret 'iban' was stored in clear ({where.lower()})"
        )


# --- the owner gives its lease back with its verdict -----------------------------------------


def test_an_owner_gives_its_lease_back_with_its_verdict(
    store: Store, clock: FrozenClock, driver: str
) -> None:
    """Its request lost, the owner records ``unknown``; reconcile may then settle it as
    soon as the settle window after the perform has passed, not only once the lease
    (60 s) would have run out."""
    world = World()
    reg = registry(world)
    lost = effect(world, "lost-1", perform=lambda: None)  # the request never arrived
    first = run(driver, store, clock, lost, reg)
    record = store.get("missed:lost-1")
    assert record is not None and record.status is Status.UNKNOWN, first
    assert record.lease_expires_at <= clock.now(), (
        f"the owner kept its lease: it ends {record.lease_expires_at - clock.now():.0f}s "
        "after its verdict"
    )
    clock.advance(POLICY.settle_seconds + 1)  # the window has passed; the lease would not have
    report = run(driver, store, clock, None, reg)
    settled = store.get("missed:lost-1")
    assert settled is not None and settled.status is Status.FAILED, (
        f"the owner kept its lease: reconcile left it {settled and settled.status}, {report}"
    )
    assert world.made == []


# --- an owner overtaken during its perform makes the status more cautious, never settles it ----


@pytest.mark.parametrize("seen", ["visible", "not yet visible"])
def test_an_owner_overtaken_during_its_perform_sends_the_effect_to_review(
    store: Store, clock: FrozenClock, seen: str
) -> None:
    """The perform outlasts lease + settle; meanwhile reconcile proves absence and marks
    the effect failed (re-openable). The request then lands. The owner must not report
    failed or replan: it appends why and moves the effect to needs_review."""
    world = World()
    ref = f"overtaken-{seen.replace(' ', '-')}"
    reg = registry(world)
    marks: list[Any] = []

    def slow_perform() -> None:
        clock.advance(POLICY.lease_seconds + POLICY.settle_seconds + 1)
        marks.append(Ledger(store, clock=clock, registry=reg).reconcile())
        if seen == "visible":
            world.made.append(ref)

    result = Ledger(store, clock=clock, registry=reg).run(effect(world, ref, perform=slow_perform))
    [report] = marks
    assert [r.status for r in report.results] == [Status.FAILED]  # reconcile overtook it
    assert result.performed
    assert result.outcome is Outcome.NEEDS_REVIEW, result
    assert "replan" not in (result.reason or "")
    record = store.get(f"missed:{ref}")
    assert record is not None and record.status is Status.NEEDS_REVIEW
    alarm = [e for e in store.events(f"missed:{ref}") if "alarm" in (e.data or {})]
    assert len(alarm) == 1 and alarm[0].data["alarm"]["attempt"] == 1


def test_an_owner_overtaken_by_a_second_attempt_that_confirmed_raises_the_alarm(
    store: Store, clock: FrozenClock
) -> None:
    """Reconcile fails the slow owner's effect, a second worker performs and confirms it,
    then the first request lands too: two results may exist. The record stays
    confirmed (terminal: a verifier's or a human's to change); the history says it."""
    world = World()
    ref = "twice"
    reg = registry(world)
    seconds: list[Any] = []

    def slow_perform() -> None:
        clock.advance(POLICY.lease_seconds + POLICY.settle_seconds + 1)
        Ledger(store, clock=clock, registry=reg).reconcile()  # absent: failed
        seconds.append(Ledger(store, clock=clock, registry=reg).run(effect(world, ref)))
        world.made.append(ref)  # the first request lands after all

    result = Ledger(store, clock=clock, registry=reg).run(effect(world, ref, perform=slow_perform))
    [second] = seconds
    assert second.outcome is Outcome.COMPLETED and second.attempt == 2
    assert result.outcome is Outcome.NEEDS_REVIEW and result.performed
    assert result.reason == (
        "attempt 1 performed after being overtaken (the effect was confirmed under attempt 2); "
        "it may have happened twice: a human decides"
    )
    record = store.get(f"missed:{ref}")
    assert record is not None and record.status is Status.CONFIRMED and record.fence == 2
    [alarm] = [e for e in store.events(f"missed:{ref}") if e.type is EventType.OVERTAKEN]
    assert alarm.message == result.reason
    assert alarm.data["alarm"] == {"attempt": 1, "current_attempt": 2}
    assert "seconds" in alarm.data["perform"]


# --- the heartbeat that finds the row overtaken: the owner reloads it, never forgets it ------

#: A lease short enough that the owner's heartbeat (a third of it, in real time) beats
#: while the perform waits for it; ledger time stays frozen unless the test moves it.
BEATING = Policy(
    lease_seconds=0.3, settle_seconds=0.1, absence_authoritative=True, verify_attempts=1
)


class Watched(SQLiteStore):
    """A SQLite store that counts the heartbeat's lease extensions, says when one found the
    row no longer the owner's, and can hold them back (``admit``, cleared) while a test
    moves the clock: the heartbeat runs on real time, the test's clock is frozen, so a
    test synchronizes on the beats themselves, never on a time."""

    def __init__(self, path: str) -> None:
        super().__init__(path, create=True)
        self.refused = threading.Event()
        self.admit = threading.Event()
        self.admit.set()
        self._beats = threading.Condition()
        self._done = 0  # extensions finished

    def extend(self, key: str, expect: tuple[Status, int], lease_expires_at: float) -> bool:
        self.admit.wait()
        ok = super().extend(key, expect, lease_expires_at)
        with self._beats:
            self._done += 1
            self._beats.notify_all()
        if not ok:
            self.refused.set()
        return ok

    def beat_after_now(self, timeout: float = 30.0) -> bool:
        """Wait for an extension whose lease was computed after this call began.

        One heartbeat extends one lease after the other, each from a clock read just
        before its call: the extension under way now may carry a lease read before,
        the one after it cannot.
        """
        with self._beats:
            wanted = self._done + 2
            return self._beats.wait_for(lambda: self._done >= wanted, timeout)


def beating(world: World, ref: str, driver: str, perform: Callable[[], None]) -> Effect:
    """The effect ``ref`` under ``BEATING``, its ``perform`` sync or async (in a thread)."""

    async def aperform() -> None:
        await asyncio.to_thread(perform)

    built = effect(world, ref, perform=perform if driver == "sync" else aperform)
    return replace(built, policy=BEATING)


def test_the_owner_extends_its_own_lease_while_it_performs(
    driver: str, tmp_path: Path, clock: FrozenClock
) -> None:
    """Half a lease into the perform, the heartbeat moves the owner's lease to a full
    lease from now: on its own row (key, attempt), by the policy's lease."""
    world = World()
    ref = "beating"
    store = Watched(str(tmp_path / "ledger.db"))
    reg = registry(world)
    leases: list[float] = []

    def half_a_lease() -> None:
        clock.advance(BEATING.lease_seconds / 2)
        # A beat may have extended the lease before the clock moved: wait for one that
        # read the clock after it did (real time, on the heartbeat's own progress).
        assert store.beat_after_now(), "the heartbeat never extended the lease"
        record = store.get(f"missed:{ref}")
        assert record is not None and record.status is Status.EXECUTING
        leases.append(record.lease_expires_at - clock.now())
        world.made.append(ref)

    try:
        result = run(driver, store, clock, beating(world, ref, driver, half_a_lease), reg)
        assert result.outcome is Outcome.COMPLETED and result.performed, result
        assert leases == [pytest.approx(BEATING.lease_seconds)]
        assert not store.refused.is_set()
    finally:
        store.close()


def test_an_owner_whose_heartbeat_finds_its_row_failed_raises_the_alarm(
    driver: str, tmp_path: Path, clock: FrozenClock
) -> None:
    """Reconcile fails the effect mid-perform; the owner's heartbeat then finds the row
    changed (``overtaken``). The perform's request is not yet visible. The owner must look
    the record up again and raise the alarm (``needs_review``): a run that forgot the
    record would see a new key, be refused a second claim and report failed, "replan"."""
    world = World()
    ref = "beaten"
    store = Watched(str(tmp_path / "ledger.db"))
    reg = registry(world, BEATING)
    reports: list[Any] = []

    def fail_it_meanwhile() -> None:
        # No extension lands while the clock moves past the lease and reconcile looks (a
        # beat that read the moved clock first would make the lease live again).
        store.admit.clear()
        clock.advance(BEATING.lease_seconds + BEATING.settle_seconds + 1)
        reports.append(Ledger(store, clock=clock, registry=reg).reconcile())  # absent: failed
        store.admit.set()
        # The request is in flight: the next beat of the owner's heartbeat finds the row
        # failed. Wait for that beat (a real-time thread or task), not for a time.
        assert store.refused.wait(timeout=30), "the heartbeat never beat"

    try:
        result = run(driver, store, clock, beating(world, ref, driver, fail_it_meanwhile), reg)
        [report] = reports
        assert [r.status for r in report.results] == [Status.FAILED]
        assert result.performed
        assert result.outcome is Outcome.NEEDS_REVIEW, result
        assert "replan" not in (result.reason or "")
        record = store.get(f"missed:{ref}")
        assert record is not None and record.status is Status.NEEDS_REVIEW
        [alarm] = [e for e in store.events(f"missed:{ref}") if "alarm" in (e.data or {})]
        assert alarm.type is EventType.NEEDS_REVIEW and alarm.data["alarm"]["attempt"] == 1
        # The perform ended after the store refused the extension: stopping the heartbeat
        # waited for that call, so the answer says the heartbeat saw it (not a CAS).
        assert alarm.data["perform"]["overtaken"] is True
    finally:
        store.close()
