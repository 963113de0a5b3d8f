"""Pins for the browser area's mutants its tests let through (issue 23, item 2).

``python tests/mutants/areas.py --area browser --sample 40 --seed 1`` showed
the booking adapters (``_booking.py``, ``_booking_steps.py``) reached by no
test of the area (their tests are the Chromium-heavy ``tests/browser_ledger``)
and a few browser behaviours unstated: the async session's thread parent, a
reply's parent URL with trailing junk, ``_is_root`` on a system without
``geteuid``. The booking pins drive the site effects one at a time in real
Chromium against the sandbox's booking world (reset per test by ``base``).
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    EffectRecord,
    Intent,
    Ledger,
    Policy,
    Registry,
    Status,
    UsageError,
    open_ledger,
)
from actonce.browser import (
    BookEffect,
    Browser,
    BrowserSession,
    HoldEffect,
    Listings,
    NoteEffect,
    OutcomeUnknown,
    PayEffect,
    PostEffect,
    Trip,
    VoidPaymentEffect,
    booking_steps,
    declared_requests,
    ensure_chromium,
)
from actonce.browser import _install as install
from actonce.browser._booking import trip_payments
from actonce.browser._firewall import firewall_of, refusal_page
from actonce.browser._install import _is_root
from actonce.browser._session import AsyncBrowserSession
from actonce.sandbox import SandboxServer
from actonce.testing import FrozenClock, MemoryStore

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser

#: harbor-double is 120.00 a night: two nights, one room.
TOTAL = 24000


def _trip(ceiling: int = TOTAL) -> Trip:
    return Trip("pin-trip@v1", "harbor-double", "2030-05-01", 2, 1, ceiling, "alice@example.com")


def _payments(session: BrowserSession, trip: Trip) -> list[dict[str, Any]]:
    async def read(s: AsyncBrowserSession) -> list[dict[str, Any]]:
        return await trip_payments(s, trip)

    return session.run(read)


def _hold(session: BrowserSession, trip: Trip) -> Confirmed:
    hold = session.effect(HoldEffect("alice", trip, "pin-hold-key"))
    hold.perform()
    verdict = hold.verify()
    assert isinstance(verdict, Confirmed) and verdict.count == 1, (
        f"a hold just made should be verified once from the provider's lookup, got {verdict!r}"
    )
    return verdict


def test_a_hold_just_made_is_verified_from_the_providers_lookup(
    new_session: SessionFactory, base: str
) -> None:
    session = new_session("alice")
    trip = _trip()
    assert session.effect(HoldEffect("alice", trip)).verify() == Absent(), (
        "no hold yet: the lookup answers an empty list, which is absent"
    )
    verdict = _hold(session, trip)
    assert verdict.result_ref == f"{base}/book/holds/1", verdict


def test_a_payment_of_exactly_the_ceiling_is_authorized_and_voided_through_the_void_form(
    new_session: SessionFactory,
) -> None:
    session = new_session("alice")
    trip = _trip(ceiling=TOTAL)  # the hold's total is the ceiling itself: within it
    _hold(session, trip)
    session.effect(PayEffect("alice", trip, "pin-pay-key")).perform()
    assert [p["status"] for p in _payments(session, trip)] == ["authorized"], (
        "a total equal to the approved ceiling should be paid, not refused at the read-back"
    )
    void = session.effect(VoidPaymentEffect("alice", trip))
    void.perform()  # an authorization (not captured) is ended by "Void authorization"
    assert [p["status"] for p in _payments(session, trip)] == ["voided"], (
        "the void should read the void form's payment id and click it"
    )
    assert isinstance(void.verify(), Confirmed)


def test_a_booking_reads_back_its_form_and_is_confirmed(new_session: SessionFactory) -> None:
    session = new_session("alice")
    trip = _trip()
    _hold(session, trip)
    session.effect(PayEffect("alice", trip, "pin-pay-key")).perform()
    book = session.effect(BookEffect("alice", trip, "pin-book-key"))
    book.perform()  # the read-back must find the book form's payment, ref and key
    verdict = book.verify()
    assert isinstance(verdict, Confirmed) and verdict.count == 1, verdict


def test_the_pay_steps_refresher_reads_the_live_holds_total_or_says_none_is_live(
    new_session: SessionFactory,
) -> None:
    session = new_session("alice")
    trip = _trip()
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    intent = ledger.intents.put(Intent("pin-trip", "booking", user="alice"))
    steps = booking_steps(session, trip, intent, tenant="t", approval="packet-1")
    refresh = steps[1].effect.refresh
    assert refresh is not None, "a pay step with an approval refreshes its total"
    assert refresh() == {"hold": "none live"}, "no hold yet: nothing to price"
    _hold(session, trip)
    assert refresh() == {"total": "240.00"}, "the live hold's amount, as money"


def test_the_async_sessions_next_thread_part_replies_to_the_last_verified_part(
    new_session: SessionFactory, base: str
) -> None:
    session = new_session("alice", login=False)

    async def parent(s: AsyncBrowserSession) -> Any:
        part = s.thread_effect(["one", "two"], [f"{base}/posts/7"])
        assert part is not None
        return part.payload["parent"]

    assert session.run(parent) == "/posts/7", "part two should reply to part one's URL"


def test_a_reply_whose_parent_url_ends_in_junk_is_refused_not_trimmed_to_another_post() -> None:
    with pytest.raises(UsageError, match="parent must be a post URL"):
        PostEffect("alice", "hi", parent="/posts/7X")
    assert PostEffect("alice", "hi", parent="http://h/posts/7/").parent == "/posts/7"


def test_a_system_without_geteuid_is_not_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "geteuid", raising=False)
    assert _is_root() is False, "no geteuid (Windows): not root, and no AttributeError"


def test_the_sandbox_still_prices_harbor_double_as_these_pins_assume(
    server: SandboxServer,
) -> None:
    product = server.sandbox.booking.db.product("harbor-double")
    assert product is not None and product.price * 2 == TOTAL, product


# --- seed 2 ---------------------------------------------------------------------------------


def test_a_trip_with_a_bad_date_says_what_the_date_must_look_like() -> None:
    with pytest.raises(UsageError, match=r"a trip's date is YYYY-MM-DD, not '2030-5-1'"):
        Trip("t@v1", "harbor-double", "2030-5-1")


def test_the_firewalls_refusal_page_is_titled_as_the_firewalls() -> None:
    page = refusal_page("POST", "http://h/compose", "outside_effect", "outside any effect")
    assert "<title>Refused by the write firewall</title>" in page, page


def test_a_second_firewall_on_one_context_is_refused_in_words(browser: Browser, base: str) -> None:
    with open_ledger("memory://") as ledger:
        session = browser.new_session(base, "alice", ledger=ledger)
        try:
            wall = firewall_of(session.async_session.page.context)
            assert wall is not None, "a session with a ledger has its firewall"

            async def again(s: AsyncBrowserSession) -> None:
                await wall.install()

            with pytest.raises(UsageError, match=r"^this browser context has a firewall already$"):
                session.run(again)
        finally:
            session.close()


def _post_record(key: str = "post-1") -> EffectRecord:
    payload = {"author": "alice", "text": "never posted", "media": None, "parent": None}
    return EffectRecord(key=key, kind="post", status=Status.UNKNOWN, fence=1, owner="",
                        lease_expires_at=0.0, payload=json.dumps(payload),
                        payload_hash="h")  # fmt: skip


def _post_of(record: EffectRecord) -> PostEffect:
    return PostEffect(record.data["author"], record.data["text"])


def test_listings_register_their_verifier_with_the_policy_given(
    new_session: SessionFactory,
) -> None:
    session = new_session("alice", login=False)
    registry, policy = Registry(), Policy(settle_seconds=7.0)
    Listings(session, FrozenClock()).register(registry, "post", _post_of, policy=policy)
    entry = registry.get("post")
    assert entry is not None and entry.policy is policy, "the kind's policy is the one given"


def test_listings_on_an_async_session_make_async_verifiers(new_session: SessionFactory) -> None:
    session = new_session("alice")

    async def verdict(s: AsyncBrowserSession) -> Any:
        registry = Registry()
        Listings(s, FrozenClock()).register(registry, "post", _post_of)
        entry = registry.get("post")
        assert entry is not None
        found = entry.verify(_post_record())
        assert inspect.isawaitable(found), "an async session's verifier is a coroutine function"
        return await found

    assert session.run(verdict) == Absent(), "no such post: the async verifier says absent"


def test_a_persistent_profile_lives_in_the_folder_given(tmp_path: Any) -> None:
    profile = tmp_path / "agents" / "alice" / "profile"  # its parents are made too
    with Browser(user_data_dir=str(profile)):
        pass
    assert any(profile.iterdir()), "Chromium should keep its profile in user_data_dir"


def test_a_note_the_page_says_failed_names_the_pages_words(new_session: SessionFactory) -> None:
    session = new_session("alice")
    with pytest.raises(OutcomeUnknown) as caught:  # the sandbox refuses an empty note (422)
        session.effect(NoteEffect("alice", "")).perform()
    chain: list[str] = []
    exc: BaseException | None = caught.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__cause__
    assert any("Could not save: /notes answered 422" in words for words in chain), chain


def test_one_string_given_as_the_requests_is_refused_in_words() -> None:
    with pytest.raises(UsageError, match=r"^requests is a sequence of 'METHOD /path' values, not"):
        declared_requests("POST /notes")


def test_an_install_command_past_its_time_is_given_up_on() -> None:
    hung = "import time; time.sleep(30)"  # sync-ok: the hung command itself, in its own process
    why = install._run([sys.executable, "-c", hung], 0.2)
    assert why == "gave up after 0 s", f"a hung download must be cut off, got {why!r}"


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)


def test_a_chromium_from_apt_get_says_it_came_from_apt_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.which("chromium") or shutil.which("chromium-browser")
    if real is None:
        pytest.skip("no Chromium to link as the 'installed' one")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _script(bin_ / "playwright", 'echo "Error: Download failure" >&2\nexit 1\n')
    ln = shutil.which("ln") or "/bin/ln"
    _script(
        bin_ / "apt-get",
        f'case "$*" in *install*chromium*) {ln} -sf {real} {bin_}/chromium ;; esac\n',
    )
    monkeypatch.setenv("ACTONCE_CHROMIUM", "")  # restored at teardown: ensure_chromium exports
    monkeypatch.delenv("ACTONCE_CHROMIUM")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "pw-empty"))
    monkeypatch.setenv("PATH", str(bin_))
    monkeypatch.setattr(install, "_is_root", lambda: True)
    got = ensure_chromium(lambda line: None)
    assert (got.how, got.path) == ("apt-get", str(bin_ / "chromium")), got


def test_a_sessions_timeout_is_the_one_given_and_its_page_the_usual_size(
    browser: Browser, base: str
) -> None:
    session = browser.new_session(base, "alice", timeout=4.5)
    try:
        inner = session.async_session
        assert inner.timeout == 4.5, "the sync session should pass its timeout on"
        assert inner.page.viewport_size == {"width": 1100, "height": 800}, (
            "every session's page is 1100 x 800 (what the evidence screenshots show)"
        )
    finally:
        session.close()


def test_a_sync_call_from_inside_the_sessions_own_loop_is_refused_in_words(
    new_session: SessionFactory,
) -> None:
    session = new_session("alice", login=False)

    async def inside(s: AsyncBrowserSession) -> None:
        session.run(inside)  # the sync API, from its own event loop: would deadlock

    with pytest.raises(RuntimeError, match=r"^a sync browser call from inside its own event loop$"):
        session.run(inside)
