"""Every form of the console and what it answers, pinned whole (issue 23, item 2).

Holding, letting go, deciding an effect, verifying again, answering a
packet, and the same for an operation: each POST's redirect, the exact
message the next page shows (one flash, in words a reviewer reads), what
the ledger then holds, and each refusal in the order the handler checks.
The pages that name nothing in the ledger answer 404 with their own words.
Starlette's TestClient drives the real app on a real ledger.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from actonce import Confirmed, Status
from actonce.console import Settings, create_app, ref_of
from actonce.console._console import Console
from actonce.console._evidence import HTML_CSP
from actonce.console._operations import hold_key

from .world import PASSWORDS, World, build

BASE = "http://127.0.0.1"
HIDDEN = re.compile(r'name="csrf" value="([^"]+)"')
FLASH = re.compile(r'<p class="flash" role="status">(.*?)</p>')


class Reviewer:
    """A TestClient signed in as one reviewer, posting its forms as the pages do."""

    def __init__(self, console: Console, name: str) -> None:
        self.client = TestClient(create_app(console), base_url=BASE, follow_redirects=False)
        nonce = HIDDEN.search(self.client.get("/login").text)
        assert nonce
        data = {"csrf": nonce.group(1), "name": name, "password": PASSWORDS[name]}
        assert self.client.post("/login", data=data, headers={"origin": BASE}).status_code == 303
        token = HIDDEN.search(self.client.get("/overview").text)
        assert token
        self.token = token.group(1)

    def post(self, url: str, to: str, **data: str) -> list[str]:
        """POST a form; answers the messages the page it leads to shows."""
        answer = self.client.post(url, data={"csrf": self.token, **data}, headers={"origin": BASE})
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == to
        page = self.client.get(to)
        assert page.status_code == 200
        again = self.client.get(to)
        assert FLASH.findall(again.text) == []  # shown once
        return [m.replace("&#39;", "'").replace("&#34;", '"') for m in FLASH.findall(page.text)]


@pytest.fixture
def mine(tmp_path: Path) -> Iterator[tuple[World, Console]]:
    w = build(tmp_path)
    yield w, Console(w.ledger, w.reviewers(), Settings())
    w.close()


HOLDING = "You hold this item: the decision is yours until the hold ends."


def test_holding_and_letting_go_an_effect(mine: tuple[World, Console]) -> None:
    w, console = mine
    ana, bo = Reviewer(console, "ana"), Reviewer(console, "bo")
    ref = ref_of(w.keys["needs_review"])
    url = f"/effects/{ref}"
    assert ana.post(url + "/hold", url) == [HOLDING]
    assert ana.post(url + "/hold", url) == [HOLDING]  # held longer
    assert bo.post(url + "/hold", url) == ["Held by ana: you can read it, not decide it."]
    assert bo.post(url + "/release", url) == ["You let the item go; anyone may take it."]
    assert console.holds.state(w.keys["needs_review"], "bo").holder == "ana"  # not bo's to free
    assert ana.post(url + "/release", url) == ["You let the item go; anyone may take it."]
    assert console.holds.state(w.keys["needs_review"], "bo").free
    assert bo.post(url + "/hold", url) == [HOLDING]


def test_a_decision_is_refused_in_the_order_the_form_is_read(mine: tuple[World, Console]) -> None:
    w, console = mine
    ana = Reviewer(console, "ana")
    key = w.keys["needs_review"]
    url = f"/effects/{ref_of(key)}"
    form = {"class": "seen", "reason": "there", "result_ref": "INV-1", "attempt": "1"}
    cases = [
        ({"class": "nope"}, "Nothing recorded: choose what you found."),
        ({"class": ""}, "Nothing recorded: choose what you found."),
        ({"reason": "   "}, "Nothing recorded: a decision needs its reason."),
        ({"result_ref": "  "}, "Nothing recorded: 'Seen at the provider' names the result."),
        ({"class": "duplicate", "result_ref": ""}, "Nothing recorded: 'Duplicate of' names the result."),
        ({"attempt": ""}, "Nothing recorded: the page did not say which attempt."),
        ({"attempt": "0"}, "Nothing recorded: the page did not say which attempt."),
        ({"attempt": "-1"}, "Nothing recorded: the page did not say which attempt."),
        ({"attempt": "x1"}, "Nothing recorded: the page did not say which attempt."),
        ({"attempt": "1000000001"}, "Nothing recorded: the page did not say which attempt."),
        ({}, "Nothing recorded: hold the item first (your hold ended, or is not here)."),
    ]  # fmt: skip
    for change, said in cases:
        assert ana.post(url + "/resolve", url, **{**form, **change}) == [said], change
    assert ana.post(url + "/hold", url) == [HOLDING]
    stale = ana.post(url + "/resolve", url, **{**form, "attempt": "2"})
    assert len(stale) == 1 and stale[0].startswith("Nothing recorded: ")
    assert "on attempt 1 now, not the attempt 2" in stale[0]
    assert w.ledger.get(key).status is Status.NEEDS_REVIEW  # type: ignore[union-attr]
    done = ana.post(url + "/resolve", url, **{**form, "attempt": "000000001"})
    assert done == ["Recorded by ana: the effect is confirmed."]
    record = w.ledger.get(key)
    assert record is not None and record.status is Status.CONFIRMED
    assert record.result_ref == "INV-1"
    event = w.ledger.events(key)[-1]
    assert event.message == "seen at the provider: there" and event.run_id == "review:ana"
    assert console.holds.state(key, "ana").free  # the hold was let go


def test_a_duplicate_decision_names_the_result_and_a_failed_one_none(
    mine: tuple[World, Console],
) -> None:
    w, console = mine
    ana = Reviewer(console, "ana")
    key = w.keys["duplicate"]
    url = f"/effects/{ref_of(key)}"
    ana.post(url + "/hold", url)
    said = ana.post(
        url + "/resolve", url,
        **{"class": "duplicate", "reason": " two of them ", "result_ref": " obj-3 ", "attempt": "1"},
    )  # fmt: skip
    assert said == ["Recorded by ana: the effect is confirmed."]
    event = w.ledger.events(key)[-1]
    assert event.message == "duplicate of: two of them (the result that counts: obj-3)"
    assert w.ledger.get(key).result_ref == "obj-3"  # type: ignore[union-attr]
    other = w.keys["canary"]
    url = f"/effects/{ref_of(other)}"
    ana.post(url + "/hold", url)
    said = ana.post(
        url + "/resolve", url,
        **{"class": "not_found", "reason": "none", "result_ref": "X-9", "attempt": "1"},
    )  # fmt: skip
    assert said == ["Recorded by ana: the effect is failed."]
    assert w.ledger.get(other).result_ref is None  # type: ignore[union-attr]


def test_verify_again_says_what_it_found_and_writes_nothing(mine: tuple[World, Console]) -> None:
    w, console = mine
    ana = Reviewer(console, "ana")
    key = w.keys["needs_review"]
    url = f"/effects/{ref_of(key)}"
    before = w.ledger.events(key)
    said = ana.post(url + "/verify", url)
    assert len(said) == 1
    assert re.fullmatch(
        r"Verified again: absent: the verifier found nothing \(absence may prove nothing\); "
        r"took \d+\.\d s\. Nothing was written\.",
        said[0],
    ), said
    assert w.ledger.events(key) == before
    seen = console.seen[key]
    assert (seen.key, seen.fence, seen.reviewer, seen.verdict) == (key, 1, "ana", "absent")
    assert console.verifying == set()
    gated = w.keys["gated"]
    url = f"/effects/{ref_of(gated)}"
    assert ana.post(url + "/verify", url) == [
        "No verifier is registered for 'book' (see --verifiers)."
    ]
    assert gated not in console.seen
    console.verifying.add(key)
    url = f"/effects/{ref_of(key)}"
    assert ana.post(url + "/verify", url) == ["A verification of this effect is running already."]
    assert console.verifying == {key}  # the running one is not disturbed


def test_a_verdict_seen_by_the_same_reviewer_rides_in_the_decision(
    mine: tuple[World, Console],
) -> None:
    w, console = mine
    ana, bo = Reviewer(console, "ana"), Reviewer(console, "bo")
    key = w.keys["needs_review"]
    url = f"/effects/{ref_of(key)}"
    w.registry.register("invoice", lambda record: Confirmed("INV-9"))
    bo.post(url + "/verify", url)
    ana.post(url + "/hold", url)
    ana.post(url + "/resolve", url, **{"class": "seen", "reason": "ok", "result_ref": "INV-9",
                                        "attempt": "1"})  # fmt: skip
    assert w.ledger.events(key)[-1].message == "seen at the provider: ok"  # bo's, not quoted
    assert key not in console.seen
    other = w.keys["canary"]
    url = f"/effects/{ref_of(other)}"
    ana.post(url + "/verify", url)
    ana.post(url + "/hold", url)
    ana.post(url + "/resolve", url, **{"class": "seen", "reason": "ok", "result_ref": "INV-9",
                                        "attempt": "1"})  # fmt: skip
    message = w.ledger.events(other)[-1].message or ""
    assert re.fullmatch(
        r"seen at the provider: ok \[verified again by ana at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: "
        r"confirmed: INV-9 \(1 match\); took \d+\.\d s\]",
        message,
    ), message


def _missing(text: str) -> str:
    return f"<h1>Not here</h1>\n<p>{text}</p>"


def test_what_names_nothing_in_the_ledger_is_404_in_words(mine: tuple[World, Console]) -> None:
    _, console = mine
    ana = Reviewer(console, "ana")
    c = ana.client
    for path, said in (
        ("/effects/nope", "No such effect in this ledger."),
        ("/effects/~%25%25", "No such effect in this ledger."),
        ("/approvals/apv-nope", "No such approval packet in this ledger."),
        ("/receipts/nope", "No receipt for that id."),
        ("/operations/nope", "No such operation in this ledger."),
        ("/effects/nope/evidence/1/meta.json", "No such evidence file for this effect."),
        ("/static/other.js", "No such file."),
    ):
        answer = c.get(path)
        assert answer.status_code == 404, path
        assert _missing(said) in answer.text, path
        assert "<title>" in answer.text and 'data-testid="reviewer">ana<' in answer.text
    origin = {"origin": BASE}
    for path in ("/effects/nope/hold", "/effects/nope/release", "/effects/nope/verify"):
        answer = c.post(path, data={"csrf": ana.token}, headers=origin)
        assert answer.status_code == 404, path
        assert _missing("No such effect in this ledger.") in answer.text
    answer = c.post("/operations/nope/hold", data={"csrf": ana.token}, headers=origin)
    assert answer.status_code == 303 and answer.headers["location"] == "/operations/nope"
    said = FLASH.findall(c.get("/").text)
    assert len(said) == 1 and said[0].startswith("Nothing recorded: ")


def test_evidence_files_are_served_inline_by_name(mine: tuple[World, Console]) -> None:
    w, console = mine
    c = Reviewer(console, "ana").client
    key = w.keys["unknown"]
    seq = next(e.seq for e in w.ledger.events(key) if isinstance(e.data.get("evidence"), str))
    base = f"/effects/{ref_of(key)}/evidence/{seq}"
    for name, kind in (
        ("screenshot.png", "image/png"),
        ("page.html", "text/html; charset=utf-8"),
        ("meta.json", "application/json"),
        ("wire.json", "application/json"),
    ):
        answer = c.get(f"{base}/{name}")
        assert answer.status_code == 200, name
        assert answer.headers["content-type"] == kind
        assert answer.headers["content-disposition"] == f'inline; filename="{name}"'
        csp = answer.headers["content-security-policy"]
        assert csp == (
            HTML_CSP if name == "page.html" else answer.headers["content-security-policy"]
        )
        if name != "page.html":
            assert "sandbox" not in csp
        assert answer.headers["cache-control"] == "no-store"
    folder = w.root / "evidence" / "001-invoice-perform-error"
    assert c.get(f"{base}/screenshot.png").content == (folder / "screenshot.png").read_bytes()
    meta = c.get(f"{base}/meta.json").text
    assert "CANARY-META-6" not in meta and '"actor": "billing-bot"' in meta
    assert c.get(f"{base}/other.json").status_code == 404
    assert c.get(f"/effects/{ref_of(key)}/evidence/{seq - 1}/meta.json").status_code == 404


def test_answering_a_packet(mine: tuple[World, Console]) -> None:
    w, console = mine
    ana, carol = Reviewer(console, "ana"), Reviewer(console, "carol")
    packet = w.packets["pending-ana"]
    url = f"/approvals/{packet}"
    assert ana.post(url + "/answer", url, decision="maybe") == [
        "Nothing recorded: approve or deny."
    ]
    answer = carol.client.post(
        url + "/answer", data={"csrf": carol.token, "decision": "approve"}, headers={"origin": BASE}
    )
    assert answer.status_code == 403
    assert _missing("Only the packet&#39;s own user can answer it.") in answer.text
    said = ana.post(url + "/answer", url, decision="deny", note="  too dear  ")
    assert said == ["Answer accepted: the packet is denied."]
    got = w.ledger.approvals.get(packet)
    assert (got.decided_by, got.note) == ("ana", "too dear")
    again = ana.post(url + "/answer", url, decision="approve")
    assert again == [
        "Answer refused: the packet is denied (already denied: a later approve cannot change it)."
    ]
    history = [(e.type.value, e.data.get("via")) for e in w.ledger.approvals.history(packet)]
    assert history[1:] == [("approval_answered", "console"), ("approval_refused", "console")]
    carols = w.packets["pending-carol"]
    url = f"/approvals/{carols}"
    assert carol.post(url + "/answer", url, decision="approve", note=" ") == [
        "Answer accepted: the packet is approved."
    ]
    assert w.ledger.approvals.get(carols).note is None
    url = "/approvals/apv-none"
    answer = ana.client.post(
        url + "/answer", data={"csrf": ana.token, "decision": "approve"}, headers={"origin": BASE}
    )
    assert answer.status_code == 303 and answer.headers["location"] == url
    page = ana.client.get(url)
    assert page.status_code == 404
    said = FLASH.findall(page.text)
    assert len(said) == 1 and said[0].startswith("Nothing recorded: ")


def test_an_operation_is_held_decided_and_let_go(mine: tuple[World, Console]) -> None:
    w, console = mine
    ana, bo = Reviewer(console, "ana"), Reviewer(console, "bo")
    op = w.operations["review"]
    url = f"/operations/{ref_of(op)}"
    form = {"decision": "accept", "reason": "fine as it is", "attempt": "1"}
    for change, said in (
        ({"decision": "nope"}, "Nothing recorded: choose a decision."),
        ({"reason": " "}, "Nothing recorded: a decision needs its reason."),
        ({"attempt": "one"}, "Nothing recorded: the page did not say which attempt."),
        ({"attempt": ""}, "Nothing recorded: the page did not say which attempt."),
        ({"attempt": "1234567890"}, "Nothing recorded: the page did not say which attempt."),
        ({}, "Nothing recorded: hold the operation first (your hold ended, or is not here)."),
    ):
        assert ana.post(url + "/decide", url, **{**form, **change}) == [said], change
    holding = "You hold this operation: the decision is yours until the hold ends."
    assert ana.post(url + "/hold", url) == [holding]
    assert bo.post(url + "/hold", url) == ["Held by ana: you can read it, not decide it."]
    assert bo.post(url + "/release", url) == ["You let the operation go; anyone may take it."]
    assert console.holds.state(hold_key(op), "bo").holder == "ana"
    view = w.ledger.operations.get(op)
    said = ana.post(url + "/decide", url, **{**form, "attempt": str(view.attempt)})
    assert said == [f"Recorded by ana (accept as it stands): the operation is "
                    f"{w.ledger.operations.get(op).state.value}."]  # fmt: skip
    assert console.holds.state(hold_key(op), "ana").free
    (decision,) = w.ledger.operations.get(op).decisions
    assert (decision.by, decision.reason) == ("ana", "fine as it is")


def test_the_list_pages_read_their_query(mine: tuple[World, Console]) -> None:
    w, console = mine
    c = Reviewer(console, "ana").client
    refs = re.compile(r'href="/effects/([^"]+)"')
    books = c.get("/", params={"kind": "  book  "}).text
    assert refs.findall(books) == [ref_of(w.keys["gated"])]
    unknown = c.get("/", params={"status": "unknown"}).text
    assert refs.findall(unknown) == [ref_of(w.keys["unknown"])]
    everything = refs.findall(c.get("/").text)
    record = w.ledger.get(w.keys["unknown"])
    assert record is not None
    after = c.get("/", params={"after": f"{record.updated_at!r}:{record.key}"}).text
    assert refs.findall(after) == everything[everything.index(ref_of(record.key)) + 1 :]
    held = c.get("/approvals", params={"status": "held"}).text
    assert w.packets["approved"] in held and w.packets["pending-ana"] not in held
    pending = c.get("/approvals").text
    assert w.packets["pending-ana"] in pending and w.packets["approved"] not in pending
    receipts = c.get("/receipts").text
    assert "trip-77" in receipts
    assert "trip-77" not in c.get("/receipts", params={"before": "0"}).text
    packet = c.get(f"/approvals/{w.packets['pending-ana']}")
    assert packet.status_code == 200 and "buy dinner at Shop for 42 EUR" in packet.text
    op = c.get(f"/operations/{ref_of(w.operations['review'])}")
    assert op.status_code == 200 and "the undo of pay was refused: pay still stands" in op.text
    receipt = c.get("/receipts/trip-77")
    assert receipt.status_code == 200 and "Operation trip-77 is done." in receipt.text
