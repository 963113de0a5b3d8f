"""The explorer runs the real protocol, finds every planted bug, and replays what it finds.

Each planted bug (``actonce.explore.FAULTS``) is a test build of the real
source with one historical fix taken out. The same bound that finds it is
explored clean on the real build: the finding is the fault's, not the
explorer's.
"""

from __future__ import annotations

import pytest

from actonce import UsageError
from actonce.explore import (
    FAULTS,
    Bounds,
    build,
    explore,
    random_walks,
    regression_test,
    replay,
    walk_trace,
)

#: Small enough to run in a second or two, large enough for every planted bug:
#: one worker, a reconcile pass, one clock jump, every verdict and perform outcome.
SMALL = Bounds(workers=1, crashes=0, ticks=1, reviews=0, failed_writes=0)

#: What each planted bug breaks first (a shortest trace, breadth first).
EXPECTED = {
    "stale_mark_time": "mark_carries_write_time",
    "stale_declined": "failed_means_absent",
    "second_claim": "one_perform_per_run",
    "paused_owner": "failed_means_absent",
}


def test_every_fault_has_an_expectation() -> None:
    assert set(EXPECTED) == set(FAULTS)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_explorer_finds_each_planted_bug(fault: str) -> None:
    report = explore(SMALL, fault)
    assert not report.ok, f"{fault} was not found in {report.states} states"
    finding = report.violations[0]
    assert finding.invariant == EXPECTED[fault], finding.text()
    assert not finding.residual
    assert len(finding.steps) >= len(finding.trace)
    # The trace is readable: the time, the actor, the operation, the answer.
    steps = finding.steps[: len(finding.trace)]
    assert all(line.startswith("t=") and " -> " in line for line in steps), finding.text()
    # Replaying the trace breaks the same invariant at its last step.
    steps = replay(finding.trace, SMALL, build(fault))
    assert finding.invariant in {v.invariant for v in steps[len(finding.trace) - 1][1]}


def test_the_real_protocol_is_clean_where_the_faults_are_found() -> None:
    report = explore(SMALL)
    assert report.ok, report.summary()
    assert report.complete
    assert report.states > 1000


def test_the_clean_protocol_explores_clean_under_crashes_failed_writes_and_review() -> None:
    bounds = Bounds(workers=1, crashes=1, ticks=1, reviews=1, failed_writes=1)
    report = explore(bounds)
    assert report.ok, report.summary()
    assert report.complete and report.quiescent > 0
    # A process frozen between its clock read and its write is seen, and classified.
    assert set(report.residuals) <= {
        "mark_carries_write_time",
        "failed_means_absent",
        "settles_truthfully",
    }
    assert all(f.residual for f in report.residuals.values())


def test_the_documented_residual_is_found_and_classified_as_accepted() -> None:
    """Two workers: one frozen between its lease check and its perform, past its
    lease; reconcile proves absence, the other claims and performs; the frozen
    one performs too. No lease can fence that window: it is reported as the
    known residual, and the exploration is otherwise clean.
    """
    bounds = Bounds(
        workers=2,
        crashes=0,
        ticks=1,
        reviews=0,
        failed_writes=0,
        performs=("ok",),
        verify_after_claim=False,
        verdicts=False,
    )
    report = explore(bounds)
    assert report.ok, report.summary()
    residual = report.residuals["at_most_one_accepted"]
    assert residual.residual
    text = "\n".join(residual.steps)
    assert "perform under fence 1" in text and "perform under fence 2" in text, text


def test_a_fault_that_no_longer_applies_says_so() -> None:
    with pytest.raises(UsageError, match="no fault"):
        build("no_such_fault")


def test_random_walks_find_a_planted_bug_and_the_seed_replays_it() -> None:
    bounds = SMALL
    fault = build("stale_mark_time")  # the one bug random walks find quickly (docs/explore.md)
    report = random_walks(bounds, fault, walks=3000, seed=0)
    assert report.found_at_walk is not None, "3000 random walks did not find the stale mark"
    finding = report.violations[0]
    again = walk_trace(bounds, fault, seed=0, walk=report.found_at_walk)
    assert again == finding.trace
    steps = replay(again, bounds, fault)
    assert any(not v.residual for _, vs in steps for v in vs)


def test_a_finding_becomes_a_regression_test_in_one_call() -> None:
    finding = explore(SMALL, "second_claim").violations[0]
    source = regression_test(finding, SMALL, "second_claim")
    namespace: dict[str, object] = {}
    exec(compile(source, "<regression>", "exec"), namespace)
    test = namespace[f"test_explored_{finding.invariant}"]
    with pytest.raises(AssertionError):
        test()  # type: ignore[operator]
    fixed = regression_test(finding, SMALL, None)
    namespace = {}
    exec(compile(fixed, "<regression>", "exec"), namespace)
    namespace[f"test_explored_{finding.invariant}"]()  # type: ignore[operator]


def test_a_trace_that_is_not_possible_is_refused_with_the_choices() -> None:
    with pytest.raises(UsageError, match="not possible there"):
        replay("w1 reviewer+abandon", SMALL, build(None))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 0}, "workers"),
        ({"crashes": -1}, "crashes"),
        ({"depth": 0}, "depth"),
        ({"performs": ("maybe",)}, "performs"),
        ({"settle": 5.0, "visibility": 10.0}, "visibility < settle"),
    ],
)
def test_bad_bounds_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        Bounds(**kwargs)  # type: ignore[arg-type]


def test_a_decision_applied_to_an_attempt_the_reviewer_never_saw_is_found() -> None:
    """The explorer's own finding: ``resolve`` settles whatever attempt is current.

    A reviewer decides "not happened" on attempt 1 (true: nothing landed);
    meanwhile attempt 1 is failed by verification, a new run claims attempt 2
    and performs it (it lands, still unknown). ``resolve`` then records the
    decision on attempt 2: ``failed`` while the world holds the effect. A
    decision that carries the attempt it was made on (the explorer's default
    reviewer) is clean under the same bound.
    """
    stale = Bounds(
        workers=1,
        runs=2,
        crashes=0,
        ticks=1,
        failed_writes=0,
        reviews=1,
        verify_after_claim=False,
        performs=("ok",),
        review_binds_attempt=False,
    )
    report = explore(stale)
    finding = report.violations[0]
    assert finding.invariant == "settles_truthfully", finding.text()
    text = "\n".join(finding.steps)
    assert "reviewer: start a run (decides not_happened)" in text
    assert "reviewer: transition unknown/2 -> failed" in text
    bound = Bounds(**{**_fields(stale), "review_binds_attempt": True})
    assert explore(bound).ok


def _fields(b: Bounds) -> dict[str, object]:
    return {name: getattr(b, name) for name in Bounds.__dataclass_fields__}


def test_two_workers_a_reconciler_and_a_reviewer_explore_clean() -> None:
    """The CI bound: every state of two workers, a reconcile pass and a human
    decision, with a crash and a clock jump (docs/explore.md has its figures).
    """
    bounds = Bounds(
        workers=2,
        crashes=1,
        ticks=1,
        reviews=1,
        failed_writes=0,
        verify_after_claim=False,
        performs=("ok",),
    )
    report = explore(bounds)
    assert report.ok, report.summary()
    assert report.complete and report.states > 100_000 and report.quiescent > 0
    assert "at_most_one_accepted" in report.residuals  # the documented residual, accepted


def test_the_ci_bound_explores_clean_claim_first() -> None:
    """The CI bound on the default policy: claim first, the one look before the
    boundary under the claim (a release gives an unperformed claim back), the mark,
    the perform, the look after it (docs/explore.md has its figures).
    """
    bounds = Bounds(
        workers=2,
        crashes=1,
        ticks=1,
        reviews=1,
        failed_writes=0,
        verify_after_claim=True,
        performs=("ok",),
    )
    report = explore(bounds)
    assert report.ok, report.summary()
    assert report.complete and report.states > 100_000 and report.quiescent > 0
    assert "at_most_one_accepted" in report.residuals  # the documented residual, accepted


#: Found by the explorer in the real protocol (docs/explore.md, "What it found"):
#: an overtaken owner's alarm moves a live attempt to review; a reviewer who
#: sees nothing in the world says "not happened" while that attempt's owner,
#: past its lease check, still performs. The ledger then says failed while
#: the world holds the effect.
ALARM_TRACE = (
    "w1 w2 w1 w1=absent w1 w1 w1 w1 w1=refused w1=absent reconcile+start reconcile "
    "clock+expire reconcile reconcile=absent reconcile w2 w1 w2=absent w2 w2 w2 w2 w1 w1 "
    "reviewer+not_happened w2=ok+overtaken w2 reviewer reviewer reviewer"
)


def test_the_alarm_and_review_gap_the_explorer_found_is_closed() -> None:
    """The explorer's second finding, fixed: an overtaken owner's alarm moved a
    live attempt to review, a reviewer found nothing in the world and said "not
    happened" while that attempt's owner performed: ``failed`` while the world
    held the effect. ``resolve`` now refuses "not happened" while the attempt's
    lease is live, so the reviewer's run ends before its write (the trace's
    last step, the transition, is no longer possible) and nothing breaks.
    """
    bounds = Bounds(
        workers=2, crashes=2, ticks=1, failed_writes=0, reviews=1, verify_after_claim=False
    )
    labels = ALARM_TRACE.split()
    steps = replay(" ".join(labels[:-1]), bounds, build(None))
    text = "\n".join(t for t, _ in steps)
    assert "w1: transition executing/2 -> needs_review" in text  # the alarm still happens
    assert "w2: perform under fence 2 -> ok+overtaken" in text  # and the late perform
    broken = [v for _, vs in steps for v in vs if not v.residual]
    assert broken == [], steps
    with pytest.raises(UsageError, match="is not possible there"):
        replay(ALARM_TRACE, bounds, build(None))  # the reviewer's write never comes
