"""One reconcile pass, stated whole: what it verifies, leaves alone, cannot verify, and
how it reports an effect whose reconcile failed (issue 23 item 2, the ``_run`` area).

The pass goes on after a failure; the failed one is reported deferred, as
its record stands, with the error's type and message, and ``progress`` is
told of every result in order. Memory store, a frozen clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Ledger,
    LedgerError,
    MemoryStore,
    Outcome,
    Policy,
    Registry,
    Status,
    Unavailable,
    UsageError,
)
from actonce._run import points
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0)


class Breaks(MemoryStore):
    """A store that cannot record a settlement of the keys in ``broken``."""

    broken: set[str]

    def transition(self, expect: Any, new: Any, event: Any, **kw: Any) -> Any:
        if new.key in getattr(self, "broken", set()):
            raise LedgerError("disk full")
        return super().transition(expect, new, event, **kw)


def _lost(ledger: Ledger, key: str, kind: str = "pin") -> None:
    made: list[int] = []

    def perform() -> None:
        made.append(1)
        raise TimeoutError("lost")

    result = ledger.run(Effect(key=key, kind=kind, payload={}, perform=perform, policy=POLICY,
                               verify=lambda: Unavailable("down") if made else Absent()))  # fmt: skip
    assert result.status is Status.UNKNOWN


def _executing(ledger: Ledger, key: str) -> None:
    points.arm("after_mark_executing")
    try:
        with pytest.raises(points.SimulatedCrash):
            ledger.run(Effect(key=key, kind="pin", payload={}, perform=lambda: None,
                              verify=Absent, policy=POLICY))  # fmt: skip
    finally:
        points.disarm()


def test_a_pass_verifies_reports_failures_and_goes_on() -> None:
    clock, store = FrozenClock(start=1_000.0), Breaks()
    registry = Registry()
    registry.register("pin", lambda record: Confirmed(f"ref-{record.key}"), policy=POLICY)
    ledger = Ledger(store, clock=clock, registry=registry)
    _lost(ledger, "a-first")
    _lost(ledger, "b-broken")
    _lost(ledger, "c-third")
    _lost(ledger, "d-nobody", kind="unregistered")
    clock.advance(60.0)
    _executing(ledger, "e-live")  # its owner's lease runs
    store.broken = {"b-broken"}
    told: list[Any] = []
    report = ledger.reconcile(progress=told.append)
    assert told == list(report.results)
    by_key = {r.key: r for r in report.results}
    assert sorted(by_key) == ["a-first", "b-broken", "c-third"]
    assert by_key["a-first"].status is Status.CONFIRMED
    assert by_key["a-first"].result_ref == "ref-a-first"
    assert by_key["c-third"].status is Status.CONFIRMED
    message = "reconcile of this effect failed: LedgerError: disk full"
    broken = by_key["b-broken"]
    assert (broken.outcome, broken.status, broken.result_ref, broken.reason, broken.attempt) == (
        Outcome.DEFERRED, Status.UNKNOWN, None, message, 1,
    )  # fmt: skip
    assert broken.performed is False
    assert report.errors == (("b-broken", message),)
    assert report.no_verifier == ("d-nobody",)
    assert report.live == 1
    assert report.operations == ()
    assert ledger.get("b-broken").status is Status.UNKNOWN  # type: ignore[union-attr]
    assert ledger.get("e-live").status is Status.EXECUTING  # type: ignore[union-attr]


@pytest.mark.parametrize("progress", [5, "print", object()])
def test_progress_is_a_callable_or_none(progress: Any) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError) as err:
        ledger.reconcile(progress=progress)
    assert str(err.value) == f"progress must be callable or None, not {progress!r}"
    assert ledger.reconcile(progress=None).results == ()


def test_a_perform_proven_absent_fails_once_and_says_why() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(start=1_000.0))
    authoritative = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0,
                           absence_authoritative=True)  # fmt: skip
    tries: list[int] = []

    def perform() -> None:
        tries.append(1)
        raise ValueError("the form said no")

    result = ledger.run(Effect(key="k", kind="pin", payload={}, perform=perform,
                               verify=Absent, policy=authoritative))  # fmt: skip
    assert (result.outcome, result.status, result.performed) == (
        Outcome.FAILED, Status.FAILED, True,
    )  # fmt: skip
    assert (
        result.reason
        == "perform raised ValueError: the form said no; verified absent after the settle window"
    )
    assert tries == [1]


def test_the_async_pass_reports_what_the_sync_one_does() -> None:
    import asyncio

    from actonce import AsyncLedger

    clock, store = FrozenClock(start=1_000.0), Breaks()
    registry = Registry()
    registry.register("pin", lambda record: Confirmed(f"ref-{record.key}"), policy=POLICY)
    sync = Ledger(store, clock=clock, registry=registry)
    _lost(sync, "a-first")
    _lost(sync, "b-broken")
    _lost(sync, "d-nobody", kind="unregistered")
    clock.advance(60.0)
    _executing(sync, "e-live")
    store.broken = {"b-broken"}
    told: list[Any] = []

    async def main() -> Any:
        ledger = AsyncLedger(store, clock=clock, registry=registry)
        with pytest.raises(UsageError) as err:
            await ledger.reconcile(progress=3)  # type: ignore[arg-type]
        assert str(err.value) == "progress must be callable or None, not 3"
        return await ledger.reconcile(limit=100, progress=told.append)

    report = asyncio.run(main())
    assert told == list(report.results)
    got = sorted((r.key, r.status, r.result_ref, r.reason) for r in report.results)
    assert got == [
        ("a-first", Status.CONFIRMED, "ref-a-first", None),
        (
            "b-broken",
            Status.UNKNOWN,
            None,
            "reconcile of this effect failed: LedgerError: disk full",
        ),
    ]
    assert next(r for r in report.results if r.key == "b-broken").outcome is Outcome.DEFERRED
    assert report.errors == (
        ("b-broken", "reconcile of this effect failed: LedgerError: disk full"),
    )
    assert (report.live, report.no_verifier, report.operations) == (1, ("d-nobody",), ())
