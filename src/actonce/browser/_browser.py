"""``AsyncBrowser``: a launched Chromium that hands out one context per session."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from actonce import AsyncLedger, Ledger, RequestPattern, UsageError

from ._discovery import DEFAULT_ARGS, find_chromium
from ._errors import BrowserError, first_line
from ._firewall import AsyncFirewall, firewall_of, recorder_of
from ._screens import Screens
from ._session import AsyncBrowserSession

if TYPE_CHECKING:
    from playwright.async_api import Browser as PWBrowser
    from playwright.async_api import BrowserContext, Playwright

__all__ = ["AsyncBrowser"]


class AsyncBrowser:
    """A launched Chromium that hands out one context per session.

    With a persistent profile (``user_data_dir``) there is one context, the
    profile's: its cookies and storage live in that folder across launches,
    so an agent signs in once and stays signed in — its session never
    passes through the ledger. Every session then gets a page of that one
    context (they share its cookies: one actor per profile).
    """

    def __init__(
        self,
        playwright: Playwright,
        browser: PWBrowser | None,
        *,
        context: BrowserContext | None = None,
        evidence_root: str | Path | None = None,
    ) -> None:
        self._pw = playwright
        self._browser = browser
        self._context = context
        self._evidence_root = evidence_root

    @classmethod
    async def launch(
        cls,
        *,
        headed: bool = False,
        executable_path: str | None = None,
        args: tuple[str, ...] = DEFAULT_ARGS,
        user_data_dir: str | Path | None = None,
        evidence_root: str | Path | None = None,
    ) -> AsyncBrowser:
        """Start Chromium (headless unless ``headed``).

        Args:
            user_data_dir: a persistent profile folder (made if missing):
                cookies and storage survive the browser. Keep it private
                (it holds the sessions), one per actor, one browser at a time.
            evidence_root: where the sessions' evidence folders go.

        Raises:
            BrowserNotFound: no Chromium (see ``find_chromium``).
            BrowserError: it would not start.
        """
        path = executable_path or find_chromium()
        pw = await async_playwright().start()
        try:
            if user_data_dir is not None:
                Path(user_data_dir).mkdir(parents=True, exist_ok=True)
                context = await pw.chromium.launch_persistent_context(
                    str(user_data_dir),
                    executable_path=path,
                    headless=not headed,
                    args=list(args),
                    viewport={"width": 1100, "height": 800},
                    service_workers="block",
                )
                return cls(pw, None, context=context, evidence_root=evidence_root)
            browser = await pw.chromium.launch(
                executable_path=path, headless=not headed, args=list(args)
            )
        except PlaywrightError as exc:
            await pw.stop()
            raise BrowserError(f"could not launch {path}: {first_line(exc)}") from exc
        return cls(pw, browser, evidence_root=evidence_root)

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
        perform_timeout: float | None = None,
        allow_origins: Sequence[str] = (),
        ledger: Ledger | AsyncLedger | None = None,
        allow: Sequence[RequestPattern] = (),
        firewall: bool | None = None,
    ) -> AsyncBrowserSession:
        """A session bound to one actor: a fresh context (own cookies, service
        workers blocked), or a new page of the persistent profile.

        Service workers are blocked so that the network guard sees every
        request the pages make (a worker's fetches bypass page routes).

        The write firewall (``actonce.browser.firewall``) is on when a
        ``ledger`` is given — a session that records into a ledger is an
        agent's — unless ``firewall=False``; ``firewall=True`` puts it on
        without a ledger (refusals kept in ``session.firewall.refused``).
        ``allow``: what may pass outside an effect (``RequestPattern``
        values with their origin: the login form ...); nothing by default.
        """
        guarded = ledger is not None if firewall is None else firewall
        if allow and not guarded:
            raise UsageError("allow= is the firewall's allowlist: the firewall is off here")
        recorder = recorder_of(ledger)
        persistent = self._context is not None
        if self._context is not None:
            context = self._context
        else:
            assert self._browser is not None
            context = await self._browser.new_context(
                viewport={"width": 1100, "height": 800}, service_workers="block"
            )
        try:
            if guarded and firewall_of(context) is None:
                wall = AsyncFirewall(context, actor=username, allow=allow, recorder=recorder)
                await wall.install()
            elif persistent:
                _same_profile_firewall(firewall_of(context), username, allow, firewall)
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
                perform_timeout=perform_timeout,
                allow_origins=allow_origins,
                evidence_root=self._evidence_root,
                _owned=None if persistent else context,
                _owned_page=persistent,
            )
        except BaseException:
            if not persistent:
                with contextlib.suppress(PlaywrightError):
                    await context.close()
            raise

    async def aclose(self) -> None:
        """Close Chromium (a persistent profile is saved) and the Playwright driver."""
        try:
            if self._context is not None:
                await self._context.close()
            if self._browser is not None:
                await self._browser.close()
        finally:
            await self._pw.stop()

    async def __aenter__(self) -> AsyncBrowser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _same_profile_firewall(
    wall: AsyncFirewall | None,
    username: str,
    allow: Sequence[RequestPattern],
    firewall: bool | None,
) -> None:
    """A persistent profile has one context, so one firewall: the first guarded session's.

    A later session of the profile must agree with it — one actor per
    profile — or it would be guarded under another name and allowlist than
    the ones it asked for (or not at all, when it asked for none).
    """
    if wall is None:
        return
    if firewall is False:
        raise UsageError(
            f"this profile's pages are under the write firewall of {wall.actor!r}: "
            "a session of it cannot turn it off"
        )
    if username != wall.actor:
        raise UsageError(
            f"a persistent profile is one actor's: its firewall records as {wall.actor!r}, "
            f"not {username!r} (use a profile, or a fresh context, per actor)"
        )
    if allow and tuple(allow) != wall.allow:
        raise UsageError(
            "this profile's firewall has the allowlist of its first session; "
            "a later session cannot change it"
        )
