"""Crash points as :mod:`actonce._run.points` arms them (issue 23 item 2).

The ``_run`` area's sample (dev-run-1) found the environment's default mode
unstated: ``ACTONCE_CRASH_AT`` alone arms a *kill* (a real crash test's
SIGKILL), ``ACTONCE_CRASH_MODE=raise`` an in-process ``SimulatedCrash``. The
mode is read from the arming (``points._armed``): a kill would end the test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actonce._run import points


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    points.disarm()
    monkeypatch.delenv("ACTONCE_CRASH_AT", raising=False)
    monkeypatch.delenv("ACTONCE_CRASH_MODE", raising=False)
    monkeypatch.setattr(points, "_env_loaded", False)
    yield
    points.disarm()
    points.observe(None)


def _arming() -> tuple[str, int, str] | None:
    armed = points._armed
    return None if armed is None else (armed.point, armed.remaining, armed.mode)


def test_the_environment_alone_arms_a_kill_at_the_first_pass(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTONCE_CRASH_AT", "after_claim")
    assert points.armed() == "after_claim"
    assert _arming() == ("after_claim", 1, "kill")


def test_the_environment_names_the_pass_and_the_mode(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTONCE_CRASH_AT", "before_record:3")
    monkeypatch.setenv("ACTONCE_CRASH_MODE", "raise")
    assert points.armed() == "before_record"
    assert _arming() == ("before_record", 3, "raise")
    points.hit("after_claim")  # another point: nothing
    points.hit("before_record")
    points.hit("before_record")
    assert _arming() == ("before_record", 1, "raise")
    with pytest.raises(points.SimulatedCrash) as crash:
        points.hit("before_record")
    assert str(crash.value) == "before_record"
    assert points.armed() is None
    points.hit("before_record")  # disarmed by its crash


def test_no_environment_arms_nothing(fresh: None) -> None:
    assert points.armed() is None
    points.hit("after_claim")
    assert _arming() is None


def test_arming_from_code_wins_over_the_environment(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTONCE_CRASH_AT", "after_claim")
    points.arm("after_perform", nth=2)
    assert _arming() == ("after_perform", 2, "raise")
    points.hit("after_claim")  # the environment is not read any more
    assert points.armed() == "after_perform"


def test_an_observer_sees_every_pass_before_the_crash(fresh: None) -> None:
    seen: list[str] = []
    assert points.observe(seen.append) is None
    points.arm("after_record")
    points.hit("after_claim")
    with pytest.raises(points.SimulatedCrash):
        points.hit("after_record")
    assert seen == ["after_claim", "after_record"]
    previous = points.observe(None)
    assert previous is not None
    points.hit("after_claim")
    assert seen == ["after_claim", "after_record"]


@pytest.mark.parametrize(
    ("point", "kw", "message"),
    [
        ("nowhere", {}, "unknown crash point 'nowhere'; known: " + ", ".join(points.POINTS)),
        ("after_claim", {"mode": "stop"}, "mode must be 'raise' or 'kill'"),
        ("after_claim", {"nth": 0}, "nth counts passes from 1"),
    ],
)
def test_arming_refuses_what_it_cannot_do(
    fresh: None, point: str, kw: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        points.arm(point, **kw)  # type: ignore[arg-type]
    assert str(err.value) == message
    assert _arming() is None


def test_the_points_are_named_in_protocol_order() -> None:
    assert points.POINTS == (
        "before_claim",
        "after_claim",
        "before_mark_executing",
        "after_mark_executing",
        "provider_committed",
        "after_perform",
        "before_record",
        "after_record",
    )
