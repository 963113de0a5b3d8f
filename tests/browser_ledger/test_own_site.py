"""What a user writing effects for their own site needs, in real Chromium.

A login step of their own, a persistent profile, walls before the claim,
waiting within the settle window, and evidence beside the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actonce import EventType, HardStop, Ledger, Outcome, Policy, Status
from actonce.browser import Browser, as_effect
from actonce.sandbox import SEED_USERS, FaultRule

from .conftest import POST, ListingOnlyPost, SessionFactory, key, types

pytestmark = pytest.mark.browser


async def my_login(page: Any) -> None:
    """A user's own login step: whatever their site needs, on the async Page.

    (The test opened the login page first with ``goto_unchecked``.)
    """
    await page.locator("#username").fill("alice")
    await page.locator("#password").fill(SEED_USERS["alice"])
    await page.get_by_label("Keep me signed in").check()
    async with page.expect_navigation():
        await page.locator("form[data-testid=login-form] button").click()


def test_goto_the_login_page_is_a_hard_stop_but_sign_in_runs_your_step(
    browser: Browser, base: str
) -> None:
    session = browser.new_session(base, "alice", timeout=5.0)
    try:
        with pytest.raises(HardStop, match="login wall"):
            session.goto("/login")  # the checked goto: a login wall is a stop
        session.goto_unchecked("/login")
        session.sign_in(my_login)  # your step, then the checks on "/"
        assert session.whoami() == "alice"
    finally:
        session.close()


def test_sign_in_that_leaves_a_wall_is_a_hard_stop(browser: Browser, base: str) -> None:
    async def wrong_password(page: Any) -> None:
        await page.goto(base + "/login")
        await page.locator("#username").fill("alice")
        await page.locator("#password").fill("not-it")
        async with page.expect_navigation():
            await page.locator("form[data-testid=login-form] button").click()

    session = browser.new_session(base, "alice", timeout=5.0)
    try:
        with pytest.raises(HardStop):
            session.sign_in(wrong_password, check=None)
    finally:
        session.close()


def test_a_persistent_profile_keeps_the_session_without_the_ledger(
    base: str, tmp_path: Path
) -> None:
    profile = tmp_path / "alice-profile"
    with Browser(user_data_dir=profile) as first:
        session = first.new_session(base, "alice", timeout=5.0)
        session.goto_unchecked("/login")  # sign_in(step) may also navigate itself
        session.sign_in(my_login)
    with Browser(user_data_dir=profile) as again:  # a new Chromium process, same profile
        session = again.new_session(base, "alice", timeout=5.0)
        session.goto("/")  # checked: signed in as alice, no login wall
        assert session.whoami() == "alice"
    # The ledger never saw a cookie: the profile folder holds the session.
    assert any(profile.rglob("Cookies"))


def test_a_login_wall_before_the_claim_is_a_hard_stop(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    submits: Callable[[], list[str]],
) -> None:
    s = session("alice")
    faults(FaultRule("view.search", "session_expired", times=1))  # verification meets the wall
    result = ledger.run(as_effect(s.post_effect("Behind a wall"), key("wall"), policy=POST))
    assert result.outcome is Outcome.HARD_STOP and not result.performed
    assert "login wall" in (result.reason or "")
    assert ledger.get(key("wall").value) is None  # its claim was given back
    assert types(ledger, key("wall")) == [
        EventType.CLAIMED,
        EventType.RELEASED,
        EventType.HARD_STOP,
    ]
    assert submits() == []


def test_a_rate_limit_before_the_claim_defers(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    submits: Callable[[], list[str]],
) -> None:
    s = session("alice")
    faults(FaultRule("view.search", "rate_limit"))  # passes by itself: look again later
    result = ledger.run(as_effect(s.post_effect("Slow down"), key("429"), policy=POST))
    assert result.outcome is Outcome.DEFERRED and "rate-limit" in (result.reason or "")
    assert submits() == []


def test_waiting_for_settle_confirms_a_late_post(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    s = session("alice")
    faults(FaultRule("post.create", "late_index", seconds=2.5, times=1))
    quick = Policy(settle_seconds=6, verify_attempts=2, verify_backoff=0.2, verify_backoff_max=0.5)
    gave_up = ledger.run(
        as_effect(s.effect(ListingOnlyPost("alice", "Late one")), key("late1"), policy=quick)
    )
    assert gave_up.outcome is Outcome.NEEDS_REVIEW and gave_up.status is Status.UNKNOWN
    faults(FaultRule("post.create", "late_index", seconds=2.5, times=1))
    waiting = Policy(
        settle_seconds=6, verify_attempts=2, verify_backoff=0.2, verify_backoff_max=0.5,
        wait_for_settle=True,
    )  # fmt: skip
    result = ledger.run(
        as_effect(s.effect(ListingOnlyPost("alice", "Late two")), key("late2"), policy=waiting)
    )
    assert result.outcome is Outcome.COMPLETED and result.result_ref
    assert truth()["totals"]["posts"] == 2


def test_evidence_goes_beside_the_ledger_by_default(
    browser: Browser, base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACTONCE_EVIDENCE_DIR", raising=False)
    monkeypatch.setenv("ACTONCE_LEDGER", f"sqlite:///{tmp_path / 'agents' / 'ledger.db'}")
    session = browser.new_session(base, "alice", timeout=5.0)
    try:
        session.login(SEED_USERS["alice"])
        folder = Path(session.capture_evidence("look"))
    finally:
        session.close()
    root = tmp_path / "agents" / "actonce-evidence"
    assert folder.parent.parent == root and "-alice-" in folder.parent.name
    assert (folder / "page.html").exists()
