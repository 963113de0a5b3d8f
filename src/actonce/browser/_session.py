"""The async core: ``AsyncBrowser`` and ``AsyncBrowserSession``.

A session is one browser context bound to one actor: an expected origin and
an expected username. Every mutation goes through ``AsyncEffect.perform``
(``_effect``): prepare, preflight, read-back, one control, the network guard
(``_wire``), one click, the site's confirmation — all of it bounded by the
session's ``perform_timeout``.

``verify`` is read-only and never raises for the world's failures:
navigation errors, timeouts and untrusted screens become ``Unavailable``.
The sync classes in ``_sync`` run this same code on a private event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Error as PlaywrightError

from actonce import HardStop, UsageError, Verdict, origin_of
from actonce.evidence import evidence_root, new_session_folder

from ._capture import capture_page, evidence_name
from ._effect import AsyncEffect
from ._errors import PageUnavailable, RateLimited, first_line
from ._firewall import AsyncFirewall, firewall_of
from ._screens import CONFIGURE, RATE_LIMIT, Screens
from ._site import SiteEffect
from ._threads import next_thread_part

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, Response

    from ._effects import Media

__all__ = ["AsyncBrowserSession"]


def _checked_origin(origin: str) -> str:
    normalized = origin_of(origin)
    if not normalized.startswith(("http://", "https://")) or normalized.endswith("://"):
        raise UsageError(f"origin must be http(s)://host[:port], not {origin!r}")
    return normalized


class AsyncBrowserSession:
    """One browser page bound to one actor on one site.

    Args:
        page: a Playwright async ``Page``.
        origin: expected origin, e.g. ``"https://example.com"``.
        username: the identity the page must show as signed in.
        evidence_dir: where ``capture_evidence`` writes. Default: a new folder
            of this session under ``evidence_root``, made on first use.
        evidence_root: where that folder is made (default:
            :func:`actonce.evidence.evidence_root`: ``$ACTONCE_EVIDENCE_DIR``,
            else ``actonce-evidence`` beside the SQLite ledger of
            ``$ACTONCE_LEDGER``, else ``./actonce-evidence``). ``actonce
            evidence prune`` deletes old folders there.
        lease_ok: called before every mutation; False means the worker lost
            its lease and must stop.
        timeout: navigation and action timeout, seconds.
        confirm_timeout: how long ``perform`` waits for a confirmation,
            seconds (a custom ``SiteEffect.confirm`` included).
        screens: selectors for identity and blocking screens.
        perform_timeout: the bound of one whole ``perform``, seconds; past
            it the perform ends at once (``NotPerformed`` before the click,
            ``OutcomeUnknown`` after). Default: ``2 * timeout +
            confirm_timeout`` (form load, click, confirmation). Keep it below
            the ledger's lease.
        allow_origins: other origins (``https://host[:port]``) whose mutating
            requests may pass during a perform; every other one is refused.
    """

    def __init__(
        self,
        page: Page,
        *,
        origin: str,
        username: str,
        evidence_dir: str | Path | None = None,
        lease_ok: Callable[[], bool] | None = None,
        timeout: float = 10.0,
        confirm_timeout: float = 10.0,
        screens: Screens | None = None,
        perform_timeout: float | None = None,
        allow_origins: Sequence[str] = (),
        evidence_root: str | Path | None = None,
        _owned: BrowserContext | None = None,
        _owned_page: bool = False,
    ) -> None:
        if not username:
            raise UsageError("a browser session needs the expected username")
        self.page = page
        self.origin = _checked_origin(origin)
        self.username = username
        self.lease_ok = lease_ok
        self.timeout = timeout
        self.confirm_timeout = confirm_timeout
        self.perform_timeout = (
            2 * timeout + confirm_timeout if perform_timeout is None else perform_timeout
        )
        if min(timeout, confirm_timeout, self.perform_timeout) <= 0:
            raise UsageError("timeout, confirm_timeout and perform_timeout must be positive")
        self.allow_origins = frozenset(_checked_origin(o) for o in allow_origins)
        self.screens = screens or Screens()
        self._evidence_dir = Path(evidence_dir) if evidence_dir is not None else None
        self._evidence_root = Path(evidence_root) if evidence_root is not None else None
        self._evidence_seq = 0
        self._owned = _owned
        self._owned_page = _owned_page
        self._last_status: int | None = None
        # Only for measuring what the guard costs (benchmarks/browser.py): an
        # unguarded perform can be resent by the browser (issue 15).
        self._network_guard = True
        page.set_default_timeout(timeout * 1000)
        page.set_default_navigation_timeout(timeout * 1000)

    @property
    def firewall(self) -> AsyncFirewall | None:
        """The write firewall of this session's browser context, if it has one."""
        return firewall_of(self.page.context)

    # -- navigation and checks ----------------------------------------------

    def url(self, path: str) -> str:
        """Absolute URL of a path on the expected origin (other origins refused)."""
        url = urljoin(self.origin + "/", path)
        if origin_of(url) != self.origin:
            raise HardStop(f"refusing to leave the expected origin for {origin_of(url)}")
        return url

    async def goto(self, path: str, *, timeout: float | None = None) -> Response | None:
        """Open a page on the expected origin and check it can be trusted.

        Raises:
            PageUnavailable: network error, timeout, or a 5xx status.
            HardStop: other origin, 404/410, blocking screen, wrong identity.
        """
        url = self.url(path)
        try:
            response = await self.page.goto(url, timeout=(timeout or self.timeout) * 1000)
        except PlaywrightError as exc:
            raise PageUnavailable(
                f"could not load {urlsplit(url).path}: {first_line(exc)}"
            ) from exc
        self._last_status = response.status if response is not None else None
        if response is not None and response.status >= 500:
            raise PageUnavailable(f"{urlsplit(url).path} answered HTTP {response.status}")
        await self.check_page()
        if response is not None and response.status in (404, 410):
            raise HardStop(f"target {urlsplit(url).path} does not resolve (HTTP {response.status})")
        return response

    async def whoami(self) -> str | None:
        """The signed-in identity the page shows; None if not exactly one marker.

        Read as the site means it: the marker's ``textContent`` (not the
        rendered text, which CSS may transform), or ``Screens.whoami_attribute``.
        """
        count, who = await self._identity()
        return who if count == 1 else None

    async def _identity(self) -> tuple[int, str | None]:
        marker = self.page.locator(self.screens.whoami)
        count = await marker.count()
        if count != 1:
            return count, None
        attribute = self.screens.whoami_attribute
        value = await marker.get_attribute(attribute) if attribute else await marker.text_content()
        return 1, (value or "").strip()

    def _identity_problem(self, count: int, who: str | None) -> str | None:
        where = self.screens.describe_whoami()
        if count != 1:
            return (
                f"signed-in identity is not shown exactly once: {count} elements match "
                f"{self.screens.whoami!r} ({CONFIGURE})"
            )
        if who != self.username:
            return (
                f"signed in as {who!r}, not {self.username!r} (read from {where}; "
                f"{CONFIGURE} if that is not where it shows the user)"
            )
        return None

    async def check_page(self) -> None:
        """Origin, blocking screens and identity of the current page.

        Raises:
            HardStop: with the reason.
        """
        if origin_of(self.page.url) != self.origin:
            raise HardStop(f"page is on {origin_of(self.page.url)!r}, not {self.origin!r}")
        if self._last_status == 429:
            raise RateLimited("rate-limit screen (HTTP 429)")
        try:
            for reason, selector in self.screens.blocking.items():
                if await self.page.locator(selector).count():
                    stop = RateLimited if reason == RATE_LIMIT else HardStop
                    raise stop(f"{reason} is visible")
            count, who = await self._identity()
        except PlaywrightError as exc:
            raise HardStop(f"page could not be inspected: {first_line(exc)}") from exc
        problem = self._identity_problem(count, who)
        if problem is not None:
            raise HardStop(problem)

    async def blocking_screen(self, *, timeout: float = 2.0) -> str | None:
        """What blocks the current page (login, CAPTCHA, rate limit, another
        identity), or None. Never raises, never waits longer than ``timeout``
        seconds (a page still loading is not a wall): for reading the page
        after a click."""
        try:
            return await asyncio.wait_for(self._blocking_screen(), max(0.001, timeout))
        except (PlaywrightError, TimeoutError):
            return None

    async def _blocking_screen(self) -> str | None:
        for reason, selector in self.screens.blocking.items():
            if await self.page.locator(selector).count():
                return f"{reason} is visible"
        if self._last_status == 429:
            return "rate-limit screen (HTTP 429)"
        count, who = await self._identity()
        return self._identity_problem(1, who) if count == 1 else None

    async def preflight(self) -> None:
        """The checks before every mutation; any doubt raises ``HardStop``."""
        if self.lease_ok is not None and not self.lease_ok():
            raise HardStop("the worker no longer holds its lease")
        await self.check_page()

    async def login(
        self,
        password: str,
        *,
        path: str = "/login",
        username_label: str = "Username",
        password_label: str = "Password",
        submit: str = "Sign in",
        remember: bool = False,
    ) -> None:
        """Sign in through a labelled username/password form and check identity.

        The defaults fit the sandbox (``remember`` ticks its "Keep me signed
        in"); another site with such a form changes the labels. For anything
        else (SSO, two steps, a one-time code) use :meth:`sign_in` with your
        own step. The password is typed into the page only; it is never stored.
        """

        async def form(page: Page) -> None:
            await self.goto_unchecked(path)
            await page.get_by_label(username_label).fill(self.username)
            await page.get_by_label(password_label).fill(password)
            if remember:
                await page.get_by_label("Keep me signed in").check()
            async with page.expect_navigation():
                await page.get_by_role("button", name=submit).click()

        await self.sign_in(form, check=None)

    async def sign_in(
        self, step: Callable[[Page], Awaitable[object]], *, check: str | None = "/"
    ) -> None:
        """Run your own login step for your site, then check who is signed in.

        ``step(page)`` is an async function that gets this session's
        Playwright ``Page`` and signs in however the site wants (it may
        navigate anywhere on the expected origin: the checks of
        :meth:`goto` do not apply while it runs, so a login page is no hard
        stop here). Afterwards ``check`` (a path on the origin; ``None``: the
        page the step left) is opened with every check: origin, no blocking
        screen, exactly the expected identity.

        Raises:
            PageUnavailable: the step failed with a Playwright error.
            HardStop: after it, the page is still a login wall or shows
                someone else.
        """
        try:
            await step(self.page)
        except PlaywrightError as exc:
            raise PageUnavailable(f"login failed: {first_line(exc)}") from exc
        if check is None:
            await self.check_page()
        else:
            await self.goto(check)

    async def goto_unchecked(self, path: str) -> None:
        """Open a page on the expected origin without identity checks."""
        try:
            await self.page.goto(self.url(path))
        except PlaywrightError as exc:
            raise PageUnavailable(first_line(exc)) from exc

    # -- evidence -----------------------------------------------------------

    @property
    def evidence_dir(self) -> Path:
        """Where evidence goes (created on first use)."""
        if self._evidence_dir is None:
            root = self._evidence_root if self._evidence_root is not None else evidence_root()
            self._evidence_dir = new_session_folder(root, self.username)
        return self._evidence_dir

    async def capture_evidence(self, label: str, *, files: Mapping[str, str] | None = None) -> str:
        """Write a full-page screenshot and the page HTML; return their directory.

        The directory is ``<evidence_dir>/<nnn>-<label>`` with ``screenshot.png``,
        ``page.html`` and ``meta.json`` (and ``files``: name -> text, written
        first). Password and token-like input values are stripped, cookie
        values are redacted from the HTML, the URL is recorded without query
        or fragment, cookies are never written.

        Raises:
            PageUnavailable: the page could not be captured.
        """
        target, error = await self._capture(label, files or {})
        if error is not None:
            raise PageUnavailable(f"evidence capture failed: {error}")
        return target

    async def _capture(self, label: str, files: Mapping[str, str]) -> tuple[str, str | None]:
        """``capture_evidence`` that reports a page failure instead of raising."""
        self._evidence_seq += 1
        target = self.evidence_dir / evidence_name(self._evidence_seq, label)
        return str(target), await capture_page(self.page, target, label, self.username, files)

    # -- effects ------------------------------------------------------------

    def effect(self, site_effect: SiteEffect) -> AsyncEffect:
        """Bind a site effect to this session."""
        return AsyncEffect(self, site_effect)

    async def verify_many(self, site_effects: Sequence[SiteEffect]) -> list[Verdict]:
        """Verdicts of many site effects, one page load per shared listing
        (``SiteEffect.listing``); see :func:`actonce.browser.verify_many`."""
        from ._listing import verify_many

        return await verify_many(self, site_effects)

    def post_effect(
        self, text: str, *, media: Media | None = None, parent: str | None = None
    ) -> AsyncEffect:
        """Publish a post (or a reply to the ``parent`` post URL) as this actor."""
        from ._effects import PostEffect

        return self.effect(PostEffect(self.username, text, media=media, parent=parent))

    def like_effect(self, post: str, *, liked: bool = True) -> AsyncEffect:
        """Bring the like of a post (URL or path) to ``liked``."""
        from ._effects import like

        return self.effect(like(post, liked=liked))

    def follow_effect(self, user: str, *, following: bool = True) -> AsyncEffect:
        """Bring the follow of ``user`` to ``following``."""
        from ._effects import follow

        return self.effect(follow(user, following=following))

    def invoice_effect(self, reference: str, amount: int) -> AsyncEffect:
        """Create an invoice for an external reference under this account."""
        from ._effects import InvoiceEffect

        return self.effect(InvoiceEffect(self.username, reference, amount))

    def thread_effect(
        self, parts: Sequence[str], verified: Sequence[str], *, root_parent: str | None = None
    ) -> AsyncEffect | None:
        """The effect for the next unverified thread part (None when done).

        ``verified`` holds the canonical URLs of the parts already verified, in
        order; the last one is the next part's expected parent.
        """
        part = next_thread_part(parts, verified, root_parent=root_parent)
        return None if part is None else self.post_effect(part.text, parent=part.parent)

    async def aclose(self) -> None:
        """Close the browser context (or, in a persistent profile, the page) it created."""
        if self._owned is not None:
            owned, self._owned = self._owned, None
            with contextlib.suppress(PlaywrightError):
                await owned.close()
        if self._owned_page:
            self._owned_page = False
            with contextlib.suppress(PlaywrightError):
                await self.page.close()
