"""Operations, receipts, timelines and verdicts, pinned whole (issue 23, item 2).

An operation's page on a still clock, the money line in each charged state,
each decision's consequence with and without doubt, every field of a
receipt's step row, each label the timeline gives an event, each fact it
draws from an event's data, and each verdict's words.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from actonce import (
    Absent,
    Confirmed,
    Event,
    EventType,
    Hold,
    HoldKind,
    HoldStatus,
    OperationView,
    Status,
    Unavailable,
)
from actonce.console._console import Console
from actonce.console._decide import Seen, _names, words_of
from actonce.console._operations import _money, consequences, operation_page
from actonce.console._receipts import _before, _status, receipts_page, step_rows
from actonce.console._timeline import _facts, _label, entries, evidence_refs, last_error

from .world import World

T0 = "2023-11-14 22:13:20 UTC"


def _view(w: World) -> OperationView:
    return w.ledger.operations.get(w.operations["review"])


def _with_user(v: OperationView, **user: Any) -> OperationView:
    data = {**v.receipt.data, "user": {**v.receipt.data["user"], **user}}
    return replace(v, receipt=replace(v.receipt, data=data))


def test_the_operation_in_review_page_whole(still: World) -> None:
    v = _view(still)
    keys = [s["key"] for s in v.receipt.data["steps"]]
    undo_of_pay = v.receipt.data["steps"][1]["undo"]["key"]
    page = operation_page(Console(still.ledger, still.reviewers()), v.op_id, "ana", {"x": 1})
    assert page["hold"] == {"x": 1} and page["hold_minutes"] == 10
    assert page["choices"] == [
        {"value": "retry_undo", "label": "Retry the undo",
         "hint": "Run the undo again at the operation's next pass."},
        {"value": "undone_by_hand", "label": "Record it undone by hand",
         "hint": "Someone undid it outside actonce (at the provider, by phone)."},
        {"value": "accept", "label": "Accept as it stands",
         "hint": "What is done stays done; nothing more is done or undone."},
        {"value": "abandon", "label": "Abandon", "hint": "Nothing more happens to this operation."},
    ]  # fmt: skip
    stands = " What stands stays as it is (240.00 EUR held); the receipt says so."
    assert page["consequences"] == {
        "retry_undo": (
            "The next pass of the operation runs the undo of pay again (attempt 2); it verifies "
            "first, so an undo that landed meanwhile is found, never sent twice."
        ),
        "undone_by_hand": (
            "The undo of pay counts as done; the next pass goes on undoing what is left, newest "
            "first. Only if it really was undone outside actonce."
        ),
        "accept": "Ends the operation as it stands: nothing more is done or undone." + stands,
        "abandon": (
            "Ends the operation: no pass does anything more." + stands
            + " Steps still in doubt stay in the effects queue."
        ),
        "withdraw": (
            "Closes it: no step that has not started runs any more; its verified steps are "
            "undone, newest first, at its next pass."
        ),
    }  # fmt: skip
    step = {"this": False, "undo_this": False, "undone": False, "attempts": 1,
            "undo_css": "s-none", "undo_ref": None, "undo_status": ""}  # fmt: skip
    know = [
        "verification found hold (attempt 1)",
        "verification found pay (attempt 1)",
        "verification proved the absence of the undo of pay (attempt 1)",
        "verification proved the absence of book (attempt 1)",
    ]
    nxt = (
        "A person checks what is not known or not undone and decides; nothing is retried "
        "blindly, and you are told the outcome."
    )
    assert page["op"] == {
        "id": "booking:trip-b3@v1",
        "link": "booking:trip-b3@v1",
        "state": "needs_review",
        "at": "the undo of pay",
        "since": T0,
        "age": "2 min",
        "done": "hold (obj-7), pay (obj-8), its undo was refused: it still stands",
        "not_done": "book (it did not happen)",
        "uncertain": "",
        "money": "240.00 EUR held",
        "reason": "the undo of pay was refused: pay still stands",
        "intent": "trip-b3@v1",
        "attempt": 1,
        "closed": False,
        "in_review": True,
        "headline": (
            "Your booking with Harbor Hotel (double room, 2030-05-01) is stopped: a person "
            "checks it before anything else is done."
        ),
        "facts": [
            ("What was done", "hold (obj-7); pay (obj-8), its undo was refused: it still stands."),
            ("What was not done", "book (it did not happen)."),
            ("Charged", "240.00 EUR."),
            ("Approved ceiling", "250 EUR."),
            ("Cancellation terms", "free cancellation until 48 h before check-in"),
            ("Exceptions", "none."),
            ("What happens next", nxt),
            ("Who to contact", "trips@agent.example, with the reference booking:trip-b3@v1; "
                               "for the booking itself, Harbor Hotel."),
            ("How we know", "; ".join(know) + "."),
        ],
        "know": know,
        "next": nxt,
        "steps": [
            {**step, "name": "hold", "role": "compensatable", "status": "confirmed",
             "css": "s-confirmed", "ref": keys[0], "provider_ref": "obj-7", "has_undo": True},
            {**step, "name": "pay", "role": "compensatable", "status": "confirmed",
             "css": "s-confirmed", "ref": keys[1], "provider_ref": "obj-8", "has_undo": True,
             "undo_css": "s-failed", "undo_ref": undo_of_pay, "undo_status": "failed"},
            {**step, "name": "book", "role": "pivot", "status": "failed", "css": "s-failed",
             "ref": keys[2], "provider_ref": "", "has_undo": False},
            {**step, "name": "notify", "role": "retriable", "status": "not started",
             "css": "s-none", "ref": None, "provider_ref": "", "has_undo": False, "attempts": 0},
        ],
        "decisions": [],
    }  # fmt: skip


def test_the_money_line_in_each_charged_state(still: World) -> None:
    v = _view(still)
    cases = [
        ({"charged_state": "charged"}, "240.00 EUR held"),
        ({"charged_state": "unknown"}, "up to 240.00 EUR may be held"),
        ({"charged_state": "release unknown"}, "240.00 EUR held, its release not known"),
        ({"charged_state": "released"}, ""),
        ({"charged_state": "none"}, ""),
        ({"charged_state": None}, ""),
        ({"charged": None}, ""),
        ({"currency": None}, "240.00 held"),
        ({"currency": ""}, "240.00 held"),
        ({"charged": "0"}, "0 EUR held"),
    ]
    for change, said in cases:
        assert _money(_with_user(v, **{"charged_state": "charged", **change})) == said, change
    data = {**v.receipt.data}
    del data["user"]
    assert _money(replace(v, receipt=replace(v.receipt, data=data))) == ""
    quiet = consequences(_with_user(v, charged=None))
    assert quiet["accept"] == "Ends the operation as it stands: nothing more is done or undone."
    assert quiet["abandon"] == (
        "Ends the operation: no pass does anything more. Steps still in doubt stay in the "
        "effects queue."
    )


def test_a_decision_on_a_step_in_doubt_says_what_it_records_first(still: World) -> None:
    v = _view(still)
    pay = next(s for s in v.steps if s.name == "pay")
    assert pay.undo_record is not None
    doubtful = replace(pay, undo_record=replace(pay.undo_record, status=Status.UNKNOWN))
    review = replace(pay, undo_record=replace(pay.undo_record, status=Status.NEEDS_REVIEW))
    for s in (doubtful, review):
        steps = tuple(s if x.name == "pay" else x for x in v.steps)
        words = consequences(replace(v, steps=steps, attempt=3))
        assert words["retry_undo"] == (
            "Records the undo of pay as not happened first (its own effect: failed; refused "
            "while its owner may still be performing). The next pass of the operation runs the "
            "undo of pay again (attempt 4); it verifies first, so an undo that landed meanwhile "
            "is found, never sent twice."
        )
        assert words["undone_by_hand"] == (
            "The undo of pay counts as done (its own effect: confirmed, 'undone by hand'); the "
            "next pass goes on undoing what is left, newest first. Only if it really was undone "
            "outside actonce."
        )
    at_step = consequences(replace(v, undo=False, step="book"))
    assert at_step["undone_by_hand"].startswith("Book counts as done; the next pass")
    assert at_step["retry_undo"].startswith("The next pass of the operation runs the undo of book")
    nowhere = consequences(replace(v, step=None))
    assert nowhere["undone_by_hand"].startswith("Where it stands counts as done; the next")
    assert "runs the undo of the step again" in nowhere["retry_undo"]
    assert not nowhere["retry_undo"].startswith("Records")


def _step(**kw: Any) -> dict[str, Any]:
    return {"name": "s", "role": "pivot", "status": "confirmed", "key": "k1", **kw}


def test_a_receipts_step_row_field_by_field() -> None:
    undo = {"key": "u1", "status": "confirmed"}
    data = {
        "steps": [
            _step(attempts=2, provider_ref="P-1", undo=undo),
            _step(name="t", key="k2", status=None, undo={"key": "u2", "status": None}),
            _step(name="v", key="k3", status="needs review", undo={"key": "u3", "status": "failed"}),
            "not a step",
            _step(name="w", key=None, undo="not a dict"),
        ],
        "decisions": [{"step": "v", "decision": "undone_by_hand"}, "x",
                      {"step": "t", "decision": "accept"}],
    }  # fmt: skip
    rows = step_rows(data, "u1")
    base = {"role": "pivot", "this": False, "undo_this": False, "provider_ref": "",
            "attempts": 0, "undone": False}  # fmt: skip
    assert rows == [
        {**base, "name": "s", "status": "confirmed", "css": "s-confirmed", "attempts": 2,
         "ref": "k1", "provider_ref": "P-1", "undo_ref": "u1", "undo_this": True,
         "undo_status": "confirmed", "undo_css": "s-confirmed", "undone": True, "has_undo": True},
        {**base, "name": "t", "status": "not started", "css": "s-none", "ref": None,
         "undo_ref": None, "undo_status": "", "undo_css": "s-none", "has_undo": True},
        {**base, "name": "v", "status": "needs review", "css": "s-needs-review", "ref": "k3",
         "undo_ref": "u3", "undo_status": "failed, undone by hand", "undo_css": "s-undone",
         "undone": True, "has_undo": True},
        {**base, "name": "w", "status": "confirmed", "css": "s-confirmed", "ref": None,
         "undo_ref": None, "undo_status": "", "undo_css": "s-none", "has_undo": False},
    ]  # fmt: skip
    mine = step_rows(data, "k1")
    assert [r["this"] for r in mine] == [True, False, False, False]
    assert [r["undo_this"] for r in mine] == [False] * 4
    assert [r["this"] for r in step_rows(data)] == [False] * 4
    assert step_rows({"steps": "x", "decisions": "y"}) == [] and step_rows({}) == []


def test_a_status_as_words_and_as_a_css_class() -> None:
    assert _status(None) == ("not started", "s-none") and _status("") == ("not started", "s-none")
    assert _status("needs_review") == ("needs_review", "s-needs_review")
    assert _status("a b/c") == ("a b/c", "s-a-b-c")
    assert _status("x" * 41) == ("x" * 39 + "…", "s-" + "x" * 39 + "-")


def test_the_receipts_list_pages_by_time(still: World) -> None:
    console = Console(still.ledger, still.reviewers())
    page = receipts_page(console, None)
    ids = [r["id"] for r in page["receipts"]]
    assert set(ids) == {"trip-77", "booking:trip-b3@v1"} and page["next"] is None
    trip = next(r for r in page["receipts"] if r["id"] == "trip-77")
    assert trip == {"id": "trip-77", "link": "trip-77", "state": "complete",
                    "at": trip["at"], "first": "Operation trip-77 is done."}  # fmt: skip
    assert trip["at"].endswith(" UTC")
    assert receipts_page(console, "0")["receipts"] == []
    assert [r["id"] for r in receipts_page(console, "nan")["receipts"]] == ids
    assert [r["id"] for r in receipts_page(console, "bad")["receipts"]] == ids
    assert _before("12.5") == 12.5 and _before("") is None and _before(None) is None
    assert _before("inf") is None and _before("x") is None


# --- the timeline -------------------------------------------------------------------------


def _event(kind: EventType, *, run: str = "r1", frm: Status | None = None,
           to: Status | None = None, data: Any = None, message: str | None = None,
           fence: int = 3, seq: int | None = 7) -> Event:  # fmt: skip
    return Event("k", kind, 10.0, fence, run_id=run, from_status=frm, to_status=to,
                 data=data or {}, message=message, seq=seq)  # fmt: skip


def test_each_event_gets_its_label_and_category() -> None:
    t = EventType
    cases = [
        (_event(t.CLAIMED, to=Status.CLAIMED), ("claimed: attempt 3 (fencing token 3)", "claim")),
        (_event(t.EXECUTING, to=Status.EXECUTING),
         ("claimed as the executing mark: attempt 3", "mark")),
        (_event(t.EXECUTING, frm=Status.FAILED, to=Status.EXECUTING),
         ("claimed as the executing mark: attempt 3", "mark")),
        (_event(t.EXECUTING, frm=Status.CLAIMED, to=Status.EXECUTING),
         ("executing mark (durable): the perform may start", "mark")),
        (_event(t.ABANDONED, frm=Status.UNKNOWN, to=Status.ABANDONED), ("abandoned", "decision")),
        (_event(t.CONFIRMED, to=Status.CONFIRMED), ("verdict: confirmed", "verdict")),
        (_event(t.FAILED, run="review:ana", to=Status.FAILED), ("decision: failed", "decision")),
        (_event(t.CLAIMED, run="review:x", to=Status.CLAIMED), ("decision: claimed", "decision")),
        (_event(t.CONFIRMED), ("confirmed", "other")),
        (_event(t.CLAIM_REJECTED), ("claim lost", "claim")),
        (_event(t.CLAIM_REFUSED), ("claim refused by its gate", "refused")),
        (_event(t.PAYLOAD_MISMATCH), ("refused: the same key with another payload", "refused")),
        (_event(t.VERIFICATION_UNAVAILABLE), ("verification unavailable", "verdict")),
        (_event(t.PRECONDITION_FAILED), ("precondition no longer holds", "claim")),
        (_event(t.PERFORM_ERROR), ("perform error", "perform")),
        (_event(t.EVIDENCE), ("evidence captured", "evidence")),
        (_event(t.HARD_STOP), ("hard stop", "alarm")),
        (_event(t.OVERTAKEN), ("alarm: performed after being overtaken", "alarm")),
        (_event(t.FACTS_REFRESHED), ("facts refreshed", "facts")),
        (_event(t.APPROVAL_DUPLICATE), ("approval duplicate", "other")),
    ]  # fmt: skip
    for event, want in cases:
        assert _label(event) == want, event


def test_each_fact_an_events_data_holds() -> None:
    data = {
        "perform": {"seconds": 1.5, "error": "Boom", "overtaken": True,
                    "details": {"wire": [1, 2, 3], "refused": 2}},
        "duplicate": {"count": 3, "refs": [f"r{i}" for i in range(25)]},
        "alarm": {"attempt": 2, "current_attempt": 4},
        "result_ref": "R-9",
        "evidence": "/e/1",
        "waiting": 1,
    }  # fmt: skip
    assert _facts(data) == [
        ("perform took", "1.5 s"),
        ("perform raised", "Boom"),
        ("mutating requests sent", "3"),
        ("requests refused by the guard", "2"),
        ("overtaken", "another claim took over while it performed"),
        ("duplicate detected", "3 results " + ", ".join(f"r{i}" for i in range(20))),
        ("alarm", "attempt 2 performed while attempt 4 held the effect"),
        ("result", "R-9"),
        ("evidence", "/e/1"),
        ("waiting for", "an approval"),
    ]
    quiet = {"perform": {"error": "", "details": {"wire": [], "sent": 5, "refused": 0}}}
    assert _facts(quiet) == [("mutating requests sent", "5")]
    assert _facts({"perform": "x", "duplicate": [], "alarm": 1, "evidence": 5}) == []
    assert _facts({"perform": {"details": {"wire": "x"}}, "result_ref": ""}) == []


def test_a_timeline_entry_whole() -> None:
    events = [
        _event(EventType.UNKNOWN, frm=Status.EXECUTING, to=Status.UNKNOWN, run="reconcile-1",
               data={"perform": {"error": "E1"}, "duplicate": {"count": 2}, "alarm": {}},
               message="m" * 1001),
        _event(EventType.OVERTAKEN, seq=None, run="review:bo"),
        _event(EventType.FAILED, run="review:carol", to=Status.FAILED, data={"reviewer": ""}),
        _event(EventType.FAILED, run="review:carol", to=Status.FAILED, data={"reviewer": "dan"}),
    ]  # fmt: skip
    first, second, third, fourth = entries(events)
    assert (first.seq, first.at, first.attempt, first.run_id) == (7, 10.0, 3, "reconcile-1")
    assert first.change == "executing → unknown" and first.reconcile is True
    assert first.tags == ("duplicate", "alarm", "perform") and first.category == "verdict"
    assert first.message == "m" * 999 + "…" and first.by_reviewer == ""
    assert first.data.startswith('{\n  "alarm": {},\n  "duplicate": {\n    "count": 2\n  },')
    assert (second.seq, second.change, second.tags, second.data) == (0, "", ("alarm",), "")
    assert second.by_reviewer == "" and second.reconcile is False and second.message == ""
    assert (third.category, third.by_reviewer, third.change) == ("decision", "carol",
                                                                "(new) → failed")  # fmt: skip
    assert fourth.by_reviewer == "dan"


def test_the_last_error_and_the_evidence_folders_of_a_history() -> None:
    t = EventType
    events = [
        _event(t.PERFORM_ERROR, message="first", seq=1),
        _event(t.EVIDENCE, data={"evidence": "/a/b/folder-1/"}, seq=2),
        _event(t.EVIDENCE, data={"evidence": "  "}, seq=3),
        _event(t.EVIDENCE, data={"evidence": "/x"}, seq=None),
        _event(t.UNKNOWN, data={"perform": {"error": "second"}, "evidence": "f2"}, seq=5),
        _event(t.PERFORM_ERROR, message="", seq=6),
    ]
    assert last_error(events) == "second"
    assert last_error(events[:2]) == "first"
    assert last_error([_event(t.PERFORM_ERROR, message="e" * 1001)]) == "e" * 999 + "…"
    assert last_error([_event(t.UNKNOWN)]) == ""
    refs = evidence_refs(events)
    assert [(r.seq, r.at, r.folder, r.label) for r in refs] == [
        (2, 10.0, "/a/b/folder-1/", "folder-1"),
        (5, 10.0, "f2", "f2"),
    ]


# --- verdicts and holds in words ----------------------------------------------------------


def test_each_verdict_in_words() -> None:
    assert words_of(Confirmed("INV-1")) == ("confirmed", "confirmed: INV-1 (1 match)", "INV-1")
    assert words_of(Confirmed(None)) == ("confirmed", "confirmed (1 match)", None)
    many = Confirmed("a", count=12, refs=tuple(f"r{i}" for i in range(12)))
    state, words, ref = words_of(many)
    assert (state, ref) == ("duplicate", "a")
    assert words == "duplicate detected: 12 results (" + ", ".join(
        f"r{i}" for i in range(10)) + ")"  # fmt: skip
    assert words_of(Absent()) == (
        "absent",
        "absent: the verifier found nothing (absence may prove nothing)",
        None,
    )
    assert words_of(Unavailable("down")) == ("unavailable", "unavailable: down", None)
    assert words_of("odd") == (  # type: ignore[arg-type]
        "unavailable",
        "unavailable: the verifier returned str",
        None,
    )
    seen = Seen("k", 2, "ana", 0.0, "absent", "absent: nothing", None)
    assert seen.note() == "[verified again by ana at 1970-01-01 00:00:00 UTC: absent: nothing]"


def test_holds_are_named_by_kind() -> None:
    def hold(kind: HoldKind, ref: str, amount: str = "0") -> Hold:
        return Hold(1, kind, ref, Decimal(amount), HoldStatus.HELD, 0.0, None)

    held = [
        hold(HoldKind.APPROVAL, "apv-1"),
        hold(HoldKind.BUDGET, "team", "12.50"),
        hold(HoldKind.INTENT, "trip@v2"),
    ]
    assert _names(held) == (
        "the approval apv-1, 12.50 of the budget team, the intent version trip@v2"
    )
    assert _names([]) == ""
