"""The async core: ``AsyncBrowser``, ``AsyncBrowserSession``, ``AsyncEffect``.

A session is one browser context bound to one actor: an expected origin and
an expected username. Every mutation goes through ``AsyncEffect.perform``:

1. ``prepare`` (navigate, fill) — failures here raise ``NotPerformed``;
2. ``preflight`` — origin, identity, no login/CAPTCHA/restriction/rate-limit
   screen, the lease still held — any doubt raises ``HardStop``;
3. read-back — the prepared state must equal the payload after
   ``normalize``, else ``ReadBackMismatch`` (nothing is clicked);
4. exactly one matching control, else ``HardStop``;
5. one click, never retried; then the site's confirmation. Any failure from
   the click on raises ``OutcomeUnknown``.

``verify`` is read-only and never raises for the world's failures:
navigation errors, timeouts and untrusted screens become ``Unavailable``.
The sync classes in ``_sync`` run this same code on a private event loop.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from .._errors import HardStop, UsageError
from .._model import Unavailable, Verdict
from ._discovery import DEFAULT_ARGS, find_chromium
from ._errors import (
    BrowserError,
    NotPerformed,
    OutcomeUnknown,
    PageUnavailable,
    ReadBackMismatch,
    StoppedAfterClick,
    StoppedBeforeClick,
)
from ._site import SiteEffect, normalize
from ._threads import next_thread_part

if TYPE_CHECKING:
    from playwright.async_api import Browser as PWBrowser
    from playwright.async_api import BrowserContext, Page, Playwright, Response

    from ._effects import Media

__all__ = ["AsyncBrowser", "AsyncBrowserSession", "AsyncEffect", "Screens"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")

# Serialises the DOM without secrets: password values, hidden fields whose
# names look like tokens, and every value attribute of a password input.
_SANITIZED_HTML = """() => {
  const root = document.documentElement.cloneNode(true);
  const secret = /pass|token|csrf|secret|session|auth|key/i;
  for (const el of root.querySelectorAll('input')) {
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (type === 'password' || (type === 'hidden' && secret.test(el.getAttribute('name') || ''))) {
      el.removeAttribute('value');
    }
  }
  return '<!doctype html>\\n' + root.outerHTML;
}"""


class Screens:
    """CSS selectors that recognise a site's identity and blocking screens.

    The defaults fit the actonce sandbox and catch common generic cases
    (any password form is a login wall; reCAPTCHA/hCaptcha frames).
    """

    def __init__(
        self,
        *,
        whoami: str = '[data-testid="whoami"]',
        login: str = '[data-testid="login-form"], form:has(input[type="password"])',
        captcha: str = '[data-testid="captcha"], iframe[src*="captcha"], .g-recaptcha, .h-captcha',
        rate_limit: str = '[data-testid="rate-limit"]',
        restricted: str = '[data-testid="restricted"]',
    ) -> None:
        self.whoami = whoami
        self.blocking = {
            "login wall": login,
            "CAPTCHA screen": captcha,
            "rate-limit screen": rate_limit,
            "restriction screen": restricted,
        }


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


class AsyncBrowserSession:
    """One browser page bound to one actor on one site.

    Args:
        page: a Playwright async ``Page``.
        origin: expected origin, e.g. ``"https://example.com"``.
        username: the identity the page must show as signed in.
        evidence_dir: where ``capture_evidence`` writes (default: a new temp dir).
        lease_ok: called before every mutation; False means the worker lost
            its lease and must stop.
        timeout: navigation and action timeout, seconds.
        confirm_timeout: how long ``perform`` waits for a confirmation.
        screens: selectors for identity and blocking screens.
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
        _owned: BrowserContext | None = None,
    ) -> None:
        if not username:
            raise UsageError("a browser session needs the expected username")
        self.page = page
        self.origin = _origin(origin)
        if not self.origin.startswith(("http://", "https://")):
            raise UsageError(f"origin must be http(s)://host[:port], not {origin!r}")
        self.username = username
        self.lease_ok = lease_ok
        self.timeout = timeout
        self.confirm_timeout = confirm_timeout
        self.screens = screens or Screens()
        self._evidence_dir = Path(evidence_dir) if evidence_dir is not None else None
        self._evidence_seq = 0
        self._owned = _owned
        self._last_status: int | None = None
        page.set_default_timeout(timeout * 1000)
        page.set_default_navigation_timeout(timeout * 1000)

    # -- navigation and checks ----------------------------------------------

    def url(self, path: str) -> str:
        """Absolute URL of a path on the expected origin (other origins refused)."""
        url = urljoin(self.origin + "/", path)
        if _origin(url) != self.origin:
            raise HardStop(f"refusing to leave the expected origin for {_origin(url)}")
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
                f"could not load {urlsplit(url).path}: {_first_line(exc)}"
            ) from exc
        self._last_status = response.status if response is not None else None
        if response is not None and response.status >= 500:
            raise PageUnavailable(f"{urlsplit(url).path} answered HTTP {response.status}")
        await self.check_page()
        if response is not None and response.status in (404, 410):
            raise HardStop(f"target {urlsplit(url).path} does not resolve (HTTP {response.status})")
        return response

    async def whoami(self) -> str | None:
        """The signed-in identity the page shows; None if not exactly one marker."""
        marker = self.page.locator(self.screens.whoami)
        if await marker.count() != 1:
            return None
        return (await marker.inner_text()).strip()

    async def check_page(self) -> None:
        """Origin, blocking screens and identity of the current page.

        Raises:
            HardStop: with the reason.
        """
        if _origin(self.page.url) != self.origin:
            raise HardStop(f"page is on {_origin(self.page.url)!r}, not {self.origin!r}")
        if self._last_status == 429:
            raise HardStop("rate-limit screen (HTTP 429)")
        try:
            for reason, selector in self.screens.blocking.items():
                if await self.page.locator(selector).count():
                    raise HardStop(f"{reason} is visible")
            who = await self.whoami()
        except PlaywrightError as exc:
            raise HardStop(f"page could not be inspected: {_first_line(exc)}") from exc
        if who is None:
            raise HardStop("signed-in identity is not shown exactly once")
        if who != self.username:
            raise HardStop(f"signed in as {who!r}, not {self.username!r}")

    async def blocking_screen(self) -> str | None:
        """What blocks the current page (login, CAPTCHA, rate limit, another
        identity), or None. Never raises: for reading the page after a click."""
        try:
            for reason, selector in self.screens.blocking.items():
                if await self.page.locator(selector).count():
                    return f"{reason} is visible"
            if self._last_status == 429:
                return "rate-limit screen (HTTP 429)"
            who = await self.whoami()
        except PlaywrightError:
            return None
        if who is not None and who != self.username:
            return f"signed in as {who!r}, not {self.username!r}"
        return None

    async def preflight(self) -> None:
        """The checks before every mutation; any doubt raises ``HardStop``."""
        if self.lease_ok is not None and not self.lease_ok():
            raise HardStop("the worker no longer holds its lease")
        await self.check_page()

    async def login(self, password: str) -> None:
        """Sign in through a ``/login`` form (sandbox layout) and check identity.

        The password is typed into the page only; it is never stored.
        """
        await self.goto_unchecked("/login")
        try:
            await self.page.get_by_label("Username").fill(self.username)
            await self.page.get_by_label("Password").fill(password)
            async with self.page.expect_navigation():
                await self.page.get_by_role("button", name="Sign in").click()
        except PlaywrightError as exc:
            raise PageUnavailable(f"login failed: {_first_line(exc)}") from exc
        await self.check_page()

    async def goto_unchecked(self, path: str) -> None:
        """Open a page on the expected origin without identity checks."""
        try:
            await self.page.goto(self.url(path))
        except PlaywrightError as exc:
            raise PageUnavailable(_first_line(exc)) from exc

    # -- evidence -----------------------------------------------------------

    @property
    def evidence_dir(self) -> Path:
        """Where evidence goes (created on first use)."""
        if self._evidence_dir is None:
            self._evidence_dir = Path(tempfile.mkdtemp(prefix="actonce-evidence-"))
        return self._evidence_dir

    async def capture_evidence(self, label: str) -> str:
        """Write a full-page screenshot and the page HTML; return their directory.

        The directory is ``<evidence_dir>/<nnn>-<label>`` with ``screenshot.png``,
        ``page.html`` and ``meta.json``. Password and token-like input values
        are stripped, cookie values are redacted from the HTML, the URL is
        recorded without query or fragment, cookies are never written.
        """
        self._evidence_seq += 1
        name = _SAFE.sub("_", label).strip("._")[:60] or "evidence"
        target = self.evidence_dir / f"{self._evidence_seq:03d}-{name}"
        target.mkdir(parents=True, exist_ok=True)
        try:
            html = str(await self.page.evaluate(_SANITIZED_HTML))
            for cookie in await self.page.context.cookies():
                value = cookie.get("value") or ""
                if len(value) >= 4:
                    html = html.replace(value, "[redacted]")
            await self.page.screenshot(path=str(target / "screenshot.png"), full_page=True)
        except PlaywrightError as exc:
            raise PageUnavailable(f"evidence capture failed: {_first_line(exc)}") from exc
        (target / "page.html").write_text(html, encoding="utf-8")
        parts = urlsplit(self.page.url)
        meta = {
            "label": label,
            "url": f"{parts.scheme}://{parts.netloc}{parts.path}",
            "actor": self.username,
            "captured_at": time.time(),
        }
        (target / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        return str(target)

    # -- effects ------------------------------------------------------------

    def effect(self, site_effect: SiteEffect) -> AsyncEffect:
        """Bind a site effect to this session."""
        return AsyncEffect(self, site_effect)

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
        """Close the browser context if this session created it."""
        if self._owned is not None:
            owned, self._owned = self._owned, None
            with contextlib.suppress(PlaywrightError):
                await owned.close()


class AsyncEffect:
    """A site effect bound to a session, in the runner's shapes.

    ``precondition() -> bool``, ``perform() -> None`` (at most once),
    ``verify() -> Verdict`` (read-only, repeatable), ``evidence(label)``.
    """

    def __init__(self, session: AsyncBrowserSession, site: SiteEffect) -> None:
        self.session = session
        self.site = site
        self.kind = site.kind
        self.payload = site.payload()
        self._performed = False

    async def precondition(self) -> bool:
        """The site's precondition, then a preflight of the page it left."""
        try:
            ok = await self.site.precondition(self.session)
        except PlaywrightError as exc:
            raise PageUnavailable(_first_line(exc)) from exc
        await self.session.preflight()
        return ok

    async def perform(self) -> None:
        """Prepare, preflight, read back, click once. Never retried.

        Raises:
            HardStop: preflight doubt, ambiguous control (nothing clicked).
            ReadBackMismatch: the form does not hold the payload (nothing clicked).
            NotPerformed: preparation failed (nothing clicked).
            OutcomeUnknown: the click was sent; its outcome is not confirmed.
        """
        if self._performed:
            raise UsageError("perform() runs at most once per effect object")
        self._performed = True
        s = self.session
        try:
            await self.site.prepare(s)
            await s.preflight()
            actual = normalize(await self.site.read_back(s))
            expected = normalize(self.site.expected())
            control = self.site.control(s)
            count = await control.count()
        except PlaywrightError as exc:
            raise NotPerformed(f"preparation failed: {_first_line(exc)}") from exc
        except PageUnavailable as exc:
            raise NotPerformed(f"preparation failed: {exc}") from exc
        except ReadBackMismatch:
            raise
        except HardStop as exc:
            raise StoppedBeforeClick(exc.reason) from exc
        for name, want in expected.items():
            if actual.get(name) != want:
                raise ReadBackMismatch(name, want, actual.get(name))
        if count != 1:
            raise StoppedBeforeClick(
                f"{count} controls match the {self.kind} control; need exactly one"
            )
        if s.lease_ok is not None and not s.lease_ok():
            raise StoppedBeforeClick("the worker no longer holds its lease")
        # The boundary: from the click on, the effect may have happened.
        try:
            await control.click()
            await self.site.confirm(s)
        except (PlaywrightError, BrowserError) as exc:
            why = f"{self.kind}: no confirmation after the click: {_first_line(exc)}"
            wall = await s.blocking_screen()
            if wall is not None:
                # A wall answered the submit: the run must stop (no further
                # mutations), and whether the effect happened is still unknown.
                raise StoppedAfterClick(f"{wall} answered the submit; {why}") from exc
            raise OutcomeUnknown(why) from exc

    async def verify(self) -> Verdict:
        """Read-only check; the world's failures become ``Unavailable``."""
        try:
            return await self.site.verify(self.session)
        except HardStop as exc:
            return Unavailable(f"cannot check: {exc.reason}")
        except (PlaywrightError, BrowserError) as exc:
            return Unavailable(
                f"cannot check: {_first_line(exc) if isinstance(exc, PlaywrightError) else exc}"
            )

    async def evidence(self, label: str) -> str | None:
        """Screenshot + HTML of the current page; None if that failed."""
        try:
            return await self.session.capture_evidence(f"{self.kind}-{label}")
        except (BrowserError, OSError):
            return None


class AsyncBrowser:
    """A launched Chromium that hands out one context per session."""

    def __init__(self, playwright: Playwright, browser: PWBrowser) -> None:
        self._pw = playwright
        self._browser = browser

    @classmethod
    async def launch(
        cls,
        *,
        headed: bool = False,
        executable_path: str | None = None,
        args: tuple[str, ...] = DEFAULT_ARGS,
    ) -> AsyncBrowser:
        """Start Chromium (headless unless ``headed``).

        Raises:
            BrowserNotFound: no Chromium (see ``find_chromium``).
            BrowserError: it would not start.
        """
        path = executable_path or find_chromium()
        pw = await async_playwright().start()
        try:
            browser = await pw.chromium.launch(
                executable_path=path, headless=not headed, args=list(args)
            )
        except PlaywrightError as exc:
            await pw.stop()
            raise BrowserError(f"could not launch {path}: {_first_line(exc)}") from exc
        return cls(pw, browser)

    async def new_session(
        self,
        origin: str,
        username: str,
        *,
        evidence_dir: str | Path | None = None,
        lease_ok: Callable[[], bool] | None = None,
        timeout: float = 10.0,
        confirm_timeout: float = 10.0,
        screens: Screens | None = None,
    ) -> AsyncBrowserSession:
        """A fresh context (own cookies) bound to one actor."""
        context = await self._browser.new_context(viewport={"width": 1100, "height": 800})
        page = await context.new_page()
        return AsyncBrowserSession(
            page,
            origin=origin,
            username=username,
            evidence_dir=evidence_dir,
            lease_ok=lease_ok,
            timeout=timeout,
            confirm_timeout=confirm_timeout,
            screens=screens,
            _owned=context,
        )

    async def aclose(self) -> None:
        """Close Chromium and the Playwright driver."""
        try:
            await self._browser.close()
        finally:
            await self._pw.stop()

    async def __aenter__(self) -> AsyncBrowser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
