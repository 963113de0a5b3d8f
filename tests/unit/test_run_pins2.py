"""``_run`` pinned where the area's held-out mutation sample (seed 2) found it loose
(issue 23 item 2): a stored receipt keeps its data, an empty operation id is refused
with its reason, and ``ACTONCE_CRASH_AT`` arms the point it names. Memory store, a
frozen clock; nothing here waits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from actonce import Absent, Confirmed, Effect, Ledger, MemoryStore, Operation, Step, UsageError
from actonce._run import points
from actonce._run.clock import StepWatch
from actonce._run.operation_view import parse_spec
from actonce.testing import FrozenClock


def _effect(name: str, made: list[str]) -> Effect:
    return Effect(
        key=name,
        kind="pin",
        payload={"n": name},
        perform=lambda: made.append(name),
        verify=lambda: Confirmed(name) if name in made else Absent(),
    )


def test_a_stored_receipt_keeps_what_the_live_one_says() -> None:
    made: list[str] = []
    with Ledger(MemoryStore(), clock=FrozenClock()) as lg:
        steps = [Step("book", _effect("op-book", made), "pivot"),
                 Step("notify", _effect("op-notify", made), "retriable")]  # fmt: skip
        assert Operation(lg, "op-1", steps).run().done
        [(stored, _)] = lg.receipts()
        live = lg.receipt("op-1")
        assert live is not None and stored.operation_id == "op-1"
        assert isinstance(stored.data, Mapping), (
            f"the stored receipt lost its data: {stored.data!r}"
        )
        assert stored.data == live.data and stored.text == live.text


@pytest.mark.parametrize("op_id", ["", "   "])
def test_an_empty_operation_id_is_refused_with_its_reason(op_id: str) -> None:
    with Ledger(MemoryStore()) as lg, pytest.raises(UsageError) as err:
        lg.operations.get(op_id)
    assert str(err.value) == "an operation id is a non-empty string"


@pytest.fixture
def env_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    points.disarm()
    monkeypatch.setattr(points, "_env_loaded", False)
    yield
    points.disarm()


def test_the_environment_arms_the_point_it_names(
    env_points: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTONCE_CRASH_AT", "after_perform:2")
    monkeypatch.setenv("ACTONCE_CRASH_MODE", "raise")
    assert points.armed() == "after_perform"
    points.hit("after_perform")  # the first pass goes by
    with pytest.raises(points.SimulatedCrash):
        points.hit("after_perform")


def test_the_environment_is_read_once_at_the_first_look(
    env_points: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash tests set it before the process starts; a point never reads it again."""
    monkeypatch.delenv("ACTONCE_CRASH_AT", raising=False)
    assert points.armed() is None
    monkeypatch.setenv("ACTONCE_CRASH_AT", "after_perform")
    monkeypatch.setenv("ACTONCE_CRASH_MODE", "raise")
    assert points.armed() is None
    points.hit("after_perform")  # goes by: nothing was armed


# --- held-out seed 3 -----------------------------------------------------------------------


def test_every_missing_budget_pool_is_named() -> None:
    with Ledger(MemoryStore(), clock=FrozenClock()) as lg:
        lg.budgets.define("rooms", 2)
        with pytest.raises(UsageError) as err:
            lg.budgets.usage("rooms", "zeta", "alpha")
        assert str(err.value) == "no budget pool 'alpha', 'zeta'"


def test_a_definition_recorded_without_attempts_allows_one() -> None:
    """A definition written before steps named their attempts: each step has one."""
    spec = parse_spec('{"steps": [{"name": "book", "role": "pivot", "key": "k1"}]}')
    [step] = spec.steps
    assert (step.name, step.key, step.undo, step.attempts) == ("book", "k1", None, 1)


def test_a_clock_step_is_told_from_slewing() -> None:
    """Slewing may move ledger time 0.1 % of the elapsed time beyond the bound; a step
    of 5 s over 1,000 s is no slew, one of 1.5 s is."""
    watch = StepWatch(step_bound=1.0)
    assert watch.feed(0.0, 0.0) is False
    assert watch.feed(1001.5, 1000.0) is False  # 1.5 <= 1.0 + 1.0
    assert watch.feed(2006.5, 2000.0) is True, "a 5 s step over 1,000 s was taken for slewing"
    assert watch.steps == 1
