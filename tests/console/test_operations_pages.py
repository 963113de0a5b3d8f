"""Operations on the console, and the small defects found on the way (issue 20, item 7).

Over HTTP against a real console on a real SQLite ledger (``world.py``: a
booking stopped at the void its provider refused, 240.00 EUR held).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from actonce import EventType, OperationState, open_ledger
from actonce.console import ConsoleServer, Reviewers, Settings, hash_password, main, ref_of
from actonce.console._guard import safe_next
from actonce.console._sessions import MAX_SECONDS, Sessions

from .conftest import sign_in
from .test_pages import post, text_of
from .world import World, invoice

SignIn = Callable[..., tuple[httpx.Client, str]]
OP = "booking:trip-b3@v1"
#: A class attribute holding a space: two classes where one was meant.
SPACED_CLASS = re.compile(r'class="badge [^"]*\s[^"]*"')


def test_the_queue_shows_operations_in_review_beside_effects(signed_in: SignIn) -> None:
    client, _ = signed_in("ana")
    page = client.get("/").text
    words = text_of(page)
    assert "operations in review 1" in words
    table = page.split('data-testid="operations"', 1)[1].split("</table>", 1)[0]
    row = text_of(table)
    for part in (OP, "the undo of pay", "240.00 EUR held", "hold (obj-", "pay (obj-",
                 "book", "the undo of pay was refused: pay still stands"):  # fmt: skip
        assert part in row, row
    assert f'href="/operations/{ref_of(OP)}"' in table
    assert "Effects" in words  # the effects' queue follows, as before


def test_an_operations_page_answers_did_it_happen_how_we_know_what_next_who_acts(
    signed_in: SignIn,
) -> None:
    client, _ = signed_in("ana")
    page = client.get(f"/operations/{ref_of(OP)}").text
    words = text_of(page)
    for part in (
        f"Did {OP} go through?",
        "Did it happen? Your booking with Harbor Hotel (double room, 2030-05-01) is stopped",
        "Charged 240.00 EUR.",
        "How we know verification found hold (attempt 1)",
        "What happens next A person checks",
        "Who acts A person decides about the undo of pay (attempt 1)",
        "stopped at the undo of pay · attempt 1",
    ):
        assert part in words, (part, words)
    assert "Hold to decide" in words  # the decisions come after the hold, like an effect's
    assert not SPACED_CLASS.search(page), SPACED_CLASS.findall(page)
    assert client.get("/operations/nope").status_code == 404


def test_a_reviewer_decides_under_a_hold_once_and_the_next_pass_carries_it_out(
    fresh: World,
) -> None:
    with ConsoleServer(fresh.ledger, fresh.reviewers(), Settings()) as server:
        client, token = sign_in(server.url, "ana")
        url = f"/operations/{ref_of(OP)}"
        unheld = post(client, f"{url}/decide", token, decision="undone_by_hand", attempt="1",
                      reason="voided at the bank")  # fmt: skip
        assert "Nothing recorded: hold the operation first" in text_of(unheld.text)
        held = post(client, f"{url}/hold", token)
        words = text_of(held.text)
        assert "You hold this operation" in words
        for label in ("Retry the undo", "Record it undone by hand", "Accept as it stands",
                      "Abandon"):  # fmt: skip
            assert label in words
        assert "runs the undo of pay again (attempt 2)" in words
        done = post(client, f"{url}/decide", token, decision="undone_by_hand", attempt="1",
                    reason="voided at the bank by phone")  # fmt: skip
        words = text_of(done.text)
        assert "Recorded by ana (record it undone by hand)" in words
        assert "Record it undone by hand pay, attempt 1 ana voided at the bank by phone" in words
        # The same decision again (a double submit): the existing state, nothing twice.
        post(client, f"{url}/hold", token)
        post(client, f"{url}/decide", token, decision="undone_by_hand", attempt="1", reason="x")
        decided = [e for e in fresh.ledger.events(f"operation:{OP}")
                   if e.type is EventType.OPERATION_DECIDED]  # fmt: skip
        assert len(decided) == 1 and decided[0].data["by"] == "ana"
        # The console records; the operation's own next pass (with its callables) acts.
        assert fresh.runs[OP].run().state is OperationState.COMPENSATED
        receipt = client.get(f"/receipts/{ref_of(OP)}").text
        assert "then undone by hand" in text_of(receipt)
        assert '<pre class="receipt-text"' not in receipt  # words for a person, not a dump
        # The compensated payment is not a green "confirmed" at the top of its page.
        pay = client.get(f"/effects/{ref_of(fresh.keys['pay'])}").text
        status = re.search(r'<span class="badge ([^"]+)" data-testid="status">([^<]+)<', pay)
        assert status is not None and status.groups() == ("s-undone", "confirmed, then undone")
        client.close()


def test_the_effect_page_names_only_itself_this_effect_and_says_how_a_settled_one_ended(
    world: World, signed_in: SignIn
) -> None:
    client, _ = signed_in("ana")
    page = client.get(f"/effects/{ref_of(world.keys['pay'])}").text
    steps = text_of(page.split('data-testid="operation"', 1)[1])
    assert steps.count("(this effect)") == 1 and "pay (this effect)" in steps
    assert "notify · retriable · not started" in steps  # no record: plain, no link, no "this"
    assert not SPACED_CLASS.search(page), SPACED_CLASS.findall(page)
    assert "How it ended" in text_of(page) and "Why it is open" not in text_of(page)
    open_one = text_of(client.get(f"/effects/{ref_of(world.keys['unknown'])}").text)
    assert "Why it is open" in open_one


def test_a_post_with_a_valid_token_and_no_origin_is_refused(
    server: ConsoleServer, world: World
) -> None:
    client, token = sign_in(server.url, "ana")
    try:
        url = f"/effects/{ref_of(world.keys['needs_review'])}/release"
        assert client.post(url, data={"csrf": token}).status_code == 403
        ok = client.post(url, data={"csrf": token}, headers={"origin": server.url})
        assert ok.status_code == 303  # the control: the same request with its Origin
    finally:
        client.close()


def test_a_payload_holding_a_script_is_escaped_on_the_effect_page(fresh: World) -> None:
    evil = invoice(fresh.provider, "<script>alert('pwned')</script>",
                   extra={"note": "<img src=x onerror=alert(1)>"})  # fmt: skip
    fresh.ledger.run(evil)
    with ConsoleServer(fresh.ledger, fresh.reviewers(), Settings()) as server:
        client, _ = sign_in(server.url, "ana")
        page = client.get(f"/effects/{ref_of(str(evil.key))}").text
        client.close()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(" in page and "&lt;img src=x onerror" in page


def test_safe_next_keeps_only_local_paths() -> None:
    assert safe_next("//evil.example/x") == "/"
    for target in ("https://evil.example/", "/\\evil.example", "evil", "", None):
        assert safe_next(target) == "/"
    assert safe_next("/effects/ab12?x=1") == "/effects/ab12?x=1"


def test_a_session_used_every_hour_still_ends_at_its_maximum_lifetime() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    s = sessions.start("ana")
    hours = 0
    while sessions.get(s.id) is not None:
        hours += 1
        now[0] += 3600  # well inside the idle limit each time
    assert hours == int(MAX_SECONDS // 3600) == 24


def test_wrong_passwords_lock_a_name_from_that_client_only() -> None:
    reviewers = Reviewers({"ana": hash_password("ana-password")}, clock=lambda: 0.0)
    for _ in range(5):
        assert not reviewers.check("ana", "wrong", "203.0.113.9")
    assert not reviewers.check("ana", "ana-password", "203.0.113.9")  # locked from there
    assert reviewers.check("ana", "ana-password", "127.0.0.1")  # not from anywhere else


def test_serving_other_machines_needs_secure_cookies_and_a_private_reviewers_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "actonce.db")
    open_ledger(db, create=True).close()
    code = main(["--ledger", db, "--host", "0.0.0.0", "--allow-remote", "--port", "0"])
    err = capsys.readouterr().err
    assert code == 1 and "--secure-cookies" in err and err.count("\n") == 1
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-password\n"))
    assert main(["add-reviewer", "ana", "--ledger", db, "--password-stdin"]) == 0
    reviewers = Path(db + ".reviewers")
    reviewers.chmod(0o644)
    capsys.readouterr()
    assert main(["--ledger", db, "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "can be read or written by other users (mode 644)" in err and "chmod 600" in err
