"""Closing an intent version, whole, on every backend (``gated_ops``): which
claimed effects fail (and how: row, event, hold), which packets are voided,
which effects are left in flight, and a revision of a version no longer current.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from actonce import ApprovalStatus, Gate, Status
from actonce._rules.holds import Hold, HoldKind, HoldStatus

from .test_gates import NOW, event, intent, packet, record


def _version_one(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    for key in ("k2", "k1", "k3"):
        new = replace(record(key), lease_expires_at=NOW + 500)
        assert store.claim(
            new, None, event(key, Status.CLAIMED), gate=Gate(intent=intent().ref)
        ).acquired
    k3 = store.get("k3")
    store.transition((Status.CLAIMED, 1), replace(k3, status=Status.EXECUTING),
                     event("k3", Status.EXECUTING))  # fmt: skip
    other = record("k4")  # claimed, but not for this intent version
    store.claim(other, None, event("k4", Status.CLAIMED))
    store.approval_put(packet("k1", ApprovalStatus.PENDING, pid="p1"), None, "r")
    store.approval_put(packet("k2", ApprovalStatus.APPROVED, pid="p2"), None, "r")
    store.approval_put(packet("k3", ApprovalStatus.DENIED, pid="p3"), None, "r")


def test_a_revision_closes_what_the_old_version_authorized(store: Any) -> None:
    _version_one(store)
    done = store.intent_revise(intent().ref, intent(version=2), ("currency",), NOW + 10, "r-rev")
    assert (done.applied, done.closed, done.voided, done.in_flight, done.operations) == (
        True, ("k1", "k2"), ("p1", "p2"), ("k3",), (),
    )  # fmt: skip
    assert done.current.intent.version == 2
    reason = "trip@v1 superseded by v2 before this claim crossed the boundary"
    assert store.get("k1") == replace(
        record("k1"), status=Status.FAILED, reason=reason, updated_at=NOW + 10,
        lease_expires_at=NOW + 10,
    )  # fmt: skip
    last = store.events("k1")[-1]
    assert (last.type.value, last.at, last.fence, last.run_id, last.from_status, last.to_status,
            last.message, last.data) == (
        "failed", NOW + 10, 1, "r-rev", Status.CLAIMED, Status.FAILED, reason, {"superseded_by": 2},
    )  # fmt: skip
    assert store.holds_of("k1") == [
        Hold(fence=1, kind=HoldKind.INTENT, ref="trip@v1", amount=Decimal(0),
             status=HoldStatus.RELEASED, at=NOW, settled_at=NOW + 10),
    ]  # fmt: skip
    assert store.get("k3").status is Status.EXECUTING
    assert store.get("k4").status is Status.CLAIMED
    voided = store.events("approval:p2")[-1]
    assert (voided.type.value, voided.message, voided.data) == (
        "approval_voided", "trip@v1 superseded by v2", {"previous": "approved", "status": "voided"},
    )  # fmt: skip
    assert store.approval_get("p3")[0].status is ApprovalStatus.DENIED


def test_a_withdrawal_closes_the_same_with_its_own_reason(store: Any) -> None:
    _version_one(store)
    done = store.intent_withdraw(intent().ref, "ana", "no trip", NOW + 10, "r-wd")
    assert (done.applied, done.closed, done.voided, done.in_flight) == (
        True, ("k1", "k2"), ("p1", "p2"), ("k3",),
    )  # fmt: skip
    assert done.current.intent.version == 1
    reason = "trip@v1 withdrawn by ana: no trip before this claim crossed the boundary"
    assert store.get("k2").reason == reason
    assert store.events("k2")[-1].data == {"withdrawn": True}
    assert store.events("approval:p1")[-1].message == "trip@v1 withdrawn by ana: no trip"


def test_revising_a_version_no_longer_current_changes_nothing(store: Any) -> None:
    _version_one(store)
    store.intent_revise(intent().ref, intent(version=2), ("currency",), NOW + 10, "r-rev")
    again = store.intent_revise(intent().ref, intent(version=3), ("currency",), NOW + 11, "r-x")
    assert (again.applied, again.closed, again.voided, again.in_flight, again.operations) == (
        False, (), (), (), (),
    )  # fmt: skip
    assert (again.current.intent.version, again.current.created_at) == (2, NOW + 10)
    assert [e.run_id for e in store.events("intent:trip")] == ["setup", "r-rev"]
