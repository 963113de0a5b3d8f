"""The run-summary primitives on every backend: written once, read back whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actonce import (
    EventType,
    ItemClass,
    RunStage,
    RunStatus,
    RunStop,
    RunSummary,
    SummaryItem,
)


def summary(run_id: str, operator: str, ended: float, status: RunStatus) -> RunSummary:
    return RunSummary(
        run_id=run_id, operator=operator, owner="host:1", token=3, status=status,
        started_at=ended - 5, ended_at=ended, reconciled={"confirmed": 1},
        items=(SummaryItem("a", ItemClass.DONE, RunStage.ACT, key="k" * 64, outcome="completed",
                           status="confirmed", result_ref="https://site/1"),
               SummaryItem("b", ItemClass.SKIPPED, RunStage.BUDGET, why="over_budget",
                           reason="spent")),
        stops=(RunStop(RunStage.ACT, "a CAPTCHA", ("k" * 64,)),) if status is RunStatus.HARD_STOP
        else (),
        budget=({"name": "original", "free": "0", "limit": "1", "reserved": "0",
                 "consumed": "1", "unit": "count"},),
        candidates=2,
    )  # fmt: skip


def test_summaries_are_written_once_and_read_back(make_store: Callable[[], Any]) -> None:
    store = make_store()
    one = summary("op-1", "alice", 100.0, RunStatus.COMPLETED)
    two = summary("op-2", "alice", 200.0, RunStatus.HARD_STOP)
    other = summary("op-3", "bob", 150.0, RunStatus.LOCKED_SKIP)
    assert [store.summary_put(s) for s in (one, two, other)] == [True, True, True]
    assert store.summary_put(summary("op-1", "alice", 999.0, RunStatus.HARD_STOP)) is False
    assert store.summary_get("op-1") == one
    assert store.summary_get("op-2") == two
    assert store.summary_get("nope") is None
    assert store.summary_list("alice", 10) == [two, one]
    assert store.summary_list(None, 2) == [two, other]
    events = store.events("operator:alice")
    assert [(e.type, e.run_id) for e in events] == [
        (EventType.OPERATOR_RUN, "op-1"), (EventType.OPERATOR_RUN, "op-2"),
    ]  # fmt: skip
    assert events[1].data["counts"] == two.counts()
