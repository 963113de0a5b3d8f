"""What a receipt says, whole: the user's text and the operators' JSON (issue 23, item 2).

``build_receipt`` is pure: given the steps' records and events, the intent,
the approval chain and the decisions, it writes one text and one JSON
document. A test that reads one field of them lets every other field go
wrong unseen, so each scenario here states the whole text and the whole
document (or the whole of every part it is about): a booking completed with
a raised ceiling, a duplicate and a message still to send; one withdrawn and
undone; one in review with the charge unknown; one accepted and one
abandoned by a person; an operation with no intent; and each state of the
confirmation message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from actonce._rules.model import EffectRecord, Event, EventType, Status
from actonce._rules.operations import (
    DecisionRecord,
    OperationDecision,
    Role,
    StepState,
    assess,
)
from actonce._rules.receipts import StepView, build_receipt

E, S = EventType, Status
OP = "booking:trip@v2"


def rec(
    key: str,
    status: Status,
    fence: int = 1,
    ref: str | None = None,
    reason: str | None = None,
    matches: int = 0,
) -> EffectRecord:
    return EffectRecord(key, "k", status, fence, "w", 0.0, "{}", "h", result_ref=ref,
                        reason=reason, matches=matches)  # fmt: skip


def ev(
    key: str,
    type_: EventType,
    at: float,
    fence: int = 1,
    run: str = "run-1",
    msg: str | None = None,
    data: dict[str, Any] | None = None,
) -> Event:
    return Event(key, type_, at, fence, run, None, None, msg, data or {})


def refreshed(total: str, at: float) -> dict[str, Any]:
    fact = {"name": "total", "value": total, "observed_at": at, "valid_until": at + 300,
            "source": "https://shop.example/cart", "extra": "never copied"}  # fmt: skip
    return {"facts": [fact, "not a fact"]}


def seen(total: str, at: float) -> dict[str, Any]:
    """A refreshed fact as the receipt copies it."""
    return {"name": "total", "value": total, "observed_at": at, "valid_until": at + 300,
            "source": "https://shop.example/cart"}  # fmt: skip


INTENT = {"intent_id": "trip", "version": 2, "kind": "booking", "provider": "Lakeside Inn",
          "items": ["room 12", "breakfast"], "when": "2026-12-20", "destination": "Lakeside",
          "recipient": None, "price_ceiling": "100", "currency": "EUR", "current": True,
          "notes": {"never": "copied"}}  # fmt: skip
INTENT_JSON = {k: v for k, v in INTENT.items() if k != "notes"}
P1 = {"packet_id": "apv-1", "status": "invalidated", "amount": "85", "ceiling": "90",
      "currency": "EUR", "terms": "free cancellation until 1 Dec", "decided_by": "ana",
      "decided_at": 5.0, "expires_at": 905.0, "revision": 1, "effect_key": "k-pay",
      "user": "ana"}  # fmt: skip
P2 = dict(P1, packet_id="apv-2", status="consumed", amount="97.00", ceiling="100", revision=2,
          decided_at=30.0, expires_at=930.0, terms="free cancellation until 2 Dec")  # fmt: skip


def packet_json(p: dict[str, Any]) -> dict[str, Any]:
    names = ("packet_id", "status", "amount", "ceiling", "currency", "terms", "decided_by",
             "decided_at", "expires_at", "revision")  # fmt: skip
    return {k: p[k] for k in names}


HOLD = StepView(
    "hold", Role.COMPENSATABLE, "k-hold", rec("k-hold", S.CONFIRMED, 1, "H-1"),
    [ev("k-hold", E.CLAIMED, 10), ev("k-hold", E.EXECUTING, 11),
     ev("k-hold", E.CONFIRMED, 12, data={"result_ref": "H-1"})],
    undo_key="k-hold-undo",
)  # fmt: skip
NOT_RUN = {"book": StepView("book", Role.PIVOT, "k-book", None)}
MAIL_NEVER = StepView("notify", Role.RETRIABLE, "k-mail", None, max_attempts=3)


def contact(who: str = "the team that runs this agent for you") -> str:
    return f"{who}, with the reference {OP}; for the booking itself, Lakeside Inn"


def test_a_completed_booking_with_a_raised_ceiling_a_duplicate_and_a_message_to_send() -> None:
    pay = StepView(
        "pay", Role.COMPENSATABLE, "k-pay", rec("k-pay", S.CONFIRMED, 2, "P-9", matches=2),
        [ev("k-pay", E.FACTS_REFRESHED, 20, 0, data=refreshed("95.00", 20)),
         ev("k-pay", E.CLAIMED, 21),
         ev("k-pay", E.UNKNOWN, 22, msg="the provider timed out"),
         ev("k-pay", E.FAILED, 40, run="review:bo", msg="reviewer: it did not happen"),
         ev("k-pay", E.FACTS_REFRESHED, 41, 1, data=refreshed("98.50", 41)),
         ev("k-pay", E.CLAIMED, 42, 2),
         # refreshed after the claim: not what the commit cost
         ev("k-pay", E.FACTS_REFRESHED, 43, 2, data=refreshed("99.00", 43)),
         ev("k-pay", E.NEEDS_REVIEW, 44, 2, msg="found 2",
            data={"duplicate": {"count": 2, "refs": ["P-9", "P-10"]}, "result_ref": "P-9"}),
         ev("k-pay", E.CONFIRMED, 50, 2, run="review:bo", data={"result_ref": "P-9"})],
        undo_key="k-pay-undo",
    )  # fmt: skip
    book = StepView(
        "book", Role.PIVOT, "k-book", rec("k-book", S.CONFIRMED, 1, "B-7"),
        [ev("k-book", E.CLAIMED, 60), ev("k-book", E.EVIDENCE, 61, msg="a screenshot"),
         ev("k-book", E.CONFIRMED, 62, data={"result_ref": "B-7"})],
    )  # fmt: skip
    mail = StepView(
        "notify", Role.RETRIABLE, "k-mail", rec("k-mail", S.FAILED, 1, reason="smtp 451"),
        [ev("k-mail", E.CLAIMED, 70),
         ev("k-mail", E.FAILED, 71, msg="smtp 451", data={"duplicate": "not a mapping"})],
        max_attempts=3,
    )  # fmt: skip
    states = [
        StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True),
        StepState("pay", Role.COMPENSATABLE, S.CONFIRMED, 2, has_undo=True),
        StepState("book", Role.PIVOT, S.CONFIRMED, 1),
        StepState("notify", Role.RETRIABLE, S.FAILED, 1, max_attempts=3, since=71.0),
    ]
    receipt = build_receipt(OP, assess(states), [HOLD, pay, book, mail], intent=INTENT,
                            approval=P2, approvals=[P1, P2], now=99.0)  # fmt: skip

    assert (receipt.operation_id, receipt.state.value) == (OP, "complete")
    assert receipt.text.splitlines() == [
        "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) is done.",
        "What was done: hold (H-1); pay (P-9); book (B-7).",
        "Charged: 98.50 EUR.",
        "Approved ceiling: 100 EUR, raised from 90 EUR by a later approval.",
        "Cancellation terms: free cancellation until 2 Dec",
        "Exceptions: pay was found 2 times at the provider; the notify message is not delivered "
        "yet: it is sent again (attempt 2 of 3).",
        "What happens next: Nothing from you: the confirmation message is being sent.",
        f"Who to contact: {contact()}.",
        "How we know: verification found hold (attempt 1); a reviewer found pay (attempt 2); "
        "verification found book (attempt 1); verification proved the absence of notify "
        "(attempt 1).",
    ]
    no_undo = {"status": None, "attempts": 0, "provider_ref": None, "verdicts": []}
    assert receipt.data == {
        "operation_id": OP,
        "state": "complete",
        "reason": "notify runs (retriable)",
        "written_at": 99.0,
        "intent": INTENT_JSON,
        "approval": packet_json(P2),
        "approvals": [packet_json(P1), packet_json(P2)],
        "steps": [
            {"name": "hold", "role": "compensatable", "key": "k-hold", "status": "confirmed",
             "attempts": 1, "provider_ref": "H-1", "matches": 0,
             "verdicts": [{"type": "confirmed", "at": 12, "attempt": 1, "result_ref": "H-1"}],
             "undo": {"key": "k-hold-undo", **no_undo}},
            {"name": "pay", "role": "compensatable", "key": "k-pay", "status": "confirmed",
             "attempts": 2, "provider_ref": "P-9", "matches": 2,
             "verdicts": [
                 {"type": "facts_refreshed", "at": 20, "attempt": 0,
                  "facts": [seen("95.00", 20)]},
                 {"type": "unknown", "at": 22, "attempt": 1, "message": "the provider timed out"},
                 {"type": "failed", "at": 40, "attempt": 1,
                  "message": "reviewer: it did not happen"},
                 {"type": "facts_refreshed", "at": 41, "attempt": 1,
                  "facts": [seen("98.50", 41)]},
                 {"type": "facts_refreshed", "at": 43, "attempt": 2,
                  "facts": [seen("99.00", 43)]},
                 {"type": "needs_review", "at": 44, "attempt": 2, "message": "found 2",
                  "result_ref": "P-9", "duplicate": {"count": 2}},
                 {"type": "confirmed", "at": 50, "attempt": 2, "result_ref": "P-9"},
             ],
             "undo": {"key": "k-pay-undo", **no_undo}},
            {"name": "book", "role": "pivot", "key": "k-book", "status": "confirmed",
             "attempts": 1, "provider_ref": "B-7", "matches": 0,
             "verdicts": [{"type": "confirmed", "at": 62, "attempt": 1, "result_ref": "B-7"}],
             "undo": None},
            {"name": "notify", "role": "retriable", "key": "k-mail", "status": "failed",
             "attempts": 1, "provider_ref": None, "matches": 0,
             "verdicts": [{"type": "failed", "at": 71, "attempt": 1, "message": "smtp 451"}],
             "undo": None},
        ],
        "notification": "pending",
        "uncertain": [],
        "not_undone": [],
        "how_we_know": [
            "verification found hold (attempt 1)",
            "a reviewer found pay (attempt 2)",
            "verification found book (attempt 1)",
            "verification proved the absence of notify (attempt 1)",
        ],
        "decisions": [],
        "user": {
            "outcome": "done",
            "headline": "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) is done.",
            "done": ["hold (H-1)", "pay (P-9)", "book (B-7)"],
            "not_done": [],
            "uncertain": [],
            "charged": "98.50",
            "charged_state": "charged",
            "released": None,
            "ceiling": "100",
            "ceiling_raised_from": "90",
            "currency": "EUR",
            "terms": "free cancellation until 2 Dec",
            "exceptions": [
                "pay was found 2 times at the provider",
                "the notify message is not delivered yet: it is sent again (attempt 2 of 3)",
            ],
            "next": "Nothing from you: the confirmation message is being sent.",
            "contact": contact(),
        },
    }  # fmt: skip


WITHDRAWN = [DecisionRecord(OperationDecision.WITHDRAW, "system", 79.0, "trip@v2 was superseded",
                            None, 0, 1)]  # fmt: skip
WITHDRAWN_JSON = [{"n": 1, "decision": "withdraw", "by": "system", "at": 79.0,
                   "reason": "trip@v2 was superseded", "step": None, "attempt": 0}]  # fmt: skip
UNDONE_HOLD = StepView(
    "hold", Role.COMPENSATABLE, "k-hold", rec("k-hold", S.CONFIRMED, 1, "H-1"), HOLD.events,
    undo_key="k-hold-undo", undo_record=rec("k-hold-undo", S.CONFIRMED, 1, "H-1-x"),
    undo_events=[ev("k-hold-undo", E.CLAIMED, 80),
                 ev("k-hold-undo", E.CONFIRMED, 81, data={"result_ref": "H-1-x"})],
)  # fmt: skip
PAY_EVENTS = [ev("k-pay", E.FACTS_REFRESHED, 20, 0, data=refreshed("95.00", 20)),
              ev("k-pay", E.CLAIMED, 21), ev("k-pay", E.CONFIRMED, 22)]  # fmt: skip


def test_a_withdrawn_booking_whose_steps_were_undone_says_what_was_given_back() -> None:
    pay = StepView(
        "pay", Role.COMPENSATABLE, "k-pay", rec("k-pay", S.CONFIRMED, 1, "P-9"), PAY_EVENTS,
        undo_key="k-pay-undo", undo_record=rec("k-pay-undo", S.CONFIRMED, 2, "R-3"),
        undo_events=[ev("k-pay-undo", E.CLAIMED, 82),
                     ev("k-pay-undo", E.FAILED, 83, run="review:cy"),
                     ev("k-pay-undo", E.CLAIMED, 84, 2), ev("k-pay-undo", E.CONFIRMED, 85, 2)],
    )  # fmt: skip
    states = [
        StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True,
                  undo=S.CONFIRMED, undo_attempts=1),
        StepState("pay", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True,
                  undo=S.CONFIRMED, undo_attempts=2),
        StepState("book", Role.PIVOT),
        StepState("notify", Role.RETRIABLE, max_attempts=3),
    ]  # fmt: skip
    a = assess(states, decisions=WITHDRAWN)
    receipt = build_receipt(OP, a, [UNDONE_HOLD, pay, NOT_RUN["book"], MAIL_NEVER],
                            intent=INTENT, approval=P1, now=99.0, decisions=WITHDRAWN,
                            contact="Ana's travel desk")  # fmt: skip
    assert receipt.text.splitlines() == [
        "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) was withdrawn "
        "(trip@v2 was superseded); what had been done was undone.",
        "What was done: hold (H-1), then undone; pay (P-9), then undone.",
        "What was not done: book.",
        "Charged: nothing.",
        "Released or refunded: 95.00 EUR.",
        "Approved ceiling: 90 EUR.",
        "Cancellation terms: free cancellation until 1 Dec",
        "Exceptions: none.",
        "What happens next: Nothing more is done for this booking.",
        "Who to contact: " + contact("Ana's travel desk") + ".",
        "How we know: verification found hold (attempt 1); verification found the undo of hold "
        "(attempt 1); verification found pay (attempt 1); verification found the undo of pay "
        "(attempt 2).",
    ]
    data = dict(receipt.data)
    steps = data.pop("steps")
    assert [s["undo"] for s in steps] == [
        {"key": "k-hold-undo", "status": "confirmed", "attempts": 1, "provider_ref": "H-1-x",
         "verdicts": [{"type": "confirmed", "at": 81, "attempt": 1, "result_ref": "H-1-x"}]},
        {"key": "k-pay-undo", "status": "confirmed", "attempts": 2, "provider_ref": "R-3",
         "verdicts": [{"type": "failed", "at": 83, "attempt": 1},
                      {"type": "confirmed", "at": 85, "attempt": 2}]},
        None,
        None,
    ]  # fmt: skip
    assert [(s["name"], s["status"], s["attempts"], s["provider_ref"], s["matches"])
            for s in steps[2:]] == [("book", None, 0, None, 0), ("notify", None, 0, None, 0)]  # fmt: skip
    assert data == {
        "operation_id": OP,
        "state": "compensated",
        "reason": "withdrawn (trip@v2 was superseded); undone",
        "written_at": 99.0,
        "intent": INTENT_JSON,
        "approval": packet_json(P1),
        "approvals": [packet_json(P1)],
        "notification": "pending",
        "uncertain": [],
        "not_undone": [],
        "how_we_know": [
            "verification found hold (attempt 1)",
            "verification found the undo of hold (attempt 1)",
            "verification found pay (attempt 1)",
            "verification found the undo of pay (attempt 2)",
        ],
        "decisions": WITHDRAWN_JSON,
        "user": {
            "outcome": "withdrawn",
            "headline": "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) was "
            "withdrawn (trip@v2 was superseded); what had been done was undone.",
            "done": ["hold (H-1), then undone", "pay (P-9), then undone"],
            "not_done": ["book"],
            "uncertain": [],
            "charged": "0",
            "charged_state": "undone",
            "released": "95.00",
            "ceiling": "90",
            "ceiling_raised_from": None,
            "currency": "EUR",
            "terms": "free cancellation until 1 Dec",
            "exceptions": [],
            "next": "Nothing more is done for this booking.",
            "contact": contact("Ana's travel desk"),
        },
    }


def test_a_withdrawn_booking_still_being_undone_says_the_release_is_not_known() -> None:
    pay = StepView(
        "pay", Role.COMPENSATABLE, "k-pay", rec("k-pay", S.CONFIRMED, 1), PAY_EVENTS,
        undo_key="k-pay-undo", undo_record=rec("k-pay-undo", S.EXECUTING, 1),
    )  # fmt: skip
    states = [
        StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True,
                  undo=S.CONFIRMED, undo_attempts=1),
        StepState("pay", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True,
                  undo=S.EXECUTING, undo_attempts=1),
        StepState("book", Role.PIVOT),
        StepState("notify", Role.RETRIABLE, max_attempts=3),
    ]  # fmt: skip
    a = assess(states, decisions=WITHDRAWN)
    receipt = build_receipt(OP, a, [UNDONE_HOLD, pay, NOT_RUN["book"], MAIL_NEVER],
                            intent=INTENT, approval=P1, now=99.0, decisions=WITHDRAWN)  # fmt: skip
    assert receipt.text.splitlines() == [
        "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) was withdrawn "
        "(trip@v2 was superseded); what was done is being undone.",
        "What was done: hold (H-1), then undone; pay.",
        "What was not done: book.",
        "Still uncertain: the undo of pay (a person checks).",
        "Charged: 95.00 EUR; whether it was given back is not known yet.",
        "Approved ceiling: 90 EUR.",
        "Cancellation terms: free cancellation until 1 Dec",
        "Exceptions: none.",
        "What happens next: What was done is being undone; you are told when it is.",
        f"Who to contact: {contact()}.",
        "How we know: verification found hold (attempt 1); verification found the undo of hold "
        "(attempt 1); verification found pay (attempt 1).",
    ]
    assert {k: receipt.data[k] for k in ("state", "reason", "notification", "uncertain",
                                         "not_undone", "decisions")} == {
        "state": "compensating", "reason": "undoing pay", "notification": "pending",
        "uncertain": ["undo of pay"], "not_undone": [], "decisions": WITHDRAWN_JSON,
    }  # fmt: skip
    assert receipt.data["user"] == {
        "outcome": "withdrawn",
        "headline": "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) was "
        "withdrawn (trip@v2 was superseded); what was done is being undone.",
        "done": ["hold (H-1), then undone", "pay"],
        "not_done": ["book"],
        "uncertain": ["the undo of pay"],
        "charged": "95.00",
        "charged_state": "release unknown",
        "released": None,
        "ceiling": "90",
        "ceiling_raised_from": None,
        "currency": "EUR",
        "terms": "free cancellation until 1 Dec",
        "exceptions": [],
        "next": "What was done is being undone; you are told when it is.",
        "contact": contact(),
    }


def test_a_booking_in_review_with_the_payment_unknown_says_what_may_have_been_charged() -> None:
    pay = StepView("pay", Role.COMPENSATABLE, "k-pay", rec("k-pay", S.UNKNOWN, 1),
                   [ev("k-pay", E.CLAIMED, 21), ev("k-pay", E.UNKNOWN, 22)],
                   undo_key="k-pay-undo")  # fmt: skip
    states = [
        StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True),
        StepState("pay", Role.COMPENSATABLE, S.UNKNOWN, 1, has_undo=True),
        StepState("book", Role.PIVOT),
        StepState("notify", Role.RETRIABLE, max_attempts=3),
    ]
    receipt = build_receipt(OP, assess(states), [HOLD, pay, NOT_RUN["book"], MAIL_NEVER],
                            intent=INTENT, approval=P2, now=99.0)  # fmt: skip
    assert receipt.text.splitlines() == [
        "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) is stopped: a person "
        "checks it before anything else is done.",
        "What was done: hold (H-1).",
        "What was not done: book.",
        "Still uncertain: pay (a person checks).",
        "Charged: not known yet; up to 97.00 EUR may have been charged.",
        "Approved ceiling: 100 EUR.",
        "Cancellation terms: free cancellation until 2 Dec",
        "Exceptions: none.",
        "What happens next: A person checks what is not known or not undone and decides; "
        "nothing is retried blindly, and you are told the outcome.",
        f"Who to contact: {contact()}.",
        "How we know: verification found hold (attempt 1).",
    ]
    assert {k: receipt.data[k] for k in ("state", "reason", "notification", "uncertain",
                                         "not_undone", "approvals")} == {
        "state": "needs_review", "reason": "pay is unknown: a human decides",
        "notification": "pending", "uncertain": ["pay"], "not_undone": [],
        "approvals": [packet_json(P2)],
    }  # fmt: skip
    user = receipt.data["user"]
    assert (user["outcome"], user["charged"], user["charged_state"], user["uncertain"]) == (
        "in review", "97.00", "unknown", ["pay"],
    )  # fmt: skip


HOLD_UNDO_REFUSED = StepView(
    "hold", Role.COMPENSATABLE, "k-hold", rec("k-hold", S.CONFIRMED, 1, "H-1"), HOLD.events,
    undo_key="k-hold-undo", undo_record=rec("k-hold-undo", S.FAILED, 1, reason="refused"),
)  # fmt: skip
PAY_UNDO_REFUSED = StepView(
    "pay", Role.COMPENSATABLE, "k-pay", rec("k-pay", S.CONFIRMED, 1, "P-9"),
    [ev("k-pay", E.CLAIMED, 21), ev("k-pay", E.CONFIRMED, 22)],
    undo_key="k-pay-undo", undo_record=rec("k-pay-undo", S.FAILED, 1),
    undo_events=[ev("k-pay-undo", E.CLAIMED, 30),
                 ev("k-pay-undo", E.FAILED, 31, msg="refund refused")],
)  # fmt: skip
BOOK_FAILED = StepView("book", Role.PIVOT, "k-book", rec("k-book", S.FAILED, 1, reason="sold out"),
                       [ev("k-book", E.CLAIMED, 25), ev("k-book", E.FAILED, 26, msg="sold out")])  # fmt: skip
REFUSED_STATES = [
    StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True, undo=S.FAILED,
              undo_attempts=1),
    StepState("pay", Role.COMPENSATABLE, S.CONFIRMED, 1, has_undo=True, undo=S.FAILED,
              undo_attempts=1),
    StepState("book", Role.PIVOT, S.FAILED, 1),
]  # fmt: skip
REFUSED_KNOW = [
    "verification found hold (attempt 1)",
    "verification found pay (attempt 1)",
    "verification proved the absence of the undo of pay (attempt 1)",
    "verification proved the absence of book (attempt 1)",
]


def test_a_booking_a_person_accepted_as_it_stands_names_them_and_what_still_stands() -> None:
    decisions = [
        DecisionRecord(OperationDecision.UNDONE_BY_HAND, "cy", 40.0, "called the hotel",
                       "hold", 1, 1),
        DecisionRecord(OperationDecision.ACCEPT, "bo", 41.0, "the guest keeps the charge",
                       None, 0, 2),
    ]  # fmt: skip
    a = assess(REFUSED_STATES, decisions=decisions)
    receipt = build_receipt(OP, a, [HOLD_UNDO_REFUSED, PAY_UNDO_REFUSED, BOOK_FAILED],
                            intent=INTENT, approval=P2, now=99.0, decisions=decisions)  # fmt: skip
    assert receipt.text.splitlines() == [
        "Your booking with Lakeside Inn (room 12, breakfast, 2026-12-20) was accepted as it "
        "stands by bo: the guest keeps the charge.",
        "What was done: hold (H-1), then undone by hand; pay (P-9), its undo was refused: it "
        "still stands.",
        "What was not done: book (it did not happen).",
        "Charged: 97.00 EUR.",
        "Approved ceiling: 100 EUR.",
        "Cancellation terms: free cancellation until 2 Dec",
        "Exceptions: none.",
        "What happens next: Nothing more is done for this booking.",
        f"Who to contact: {contact()}.",
        "How we know: " + "; ".join(REFUSED_KNOW) + ".",
    ]
    assert {k: receipt.data[k] for k in ("state", "reason", "notification", "uncertain",
                                         "not_undone", "how_we_know", "decisions")} == {
        "state": "accepted",
        "reason": "accepted as it stands by bo: the guest keeps the charge",
        "notification": None,
        "uncertain": [],
        "not_undone": ["pay"],  # the hold's refused undo was done by hand
        "how_we_know": REFUSED_KNOW,
        "decisions": [
            {"n": 1, "decision": "undone_by_hand", "by": "cy", "at": 40.0,
             "reason": "called the hotel", "step": "hold", "attempt": 1},
            {"n": 2, "decision": "accept", "by": "bo", "at": 41.0,
             "reason": "the guest keeps the charge", "step": None, "attempt": 0},
        ],
    }  # fmt: skip
    user = receipt.data["user"]
    assert (user["outcome"], user["done"], user["not_done"], user["charged"],
            user["charged_state"]) == (
        "accepted",
        ["hold (H-1), then undone by hand", "pay (P-9), its undo was refused: it still stands"],
        ["book (it did not happen)"], "97.00", "charged",
    )  # fmt: skip


def test_an_abandoned_operation_with_no_approval_says_nothing_of_money() -> None:
    decisions = [DecisionRecord(OperationDecision.ABANDON, "bo", 41.0, "too late now")]
    a = assess(REFUSED_STATES, decisions=decisions)
    receipt = build_receipt(OP, a, [HOLD_UNDO_REFUSED, PAY_UNDO_REFUSED, BOOK_FAILED],
                            intent={"intent_id": "x", "kind": None}, approval=None, now=99.0,
                            decisions=decisions)  # fmt: skip
    assert receipt.text.splitlines() == [
        "Your operation was abandoned by bo: too late now.",
        "What was done: hold (H-1), its undo was refused: it still stands; pay (P-9), its undo "
        "was refused: it still stands.",
        "What was not done: book (it did not happen).",
        "Exceptions: none.",
        "What happens next: Nothing more is done for this operation.",
        f"Who to contact: the team that runs this agent for you, with the reference {OP}.",
        "How we know: " + "; ".join(REFUSED_KNOW) + ".",
    ]
    assert receipt.data["intent"] == {
        "intent_id": "x", "version": None, "kind": None, "provider": None, "items": None,
        "when": None, "destination": None, "recipient": None, "price_ceiling": None,
        "currency": None, "current": None,
    }  # fmt: skip
    assert (receipt.data["approval"], receipt.data["approvals"]) == (None, [])
    assert receipt.data["not_undone"] == ["hold", "pay"]
    assert receipt.data["user"] == {
        "outcome": "abandoned",
        "headline": "Your operation was abandoned by bo: too late now.",
        "done": ["hold (H-1), its undo was refused: it still stands",
                 "pay (P-9), its undo was refused: it still stands"],
        "not_done": ["book (it did not happen)"],
        "uncertain": [],
        "charged": None,
        "charged_state": "none",
        "released": None,
        "ceiling": None,
        "ceiling_raised_from": None,
        "currency": None,
        "terms": None,
        "exceptions": [],
        "next": "Nothing more is done for this operation.",
        "contact": f"the team that runs this agent for you, with the reference {OP}",
    }  # fmt: skip


def test_an_operation_with_no_intent_names_itself_and_its_contact() -> None:
    post = StepView("post", Role.PIVOT, "k-post", rec("k-post", S.CLAIMED, 1))
    a = assess([StepState("post", Role.PIVOT, S.CLAIMED, 1)])
    receipt = build_receipt("op-9", a, [post], intent=None, approval=None, now=5.0,
                            contact="ops@example.org")  # fmt: skip
    assert receipt.text == (
        "Operation op-9 is in progress.\n"
        "What was done: nothing.\n"
        "Still uncertain: post (a person checks).\n"
        "Exceptions: none.\n"
        "What happens next: It goes on by itself; you are asked if your approval is needed.\n"
        "Who to contact: ops@example.org, with the reference op-9."
    )
    assert receipt.data == {
        "operation_id": "op-9",
        "state": "in_progress",
        "reason": "post is claimed",
        "written_at": 5.0,
        "intent": None,
        "approval": None,
        "approvals": [],
        "steps": [{"name": "post", "role": "pivot", "key": "k-post", "status": "claimed",
                   "attempts": 1, "provider_ref": None, "matches": 0, "verdicts": [],
                   "undo": None}],
        "notification": None,
        "uncertain": ["post"],
        "not_undone": [],
        "how_we_know": [],
        "decisions": [],
        "user": {
            "outcome": "in progress",
            "headline": "Operation op-9 is in progress.",
            "done": [], "not_done": [], "uncertain": ["post"], "charged": None,
            "charged_state": "none", "released": None, "ceiling": None,
            "ceiling_raised_from": None, "currency": None, "terms": None, "exceptions": [],
            "next": "It goes on by itself; you are asked if your approval is needed.",
            "contact": "ops@example.org, with the reference op-9",
        },
    }  # fmt: skip


def _completed(mail: StepView, state: StepState, now: float | None = None) -> Any:
    book = StepView("book", Role.PIVOT, "k-book", rec("k-book", S.CONFIRMED, 1, "B-7"))
    a = assess([StepState("book", Role.PIVOT, S.CONFIRMED, 1), state], now=now)
    intent = {"intent_id": "m", "kind": "message", "items": [], "when": ""}
    return build_receipt("op-m", a, [book, mail], intent=intent, approval=None, now=99.0)


def _lines(receipt: Any, *labels: str) -> list[str]:
    return [line for line in receipt.text.splitlines() if line.startswith(labels)]


MAIL_CASES = [
    # (record status, fence, reason, max attempts, now, notification, exception, next)
    (S.FAILED, 1, "smtp 451", 3, 80.0, "pending",
     "the notify message is not delivered yet: it is sent again (attempt 2 of 3)",
     "Nothing from you: the message is sent again shortly, under the same reference."),
    (S.FAILED, 3, "smtp 550", 3, None, "given up",
     "the notify message could not be delivered after 3 attempts (the last: smtp 550); "
     "nothing more is sent", "Nothing: the message is done."),
    (S.FAILED, 1, None, 1, None, "given up",
     "the notify message could not be delivered after 1 attempt; nothing more is sent",
     "Nothing: the message is done."),
    (S.EXECUTING, 1, None, 3, None, "executing",
     "the notify message is executing: not confirmed yet", "Nothing: the message is done."),
    (S.UNKNOWN, 2, None, 3, None, "unknown",
     "the notify message is unknown: not confirmed yet", "Nothing: the message is done."),
    (S.CONFIRMED, 2, None, 3, None, "delivered", None, "Nothing: the message is done."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("status", "fence", "reason", "most", "now", "notification", "exception", "then"),
    MAIL_CASES, ids=[f"{c[0]}-{c[1]}-of-{c[3]}-{c[5]}" for c in MAIL_CASES],
)  # fmt: skip
def test_the_confirmation_messages_state_in_a_completed_receipt(
    status: Status, fence: int, reason: str | None, most: int, now: float | None,
    notification: str, exception: str | None, then: str,
) -> None:  # fmt: skip
    mail = StepView("notify", Role.RETRIABLE, "k-mail", rec("k-mail", status, fence, None, reason),
                    max_attempts=most)  # fmt: skip
    state = StepState("notify", Role.RETRIABLE, status, fence, max_attempts=most,
                      since=70.0 if status is S.FAILED else None, reason=reason)  # fmt: skip
    receipt = _completed(mail, state, now)
    assert receipt.data["notification"] == notification
    assert receipt.data["user"]["exceptions"] == ([exception] if exception else [])
    assert _lines(receipt, "Your ", "Exceptions: ", "What happens next: ") == [
        "Your message is done.",
        f"Exceptions: {exception or 'none'}.",
        f"What happens next: {then}",
    ]
    in_doubt = status in (S.EXECUTING, S.UNKNOWN)
    assert receipt.data["uncertain"] == (["notify"] if in_doubt else [])


def test_a_message_never_sent_is_pending_and_not_an_exception() -> None:
    receipt = _completed(MAIL_NEVER, StepState("notify", Role.RETRIABLE, max_attempts=3))
    assert receipt.data["notification"] == "pending"
    assert _lines(receipt, "What was", "Exceptions: ", "What happens next: ") == [
        "What was done: book (B-7).",
        "Exceptions: none.",
        "What happens next: Nothing from you: the confirmation message is being sent.",
    ]


def _pay_only(events: Sequence[Event], chain: list[dict[str, Any]]) -> dict[str, Any]:
    pay = StepView("pay", Role.PIVOT, "k-pay", rec("k-pay", S.CONFIRMED, 1, "P-1"), events)
    a = assess([StepState("pay", Role.PIVOT, S.CONFIRMED, 1)])
    receipt = build_receipt("op-p", a, [pay], intent=None, approval=chain[-1] if chain else None,
                            approvals=chain, now=9.0)  # fmt: skip
    user: dict[str, Any] = receipt.data["user"]
    return {k: user[k] for k in ("charged", "charged_state", "ceiling", "ceiling_raised_from",
                                 "currency", "terms")}  # fmt: skip


def test_what_a_commit_cost_comes_from_the_refresh_before_its_claim_then_the_approval() -> None:
    claim = ev("k-pay", E.CLAIMED, 5)
    price = {"facts": [{"name": "price", "value": "12.40"}, {"name": "tax", "value": "3"}]}
    amount = {"facts": [{"name": "amount", "value": "NaN"}]}  # no finite value: not money
    p = {"packet_id": "apv-9", "effect_key": "k-pay", "amount": "11", "ceiling": "15",
         "currency": "", "terms": ""}  # fmt: skip
    refreshed_price = [ev("k-pay", E.FACTS_REFRESHED, 4, 0, data=price), claim]
    assert _pay_only(refreshed_price, [p]) == {
        "charged": "12.40", "charged_state": "charged", "ceiling": "15",
        "ceiling_raised_from": None, "currency": None, "terms": None,
    }  # fmt: skip
    # A refresh with no finite money fact keeps what was known; none at all: the approval's.
    nan_then_claim = [ev("k-pay", E.FACTS_REFRESHED, 4, 0, data=amount), claim]
    assert _pay_only(nan_then_claim, [p])["charged"] == "11"
    assert _pay_only([*refreshed_price, ev("k-pay", E.FACTS_REFRESHED, 6, 1, data=amount),
                      claim], [p])["charged"] == "12.40"  # fmt: skip
    # No amount approved: the ceiling is the most it cost.
    no_amount = dict(p, amount=None, currency="EUR")
    assert _pay_only([claim], [no_amount])["charged"] == "15"
    # A ceiling lowered by a later approval is not "raised".
    higher = dict(p, ceiling="20", packet_id="apv-8")
    assert _pay_only([claim], [higher, p])["ceiling_raised_from"] is None
    assert _pay_only([claim], [p, higher])["ceiling_raised_from"] == "15"
    # A first packet with no ceiling raised nothing.
    assert _pay_only([claim], [dict(p, ceiling=None), higher])["ceiling_raised_from"] is None
    # An approval for another effect names no money step: the ceiling only.
    other = dict(p, effect_key="k-other", terms="no refunds")
    assert _pay_only([claim], [other]) == {
        "charged": None, "charged_state": "none", "ceiling": "15",
        "ceiling_raised_from": None, "currency": None, "terms": "no refunds",
    }  # fmt: skip


def test_refreshes_that_reported_no_facts_are_listed_and_cost_nothing() -> None:
    events = [
        ev("k-pay", E.FACTS_REFRESHED, 1, 0, data={}),
        ev("k-pay", E.FACTS_REFRESHED, 2, 0, data={"facts": "not a list"}),
        ev("k-pay", E.FACTS_REFRESHED, 3, 0, data={"facts": [{"name": "price", "value": "7"}]}),
        ev("k-pay", E.CLAIMED, 4),
        ev("k-pay", E.CONFIRMED, 5, msg="found", data={"duplicate": {"count": 3, "x": 1}}),
    ]
    pay = StepView("pay", Role.PIVOT, "k-pay", rec("k-pay", S.CONFIRMED, 1, "P-1"), events)
    a = assess([StepState("pay", Role.PIVOT, S.CONFIRMED, 1)])
    approval = {"packet_id": "apv-9", "effect_key": "k-pay", "amount": "6", "currency": "EUR"}
    receipt = build_receipt("op-p", a, [pay], intent=None, approval=approval, now=9.0)
    assert receipt.data["steps"][0]["verdicts"] == [
        {"type": "facts_refreshed", "at": 1, "attempt": 0},
        {"type": "facts_refreshed", "at": 2, "attempt": 0},
        {"type": "facts_refreshed", "at": 3, "attempt": 0,
         "facts": [{"name": "price", "value": "7", "observed_at": None, "valid_until": None,
                    "source": None}]},
        {"type": "confirmed", "at": 5, "attempt": 1, "message": "found",
         "duplicate": {"count": 3}},
    ]  # fmt: skip
    assert receipt.data["user"]["charged"] == "7"
    assert _lines(receipt, "Charged: ") == ["Charged: 7 EUR."]


def test_a_payment_undone_by_hand_was_given_back() -> None:
    decisions = [
        DecisionRecord(OperationDecision.UNDONE_BY_HAND, "cy", 40.0, "refunded by phone",
                       "pay", 1, 1),
    ]  # fmt: skip
    states = [REFUSED_STATES[0], REFUSED_STATES[1], REFUSED_STATES[2]]
    a = assess(states, decisions=decisions)
    receipt = build_receipt(OP, a, [HOLD_UNDO_REFUSED, PAY_UNDO_REFUSED, BOOK_FAILED],
                            intent=INTENT, approval=P2, now=99.0, decisions=decisions)  # fmt: skip
    assert _lines(receipt, "What was done: ", "Charged: ", "Released or refunded: ") == [
        "What was done: hold (H-1), its undo was refused: it still stands; pay (P-9), then "
        "undone by hand.",
        "Charged: nothing.",
        "Released or refunded: 97.00 EUR.",
    ]
    user = receipt.data["user"]
    assert (user["charged"], user["charged_state"], user["released"]) == ("0", "undone", "97.00")
    assert receipt.data["not_undone"] == ["hold"]
