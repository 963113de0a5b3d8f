"""The plain data of ``actonce._rules.model`` and the lifecycle, whole (issue 23, item 2).

Records, events and results are what every other rule reads; their
defaults, the order of their fields in the fast constructors, what counts as
open, done or unresolved, and which writes must be durable are stated here
as values, at the edges (a lease ends at its end, not after it).
"""

from __future__ import annotations

from dataclasses import dataclass

from actonce._rules.errors import HardStop, NotPerformed
from actonce._rules.lifecycle import DURABLE, REVIEWABLE, TRANSITIONS, By, is_durable
from actonce._rules.model import (
    OPEN_STATUSES,
    EffectRecord,
    Event,
    EventType,
    Outcome,
    ReconcileReport,
    RunResult,
    Status,
    _fast_factory,
    _fast_init,
    evolve,
    new_event,
    new_record,
)

RECORD = EffectRecord("k", "post", Status.CLAIMED, 2, "w1", 100.0, '{"a": [1, "x"]}', "h")


def test_a_record_has_its_defaults_and_its_lease_ends_at_its_end() -> None:
    assert EffectRecord("k", "post", Status.CLAIMED, 2, "w1", 100.0, '{"a": [1, "x"]}',
                                  "h", "{}", None, None, 0.0, 0.0, None, 0, False) == RECORD  # fmt: skip
    assert RECORD.data == {"a": [1, "x"]}
    assert RECORD.lease_live(99.99) and not RECORD.lease_live(100.0)


def test_evolve_changes_only_what_it_is_given() -> None:
    moved = evolve(RECORD, status=Status.EXECUTING, executing_at=5.0, fence=3)
    assert moved == EffectRecord("k", "post", Status.EXECUTING, 3, "w1", 100.0, RECORD.payload,
                                 "h", executing_at=5.0)  # fmt: skip
    assert evolve(RECORD) == RECORD and evolve(RECORD) is not RECORD


def test_the_fast_constructors_take_every_field_in_order() -> None:
    fields = ("k", "post", Status.UNKNOWN, 4, "w", 9.0, "{}", "h", "{}", "ref", "why", 1.0, 2.0,
              3.0, 2, True)  # fmt: skip
    assert new_record(*fields) == EffectRecord(*fields)
    event = new_event("k", EventType.CONFIRMED, 7.0, 2, "run-1", Status.EXECUTING,
                      Status.CONFIRMED, "found", {"result_ref": "r"}, 12)  # fmt: skip
    assert event == Event("k", EventType.CONFIRMED, 7.0, 2, "run-1", Status.EXECUTING,
                          Status.CONFIRMED, "found", {"result_ref": "r"}, 12)  # fmt: skip
    assert Event("k", EventType.EVIDENCE, 1.0) == Event("k", EventType.EVIDENCE, 1.0, 0, "",
                                                        None, None, None, {}, None)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Pair:
    first: int
    second: str = "b"
    third: tuple[int, ...] = ()


def test_the_fast_constructors_are_built_from_a_classs_own_slots() -> None:
    # The module builds its own at import; building one here checks the builders themselves.
    evolve_pair = _fast_factory(_Pair, "evolve_pair")
    new_pair = _fast_init(_Pair, "new_pair")
    assert (evolve_pair.__name__, new_pair.__name__) == ("evolve_pair", "new_pair")
    pair = _Pair(1, "x", (2,))
    assert evolve_pair(pair, {}) == pair
    assert evolve_pair(pair, {"second": "y", "third": ()}) == _Pair(1, "y", ())
    assert evolve_pair(pair, {"first": 5}) == _Pair(5, "x", (2,))
    made = new_pair(3, "z", (4, 5))
    assert made == _Pair(3, "z", (4, 5)) and type(made) is _Pair


def test_what_is_open_done_and_unresolved() -> None:
    assert {Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN} == OPEN_STATUSES
    assert [s for s in Status if s.is_open] == [Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN]
    assert [o for o in Outcome if RunResult(o, "k").done] == [Outcome.COMPLETED, Outcome.SKIPPED]
    assert RunResult(Outcome.FAILED, "k") == RunResult(Outcome.FAILED, "k", None, None, None, 0,
                                                       False)  # fmt: skip
    results = tuple(RunResult(Outcome.NEEDS_REVIEW, s.value, s) for s in Status)
    report = ReconcileReport(results, live=2)
    assert [r.key for r in report.unresolved] == ["claimed", "executing", "unknown"]
    assert ReconcileReport() == ReconcileReport((), 0, (), (), ())
    assert ReconcileReport().unresolved == []


def test_which_writes_must_be_durable_and_who_reviews() -> None:
    assert {Status.EXECUTING} == DURABLE
    assert {Status.NEEDS_REVIEW, Status.UNKNOWN} == REVIEWABLE
    durable = sorted(f"{a}->{b}" for (a, b), (by, _) in TRANSITIONS.items()
                     if b is not None and is_durable(b, by))  # fmt: skip
    assert durable == [
        "None->executing", "claimed->executing", "failed->executing",
        "needs_review->abandoned", "needs_review->confirmed", "needs_review->failed",
        "unknown->abandoned",
    ]  # fmt: skip
    assert is_durable(Status.CONFIRMED, By.HUMAN) and not is_durable(Status.CONFIRMED, By.VERIFIER)
    assert [b.value for b in By] == ["claim", "owner", "verifier", "human", "alarm"]


def test_a_hard_stop_keeps_its_reason_and_not_performed_is_its_own_error() -> None:
    stop = HardStop("a CAPTCHA")
    assert (stop.reason, str(stop), stop.args) == ("a CAPTCHA", "a CAPTCHA", ("a CAPTCHA",))
    assert not issubclass(NotPerformed, HardStop)
