"""Pins for the rules' mutants that the fast suite let through (issue 23, item 2).

Each test states one behaviour of ``src/actonce/_rules/`` that a seeded
mutmut sample (``python tests/mutants/areas.py --area _rules --sample 40
--seed 1``) showed no test of the area stated: the text an operator run
prints, how a reply code is normalised, the words of a refusal, the step an
operation waits on, the fields of a decision and a receipt.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from actonce import (
    Absent,
    Effect,
    Event,
    EventType,
    Intent,
    Ledger,
    Operation,
    Policy,
    RefusalReason,
    RequestPattern,
    SigningKeys,
    Status,
    Step,
    SubmitWindow,
    Unavailable,
    UsageError,
    WireAction,
    effect_key,
    intent_key,
    judge_request,
)
from actonce._rules.approvals import (
    LinkClaims,
    Packet,
    code_digest,
    code_matches,
    link_matches,
    sign_link,
    verify_link,
)
from actonce._rules.budgets import Draw, Pool, PoolUsage, over
from actonce._rules.intents import currency_code, revise
from actonce._rules.operation_review import choices
from actonce._rules.operations import (
    Assessment,
    DecisionRecord,
    Next,
    OperationDecision,
    OperationState,
    Role,
    StepState,
    assess,
)
from actonce._rules.operator import (
    ItemClass,
    RunStage,
    RunStatus,
    RunStop,
    RunSummary,
    SummaryItem,
    open_why,
)
from actonce._rules.receipts import (
    StepView,
    _claimed_amount,
    _how_we_know,
    _next,
    _step_json,
    _verdicts,
)
from actonce.testing import FrozenClock, MemoryStore

KEYS = SigningKeys.parse("k1:" + "ab" * 16)


def _summary() -> RunSummary:
    i, s = ItemClass, RunStage
    return RunSummary(
        run_id="r1", operator="op", owner="host:1", token=7, status=RunStatus.HARD_STOP,
        started_at=0.0, ended_at=1.0, reconciled={"confirmed": 2, "failed": 0},
        items=(
            SummaryItem("a", i.DONE, s.ACT, key="k" * 20, result_ref="order:1"),
            SummaryItem("b", i.SKIPPED, s.BUDGET, why="over_budget", reason="spent"),
            SummaryItem("c", i.SKIPPED, s.BUDGET, why="over_budget"),
            SummaryItem("d", i.SKIPPED, s.PLAN),
            SummaryItem("e", i.FAILED, s.ACT, reason="declined"),
            SummaryItem("f", i.AMBIGUOUS, s.ACT, status="unknown", reason="timeout"),
            SummaryItem("g", i.QUALITY_SKIP, s.QUALITY, reason="not worth it"),
            SummaryItem("h", i.QUALITY_SKIP, s.QUALITY),
            SummaryItem("i", i.STOPPED, s.IDENTITY, reason="signed out"),
        ),
        stops=(RunStop(s.IDENTITY, "signed out"),),
        budget=(
            {"name": "actions", "unit": "count", "free": 3, "limit": 5, "reserved": 1,
             "consumed": 1},
            {"name": "spend", "unit": "EUR", "free": "10.00", "limit": "50.00", "reserved": "0",
             "consumed": "40.00"},
        ),
        candidates=9, stored=False, operations={"in_review": 1, "complete": 2},
    )  # fmt: skip


def test_a_run_summary_prints_every_class_its_reasons_and_the_budget_left() -> None:
    assert _summary().lines() == [
        "run        r1",
        "operator   op (lease token 7, host:1)",
        "status     hard_stop",
        "reconciled confirmed 2",
        "operations 1 in review; driven 2 (complete 2)",
        "candidates 9",
        "done       1",
        "    a [kkkkkkkkkkkk]: order:1",
        "skipped    3 (other 1, over_budget 2)",
        "    b: over_budget: spent",
        "    c: over_budget",
        "    d: other",
        "failures   1 (definitive: did not happen, replannable)",
        "    e: declined",
        "ambiguous  1 (may have happened: reconcile or review first)",
        "    f: unknown: timeout",
        "hard stops 1",
        "    identity: signed out",
        "    i: stopped here: signed out",
        "quality    2 skipped as not worth doing",
        "    g: not worth it",
        "    h",
        "budget left",
        "    actions: 3 free of 5 (reserved 1, consumed 1)",
        "    spend: 10.00 EUR free of 50.00 EUR (reserved 0, consumed 40.00)",
        "(this summary could not be stored in the ledger)",
    ]


def test_skips_are_counted_per_reason() -> None:
    assert _summary().skipped_by_reason() == {"over_budget": 2, "other": 1}


@pytest.mark.parametrize("typed", ["abcd", "AB CD", " ab-cd ", "A-B C-D"])
def test_a_reply_code_matches_however_it_is_typed(typed: str) -> None:
    kept = code_digest(KEYS, "ana", "ABCD")
    assert code_matches(KEYS, "ana", typed, kept)
    assert code_digest(KEYS, "ana", typed) == kept
    assert not code_matches(KEYS, "bob", typed, kept)  # bound to the user


def _usage(unit: str, limit: str, used: str) -> PoolUsage:
    pool = Pool("p", Decimal(limit), unit=unit)
    return PoolUsage(pool, 0.0, 86400.0, Decimal("0"), Decimal(used))


def test_an_over_budget_reason_names_the_unit_of_money_and_none_for_a_count() -> None:
    assert over(_usage("count", "5", "5"), Draw("p", Decimal("1"))) == (
        "budget 'p' is spent: 5 of 5 used this day, 1 more would exceed it"
    )
    assert over(_usage("EUR", "50", "40"), Draw("p", Decimal("20"))) == (
        "budget 'p' is spent: 40 EUR of 50 EUR used this day, 20 EUR more would exceed it"
    )
    assert over(_usage("EUR", "50", "40"), Draw("p", Decimal("10"))) is None


def test_a_currency_that_is_no_iso_code_says_what_is_expected() -> None:
    with pytest.raises(
        UsageError, match=r"^price is a 3-letter ISO 4217 code such as 'EUR', not 'eur'$"
    ):
        currency_code("eur", "price")


@pytest.mark.parametrize("field", ["intent_id", "kind", "version", "material"])
def test_an_intents_identity_cannot_be_revised(field: str) -> None:
    intent = Intent("trip", "booking", user="ana")
    with pytest.raises(UsageError, match=rf"^{field} cannot be revised$"):
        revise(intent, **{field: "x"})


def test_an_operation_waits_on_the_busy_step_after_its_pivot() -> None:
    steps = [
        StepState("book", Role.PIVOT, Status.CONFIRMED, 1, 1),
        StepState("notify", Role.RETRIABLE, Status.EXECUTING, 1, 3),
    ]
    a = assess(steps)
    assert (a.state, a.next, a.index) == (OperationState.COMPLETE, Next.WAIT, 1)
    assert a.reason == "notify is executing"


def test_an_operation_without_steps_is_refused_with_its_reason() -> None:
    with pytest.raises(UsageError, match=r"^an operation needs at least one step$"):
        assess([])


def test_a_decision_as_json_names_every_field() -> None:
    d = DecisionRecord(OperationDecision.WITHDRAW, "ana", 5.0, "why", step="pay", attempt=2, n=3)
    assert d.as_json() == {
        "n": 3, "decision": "withdraw", "by": "ana", "at": 5.0, "reason": "why", "step": "pay",
        "attempt": 2,
    }  # fmt: skip


def test_a_receipt_names_the_step_left_unknown_and_its_attempts() -> None:
    clock = FrozenClock()
    ledger = Ledger(MemoryStore(), clock=clock)
    policy = Policy(verify_attempts=1)

    performed: list[int] = []

    def perform() -> None:
        performed.append(1)
        raise TimeoutError("no answer")

    def verify() -> Absent | Unavailable:
        return Unavailable("down") if performed else Absent()

    effect = Effect(
        effect_key(tenant="t", actor="a", kind="book", object="o", operation="create"),
        "book", {"n": 1}, perform, verify, policy=policy,
    )  # fmt: skip
    Operation(ledger, "op", [Step("book", effect, "pivot")]).run()
    receipt = ledger.receipt("op")
    assert receipt is not None
    assert receipt.data["uncertain"] == ["book"]
    assert [(s["name"], s["status"], s["attempts"]) for s in receipt.data["steps"]] == [
        ("book", "unknown", 1)
    ]


def test_an_undeclared_write_on_the_sessions_origin_is_refused() -> None:
    window = SubmitWindow("http://127.0.0.1:8765", (RequestPattern("POST", "/notes"),))
    decision = judge_request("DELETE", "http://127.0.0.1:8765/notes/7", window=window)
    assert (decision.action, decision.reason) == (WireAction.REFUSE, RefusalReason.UNDECLARED)


# --- a second seeded sample (seed 2) -------------------------------------------------------


def _packets() -> tuple[SigningKeys, Packet, Packet]:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    intent = ledger.intents.put(
        Intent("trip", "booking", user="ana", price_ceiling=Decimal("250"), currency="EUR")
    )
    pay = intent_key(intent, "pay", tenant="t", actor="ana")
    hold = intent_key(intent, "hold", tenant="t", actor="ana")
    priced = ledger.approvals.request(intent, "pay", pay, amount="240", details={"room": "double"})
    capped = ledger.approvals.request(intent, "hold", hold)
    return KEYS, priced.packet, capped.packet


def test_a_packet_says_its_price_or_its_ceiling_and_its_link_carries_them() -> None:
    keys, priced, capped = _packets()
    assert priced.summary() == "pay double for 240 EUR (trip@v1)"
    assert capped.summary() == "hold for at most 250 EUR (trip@v1)"
    claims = verify_link(keys, sign_link(keys, priced))
    assert isinstance(claims, LinkClaims) and (claims.amount, claims.ceiling) == ("240", "250")
    claims = verify_link(keys, sign_link(keys, capped))
    assert isinstance(claims, LinkClaims) and (claims.amount, claims.ceiling) == (None, "250")
    assert link_matches(claims, capped) is None


def test_bad_signing_keys_and_request_patterns_say_what_is_wrong() -> None:
    with pytest.raises(
        UsageError, match=r"^ACTONCE_APPROVAL_KEYS must hold 'kid:hex\[,kid:hex\.\.\.\]'$"
    ):
        SigningKeys.parse("nocolon")
    with pytest.raises(UsageError, match=r"has no query and '\*' only at its end: '/x#y'$"):
        RequestPattern("POST", "/x#y")
    assert RequestPattern("POST", "/x", beacon=True).describe() == "POST /x (beacon)"
    assert RequestPattern("POST", "/x").describe() == "POST /x"


def test_an_intent_keeps_its_material_fields_through_json() -> None:
    intent = Intent("trip", "booking", user="ana", material=("when",))
    assert Intent.from_json(intent.as_json()).material == ("when",)


def test_a_policy_refuses_a_zero_where_it_needs_a_positive_number() -> None:
    with pytest.raises(
        UsageError, match=r"^Policy.lease_seconds must be a finite number of seconds > 0, not 0$"
    ):
        Policy(lease_seconds=0)
    assert Policy(settle_seconds=0).settle_seconds == 0


def test_a_retriable_step_in_doubt_after_the_pivot_stops_for_a_person_who_may_accept() -> None:
    steps = [
        StepState("book", Role.PIVOT, Status.CONFIRMED, 1, 1),
        StepState("notify", Role.RETRIABLE, Status.UNKNOWN, 1, 3),
    ]
    a = assess(steps)
    assert (a.state, a.next, a.index) == (OperationState.COMPLETE, Next.STOP, 1)
    assert a.reason == "notify is unknown: a human decides"
    assert choices(a, steps) == (OperationDecision.ACCEPT,)
    waiting = assess([steps[0], StepState("notify", Role.RETRIABLE, Status.EXECUTING, 1, 3)])
    assert choices(waiting, steps) == ()


@pytest.mark.parametrize(
    ("undo", "why"),
    [
        (Status.UNKNOWN, "the undo of hold is unknown"),
        (Status.FAILED, "the undo of hold was refused: hold still stands"),
    ],
)
def test_an_undo_in_doubt_or_refused_says_which(undo: Status, why: str) -> None:
    steps = [
        StepState("hold", Role.COMPENSATABLE, Status.CONFIRMED, 1, 1, undo, True),
        StepState("pay", Role.PIVOT, Status.FAILED, 1, 1),
    ]
    a = assess(steps)
    assert (a.state, a.next, a.index, a.undo, a.reason) == (
        OperationState.NEEDS_REVIEW, Next.STOP, 0, True, why,
    )  # fmt: skip


def test_an_open_effect_says_why_new_work_waits_for_it() -> None:
    assert open_why(Status.EXECUTING) == "its owner's lease is still live"
    assert open_why(Status.UNKNOWN) == "outcome not proven"


def test_a_run_summary_survives_json() -> None:
    s = _summary()
    assert RunSummary.from_json(s.as_json()) == replace(s, stored=True)


def test_a_receipt_says_what_happens_next_when_a_message_is_sent_again() -> None:
    done = OperationState.COMPLETE
    again = Assessment(done, Next.WAIT, 1, due=5.0)
    assert _next(done, again, "booking") == (
        "Nothing from you: the message is sent again shortly, under the same reference."
    )
    assert _next(done, Assessment(done, Next.WAIT, 1), "booking") == "Nothing: the booking is done."
    assert _next(done, Assessment(done, Next.RUN, 1), "booking") == (
        "Nothing from you: the confirmation message is being sent."
    )


def test_a_receipt_lists_only_the_verdicts_of_a_history() -> None:
    events = [
        Event("k", EventType.CLAIMED, 1.0, 1),
        Event("k", EventType.CONFIRMED, 2.0, 1, message="found", data={"result_ref": "r-1"}),
    ]
    assert _verdicts(events) == [
        {"type": "confirmed", "at": 2.0, "attempt": 1, "message": "found", "result_ref": "r-1"}
    ]


# --- a third seeded sample (seed 3) --------------------------------------------------------


def test_a_link_that_is_none_says_so() -> None:
    assert verify_link(KEYS, "garbage") == "not an approval link"


def test_a_priced_packet_without_a_ceiling_is_capped_at_its_price() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    intent = ledger.intents.put(Intent("trip", "booking", user="ana", currency="EUR"))
    key = intent_key(intent, "pay", tenant="t", actor="ana")
    packet = ledger.approvals.request(intent, "pay", key, amount="240").packet
    assert (packet.amount, packet.ceiling) == (Decimal("240"), Decimal("240"))


def test_bad_intents_and_pools_say_what_is_wrong() -> None:
    with pytest.raises(
        UsageError, match=r"^a pool's unit \('count' or a currency code\) is a 3-letter"
    ):
        Pool("p", Decimal("5"), unit="eur")
    with pytest.raises(UsageError, match=r"^an intent has no field\(s\) colour, size$"):
        revise(Intent("trip", "booking", user="ana"), size=1, colour="red")
    with pytest.raises(UsageError, match=r"^quantity must be a whole number >= 1, not 0$"):
        Intent("trip", "booking", user="ana", quantity=0)


def test_a_receipt_says_how_we_know_what_happened() -> None:
    found = [Event("k", EventType.CONFIRMED, 2.0, 2, run_id="r")]
    gone = [Event("k", EventType.FAILED, 2.0, 1, run_id="review:ana")]
    assert _how_we_know("pay", found) == "verification found pay (attempt 2)"
    assert _how_we_know("pay", gone) == "a reviewer proved the absence of pay (attempt 1)"
    assert _how_we_know("pay", []) is None


def test_a_receipt_quotes_the_total_refreshed_before_the_claim_and_the_facts() -> None:
    facts = {"facts": [{"name": "total", "value": "231.50", "source": "site"}]}
    refreshed = Event("k", EventType.FACTS_REFRESHED, 1.0, 0, data=facts)
    events = [refreshed, Event("k", EventType.CLAIMED, 2.0, 1)]
    step = StepView("pay", Role.PIVOT, "k", None, events)
    assert _claimed_amount(step) == Decimal("231.50")
    assert _step_json(step)["undo"] is None
    (seen,) = _verdicts([refreshed])
    assert seen["facts"] == [
        {"name": "total", "value": "231.50", "observed_at": None, "valid_until": None,
         "source": "site"},
    ]  # fmt: skip
