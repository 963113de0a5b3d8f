"""Preflight hard stops and read-back: nothing is clicked when in doubt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from actonce import HardStop
from actonce.browser import AsyncBrowserSession, BrowserSession, ReadBackMismatch, Screens
from actonce.sandbox import SEED_USERS, SandboxServer

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser


def creates(base: str) -> list[dict[str, Any]]:
    log: list[dict[str, Any]] = httpx.get(base + "/admin/requests").json()["requests"]
    return [r for r in log if r["method"] == "POST" and r["action"] != "login"]


def test_login_wall_is_a_hard_stop(new_session: SessionFactory, base: str) -> None:
    session = new_session("alice", login=False)
    effect = session.post_effect("Hello")
    with pytest.raises(HardStop, match=r"login wall|identity"):
        effect.perform()
    assert creates(base) == []


def test_wrong_identity_is_a_hard_stop(new_session: SessionFactory, base: str) -> None:
    session = new_session("alice", as_user="bob")
    with pytest.raises(HardStop, match="signed in as 'bob', not 'alice'") as info:
        session.invoice_effect("ORDER-1", 10).perform()
    # The message says where the value was read and what to configure.
    assert """textContent of '[data-testid="whoami"]'""" in info.value.reason
    assert "Screens(whoami=..., whoami_attribute=...)" in info.value.reason
    with pytest.raises(HardStop):
        session.preflight()
    assert creates(base) == []


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("captcha", "CAPTCHA"),
        ("rate_limit", "rate-limit"),
        ("session_expired", "login wall"),
    ],
)
def test_blocking_screens_are_hard_stops(
    new_session: SessionFactory, base: str, set_faults: Callable[..., None], fault: str, reason: str
) -> None:
    session = new_session("alice")
    set_faults({"action": "view.compose", "fault": fault, "times": 1})
    with pytest.raises(HardStop, match=reason):
        session.post_effect("Hello").perform()
    assert creates(base) == []


def test_lost_lease_is_a_hard_stop(new_session: SessionFactory, base: str) -> None:
    held = [True]
    session = new_session("alice", lease_ok=lambda: held[0])
    effect = session.post_effect("Hello")
    assert effect.precondition() is True
    held[0] = False
    with pytest.raises(HardStop, match="lease"):
        effect.perform()
    assert creates(base) == []


def test_missing_reply_target_is_a_hard_stop(new_session: SessionFactory, base: str) -> None:
    session = new_session("alice")
    with pytest.raises(HardStop, match="does not resolve"):
        session.post_effect("reply", parent=base + "/posts/404").precondition()


def test_editor_append_is_caught_by_read_back(
    new_session: SessionFactory,
    base: str,
    set_faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    session = new_session("alice")
    set_faults({"action": "view.compose", "fault": "editor_append", "draft": "Old draft. "})
    effect = session.post_effect("Fresh text")
    with pytest.raises(ReadBackMismatch) as info:
        effect.perform()
    assert info.value.field == "text"
    assert info.value.actual == "Old draft. Fresh text"
    assert isinstance(info.value, HardStop)
    assert truth()["totals"]["posts"] == 0
    assert creates(base) == []


def test_perform_runs_at_most_once(
    new_session: SessionFactory, truth: Callable[[], dict[str, Any]]
) -> None:
    session = new_session("alice")
    effect = session.invoice_effect("ORDER-ONCE", 5)
    effect.perform()
    with pytest.raises(Exception, match="at most once"):
        effect.perform()
    assert truth()["totals"]["invoices"] == 1


_UPPERCASE = """document.addEventListener('DOMContentLoaded', () => {
  const style = document.createElement('style');
  style.textContent = '[data-testid="whoami"] { text-transform: uppercase; }';
  document.head.appendChild(style);
});"""


async def _uppercase_identity(s: AsyncBrowserSession) -> str:
    await s.page.context.add_init_script(_UPPERCASE)
    await s.page.goto(s.url("/"))
    return await s.page.get_by_test_id("whoami").inner_text()


def test_identity_is_compared_as_the_site_writes_it(
    new_session: SessionFactory, truth: Callable[[], dict[str, Any]]
) -> None:
    """CSS upper-cases the name on screen; the page still says 'alice'."""
    session = new_session("alice")
    assert session.run(_uppercase_identity) == "ALICE"  # the CSS really applies
    session.preflight()
    assert session.whoami() == "alice"
    session.invoice_effect("ORDER-CSS", 3).perform()
    assert truth()["totals"]["invoices"] == 1


def test_identity_from_an_attribute(new_session: SessionFactory, base: str) -> None:
    session = new_session("alice", screens=Screens(whoami_attribute="data-username"))
    session.preflight()
    other = new_session("alice", as_user="bob", screens=Screens(whoami_attribute="data-username"))
    with pytest.raises(HardStop, match="signed in as 'bob', not 'alice'") as info:
        other.preflight()
    assert """attribute 'data-username' of '[data-testid="whoami"]'""" in info.value.reason


def test_identity_marker_missing_names_the_selector(new_session: SessionFactory) -> None:
    session = new_session("alice", screens=Screens(whoami="#user-menu .name"))
    with pytest.raises(HardStop, match="not shown exactly once") as info:
        session.preflight()
    assert "0 elements match '#user-menu .name'" in info.value.reason
    assert "Screens(whoami=..." in info.value.reason


def test_a_lease_lost_after_the_preflight_stops_before_the_click(
    new_session: SessionFactory, base: str
) -> None:
    """The lease is held when the preflight asks and lost while the form is read back:
    the check right before the click stops it, nothing is sent."""
    asked: list[bool] = []

    def lease_ok() -> bool:
        asked.append(not asked)  # held the first time only
        return asked[-1]

    session = new_session("alice", lease_ok=lease_ok)
    with pytest.raises(HardStop, match="no longer holds its lease"):
        session.post_effect("Hello").perform()
    assert asked == [True, False]  # the preflight's check, then the one before the click
    assert creates(base) == []


_NO_IDENTITY = """document.addEventListener('DOMContentLoaded', () => {
  document.querySelectorAll('[data-testid="whoami"]').forEach((e) => e.remove());
});"""


async def _hide_identity(s: AsyncBrowserSession) -> None:
    await s.page.context.add_init_script(_NO_IDENTITY)


def test_a_signed_out_page_without_a_login_wall_is_a_hard_stop(
    new_session: SessionFactory, base: str
) -> None:
    """A page that shows nobody signed in (no marker at all, and no login form) is
    not a page to act on: the preflight stops, nothing is clicked."""
    session = new_session("alice", login=False)
    session.run(_hide_identity)
    with pytest.raises(HardStop, match="not shown exactly once: 0 elements"):
        session.goto("/")
    with pytest.raises(HardStop, match="not shown exactly once: 0 elements"):
        session.preflight()
    assert creates(base) == []


@pytest.mark.parametrize("bound_to", ["ali", "lice"], ids=["a-prefix", "inside"])
def test_an_identity_that_merely_contains_the_users_is_another(
    new_session: SessionFactory, base: str, bound_to: str
) -> None:
    """Signed in as 'alice', a session bound to 'ali' (as 'ana2' is not 'ana') or to
    'lice' (as 'banana' is not 'ana') stops: the identity is compared whole."""
    session = new_session(bound_to, as_user="alice")
    with pytest.raises(HardStop, match=f"signed in as 'alice', not '{bound_to}'"):
        session.preflight()
    assert creates(base) == []


async def _signed_in_elsewhere(session: Any, url: str) -> None:
    """Sign 'alice' in on the sandbox at ``url`` (another origin) and stay on its page."""
    page = session.page
    await page.goto(url + "/login")
    await page.get_by_label("Username").fill("alice")
    await page.get_by_label("Password").fill(SEED_USERS["alice"])
    async with page.expect_navigation():
        await page.get_by_role("button", name="Sign in").click()


def test_preflight_on_a_page_of_another_origin_is_a_hard_stop(
    new_session: SessionFactory, base: str
) -> None:
    """The page has moved to another site (another port), where the same user is signed
    in and nothing blocks: the origin alone stops the mutation."""
    session = new_session("alice")
    session.preflight()
    with SandboxServer() as other:
        session.run(lambda s: _signed_in_elsewhere(s, other.url))
        assert session.whoami() == "alice"  # the other page would pass every other check
        with pytest.raises(HardStop, match="page is on") as info:
            session.preflight()
    assert f"not {base.rstrip('/')!r}" in info.value.reason
    assert creates(base) == []
