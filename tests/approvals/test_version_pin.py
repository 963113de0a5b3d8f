"""Issue 23's pin: a packet approved for intent version 1 never commits version 2."""

from __future__ import annotations

from decimal import Decimal

from actonce import ApprovalStatus, IntentRef, Outcome
from actonce._rules.approvals import check_commit

from .conftest import World


def test_a_v1_packet_never_commits_v2_in_the_rule() -> None:
    # Everything else matches (key, status, amount, a current version): only the version differs.
    from actonce import Packet

    packet = Packet("apv-1", IntentRef("trip", 1), "book", "k", "ana", amount=Decimal("110"),
                    ceiling=Decimal("120"), currency="EUR", created_at=0.0, expires_at=60.0,
                    status=ApprovalStatus.APPROVED)  # fmt: skip
    refused = check_commit(packet, effect_key="k", intent=IntentRef("trip", 2),
                           intent_current=True, amount=Decimal("110"), now=1.0)  # fmt: skip
    assert refused is not None and refused.reason == "the approval is for trip@v1, not trip@v2"
    fine = check_commit(packet, effect_key="k", intent=IntentRef("trip", 1),
                        intent_current=True, amount=Decimal("110"), now=1.0)  # fmt: skip
    assert fine is None  # the control: the same packet commits its own version


def test_a_v1_packet_never_commits_v2_through_the_ledger(world: World) -> None:
    v1, packet = world.approved()
    v2 = world.ledger.intents.revise("trip", when="2026-12-31").intent
    # The commit of v2 presents v1's approval (gated by v2, or by the packet alone).
    for gate_intent in (v2, None):
        effect = world.effect(v2, packet, gate_intent=gate_intent)
        result = world.ledger.run(effect)
        assert result.outcome is Outcome.REFUSED, result
        assert world.provider.count(str(v2.ref)) == 0
    assert world.ledger.approvals.get(packet.packet_id).status is ApprovalStatus.VOIDED
    assert v1.version == 1
