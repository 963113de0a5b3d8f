"""Two answers racing for one packet: the one that loses answers again, against what won.

An answer reads the packet, decides, then writes by compare-and-set on the
status it decided on. When another answer lands between the read and the
write (another worker, the console, a reply code), the write finds the packet
moved and the answer is decided anew against the packet as it now stands: the
same decision is a duplicate (the existing state, nothing changed), the other
one is refused. Either way it is recorded in the packet's history with who
gave it and through which channel, and exactly one answer was accepted.

Driven deterministically: a memory store whose ``approval_answer`` lets a
second ledger on the same store answer first, once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from actonce import ApprovalRequest, EventType, Intent, Ledger, MemoryStore, intent_key
from actonce._rules.approvals import Answered, ApprovalStatus
from actonce.testing import FrozenClock
from approvals.conftest import KEYS


class AnsweredMeanwhile(MemoryStore):
    """Runs ``meanwhile`` once, right before the next answer's compare-and-set."""

    meanwhile: Callable[[], object] | None = None

    def approval_answer(self, *args: Any, **kwargs: Any) -> Any:
        hook, self.meanwhile = self.meanwhile, None
        if hook is not None:
            hook()
        return super().approval_answer(*args, **kwargs)


def _race(first: str, first_via: str) -> tuple[AnsweredMeanwhile, Ledger, ApprovalRequest]:
    store = AnsweredMeanwhile()
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(store, clock=clock, signing_keys=KEYS)
    other = Ledger(store, clock=clock, signing_keys=KEYS)
    trip = ledger.intents.put(Intent("trip", "booking", user="ana"))
    req = ledger.approvals.request(
        trip, "book", intent_key(trip, "book", tenant="t", actor="a"), amount="1", currency="EUR"
    )
    packet = req.packet.packet_id

    def meanwhile() -> object:
        clock.advance(1)
        return other.approvals.answer(packet, first, by="ana", via=first_via)

    store.meanwhile = meanwhile
    return store, ledger, req


def _told(ledger: Ledger, packet: str) -> list[tuple[EventType, dict[str, Any]]]:
    return [(e.type, dict(e.data)) for e in ledger.approvals.history(packet)[1:]]


@pytest.mark.parametrize(
    ("first", "answered", "status", "seen", "reason"),
    [
        (
            "deny",
            Answered.REFUSED,
            ApprovalStatus.DENIED,
            EventType.APPROVAL_REFUSED,
            "already denied: a later approve cannot change it",
        ),
        (
            "approve",
            Answered.SAME,
            ApprovalStatus.APPROVED,
            EventType.APPROVAL_DUPLICATE,
            "the same answer again: nothing changed",
        ),
    ],
    ids=["other-answer-won", "same-answer-won"],
)
def test_an_answer_that_lost_the_race_is_decided_again_against_the_winner(
    first: str, answered: Answered, status: ApprovalStatus, seen: EventType, reason: str
) -> None:
    store, ledger, req = _race(first, "console")
    packet = req.packet.packet_id
    got = ledger.approvals.answer(packet, "approve", by="ana", via="cli", note="go ahead")
    assert store.meanwhile is None  # the other answer did land in between
    assert (got.answer, got.status, got.reason) == (answered, status, reason)
    assert ledger.approvals.get(packet).status is status
    told = _told(ledger, packet)
    assert [t for t, _ in told] == [EventType.APPROVAL_ANSWERED, seen]
    won, lost = told[0][1], told[1][1]
    assert (won["via"], won["decided_by"], won["status"]) == ("console", "ana", status.value)
    assert lost == {"decision": "approve", "by": "ana", "via": "cli"}
    last = ledger.approvals.history(packet)[-1]
    assert (last.message, last.at) == (reason, 1_001.0)


def test_a_reply_code_that_lost_the_race_is_noted_as_a_code_answer_and_stays_unused() -> None:
    store, ledger, req = _race("deny", "api")
    packet = req.packet.packet_id
    got = ledger.approvals.answer_code(req.code, "approve", by="ana")
    assert store.meanwhile is None
    assert (got.answer, got.status) == (Answered.REFUSED, ApprovalStatus.DENIED)
    told = _told(ledger, packet)
    assert [t for t, _ in told] == [EventType.APPROVAL_ANSWERED, EventType.APPROVAL_REFUSED]
    assert told[0][1]["via"] == "api"
    assert told[1][1] == {"decision": "approve", "by": "ana", "via": "code"}
    # The code was never used by an accepted answer: its right answer now is the
    # existing state's refusal again, not "already used".
    again = ledger.approvals.answer_code(req.code, "approve", by="ana")
    assert again.reason == "already denied: a later approve cannot change it"
