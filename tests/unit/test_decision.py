"""The decision table, the settle-window rule and the lifecycle, exhaustively."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from actonce import InvalidTransition, ProtocolError
from actonce._rules.decision import (
    LOOK_FIRST,
    RETRYABLE,
    SEED_ROWS,
    TABLE,
    Action,
    Observation,
    Situation,
    decide,
    observe,
    render_markdown,
    situation_of,
)
from actonce._rules.lifecycle import REVIEWABLE, TRANSITIONS, By, check_transition
from actonce._rules.lifecycle import render_markdown as render_lifecycle
from actonce._rules.model import Absent, Confirmed, EffectRecord, Policy, Status, Unavailable

DOCS = Path(__file__).resolve().parents[2] / "docs"
NOW = 1000.0
Sit, Obs, Act = Situation, Observation, Action


def record(
    status: Status, *, fence: int = 3, lease: float = NOW + 10, executing_at: float | None = None
) -> EffectRecord:
    return EffectRecord(
        key="k",
        kind="fake",
        status=status,
        fence=fence,
        owner="w",
        lease_expires_at=lease,
        payload="{}",
        payload_hash="h",
        executing_at=executing_at,
    )


# --- the table ----------------------------------------------------------------


@pytest.mark.parametrize(("sit", "obs"), list(itertools.product(Situation, Observation)))
def test_every_pair_is_a_cell_or_a_protocol_error(sit: Situation, obs: Observation) -> None:
    if (sit, obs) in TABLE:
        assert decide(sit, obs) is TABLE[(sit, obs)]
        assert isinstance(decide(sit, obs), Action)
    else:
        with pytest.raises(ProtocolError, match=f"{sit}.*{obs}"):
            decide(sit, obs)


def test_the_undefined_pairs_are_exactly_the_ones_that_cannot_arise() -> None:
    missing = set(itertools.product(Situation, Observation)) - set(TABLE)
    # Before the executing mark, absence is plain absence: no settle-window observations.
    pre_mark = {Sit.NEW, Sit.OWNED, Sit.STALE_CLAIM}
    expected = {(s, o) for s in pre_mark for o in (Obs.ABSENT_UNSETTLED, Obs.ABSENT_UNPROVEN)}
    # The precondition is asked only after verified absence.
    expected |= {(Sit.PRECONDITION_FALSE, o) for o in Observation if o is not Obs.ABSENT}
    # A failed ledger write is decided before or instead of any later observation.
    expected |= {
        (Sit.LEDGER_FAILED, o) for o in Observation if o not in (Obs.NOT_CHECKED, Obs.ABSENT)
    }
    # A perform that proved it stopped before the boundary is failed at once, unverified.
    expected |= {(Sit.DECLINED, o) for o in Observation if o is not Obs.NOT_CHECKED}
    assert missing == expected


def test_never_execute_outside_an_owned_claim_after_verified_absence() -> None:
    execute = [pair for pair, act in TABLE.items() if act is Act.EXECUTE]
    assert execute == [(Sit.OWNED, Obs.ABSENT)]
    # Claim first: a new key is claimed before any look, or after a proven absence.
    claim = [pair for pair, act in TABLE.items() if act is Act.CLAIM]
    assert claim == [(Sit.NEW, Obs.NOT_CHECKED), (Sit.NEW, Obs.ABSENT)]
    # A run that looks first (a direct or a gated claim) verifies a new key instead.
    assert LOOK_FIRST == {(Sit.NEW, Obs.NOT_CHECKED): Act.VERIFY}
    assert decide(Sit.NEW, Obs.NOT_CHECKED, look_first=True) is Act.VERIFY
    assert decide(Sit.NEW, Obs.NOT_CHECKED) is Act.CLAIM
    assert decide(Sit.OWNED, Obs.ABSENT, look_first=True) is Act.EXECUTE


def test_unavailable_never_leads_to_a_claim_a_perform_or_a_proven_failure() -> None:
    for sit in Situation:
        act = TABLE.get((sit, Obs.UNAVAILABLE))
        assert act not in (Act.CLAIM, Act.EXECUTE, Act.MARK_FAILED)


def test_retryable_pairs_are_cells_that_do_not_mutate_the_world() -> None:
    assert set(TABLE) >= RETRYABLE
    for pair in RETRYABLE:
        assert TABLE[pair] not in (Act.CLAIM, Act.EXECUTE, Act.RECORD_CONFIRMED)


@pytest.mark.parametrize("row", SEED_ROWS, ids=lambda r: f"{r[0]}/{r[1]}")
def test_seed_rows_map_to_cells_with_the_expected_action(
    row: tuple[str, str, str, tuple[tuple[Situation, Observation], ...]],
) -> None:
    expected = {
        "Record confirmed and skip": {Act.RECORD_CONFIRMED},
        "Validate, claim, and execute": {Act.CLAIM, Act.EXECUTE},
        "Do not execute": {Act.DEFER},
        "Skip": {Act.FINISHED},
        "Retry verification only": {Act.MARK_UNKNOWN, Act.HOLD},
        "Mark unknown or review": {Act.MARK_UNKNOWN, Act.NEEDS_REVIEW},
        "Mark unknown and review": {Act.NEEDS_REVIEW},
        "Stop": {Act.STOP},
        "Do not perform the action": {Act.ABORT},
        "Do not reclaim automatically": {Act.DEFER, Act.MARK_UNKNOWN},
    }
    _state, _verification, decision, cells = row
    assert cells, "a seed row without cells"
    for cell in cells:
        assert decide(*cell) in expected[decision], cell


def test_seed_rows_are_the_fourteen_rows_of_the_seed() -> None:
    assert len(SEED_ROWS) == 14
    assert len({(s, v) for s, v, _d, _c in SEED_ROWS}) == 14
    # "Retry verification only": the temporarily-absent cells are the retryable ones.
    temporarily = next(c for s, v, _d, c in SEED_ROWS if v == "Temporarily absent")
    assert (Sit.PERFORMED, Obs.ABSENT_UNSETTLED) in RETRYABLE
    assert all(decide(*c) is not Act.MARK_FAILED for c in temporarily)


def test_terminal_and_review_situations_answer_every_observation() -> None:
    for obs in Observation:
        assert decide(Sit.DONE, obs) is Act.FINISHED
        assert decide(Sit.ABANDONED, obs) is Act.FINISHED
        assert decide(Sit.REVIEW, obs) is Act.HOLD


# --- observe: the settle-window rule -------------------------------------------------


@pytest.mark.parametrize("authoritative", [False, True])
@pytest.mark.parametrize("settle", [0.0, 5.0])
def test_observe_plain_verdicts(authoritative: bool, settle: float) -> None:
    policy = Policy(settle_seconds=settle, absence_authoritative=authoritative)
    executing = record(Status.EXECUTING, executing_at=NOW)
    for rec in (None, record(Status.CLAIMED), executing):
        assert observe(None, rec, policy=policy, now=NOW) is Obs.NOT_CHECKED
        assert observe(Confirmed("x"), rec, policy=policy, now=NOW) is Obs.CONFIRMED
        assert observe(Unavailable("down"), rec, policy=policy, now=NOW) is Obs.UNAVAILABLE


def test_absence_before_the_mark_is_plain_absence() -> None:
    policy = Policy()
    assert observe(Absent(), None, policy=policy, now=NOW) is Obs.ABSENT
    assert observe(Absent(), record(Status.CLAIMED), policy=policy, now=NOW) is Obs.ABSENT
    # A failed (re-claimable) record that once was executing: absence is plain again.
    failed = record(Status.FAILED, executing_at=NOW - 100)
    assert observe(Absent(), failed, policy=policy, now=NOW) is Obs.ABSENT


@pytest.mark.parametrize("status", [Status.EXECUTING, Status.UNKNOWN])
@pytest.mark.parametrize("authoritative", [False, True])
def test_absence_inside_the_window_never_proves_anything(
    status: Status, authoritative: bool
) -> None:
    policy = Policy(settle_seconds=5.0, absence_authoritative=authoritative)
    rec = record(status, executing_at=NOW)
    for elapsed in (0.0, 1.0, 4.999):
        got = observe(Absent(), rec, policy=policy, now=NOW + elapsed)
        assert got is Obs.ABSENT_UNSETTLED


@pytest.mark.parametrize("status", [Status.EXECUTING, Status.UNKNOWN])
def test_absence_after_the_window_proves_only_when_authoritative(status: Status) -> None:
    rec = record(status, executing_at=NOW, lease=NOW)
    for elapsed in (5.0, 500.0):
        conservative = observe(Absent(), rec, policy=Policy(settle_seconds=5.0), now=NOW + elapsed)
        assert conservative is Obs.ABSENT_UNPROVEN
        proven = observe(
            Absent(),
            rec,
            policy=Policy(settle_seconds=5.0, absence_authoritative=True),
            now=NOW + elapsed,
        )
        assert proven is Obs.ABSENT


@pytest.mark.parametrize("status", [Status.EXECUTING, Status.UNKNOWN])
def test_for_others_the_window_runs_from_the_end_of_the_owners_lease(status: Status) -> None:
    # An owner may pause after its mark and perform any time before its lease ends.
    policy = Policy(settle_seconds=5.0, absence_authoritative=True)
    rec = record(status, fence=3, executing_at=NOW, lease=NOW + 60)
    assert observe(Absent(), rec, policy=policy, now=NOW + 30) is Obs.ABSENT_UNSETTLED
    assert observe(Absent(), rec, policy=policy, now=NOW + 64.9) is Obs.ABSENT_UNSETTLED
    assert observe(Absent(), rec, policy=policy, now=NOW + 65) is Obs.ABSENT
    # The owner itself knows when its perform ended (monotonic): its window runs from there.
    mine = observe(Absent(), rec, policy=policy, now=NOW + 5, my_fence=3, since_perform=5.0)
    assert mine is Obs.ABSENT
    early = observe(Absent(), rec, policy=policy, now=NOW + 5, my_fence=3, since_perform=4.9)
    assert early is Obs.ABSENT_UNSETTLED
    assert observe(Absent(), rec, policy=policy, now=NOW + 5, my_fence=2) is Obs.ABSENT_UNSETTLED


def test_default_policy_is_conservative() -> None:
    assert Policy().absence_authoritative is False
    assert Policy().settle_seconds > 0


# --- situation_of ----------------------------------------------------------------------


def _expected_situation(status: Status, mine: bool, live: bool) -> Situation:
    if status is Status.FAILED:
        return Sit.NEW
    fixed = {
        Status.CONFIRMED: Sit.DONE,
        Status.ABANDONED: Sit.ABANDONED,
        Status.NEEDS_REVIEW: Sit.REVIEW,
        Status.UNKNOWN: Sit.UNKNOWN,
    }
    if status in fixed:
        return fixed[status]
    if status is Status.CLAIMED:
        return Sit.OWNED if mine else (Sit.BUSY if live else Sit.STALE_CLAIM)
    return Sit.PERFORMED if mine else (Sit.BUSY if live else Sit.ORPHANED)


@pytest.mark.parametrize("status", list(Status))
@pytest.mark.parametrize("ownership", ["mine", "other", "none"])
@pytest.mark.parametrize("live", [True, False])
def test_situation_of_every_combination(status: Status, ownership: str, live: bool) -> None:
    rec = record(status, fence=3, lease=NOW + 1 if live else NOW)  # lease ends at NOW: expired
    my_fence = {"mine": 3, "other": 2, "none": None}[ownership]
    got = situation_of(rec, now=NOW, my_fence=my_fence)
    assert got is _expected_situation(status, ownership == "mine", live)


def test_situation_of_no_record_is_new() -> None:
    assert situation_of(None, now=NOW, my_fence=None) is Sit.NEW
    assert situation_of(None, now=NOW, my_fence=1) is Sit.NEW


# --- the lifecycle ---------------------------------------------------------------------------


@pytest.mark.parametrize(("edge", "who"), list(TRANSITIONS.items()), ids=str)
def test_every_lifecycle_edge_is_allowed(
    edge: tuple[Status | None, Status], who: tuple[By, str]
) -> None:
    assert check_transition(*edge) == who
    assert who[1], "every edge says why"


def test_exactly_these_edges_exist() -> None:
    assert len(TRANSITIONS) == 25
    # The one way back to no record: this run's own unperformed claim, released.
    assert TRANSITIONS[(Status.CLAIMED, None)][0] is By.OWNER
    assert [edge for edge in TRANSITIONS if edge[1] is None] == [(Status.CLAIMED, None)]
    # The three edges that only ever make a status more cautious: duplicates
    # found before any claim, and a superseded owner's alarm.
    assert TRANSITIONS[(None, Status.NEEDS_REVIEW)][0] is By.VERIFIER
    assert TRANSITIONS[(Status.FAILED, Status.NEEDS_REVIEW)][0] is By.ALARM
    assert TRANSITIONS[(Status.CLAIMED, Status.NEEDS_REVIEW)][0] is By.ALARM
    # Terminal statuses have no way out; nothing ever goes back to executing from after it.
    for src, _dst in TRANSITIONS:
        assert src not in (Status.CONFIRMED, Status.ABANDONED)
    assert {dst for (src, dst) in TRANSITIONS if src is Status.EXECUTING} == {
        Status.CONFIRMED,
        Status.FAILED,
        Status.UNKNOWN,
        Status.NEEDS_REVIEW,
    }
    assert {Status.NEEDS_REVIEW, Status.UNKNOWN} == REVIEWABLE


@pytest.mark.parametrize(
    "edge",
    [
        (Status.CONFIRMED, Status.FAILED),
        (Status.CONFIRMED, Status.CLAIMED),
        (Status.ABANDONED, Status.CLAIMED),
        (Status.EXECUTING, Status.CLAIMED),
        (Status.EXECUTING, Status.EXECUTING),
        (Status.UNKNOWN, Status.EXECUTING),
        (Status.NEEDS_REVIEW, Status.EXECUTING),
        (None, Status.FAILED),
        (None, Status.UNKNOWN),
        (Status.FAILED, Status.FAILED),
    ],
    ids=str,
)
def test_non_edges_raise_invalid_transition(edge: tuple[Status | None, Status]) -> None:
    assert edge not in TRANSITIONS
    with pytest.raises(InvalidTransition):
        check_transition(*edge)


def test_all_other_pairs_are_non_edges() -> None:
    for src in (None, *Status):
        for dst in Status:
            if (src, dst) in TRANSITIONS:
                continue
            with pytest.raises(InvalidTransition):
                check_transition(src, dst)


def test_table_moves_follow_the_lifecycle() -> None:
    # The record-changing actions of the table only take lifecycle edges.
    from_status: dict[Situation, list[Status | None]] = {
        Sit.OWNED: [Status.CLAIMED],
        Sit.PERFORMED: [Status.EXECUTING],
        Sit.STALE_CLAIM: [Status.CLAIMED],
        Sit.ORPHANED: [Status.EXECUTING],
        Sit.UNKNOWN: [Status.UNKNOWN],
        Sit.BUSY: [Status.CLAIMED, Status.EXECUTING],
        Sit.NEW: [None, Status.FAILED],
    }
    target = {
        Act.RECORD_CONFIRMED: Status.CONFIRMED,
        Act.RELEASE: Status.FAILED,
        Act.MARK_FAILED: Status.FAILED,
        Act.MARK_UNKNOWN: Status.UNKNOWN,
        Act.NEEDS_REVIEW: Status.NEEDS_REVIEW,
        Act.EXECUTE: Status.EXECUTING,
    }
    for (sit, _obs), act in TABLE.items():
        if act not in target or sit not in from_status:
            continue
        for src in from_status[sit]:
            check_transition(src, target[act])


# --- generated documents ---------------------------------------------------------------------


def test_decision_table_doc_is_fresh() -> None:
    committed = (DOCS / "decision-table.md").read_text(encoding="utf-8")
    assert committed == render_markdown(), (
        "docs/decision-table.md is stale: regenerate it with "
        'python -c "from actonce._rules.decision import render_markdown; '
        "print(render_markdown(), end='')\" > docs/decision-table.md"
    )


def test_lifecycle_doc_is_fresh() -> None:
    committed = (DOCS / "lifecycle.md").read_text(encoding="utf-8")
    assert committed == render_lifecycle(), (
        "docs/lifecycle.md is stale: regenerate it with "
        'python -c "from actonce._rules.lifecycle import render_markdown; '
        "print(render_markdown(), end='')\" > docs/lifecycle.md"
    )


def test_rendering_names_every_cell() -> None:
    text = render_markdown()
    for sit in Situation:
        assert f"| {sit.value} |" in text
    assert text.count(" (retry verify) |") == len(RETRYABLE)
    lifecycle = render_lifecycle()
    for (src, dst), (who, why) in TRANSITIONS.items():
        src_name = src.value if src else "(none)"
        dst_name = dst.value if dst else "(none)"
        assert f"| {src_name} | {dst_name} | {who.value} | {why} |" in lifecycle
