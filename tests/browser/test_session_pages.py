"""A session's checks on real pages, word for word, in Chromium (issue 23).

What ``goto`` makes of each status, which screen ``blocking_screen`` names,
``login``/``sign_in``, and a perform that stops before its click (two
controls, a preparation that failed or hit a wall) or after it (a wall
answered the submit): the exact error kind and words, since a runner and a
human read both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from actonce import HardStop, UsageError
from actonce.browser import (
    Browser,
    BrowserError,
    BrowserSession,
    NotPerformed,
    PageUnavailable,
    RateLimited,
    SiteEffect,
    StoppedAfterClick,
    StoppedBeforeClick,
)
from actonce.browser._screens import CONFIGURE
from actonce.browser._session import AsyncBrowserSession
from actonce.sandbox import SEED_USERS

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser


def _blocking(session: BrowserSession, path: str) -> str | None:
    async def read(s: AsyncBrowserSession) -> str | None:
        await s.goto_unchecked(path)
        return await s.blocking_screen()

    return session.run(read)


def test_what_goto_makes_of_each_answer(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session = new_session("alice")
    session.goto("/compose")  # a page of the origin, signed in as alice: no doubt
    with pytest.raises(HardStop) as stop:
        session.goto("/posts/999?x=1")
    assert stop.value.reason == "target /posts/999 does not resolve (HTTP 404)"
    set_faults({"action": "view.compose", "fault": "error_before_commit", "times": 1})
    with pytest.raises(PageUnavailable, match=r"^/compose answered HTTP 500$"):
        session.goto("/compose")
    set_faults({"action": "view.compose", "fault": "rate_limit", "times": 1})
    with pytest.raises(RateLimited) as limited:
        session.goto("/compose")
    assert limited.value.reason == "rate-limit screen (HTTP 429)"
    set_faults({"action": "view.compose", "fault": "captcha", "times": 1})
    with pytest.raises(HardStop) as captcha:
        session.goto("/compose")
    assert not isinstance(captcha.value, RateLimited)
    assert captcha.value.reason == "CAPTCHA screen is visible"
    set_faults({"action": "view.compose", "fault": "session_expired", "times": 1})
    with pytest.raises(HardStop, match=r"^login wall is visible$"):
        session.goto("/compose")


def test_which_screen_blocks_a_page(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session = new_session("alice")
    assert _blocking(session, "/compose") is None
    set_faults({"action": "view.compose", "fault": "captcha", "times": 1})
    assert _blocking(session, "/compose") == "CAPTCHA screen is visible"
    set_faults({"action": "view.compose", "fault": "rate_limit", "times": 1})
    assert _blocking(session, "/compose") == "rate-limit screen is visible"
    bob = new_session("alice", as_user="bob")
    assert _blocking(bob, "/compose") == (
        "signed in as 'bob', not 'alice' (read from the textContent of "
        f"'[data-testid=\"whoami\"]'; {CONFIGURE} if that is not where it shows the user)"
    )
    signed_out = new_session("alice", login=False)
    assert _blocking(signed_out, "/login") == "login wall is visible"
    assert signed_out.whoami() == "", "the marker is there, empty: no one signed in"


def test_a_429_without_a_screen_is_still_a_rate_limit(new_session: SessionFactory) -> None:
    session = new_session("alice")

    async def after_429(s: AsyncBrowserSession) -> tuple[str | None, str]:
        await s.goto_unchecked("/compose")
        s._last_status = 429  # the status of the last page load, as goto records it
        why = await s.blocking_screen()
        try:
            await s.check_page()
        except RateLimited as exc:
            return why, exc.reason
        return why, "no stop"

    assert session.run(after_429) == (
        "rate-limit screen (HTTP 429)",
        "rate-limit screen (HTTP 429)",
    )


def test_login_signs_in_and_a_wrong_password_is_a_hard_stop(new_session: SessionFactory) -> None:
    session = new_session("alice", login=False)
    session.login(SEED_USERS["alice"], remember=True)
    assert session.whoami() == "alice"

    async def expiries(s: AsyncBrowserSession) -> list[float]:
        return [c.get("expires", -1) for c in await s.page.context.cookies()]

    assert all(e > 0 for e in session.run(expiries)), "kept signed in: a persistent cookie"
    once = new_session("alice", login=False)
    once.login(SEED_USERS["alice"])
    assert all(e == -1 for e in once.run(expiries)), "by default a session cookie"
    session.preflight()
    other = new_session("alice", login=False)
    with pytest.raises(HardStop, match=r"^login wall is visible$"):
        other.login("not-the-password")


def test_sign_in_runs_the_step_then_checks_where_it_says(new_session: SessionFactory) -> None:
    session = new_session("alice", login=False)

    async def broken(page: Any) -> None:
        await page.locator("#no-such-field").fill("x", timeout=50)

    with pytest.raises(PageUnavailable) as caught:
        session.sign_in(broken)
    assert str(caught.value).startswith("login failed: TimeoutError: ")

    async def step(page: Any) -> None:
        await page.goto(session.async_session.url("/login"))
        await page.get_by_label("Username").fill("alice")
        await page.get_by_label("Password").fill(SEED_USERS["alice"])
        async with page.expect_navigation():
            await page.get_by_role("button", name="Sign in").click()

    session.sign_in(step, check="/invoices")

    async def where(s: AsyncBrowserSession) -> str:
        return s.page.url

    assert session.run(where).endswith("/invoices")


def test_an_origin_that_does_not_answer_is_unavailable(browser: Browser, tmp_path: Any) -> None:
    session = browser.new_session("http://127.0.0.1:9", "alice", timeout=5.0, evidence_dir=tmp_path)
    try:
        with pytest.raises(PageUnavailable) as caught:
            session.goto("/x?token=1")
        assert str(caught.value).startswith("could not load /x: Error: ")
        with pytest.raises(PageUnavailable) as unchecked:
            session.goto_unchecked("/x")
        assert str(unchecked.value).startswith("Error: ")
    finally:
        session.close()


class _Probe(SiteEffect):
    """A perform whose steps go where they are told."""

    kind = "probe"

    def __init__(self, path: str = "/", control: str = "a", fill: str | None = None) -> None:
        self.path, self.selector, self.fill = path, control, fill

    def payload(self) -> dict[str, Any]:
        return {}

    async def prepare(self, session: AsyncBrowserSession) -> None:
        await session.goto(self.path)
        if self.fill is not None:
            await session.page.locator(self.fill).fill("x", timeout=50)

    def control(self, session: AsyncBrowserSession) -> Any:
        return session.page.locator(self.selector)

    async def verify(self, session: AsyncBrowserSession) -> Any:
        raise AssertionError("not asked")


def test_a_perform_stops_before_its_click_in_words(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session = new_session("alice")
    with pytest.raises(StoppedBeforeClick) as many:
        session.effect(_Probe("/compose", control="a")).perform()
    assert many.value.reason.endswith(" controls match the probe control; need exactly one")
    assert not many.value.reason.startswith(("0 ", "1 "))
    with pytest.raises(StoppedBeforeClick, match=r"^0 controls match the probe control; need"):
        session.effect(_Probe("/compose", control="#nothing-here")).perform()
    with pytest.raises(NotPerformed) as failed:
        session.effect(_Probe("/compose", fill="#no-such-field")).perform()
    assert str(failed.value).startswith("preparation failed: TimeoutError: ")
    set_faults({"action": "view.compose", "fault": "error_before_commit", "times": 1})
    with pytest.raises(NotPerformed, match=r"^preparation failed: /compose answered HTTP 500$"):
        session.effect(_Probe("/compose")).perform()
    with pytest.raises(StoppedBeforeClick) as missing:
        session.effect(_Probe("/posts/999")).perform()
    assert missing.value.reason == "target /posts/999 does not resolve (HTTP 404)"


def test_a_wall_that_answers_the_submit_stops_the_run(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session = new_session("alice", confirm_timeout=2.0)
    set_faults({"action": "invoice.create", "fault": "session_expired", "times": 1})
    with pytest.raises(StoppedAfterClick) as caught:
        session.invoice_effect("ORDER-WALL", 5).perform()
    assert caught.value.reason.startswith(
        "login wall is visible answered the submit; invoice: no confirmation after the click: "
    )
    assert caught.value.details["sent"] == 1  # type: ignore[attr-defined]


def test_the_firewall_is_on_for_a_ledgers_session_unless_turned_off(
    browser: Browser, base: str
) -> None:
    from actonce import RequestPattern, open_ledger

    login = RequestPattern("POST", "/login", origin=base)
    with pytest.raises(UsageError, match=r"^allow= is the firewall's allowlist: the firewall is"):
        browser.new_session(base, "alice", allow=[login])
    with open_ledger("memory://") as ledger:
        made = [
            browser.new_session(base, "alice", ledger=ledger, allow=[login]),
            browser.new_session(base, "alice", ledger=ledger, firewall=False),
            browser.new_session(base, "alice", firewall=True),
            browser.new_session(base, "alice"),
        ]
        try:
            on, off, bare, plain = (s.firewall for s in made)
            assert on is not None and (on.actor, on.allow, on.problems) == ("alice", (login,), [])
            assert off is None and plain is None
            assert bare is not None and bare.allow == () and bare._inner._recorder is None
            assert on._inner._recorder is not None, "refusals go to the ledger"
        finally:
            for s in made:
                s.close()
        assert all(s.async_session.page.is_closed() for s in made), "each closed its context"
        assert all(s.async_session._owned is None for s in made)


def test_a_chromium_that_will_not_start_says_which_and_leaves_no_thread() -> None:
    import threading

    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(BrowserError) as caught:
        Browser(executable_path="/bin/true")
    assert str(caught.value).startswith("could not launch /bin/true: ")
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert [t.name for t in left if t.name == "actonce-browser"] == [], "its loop thread ended"


def _loop_threads() -> set[int | None]:
    import threading

    return {t.ident for t in threading.enumerate() if t.name == "actonce-browser"}


def test_launching_a_session_for_a_bad_origin_closes_its_private_browser() -> None:
    before = _loop_threads()
    with pytest.raises(UsageError, match=r"^origin must be http\(s\)://host\[:port\], not 'x'$"):
        BrowserSession.launch("x", "alice")
    assert _loop_threads() <= before, "the private Chromium and its loop thread are closed"


def test_a_launched_session_owns_its_browser(base: str, tmp_path: Any) -> None:
    with BrowserSession.launch(base, "alice", evidence_dir=tmp_path, timeout=20.0) as session:
        owner = session._owner
        assert owner is not None and session.async_session.timeout == 20.0
        session.login(SEED_USERS["alice"])
        assert session.whoami() == "alice"
    assert session._owner is None and owner._closed, "closing the session closed its Chromium"


def test_a_browsers_sessions_keep_evidence_under_its_root(base: str, tmp_path: Any) -> None:
    with Browser(evidence_root=tmp_path / "root") as browser:
        session = browser.new_session(base, "alice")
        try:
            folder = session.evidence_dir
            assert folder.parent == tmp_path / "root" and "alice" in folder.name
        finally:
            session.close()
        browser.close()  # a second close (the with's) does nothing


class _Checked(_Probe):
    """A precondition that answers as told, or fails on the page."""

    def __init__(self, answer: bool | None) -> None:
        super().__init__()
        self.answer = answer

    async def precondition(self, session: AsyncBrowserSession) -> bool:
        await session.goto("/compose")
        if self.answer is None:
            await session.page.locator("#no-such-thing").click(timeout=50)
        return bool(self.answer)


def test_a_precondition_is_the_sites_answer_after_a_preflight(
    new_session: SessionFactory,
) -> None:
    session = new_session("alice")
    assert session.effect(_Checked(True)).precondition() is True
    assert session.effect(_Checked(False)).precondition() is False
    with pytest.raises(PageUnavailable) as caught:
        session.effect(_Checked(None)).precondition()
    assert str(caught.value).startswith("TimeoutError: ")
    held = [True]
    leased = new_session("alice", lease_ok=lambda: held[0])
    held[0] = False
    with pytest.raises(HardStop, match=r"^the worker no longer holds its lease$"):
        leased.effect(_Checked(True)).precondition()


def test_a_persistent_profile_keeps_its_sign_in_across_launches(base: str, tmp_path: Any) -> None:
    profile = tmp_path / "alice-profile"
    with Browser(user_data_dir=profile) as first:
        session = first.new_session(base, "alice", evidence_dir=tmp_path / "e")
        session.login(SEED_USERS["alice"], remember=True)
        page = session.async_session.page
        session.close()
        assert page.is_closed(), "a profile's session closes its own page"
    with Browser(user_data_dir=profile) as again:  # the folder is there now: reused
        session = again.new_session(base, "alice", evidence_dir=tmp_path / "e")
        session.goto("/")
        assert session.whoami() == "alice", "signed in once, still signed in"
        page = session.async_session.page
        assert page.viewport_size == {"width": 1100, "height": 800}, "as a fresh context's"
        session.close()
