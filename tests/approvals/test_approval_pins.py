"""Reply codes, pinned where the ``_run`` area's held-out mutation sample (seed 3)
found them loose (issue 23 item 2): a refused run of wrong codes names who sent them,
and a used code brought again with the same answer is that answer again, not a
refusal. Memory store, a frozen clock, the approvals world.
"""

from __future__ import annotations

from actonce import ApprovalStatus, EventType
from actonce._rules.approvals import MAX_CODE_FAILURES, Answered
from approvals.conftest import World, mem_world  # noqa: F401 (a fixture)


def test_too_many_wrong_codes_are_refused_and_the_note_names_who(
    mem_world: World,  # noqa: F811
) -> None:
    ap = mem_world.ledger.approvals
    req = mem_world.request(mem_world.intent())
    for n in range(MAX_CODE_FAILURES):
        wrong = ap.answer_code(f"QQQQ234{n}", "approve", by="ana")
        assert wrong.answer is Answered.REFUSED
    blocked = ap.answer_code(req.code, "approve", by="ana")  # right, but too late
    assert blocked.answer is Answered.REFUSED
    assert blocked.reason == "too many wrong codes: reply codes are refused for now"
    notes = [e for e in mem_world.ledger.store.events("approval:codes")
             if e.message == blocked.reason]  # fmt: skip
    assert notes, "the refusal was not noted"
    assert all(e.type is EventType.APPROVAL_REFUSED for e in notes)
    assert notes[-1].data.get("by") == "ana" and notes[-1].data.get("via") == "code", notes[-1]
    assert ap.get(req.packet.packet_id).status is ApprovalStatus.PENDING


def test_a_used_code_brought_again_with_the_same_answer_is_the_same(
    mem_world: World,  # noqa: F811
) -> None:
    ap = mem_world.ledger.approvals
    req = mem_world.request(mem_world.intent())
    assert ap.answer_code(req.code, "approve", by="ana").answer is Answered.ACCEPTED
    again = ap.answer_code(req.code, "approve", by="ana")  # a duplicated message
    assert again.answer is Answered.SAME, again
    assert ap.get(req.packet.packet_id).status is ApprovalStatus.APPROVED
    other = ap.answer_code(req.code, "deny", by="ana")
    assert other.answer is Answered.REFUSED and other.reason == "this reply code was already used"
