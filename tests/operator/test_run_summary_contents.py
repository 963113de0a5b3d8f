"""An operator run's summary, whole: its JSON, its text, its classes (issue 23, item 2).

A ``RunSummary`` is what an operator reads after a run and what the ledger
keeps of it. Each class of the taxonomy, each counted figure and each line
is stated here in full for a run that touched all of them, and for a run
that found the lease held; ``classify`` is stated for every outcome, and
``may_have_happened`` at the edges of a claim's lease.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from actonce._rules.model import EffectRecord, Outcome, RunResult, Status
from actonce._rules.operator import (
    AMBIGUOUS_STATUSES,
    ItemClass,
    RunStage,
    RunStatus,
    RunStop,
    RunSummary,
    SummaryItem,
    classify,
    may_have_happened,
    open_why,
)

C, G = ItemClass, RunStage
A, B, D, E, F = ("a" * 64, "b" * 64, "d" * 64, "e" * 64, "f" * 64)

ITEMS = (
    SummaryItem("post 1", C.DONE, G.ACT, key=A, outcome="completed", status="confirmed",
                result_ref="https://x.example/p/1"),
    SummaryItem("post 2", C.DONE, G.ACT, outcome="completed", status="confirmed"),
    SummaryItem("post 3", C.SKIPPED, G.BUDGET, why="over_budget", key=B, outcome="over_budget",
                reason="budget 'posts' is spent"),
    SummaryItem("post 4", C.SKIPPED, G.ACT, why="already_done", key="c" * 64),
    SummaryItem("post 5", C.SKIPPED, G.PLAN, reason="odd"),
    SummaryItem("post 6", C.FAILED, G.ACT, key=D, outcome="failed", status="failed",
                reason="proven absent"),
    SummaryItem("post 7", C.AMBIGUOUS, G.ACT, key=E, outcome="needs_review", status="unknown",
                reason="timed out"),
    SummaryItem("post 8", C.AMBIGUOUS, G.RECONCILE, status="needs_review"),
    SummaryItem("post 9", C.QUALITY_SKIP, G.QUALITY, reason="too short"),
    SummaryItem("post 10", C.STOPPED, G.ACT, key=F, reason="a CAPTCHA"),
    SummaryItem("post 11", C.FAILED, G.ACT),
)  # fmt: skip
POSTS = {"name": "posts", "limit": "10", "unit": "count", "window": "day", "window_start": 0,
         "window_end": 86400, "reserved": "1", "consumed": "3", "free": "6"}  # fmt: skip
SPEND = {"name": "spend", "limit": "500", "unit": "EUR", "window": "week", "window_start": 0,
         "window_end": 1, "reserved": "20.50", "consumed": "0", "free": "479.50"}  # fmt: skip
SUMMARY = RunSummary(
    "run-7", "poster", "host:42", 3, RunStatus.HARD_STOP, 100.0, 160.5,
    reconciled={"confirmed": 2, "failed": 0, "unknown": 1}, items=ITEMS,
    stops=(RunStop(G.ACT, "hard stop: a CAPTCHA", (F,)),), budget=(POSTS, SPEND),
    candidates=11, stored=False,
    operations={"complete": 2, "compensated": 1, "in_review": 3, "needs_review": 0},
)  # fmt: skip


def item(label: str, cls: str, stage: str, **fields: Any) -> dict[str, Any]:
    base = {"label": label, "class": cls, "stage": stage, "why": None, "key": None,
            "outcome": None, "status": None, "reason": None, "result_ref": None}  # fmt: skip
    return {**base, **fields}


def test_a_runs_summary_as_json_holds_every_item_count_stop_and_pool() -> None:
    assert SUMMARY.as_json() == {
        "run_id": "run-7",
        "operator": "poster",
        "owner": "host:42",
        "fence": 3,
        "status": "hard_stop",
        "started_at": 100.0,
        "ended_at": 160.5,
        "reconciled": {"confirmed": 2, "failed": 0, "unknown": 1},
        "counts": {"done": 2, "skipped": {"over_budget": 1, "already_done": 1, "other": 1},
                   "failures": 2, "ambiguous": 2, "hard_stops": 1, "quality_skips": 1},
        "items": [
            item("post 1", "done", "act", key=A, outcome="completed", status="confirmed",
                 result_ref="https://x.example/p/1"),
            item("post 2", "done", "act", outcome="completed", status="confirmed"),
            item("post 3", "skipped", "budget", why="over_budget", key=B, outcome="over_budget",
                 reason="budget 'posts' is spent"),
            item("post 4", "skipped", "act", why="already_done", key="c" * 64),
            item("post 5", "skipped", "plan", reason="odd"),
            item("post 6", "failed", "act", key=D, outcome="failed", status="failed",
                 reason="proven absent"),
            item("post 7", "ambiguous", "act", key=E, outcome="needs_review", status="unknown",
                 reason="timed out"),
            item("post 8", "ambiguous", "reconcile", status="needs_review"),
            item("post 9", "quality_skip", "quality", reason="too short"),
            item("post 10", "stopped", "act", key=F, reason="a CAPTCHA"),
            item("post 11", "failed", "act"),
        ],
        "stops": [{"stage": "act", "reason": "hard stop: a CAPTCHA", "keys": [F]}],
        "budget": [POSTS, SPEND],
        "candidates": 11,
        "held_by": None,
        "operations": {"complete": 2, "compensated": 1, "in_review": 3, "needs_review": 0},
    }  # fmt: skip


def test_a_runs_summary_reads_back_from_its_json_all_but_whether_it_was_stored() -> None:
    back = RunSummary.from_json(SUMMARY.as_json())
    assert back == replace(SUMMARY, stored=True)
    assert [type(i.cls) for i in back.items] == [ItemClass] * len(ITEMS)
    assert [type(s.stage) for s in back.stops] == [RunStage]
    # A summary stored before the lease token was called "fence", with no optional parts.
    old = {"run_id": 5, "operator": "op", "owner": "h", "token": "2", "status": "completed",
           "started_at": "1", "ended_at": 2}  # fmt: skip
    assert RunSummary.from_json(old) == RunSummary("5", "op", "h", 2, RunStatus.COMPLETED, 1.0, 2.0)
    both = {**old, "fence": 4}
    assert RunSummary.from_json(both).token == 4  # "fence" wins over the old name
    loose = {**old, "reconciled": {"confirmed": "3"}, "operations": {"complete": "1"},
             "candidates": "7", "held_by": "h2", "budget": [POSTS],
             "stops": [{"stage": "lease", "reason": 9}],
             "items": [{"label": 1, "class": "done", "stage": "act"}]}  # fmt: skip
    assert RunSummary.from_json(loose) == RunSummary(
        "5", "op", "h", 2, RunStatus.COMPLETED, 1.0, 2.0, reconciled={"confirmed": 3},
        items=(SummaryItem("1", C.DONE, G.ACT),), stops=(RunStop(G.LEASE, "9"),),
        budget=(POSTS,), candidates=7, held_by="h2", operations={"complete": 1},
    )  # fmt: skip


def test_a_runs_summary_as_text_names_every_class_and_pool() -> None:
    assert SUMMARY.lines() == [
        "run        run-7",
        "operator   poster (lease token 3, host:42)",
        "status     hard_stop",
        "reconciled confirmed 2, unknown 1",
        "operations 3 in review; driven 3 (compensated 1, complete 2)",
        "candidates 11",
        "done       2",
        "    post 1 [aaaaaaaaaaaa]: https://x.example/p/1",
        "    post 2",
        "skipped    3 (already_done 1, other 1, over_budget 1)",
        "    post 3 [bbbbbbbbbbbb]: over_budget: budget 'posts' is spent",
        "    post 4 [cccccccccccc]: already_done",
        "    post 5: other: odd",
        "failures   2 (definitive: did not happen, replannable)",
        "    post 6 [dddddddddddd]: proven absent",
        "    post 11",
        "ambiguous  2 (may have happened: reconcile or review first)",
        "    post 7 [eeeeeeeeeeee]: unknown: timed out",
        "    post 8: needs_review",
        "hard stops 1",
        "    act: hard stop: a CAPTCHA",
        "    post 10 [ffffffffffff]: stopped here: a CAPTCHA",
        "quality    1 skipped as not worth doing",
        "    post 9: too short",
        "budget left",
        "    posts: 6 free of 10 (reserved 1, consumed 3)",
        "    spend: 479.50 EUR free of 500 EUR (reserved 20.50, consumed 0)",
        "(this summary could not be stored in the ledger)",
    ]


def test_a_run_that_found_the_lease_held_says_by_whom_and_nothing_else() -> None:
    held = RunSummary("run-8", "poster", "host:43", 0, RunStatus.LOCKED_SKIP, 5.0, 5.0,
                      held_by="host:42", operations={"in_review": 0})  # fmt: skip
    assert held.lines() == [
        "run        run-8",
        "operator   poster (lease token 0, host:43)",
        "status     locked_skip: held by host:42",
        "reconciled nothing open",
        "operations 0 in review",
        "candidates 0",
        "done       0",
        "skipped    0",
        "failures   0 (definitive: did not happen, replannable)",
        "ambiguous  0 (may have happened: reconcile or review first)",
        "hard stops 0",
        "quality    0 skipped as not worth doing",
        "budget left  (no pools)",
    ]
    assert held.as_json() == {
        "run_id": "run-8", "operator": "poster", "owner": "host:43", "fence": 0,
        "status": "locked_skip", "started_at": 5.0, "ended_at": 5.0, "reconciled": {},
        "counts": {"done": 0, "skipped": {}, "failures": 0, "ambiguous": 0, "hard_stops": 0,
                   "quality_skips": 0},
        "items": [], "stops": [], "budget": [], "candidates": 0, "held_by": "host:42",
        "operations": {"in_review": 0},
    }  # fmt: skip
    # Only the passes count as "driven"; in review alone drives nothing.
    assert replace(held, operations={"complete": 0}).lines()[4] == (
        "operations 0 in review; driven 0 ()"
    )
    assert replace(held, operations={}).lines()[4] == "operations 0 in review"


def test_the_summary_sorts_its_items_into_classes_in_order() -> None:
    assert [i.label for i in SUMMARY.done] == ["post 1", "post 2"]
    assert [i.label for i in SUMMARY.skipped] == ["post 3", "post 4", "post 5"]
    assert [i.label for i in SUMMARY.failures] == ["post 6", "post 11"]
    assert [i.label for i in SUMMARY.ambiguous] == ["post 7", "post 8"]
    assert [i.label for i in SUMMARY.quality_skips] == ["post 9"]
    assert [i.label for i in SUMMARY.of(C.STOPPED)] == ["post 10"]
    assert SUMMARY.skipped_by_reason() == {"over_budget": 1, "already_done": 1, "other": 1}


CLASSES = [
    (Outcome.COMPLETED, Status.CONFIRMED, (C.DONE, None)),
    (Outcome.SKIPPED, Status.CONFIRMED, (C.SKIPPED, "already_done")),
    (Outcome.OVER_BUDGET, None, (C.SKIPPED, "over_budget")),
    (Outcome.DEFERRED, Status.EXECUTING, (C.SKIPPED, "deferred")),
    (Outcome.NEEDS_APPROVAL, None, (C.SKIPPED, "needs_approval")),
    (Outcome.REFUSED, None, (C.SKIPPED, "refused")),
    (Outcome.ABANDONED, Status.ABANDONED, (C.SKIPPED, "abandoned")),
    (Outcome.NEEDS_REVIEW, Status.NEEDS_REVIEW, (C.AMBIGUOUS, None)),
    (Outcome.NEEDS_REVIEW, None, (C.AMBIGUOUS, None)),
    (Outcome.FAILED, Status.UNKNOWN, (C.AMBIGUOUS, None)),
    (Outcome.HARD_STOP, Status.CLAIMED, (C.AMBIGUOUS, None)),
    (Outcome.HARD_STOP, Status.EXECUTING, (C.AMBIGUOUS, None)),
    (Outcome.HARD_STOP, None, (C.STOPPED, None)),
    (Outcome.HARD_STOP, Status.FAILED, (C.STOPPED, None)),
    (Outcome.FAILED, Status.FAILED, (C.FAILED, None)),
    (Outcome.FAILED, None, (C.FAILED, None)),
]


@pytest.mark.parametrize(("outcome", "status", "expected"), CLASSES,
                         ids=[f"{o}-{s}" for o, s, _ in CLASSES])  # fmt: skip
def test_each_outcome_lands_in_one_class(
    outcome: Outcome, status: Status | None, expected: tuple[ItemClass, str | None]
) -> None:
    assert classify(RunResult(outcome, "k", status)) == expected


def _record(status: Status, lease_expires_at: float) -> EffectRecord:
    return EffectRecord("k", "post", status, 1, "w", lease_expires_at, "{}", "h")


def test_a_claim_blocks_new_work_while_its_lease_is_live_or_the_clock_is_untrusted() -> None:
    claim = _record(Status.CLAIMED, 100.0)
    assert may_have_happened(claim, 99.9, trusted=True)
    assert not may_have_happened(claim, 100.0, trusted=True)  # the lease ends at its end
    assert may_have_happened(claim, 500.0, trusted=False)
    for status in (Status.EXECUTING, Status.UNKNOWN, Status.NEEDS_REVIEW):
        assert may_have_happened(_record(status, 0.0), 500.0, trusted=True)
    for status in (Status.CONFIRMED, Status.FAILED, Status.ABANDONED):
        assert not may_have_happened(_record(status, 1e9), 0.0, trusted=False)
    assert frozenset(AMBIGUOUS_STATUSES) == {Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN,
                                             Status.NEEDS_REVIEW}  # fmt: skip
    assert [open_why(s) for s in (Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN,
                                  Status.NEEDS_REVIEW)] == [
        "its owner's lease is still live", "its owner's lease is still live",
        "outcome not proven", "outcome not proven",
    ]  # fmt: skip
