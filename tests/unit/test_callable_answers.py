"""What the user's callables' answers mean, in the words a run stores (issue 23 item 2).

A verifier that raises or returns no verdict leaves the check unavailable
and says why; a perform's returned mapping (or its exception's ``details``)
is kept, scrubbed, with how long it took; a sync ledger refuses an awaitable;
a refresher's answer becomes facts or says what it was instead. Memory
store, a frozen clock; the async ledger awaits what the sync one refuses.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    Fact,
    Ledger,
    MemoryStore,
    Policy,
    Status,
    Unavailable,
    UsageError,
)
from actonce._run.callables import as_facts, as_verdict, evidence_ref, no_await, refreshed
from actonce._run.ops import Tick
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0)
AWAITABLE = "a callable returned an awaitable: use AsyncLedger for async effects"


def _run(perform: Any, verify: Any, key: str = "k") -> tuple[Any, Ledger, FrozenClock]:
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    effect = Effect(key=key, kind="pin", payload={}, perform=perform, verify=verify, policy=POLICY)
    return ledger.run(effect), ledger, clock


class After:
    """A verifier that answers ``then`` once the perform ran (absent before)."""

    def __init__(self, then: Any) -> None:
        self.then = then
        self.made = False

    def perform(self) -> None:
        self.made = True

    def verify(self) -> Any:
        if not self.made:
            return Absent()
        if isinstance(self.then, Exception):
            raise self.then
        return self.then


@pytest.mark.parametrize(
    ("then", "why"),
    [
        (ValueError("search down"), "verifier raised ValueError: search down"),
        (42, "verifier returned int, not a verdict"),
        (None, "verifier returned NoneType, not a verdict"),
        (True, "verifier returned bool, not a verdict"),
        (Unavailable("the page times out"), "the page times out"),
    ],
)
def test_a_check_that_could_not_be_made_says_why(then: Any, why: str) -> None:
    world = After(then)
    result, ledger, _ = _run(world.perform, world.verify)
    assert result.status is Status.UNKNOWN and result.performed is True
    assert result.reason == f"outcome not proven yet (verification unavailable: {why})"
    assert ledger.events("k")[-1].message == result.reason


def test_a_sync_ledger_refuses_an_awaitable_perform_as_the_perform_s_error() -> None:
    async def perform() -> None:
        return None

    result, ledger, _ = _run(perform, Absent)
    assert result.status is Status.NEEDS_REVIEW
    assert result.reason == (
        f"perform raised UsageError: {AWAITABLE}; still absent after the settle window; "
        "absence proves nothing here"
    )
    assert ledger.events("k")[-1].data == {
        "perform": {"error": f"UsageError: {AWAITABLE}", "seconds": 0.0}
    }


def test_a_sync_ledger_refuses_an_awaitable_verifier_as_unavailable() -> None:
    world = After(None)

    async def verify() -> Any:
        return Confirmed("x")

    def both() -> Any:
        return world.verify() if not world.made else verify()

    result, _, _ = _run(world.perform, both)
    assert result.reason == (
        f"outcome not proven yet (verification unavailable: verifier raised UsageError: "
        f"{AWAITABLE})"
    )


def test_what_a_perform_returned_is_kept_scrubbed_with_its_duration() -> None:
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    made: list[int] = []

    def perform() -> dict[str, Any]:
        made.append(1)
        clock.advance(2.5)
        return {"order": "A1", "password": "hunter2"}

    effect = Effect(key="k", kind="pin", payload={}, perform=perform, policy=POLICY,
                    verify=lambda: Confirmed("A1") if made else Absent())  # fmt: skip
    result = ledger.run(effect)
    assert (result.status, result.result_ref) == (Status.CONFIRMED, "A1")
    data = ledger.events("k")[-1].data
    assert data["perform"] == {"seconds": 2.5, "details": {"order": "A1", "password": "[redacted]"}}
    assert data["result_ref"] == "A1"


class Declined(Exception):
    def __init__(self, details: Any) -> None:
        super().__init__("the form said no")
        self.details = details


@pytest.mark.parametrize(
    ("details", "kept"), [({"page": "/done"}, {"page": "/done"}), ("not a mapping", None)]
)
def test_an_exception_s_details_are_kept_when_they_are_a_mapping(details: Any, kept: Any) -> None:
    world = After(Unavailable("down"))

    def perform() -> None:
        world.perform()
        raise Declined(details)

    _, ledger, _ = _run(perform, world.verify)
    info = ledger.events("k")[-1].data["perform"]
    assert info["error"] == "Declined: the form said no"
    assert info.get("details") == kept
    assert ("details" in info) is (kept is not None)


def test_a_perform_that_returns_no_mapping_keeps_no_details() -> None:
    world = After(Confirmed("r"))

    def perform() -> str:
        world.perform()
        return "ok"

    _, ledger, _ = _run(perform, world.verify)
    assert ledger.events("k")[-1].data["perform"] == {"seconds": 0.0}


def test_the_async_ledger_awaits_what_the_sync_one_refuses() -> None:
    made: list[int] = []

    async def perform() -> dict[str, str]:
        made.append(1)
        return {"order": "B2"}

    async def verify() -> Any:
        return Confirmed("B2") if made else Absent()

    async def main() -> Any:
        ledger = AsyncLedger(MemoryStore(), clock=FrozenClock(start=1_000.0))
        effect = Effect(key="k", kind="pin", payload={}, perform=perform, verify=verify,
                        policy=POLICY)  # fmt: skip
        return await ledger.run(effect), await ledger.events("k")

    result, events = asyncio.run(main())
    assert (result.status, result.result_ref, made) == (Status.CONFIRMED, "B2", [1])
    assert events[-1].data["perform"] == {"seconds": 0.0, "details": {"order": "B2"}}


# --- the shapes, one by one ------------------------------------------------------------------


def test_a_verdict_is_kept_and_anything_else_is_unavailable() -> None:
    for verdict in (Confirmed("r"), Absent(), Unavailable("x")):
        assert as_verdict(verdict) is verdict
    assert as_verdict("yes") == Unavailable("verifier returned str, not a verdict")


def test_a_refresher_answers_facts_a_mapping_or_says_what_it_was() -> None:
    now = Tick(50.0, 7.0, True)
    price = Fact("price", Decimal("240"), 40.0)
    assert as_facts({"price": 240, "room": "twin"}, 50.0) == (
        Fact("price", 240, 50.0), Fact("room", "twin", 50.0),
    )  # fmt: skip
    assert as_facts(price, 50.0) == (price,)
    assert as_facts([price], 50.0) == (price,)
    assert as_facts((), 50.0) == ()
    with pytest.raises(UsageError) as err:
        as_facts(12, 50.0)
    assert str(err.value) == "a refresher returns facts, not int"
    with pytest.raises(UsageError) as err:
        as_facts([price, "cheap"], 50.0)
    assert str(err.value) == "a refresher returns Fact values or a mapping of name -> value"
    got = refreshed(None, {"price": 1}, None, now)
    assert (got.facts, got.error, got.tick) == ((Fact("price", 1, 50.0),), None, now)
    got = refreshed(None, 12, None, now)
    assert (got.facts, got.error) == (None, "a refresher returns facts, not int")
    got = refreshed(None, None, TimeoutError("slow shop"), now)
    assert (got.facts, got.error, got.tick) == (None, "TimeoutError: slow shop", now)


def test_evidence_is_a_reference_or_nothing() -> None:
    assert evidence_ref(None) is None
    assert evidence_ref(7) == "7"
    assert evidence_ref("shot-1.png") == "shot-1.png"


def test_no_await_passes_plain_answers_and_refuses_awaitables() -> None:
    for plain in (None, True, "x", Absent(), [1], {"a": 1}):
        assert no_await(plain) is plain

    async def coro() -> None:
        return None

    c = coro()
    with pytest.raises(UsageError) as err:
        no_await(c)
    assert str(err.value) == AWAITABLE
    assert c.cr_frame is None  # closed: no "never awaited" warning


def test_a_payload_secret_in_a_verifier_s_words_never_reaches_the_reason() -> None:
    """The reason a run returns and stores is scrubbed of the effect's own secret values,
    whatever part of it they came through (here: an unavailable verdict's words)."""
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    made: list[int] = []

    def perform() -> None:
        made.append(1)
        raise TimeoutError("lost")

    def verify() -> Any:
        if made:
            return Unavailable("login as acct-77 with S3cretPin991 timed out")
        return Absent()

    effect = Effect(key="k", kind="pin", payload={"account": "acct-77", "pin": "S3cretPin991"},
                    secret_fields=("pin",), perform=perform, verify=verify, policy=POLICY)  # fmt: skip
    result = ledger.run(effect)
    expected = (
        "perform raised TimeoutError: lost; outcome not proven yet "
        "(verification unavailable: login as acct-77 with [redacted] timed out)"
    )
    assert result.reason == expected
    assert [e.message for e in ledger.events("k")][-1] == expected
    assert ledger.get("k").reason == expected  # type: ignore[union-attr]
