"""Sync driver: ``Browser``, ``BrowserSession``, ``Effect``.

They run the async core on a private event loop thread (one per
``Browser``), so the logic exists once. Do not call them from inside that
loop (for instance from a ``lease_ok`` callback).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from actonce import AsyncLedger, Ledger, RefusalReason, RequestPattern, Verdict, WriteRefusal

from ._browser import AsyncBrowser
from ._discovery import DEFAULT_ARGS
from ._effect import AsyncEffect
from ._firewall import AsyncFirewall
from ._screens import Screens
from ._session import AsyncBrowserSession
from ._site import SiteEffect
from ._threads import next_thread_part

if TYPE_CHECKING:
    from playwright.async_api import Page as AsyncPage

    from ._effects import Media

__all__ = ["Browser", "BrowserSession", "Effect", "Firewall"]

T = TypeVar("T")


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="actonce-browser", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a sync browser call from inside its own event loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()


class Effect:
    """Sync twin of ``AsyncEffect``: same names, same behaviour."""

    def __init__(self, loop: _LoopThread, inner: AsyncEffect) -> None:
        self._loop = loop
        self._inner = inner
        self.kind = inner.kind
        self.payload = inner.payload

    @property
    def site(self) -> SiteEffect:
        """The site effect this wraps."""
        return self._inner.site

    def precondition(self) -> bool:
        """See ``AsyncEffect.precondition``."""
        return self._loop.run(self._inner.precondition())

    @property
    def wire(self) -> list[dict[str, Any]]:
        """See ``AsyncEffect.wire``: the wire records of the perform."""
        return self._inner.wire

    def details(self) -> dict[str, Any]:
        """See ``AsyncEffect.details``."""
        return self._inner.details()

    def perform(self) -> dict[str, Any]:
        """See ``AsyncEffect.perform``: at most once, never retried; the wire evidence."""
        return self._loop.run(self._inner.perform())

    def verify(self, *, stops: bool = False) -> Verdict:
        """See ``AsyncEffect.verify``: read-only, never raises for the world
        (with ``stops=True``: ``HardStop`` for a page that cannot be trusted)."""
        return self._loop.run(self._inner.verify(stops=stops))

    def evidence(self, label: str) -> str | None:
        """See ``AsyncEffect.evidence``."""
        return self._loop.run(self._inner.evidence(label))


class Firewall:
    """Sync twin of ``AsyncFirewall`` (``session.firewall`` of a sync session)."""

    def __init__(self, loop: _LoopThread, inner: AsyncFirewall) -> None:
        self._loop = loop
        self._inner = inner

    @property
    def actor(self) -> str:
        """The name refusals are recorded under."""
        return self._inner.actor

    @property
    def allow(self) -> tuple[RequestPattern, ...]:
        """The allowlist."""
        return self._inner.allow

    @property
    def refused(self) -> list[WriteRefusal]:
        """Every refusal so far, oldest first (call ``settled`` first to see them recorded)."""
        return list(self._inner.refused)

    @property
    def problems(self) -> list[str]:
        """What it cannot guard (service workers)."""
        return list(self._inner.problems)

    @property
    def errors(self) -> list[str]:
        """Refusals the ledger could not record."""
        return list(self._inner.errors)

    def counts(self) -> dict[RefusalReason, int]:
        """Refusals so far, per reason."""
        return self._inner.counts()

    def settled(self, timeout: float = 10.0) -> None:
        """Wait until every refusal so far is recorded (bounded)."""
        self._loop.run(self._inner.settled(timeout))

    def close(self) -> None:
        """Stop refusing."""
        self._loop.run(self._inner.aclose())


class BrowserSession:
    """Sync twin of ``AsyncBrowserSession`` (one context bound to one actor).

    Make one with ``Browser.new_session`` or ``BrowserSession.launch``.
    """

    def __init__(
        self, loop: _LoopThread, inner: AsyncBrowserSession, owner: Browser | None = None
    ) -> None:
        self._loop = loop
        self._inner = inner
        self._owner = owner

    @classmethod
    def launch(
        cls,
        origin: str,
        username: str,
        *,
        headed: bool = False,
        executable_path: str | None = None,
        **kwargs: Any,
    ) -> BrowserSession:
        """Launch a private Chromium for one session; ``close`` stops it."""
        browser = Browser(headed=headed, executable_path=executable_path)
        try:
            session = browser.new_session(origin, username, **kwargs)
        except BaseException:
            browser.close()
            raise
        session._owner = browser
        return session

    @property
    def origin(self) -> str:
        """The expected origin."""
        return self._inner.origin

    @property
    def username(self) -> str:
        """The expected signed-in identity."""
        return self._inner.username

    @property
    def evidence_dir(self) -> Path:
        """Where evidence goes."""
        return self._inner.evidence_dir

    @property
    def firewall(self) -> Firewall | None:
        """See ``AsyncBrowserSession.firewall``: the context's write firewall, if on."""
        inner = self._inner.firewall
        return None if inner is None else Firewall(self._loop, inner)

    @property
    def async_session(self) -> AsyncBrowserSession:
        """The async session underneath (its page lives on the driver's loop)."""
        return self._inner

    def login(
        self,
        password: str,
        *,
        path: str = "/login",
        username_label: str = "Username",
        password_label: str = "Password",
        submit: str = "Sign in",
        remember: bool = False,
    ) -> None:
        """See ``AsyncBrowserSession.login`` (a labelled username/password form)."""
        self._loop.run(
            self._inner.login(
                password,
                path=path,
                username_label=username_label,
                password_label=password_label,
                submit=submit,
                remember=remember,
            )
        )

    def sign_in(
        self, step: Callable[[AsyncPage], Coroutine[Any, Any, object]], *, check: str | None = "/"
    ) -> None:
        """See ``AsyncBrowserSession.sign_in``: your own login step, then the checks.

        ``step`` is an ``async`` function of the (async) Playwright ``Page``;
        it runs on this session's event loop.
        """
        self._loop.run(self._inner.sign_in(step, check=check))

    def goto(self, path: str) -> None:
        """See ``AsyncBrowserSession.goto``."""
        self._loop.run(self._inner.goto(path))

    def goto_unchecked(self, path: str) -> None:
        """See ``AsyncBrowserSession.goto_unchecked`` (no identity or wall checks)."""
        self._loop.run(self._inner.goto_unchecked(path))

    def whoami(self) -> str | None:
        """See ``AsyncBrowserSession.whoami``."""
        return self._loop.run(self._inner.whoami())

    def preflight(self) -> None:
        """See ``AsyncBrowserSession.preflight``."""
        self._loop.run(self._inner.preflight())

    def capture_evidence(self, label: str) -> str:
        """See ``AsyncBrowserSession.capture_evidence``."""
        return self._loop.run(self._inner.capture_evidence(label))

    def run(self, fn: Callable[[AsyncBrowserSession], Coroutine[Any, Any, T]]) -> T:
        """Run ``await fn(async_session)`` on the driver's loop (escape hatch)."""
        return self._loop.run(fn(self._inner))

    def verify_many(self, site_effects: Sequence[SiteEffect]) -> list[Verdict]:
        """See ``AsyncBrowserSession.verify_many``."""
        return self._loop.run(self._inner.verify_many(site_effects))

    def effect(self, site_effect: SiteEffect) -> Effect:
        """Bind a site effect to this session."""
        return Effect(self._loop, self._inner.effect(site_effect))

    def post_effect(
        self, text: str, *, media: Media | None = None, parent: str | None = None
    ) -> Effect:
        """See ``AsyncBrowserSession.post_effect``."""
        return Effect(self._loop, self._inner.post_effect(text, media=media, parent=parent))

    def like_effect(self, post: str, *, liked: bool = True) -> Effect:
        """See ``AsyncBrowserSession.like_effect``."""
        return Effect(self._loop, self._inner.like_effect(post, liked=liked))

    def follow_effect(self, user: str, *, following: bool = True) -> Effect:
        """See ``AsyncBrowserSession.follow_effect``."""
        return Effect(self._loop, self._inner.follow_effect(user, following=following))

    def invoice_effect(self, reference: str, amount: int) -> Effect:
        """See ``AsyncBrowserSession.invoice_effect``."""
        return Effect(self._loop, self._inner.invoice_effect(reference, amount))

    def thread_effect(
        self, parts: Sequence[str], verified: Sequence[str], *, root_parent: str | None = None
    ) -> Effect | None:
        """The effect for the next unverified thread part (None when done)."""
        part = next_thread_part(parts, verified, root_parent=root_parent)
        return None if part is None else self.post_effect(part.text, parent=part.parent)

    def close(self) -> None:
        """Close this session's context (and its private browser, if any)."""
        self._loop.run(self._inner.aclose())
        if self._owner is not None:
            owner, self._owner = self._owner, None
            owner.close()

    def __enter__(self) -> BrowserSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Browser:
    """Sync twin of ``AsyncBrowser``: one Chromium, many sessions.

    Args:
        headed: show the window.
        executable_path: Chromium to run (default: ``find_chromium()``).
        args: Chromium flags.
        user_data_dir: a persistent profile folder: cookies and storage
            survive the browser (sign in once; see ``AsyncBrowser``).
        evidence_root: where the sessions' evidence folders go.
    """

    def __init__(
        self,
        *,
        headed: bool = False,
        executable_path: str | None = None,
        args: tuple[str, ...] = DEFAULT_ARGS,
        user_data_dir: str | Path | None = None,
        evidence_root: str | Path | None = None,
    ) -> None:
        self._loop = _LoopThread()
        try:
            self._inner = self._loop.run(
                AsyncBrowser.launch(
                    headed=headed,
                    executable_path=executable_path,
                    args=args,
                    user_data_dir=user_data_dir,
                    evidence_root=evidence_root,
                )
            )
        except BaseException:
            self._loop.close()
            raise
        self._closed = False

    def new_session(
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
    ) -> BrowserSession:
        """A fresh context (own cookies, service workers blocked) bound to one actor.

        See ``AsyncBrowser.new_session``: the write firewall is on when a
        ``ledger`` is given (unless ``firewall=False``).
        """
        inner = self._loop.run(
            self._inner.new_session(
                origin,
                username,
                evidence_dir=evidence_dir,
                lease_ok=lease_ok,
                timeout=timeout,
                confirm_timeout=confirm_timeout,
                screens=screens,
                perform_timeout=perform_timeout,
                allow_origins=allow_origins,
                ledger=ledger,
                allow=allow,
                firewall=firewall,
            )
        )
        return BrowserSession(self._loop, inner)

    def close(self) -> None:
        """Close Chromium, the driver and the loop thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run(self._inner.aclose())
        finally:
            self._loop.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
