"""What the public classes take when they are made, each refusal in its own words
(issue 23 item 2, the facades area): an operator's configuration, an operation's
steps, a budget gate and pool, a ledger's store, ``provider_retry``.

Memory store, a frozen clock; ``provider_retry`` with a recorded sleep.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncHooks,
    AsyncLedger,
    AsyncOperator,
    Effect,
    Hooks,
    Ledger,
    MemoryStore,
    Operation,
    Operator,
    Step,
    UsageError,
    aprovider_retry,
    provider_retry,
)
from actonce._rules.budgets import Draw
from actonce.testing import FrozenClock


def _refused(call: Any, message: str) -> None:
    with pytest.raises(UsageError) as err:
        call()
    assert str(err.value) == message


def _effect(key: str = "k") -> Effect:
    return Effect(key=key, kind="pin", payload={}, perform=lambda: None, verify=Absent)


class Nothing(Hooks[str]):
    def observe(self) -> list[str]:
        return []

    def plan(self, candidate: str) -> Any:
        return None


class AsyncNothing(AsyncHooks[str]):
    async def observe(self) -> list[str]:
        return []

    async def plan(self, candidate: str) -> Any:
        return None


# --- the operator ------------------------------------------------------------------------------

NAME = "an operator needs a name (its lease's; at most 200 characters)"
KINDS = "an operator needs the kinds of effect it makes (kinds=('post', ...))"


@pytest.mark.parametrize(
    ("name", "kw", "message"),
    [
        ("", {}, NAME),
        ("  ", {}, NAME),
        ("x" * 201, {}, NAME),
        (None, {}, NAME),
        ("ops", {"kinds": ()}, KINDS),
        ("ops", {"kinds": ("post", " ")}, KINDS),
        ("ops", {"kinds": ("post", 3)}, KINDS),
        ("ops", {"kinds": ""}, KINDS),
        ("ops", {"ttl": float("inf")}, "an operator's ttl is a finite number of seconds, not inf"),
        ("ops", {"ttl": True}, "an operator's ttl is a finite number of seconds, not True"),
        ("ops", {"ttl": "60"}, "an operator's ttl is a finite number of seconds, not '60'"),
        ("ops", {"ttl": 0}, "an operator needs a positive ttl"),
        ("ops", {"limit": 0}, "limit must be a whole number from 1 to 100,000, not 0"),
        ("ops", {"limit": 100_001}, "limit must be a whole number from 1 to 100,000, not 100001"),
        ("ops", {"limit": True}, "limit must be a whole number from 1 to 100,000, not True"),
    ],
)  # fmt: skip
def test_an_operator_is_configured_in_its_words(
    name: Any, kw: dict[str, Any], message: str
) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    given = {"kinds": ("post",)} | kw
    _refused(lambda: Operator(ledger, name, Nothing(), **given), message)


def test_an_operator_s_configuration_as_given() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    op = Operator(ledger, "x" * 200, Nothing(), kinds="post", ttl=5, owner="me", limit=100_000)
    assert (op.name, op.config.kinds, op.config.ttl, op.config.owner, op.config.limit) == (
        "x" * 200, frozenset({"post"}), 5.0, "me", 100_000,
    )  # fmt: skip
    assert isinstance(op.config.ttl, float)
    other = Operator(ledger, "ops", Nothing(), kinds=["a", "b", "a"], limit=1)
    assert other.config.kinds == frozenset({"a", "b"}) and other.config.owner


def test_an_operator_s_ledger_and_hooks_match() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    aledger = AsyncLedger(MemoryStore(), clock=FrozenClock())
    _refused(
        lambda: Operator(aledger, "ops", Nothing(), kinds=("post",)),  # type: ignore[arg-type]
        "Operator needs a Ledger: use AsyncOperator with an AsyncLedger",
    )
    _refused(
        lambda: Operator(ledger, "ops", AsyncNothing(), kinds=("post",)),  # type: ignore[arg-type]
        "AsyncHooks are awaited: use AsyncOperator with an AsyncLedger",
    )
    _refused(
        lambda: AsyncOperator(ledger, "ops", AsyncNothing(), kinds=("post",)),  # type: ignore[arg-type]
        "AsyncOperator needs an AsyncLedger: use Operator with a Ledger",
    )


@pytest.mark.parametrize("run_id", ["", "  ", "r" * 201, 5])
def test_a_run_id_is_a_short_non_empty_string(run_id: Any) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    op = Operator(ledger, "ops", Nothing(), kinds=("post",))
    _refused(
        lambda: op.run(run_id=run_id), "run_id must be a non-empty string (at most 200 characters)"
    )


def test_a_run_is_named_as_given_or_op_and_a_fresh_id() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    op = Operator(ledger, "ops", Nothing(), kinds=("post",))
    assert op.run(run_id="r" * 200).run_id == "r" * 200
    first, second = op.run().run_id, op.run().run_id
    assert first.startswith("op-") and second.startswith("op-") and first != second
    assert len(first) > len("op-")


class Planner(Hooks[str]):
    def __init__(self, plan: Any) -> None:
        self.planned = plan

    def observe(self) -> list[str]:
        return ["a"]

    def plan(self, candidate: str) -> Any:
        return self.planned


@pytest.mark.parametrize(
    ("plan", "why"),
    [
        ("an effect", "UsageError: plan() returns an Effect, effects, a generator of effects or "
                      "None, not str"),
        ({"key": "k"}, "UsageError: plan() returns an Effect, effects, a generator of effects or "
                       "None, not dict"),
        (42, "UsageError: plan() returns an Effect, effects, a generator of effects or None, "
             "not int"),
        (["not an effect"], "UsageError: a plan's effects are actonce.Effect values, not str"),
    ],
)  # fmt: skip
def test_a_plan_that_is_no_effect_fails_its_candidate(plan: Any, why: str) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    summary = Operator(ledger, "ops", Planner(plan), kinds=("pin",)).run()
    (item,) = summary.items
    assert item.reason == f"could not plan it, nothing was done: {why}"


# --- operations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Step("", _effect()), "a step needs a name"),
        (lambda: Step(" ", _effect()), "a step needs a name"),
        (lambda: Step("a", "e"), "step 'a': effect must be an actonce.Effect"),
        (lambda: Step("a", _effect(), "boss"),
         "step 'a': role is one of compensatable, pivot, retriable"),
        (lambda: Step("a", _effect(), undo="u"), "step 'a': undo must be an actonce.Effect"),
        (lambda: Step("a", _effect(), attempts=0),
         "step 'a': attempts is a whole number from 1 to 100"),
        (lambda: Step("a", _effect(), attempts=101),
         "step 'a': attempts is a whole number from 1 to 100"),
        (lambda: Step("a", _effect(), attempts=True),
         "step 'a': attempts is a whole number from 1 to 100"),
        (lambda: Step("a", _effect(), backoff=-0.1), "step 'a': backoff is 0 to 86400 seconds"),
        (lambda: Step("a", _effect(), backoff=86400.5), "step 'a': backoff is 0 to 86400 seconds"),
        (lambda: Step("a", _effect(), backoff=True), "step 'a': backoff is 0 to 86400 seconds"),
    ],
)  # fmt: skip
def test_a_step_is_checked_when_it_is_made(make: Any, message: str) -> None:
    _refused(make, message)


def test_a_step_at_its_bounds_is_taken() -> None:
    step = Step("a", _effect(), "pivot", attempts=100, backoff=86400)
    assert (step.attempts, step.backoff) == (100, 86400)
    assert Step("b", _effect(), attempts=1, backoff=0).backoff == 0


def test_an_operation_is_checked_when_it_is_made() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    a, b = Step("a", _effect("k1"), "retriable"), Step("b", _effect("k2"), "pivot")
    _refused(lambda: Operation(ledger, "", [a]), "an operation needs an id")
    _refused(lambda: Operation(ledger, " ", [a]), "an operation needs an id")
    _refused(lambda: Operation(ledger, "op", [a], contact=" "),
             "contact is who the user may ask (a non-empty string)")  # fmt: skip
    _refused(lambda: Operation(ledger, "op", []), "an operation needs at least one step")
    _refused(lambda: Operation(ledger, "op", [a, Step("a", _effect("k3"), "retriable")]),
             "the steps of an operation need different names")  # fmt: skip
    _refused(lambda: Operation(ledger, "op", [a, Step("c", _effect("k1"), "retriable")]),
             "every step and undo of an operation needs a key of its own")  # fmt: skip
    _refused(lambda: Operation(ledger, "op", [Step("c", _effect("k3"), undo=_effect("k1")), a]),
             "every step and undo of an operation needs a key of its own")  # fmt: skip
    op = Operation(ledger, "op", [b, a], contact="  ana@example.org ")
    assert op.plan.contact == "ana@example.org" and op.op_id == "op"
    for limit in (0, 10_001, True, "5"):
        message = f"limit is a whole number from 1 to 10000, not {limit!r}"
        _refused(lambda n=limit: ledger.operations.in_review(limit=n), message)
        _refused(lambda n=limit: ledger.operations.due(limit=n), message)
    assert ledger.operations.in_review(limit=10_000) == [] and ledger.operations.due(limit=1) == []


# --- budgets and the ledger ----------------------------------------------------------------------


def test_a_gate_draws_a_positive_amount_on_named_pools() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    _refused(lambda: ledger.budgets.gate(amount="5"), "name at least one pool to draw on")
    _refused(lambda: ledger.budgets.gate("a", amount="0"),
             "a gate draws a positive amount on its pools, not 0")  # fmt: skip
    gate = ledger.budgets.gate("a", "b", amount="5")
    assert gate.draws == (Draw("a", Decimal("5")), Draw("b", Decimal("5")))
    assert (gate.intent, gate.approval, gate.amount, gate.facts) == (None, None, None, ())
    assert ledger.budgets.gate("a").draws == (Draw("a", Decimal("1")),)
    _refused(lambda: ledger.budgets.define("p", None), "a budget pool needs a limit")  # type: ignore[arg-type]
    pool = ledger.budgets.define("p", "12")
    assert pool.limit == Decimal("12") and pool.name == "p"


def test_a_ledger_is_made_on_a_store() -> None:
    _refused(lambda: Ledger({}),  # type: ignore[arg-type]
             "Ledger needs a synchronous store: use AsyncLedger for async stores")  # fmt: skip
    _refused(lambda: AsyncLedger([]), "AsyncLedger needs a store, not list")  # type: ignore[arg-type]
    assert Ledger(MemoryStore()).url == "(a store given directly)"


# --- provider_retry ------------------------------------------------------------------------------


class Flaky:
    def __init__(self, fails: int, error: type[Exception] = TimeoutError) -> None:
        self.fails, self.error, self.calls = fails, error, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.fails:
            raise self.error(f"try {self.calls}")
        return "made"


def test_provider_retry_backs_off_doubling_up_to_eight_seconds() -> None:
    slept: list[float] = []
    call = Flaky(5)
    assert provider_retry(call, attempts=6, backoff=1.5, sleep=slept.append) == "made"
    assert call.calls == 6 and slept == [1.5, 3.0, 6.0, 8.0, 8.0]


def test_provider_retry_gives_up_with_the_last_error() -> None:
    slept: list[float] = []
    call = Flaky(9)
    with pytest.raises(TimeoutError) as err:
        provider_retry(call, sleep=slept.append)
    assert str(err.value) == "try 4" and call.calls == 4 and slept == [0.5, 1.0, 2.0]
    other = Flaky(1, KeyError)
    with pytest.raises(KeyError):
        provider_retry(other, retry_on=(TimeoutError,), sleep=slept.append)
    assert other.calls == 1
    once = Flaky(1)
    with pytest.raises(TimeoutError):
        provider_retry(once, attempts=1, sleep=slept.append)
    assert once.calls == 1 and provider_retry(Flaky(0), attempts=20) == "made"


@pytest.mark.parametrize("attempts", [0, 21, 1.5, "3"])
def test_provider_retry_attempts_are_one_to_twenty(attempts: Any) -> None:
    _refused(lambda: provider_retry(Flaky(0), attempts=attempts),
             "attempts is a whole number from 1 to 20")  # fmt: skip

    async def main() -> None:
        await aprovider_retry(Flaky(0), attempts=attempts)  # type: ignore[arg-type, return-value]

    _refused(lambda: asyncio.run(main()), "attempts is a whole number from 1 to 20")


def test_aprovider_retry_retries_what_it_is_told_to() -> None:
    flaky = Flaky(2)

    async def call() -> str:
        return flaky()

    assert asyncio.run(aprovider_retry(call, attempts=3, backoff=0.0)) == "made"
    assert flaky.calls == 3
    never = Flaky(5)

    async def failing() -> str:
        return never()

    with pytest.raises(TimeoutError) as err:
        asyncio.run(aprovider_retry(failing, attempts=2, backoff=0.0))
    assert str(err.value) == "try 2" and never.calls == 2
    other = Flaky(1, KeyError)

    async def wrong() -> str:
        return other()

    with pytest.raises(KeyError):
        asyncio.run(aprovider_retry(wrong, retry_on=(TimeoutError,), backoff=0.0))
    assert other.calls == 1


def test_an_operation_s_shape_is_checked_when_it_is_made() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    pivot = Step("book", _effect("k1"), "pivot")
    _refused(
        lambda: Operation(ledger, "op", [pivot, Step("pay", _effect("k2"), "pivot")]),
        "an operation has at most one pivot step",
    )
    _refused(
        lambda: Operation(ledger, "op", [Step("hold", _effect("k2")), pivot]),
        "step 'hold' is compensatable but has no undo",
    )
    _refused(
        lambda: Operation(ledger, "op", [Step("tell", _effect("k2"), "retriable"), pivot]),
        "retriable step 'tell' must come after the pivot",
    )
    hold = Step("hold", _effect("k2"), "compensatable", undo=_effect("k3"))
    tell = Step("tell", _effect("k4"), "retriable")
    assert Operation(ledger, "op", [hold, pivot, tell]).plan.steps[1].role.value == "pivot"
