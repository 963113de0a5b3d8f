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
        assert isinstance(stored.data, Mapping), f"the stored receipt lost its data: {stored.data!r}"
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
