"""The record at every crash point of a run, field by field (issue 23 item 2).

What a crash at each point would leave behind is the record as it stands
there: the claim's lease counted from the claim's own write time (read
after the point before it), the ``executing`` mark's time and fresh lease,
the settlement's lease given back to its time, the first attempt's
``created_at`` kept by every later attempt, a duplicate's count and
references. An observer (``points.observe``) snapshots the record and moves
the frozen clock one second at every pass, so every time written says which
step wrote it. Memory store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from actonce import Absent, Confirmed, Effect, Ledger, MemoryStore, Policy, Status
from actonce._run import points
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0,
                absence_authoritative=True)  # fmt: skip
Row = tuple[Any, ...] | None


class Watch:
    def __init__(self) -> None:
        self.clock = FrozenClock(start=1_000.0)
        self.store = MemoryStore()
        self.ledger = Ledger(self.store, clock=self.clock)
        self.seen: list[tuple[str, float, Row]] = []

    def __call__(self, point: str) -> None:
        r = self.store.get("k")
        row = None if r is None else (
            r.status.value, r.fence, r.created_at, r.updated_at, r.lease_expires_at,
            r.executing_at, r.matches, r.result_ref, r.reason,
        )  # fmt: skip
        self.seen.append((str(point), self.clock.now(), row))
        self.clock.advance(1.0)


@pytest.fixture
def watch() -> Iterator[Watch]:
    w = Watch()
    points.observe(w)
    yield w
    points.observe(None)


def test_a_confirmed_run_point_by_point(watch: Watch) -> None:
    made: list[int] = []
    effect = Effect(key="k", kind="pin", payload={}, perform=lambda: made.append(1),
                    verify=lambda: Confirmed("R") if made else Absent(), policy=POLICY)  # fmt: skip
    result = watch.ledger.run(effect)
    assert (result.status, result.result_ref, result.attempt) == (Status.CONFIRMED, "R", 1)
    claimed = ("claimed", 1, 1001.0, 1001.0, 1031.0, None, 0, None, None)
    executing = ("executing", 1, 1001.0, 1003.0, 1033.0, 1003.0, 0, None, None)
    assert watch.seen == [
        ("before_claim", 1000.0, None),
        ("after_claim", 1001.0, claimed),
        ("before_mark_executing", 1002.0, claimed),
        ("after_mark_executing", 1003.0, executing),
        ("after_perform", 1004.0, executing),
        ("before_record", 1005.0, executing),
        ("after_record", 1006.0, ("confirmed", 1, 1001.0, 1005.0, 1005.0, 1003.0, 1, "R", None)),
    ]


def test_a_failed_attempt_then_a_duplicate_point_by_point(watch: Watch) -> None:
    absent = Effect(key="k", kind="pin", payload={}, perform=lambda: None, verify=Absent,
                    policy=POLICY)  # fmt: skip
    first = watch.ledger.run(absent)
    assert (first.status, first.attempt) == (Status.FAILED, 1)
    why = "verified absent after the settle window"
    failed = ("failed", 1, 1001.0, 1005.0, 1005.0, 1003.0, 0, None, why)
    assert watch.seen[-1] == ("after_record", 1006.0, failed)
    watch.seen.clear()
    made: list[int] = []
    twice = Effect(key="k", kind="pin", payload={}, perform=lambda: made.append(1),
                   verify=lambda: Confirmed("R", count=2, refs=("R", "S")) if made else Absent(),
                   policy=POLICY)  # fmt: skip
    second = watch.ledger.run(twice)
    dup = "duplicate detected: 2 matching results (R, S)"
    assert (second.status, second.attempt, second.result_ref, second.reason) == (
        Status.NEEDS_REVIEW, 2, "R", dup,
    )  # fmt: skip
    claimed = ("claimed", 2, 1001.0, 1009.0, 1039.0, None, 0, None, None)
    executing = ("executing", 2, 1001.0, 1011.0, 1041.0, 1011.0, 0, None, None)
    assert watch.seen == [
        ("before_claim", 1007.0, failed),  # the blind insert loses: the row is read
        ("before_claim", 1008.0, failed),  # the claim of attempt 2, timed after this point
        ("after_claim", 1009.0, claimed),
        ("before_mark_executing", 1010.0, claimed),
        ("after_mark_executing", 1011.0, executing),
        ("after_perform", 1012.0, executing),
        ("before_record", 1013.0, executing),
        ("after_record", 1014.0, ("needs_review", 2, 1001.0, 1013.0, 1013.0, 1011.0, 2, "R", dup)),
    ]
    events = watch.ledger.events("k")
    assert [(e.type.value, e.fence, e.at) for e in events] == [
        ("claimed", 1, 1001.0), ("executing", 1, 1003.0), ("failed", 1, 1005.0),
        ("claimed", 2, 1009.0), ("executing", 2, 1011.0), ("needs_review", 2, 1013.0),
    ]  # fmt: skip
    assert [(e.from_status, e.to_status) for e in events[3:]] == [
        (Status.FAILED, Status.CLAIMED),
        (Status.CLAIMED, Status.EXECUTING),
        (Status.EXECUTING, Status.NEEDS_REVIEW),
    ]
    assert events[3].message == "attempt 2" and events[0].message == "attempt 1"
    assert events[-1].message == dup
    assert events[-1].data == {"duplicate": {"count": 2, "refs": ["R", "S"]},
                               "perform": {"seconds": 0.0}}  # fmt: skip
