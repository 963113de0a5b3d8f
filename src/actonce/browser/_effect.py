"""``AsyncEffect``: one site effect bound to a session, in the runner's shapes.

``perform`` is the side effect, at most once, never retried:

1. ``prepare`` (navigate, fill) — failures here raise ``NotPerformed``;
2. ``preflight`` — origin, identity, no login/CAPTCHA/restriction/rate-limit
   screen, the lease still held — any doubt raises ``HardStop``;
3. read-back — the prepared state must equal the payload after
   ``normalize``, else ``ReadBackMismatch`` (nothing is clicked);
4. exactly one matching control, else ``HardStop``;
5. the network guard takes the mutating requests (``_wire``), then one
   click, never retried, then the site's confirmation (bounded by
   ``confirm_timeout``). Any failure from the click on raises
   ``OutcomeUnknown``; a first mutating request that got no answer ends the
   perform at once, without waiting out the confirmation.

The whole perform is bounded by the session's ``perform_timeout``: past it,
the perform ends at once — ``NotPerformed`` before the click,
``OutcomeUnknown`` after it. ``perform`` returns the wire evidence
``{"wire": [...], "sent": n, "refused": m}``; every exception it raises
carries the same dict as ``details``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError

from actonce import HardStop, Unavailable, UsageError, Verdict

from ._errors import (
    BrowserError,
    NotPerformed,
    OutcomeUnknown,
    PageUnavailable,
    RateLimited,
    ReadBackMismatch,
    StoppedAfterClick,
    StoppedBeforeClick,
    first_line,
)
from ._firewall import firewall_of
from ._site import SiteEffect, declared_requests, normalize
from ._wire import NetworkGuard

if TYPE_CHECKING:
    from ._session import AsyncBrowserSession

__all__ = ["AsyncEffect"]

_WALL_CHECK = 2.0
"""At most this long, in seconds, to look for a wall after a failed click."""
_SETTLE = 0.5
"""At most this long to let a cancelled confirmation step unwind."""
_FIRST_REQUEST_GRACE = 0.5
"""When the page is confirmed before any mutating request reached the guard,
the window stays open this long for the click's request to show up."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, PlaywrightError):
        return first_line(exc)
    return str(exc) or type(exc).__name__


class AsyncEffect:
    """A site effect bound to a session, in the runner's shapes.

    ``precondition() -> bool``, ``perform() -> dict`` (at most once; the wire
    evidence), ``verify() -> Verdict`` (read-only, repeatable),
    ``evidence(label)``; ``wire`` is the list of wire records of the perform.
    """

    def __init__(self, session: AsyncBrowserSession, site: SiteEffect) -> None:
        self.session = session
        self.site = site
        self.kind = site.kind
        self.payload = site.payload()
        self._performed = False
        self._clicked = False
        self._here = False  # the next verification may read the page the click left
        self._guard: NetworkGuard | None = None
        self._doubt: str | None = None
        self.effect_key: str | None = None
        """The ledger's key of this effect, when ``as_effect`` made one of it
        (a firewall's refusals during its perform name it)."""

    @property
    def wire(self) -> list[dict[str, Any]]:
        """The wire records of the perform (empty before it)."""
        return self.details()["wire"]  # type: ignore[no-any-return]

    def details(self) -> dict[str, Any]:
        """``{"wire": [...], "sent": n, "refused": m}`` of the perform so far."""
        if self._guard is None:
            return {"wire": [], "sent": 0, "refused": 0}
        return self._guard.details()

    async def precondition(self) -> bool:
        """The site's precondition, then a preflight of the page it left."""
        try:
            ok = await self.site.precondition(self.session)
        except PlaywrightError as exc:
            raise PageUnavailable(first_line(exc)) from exc
        await self.session.preflight()
        return ok

    async def perform(self) -> dict[str, Any]:
        """Prepare, preflight, read back, click once. Never retried.

        Returns:
            the wire evidence ``{"wire": [...], "sent": n, "refused": m}``.

        Raises:
            HardStop: preflight doubt, ambiguous control (nothing clicked).
            ReadBackMismatch: the form does not hold the payload (nothing clicked).
            NotPerformed: preparation failed or the bound passed (nothing clicked).
            OutcomeUnknown: the click was sent; its outcome is not confirmed.
        Every exception carries the wire evidence as ``details``.
        """
        if self._performed:
            raise UsageError("perform() runs at most once per effect object")
        self._performed = True
        s = self.session
        started = time.monotonic()
        deadline = started + s.perform_timeout
        wall = firewall_of(s.page.context)
        guard = self._guard = NetworkGuard(
            s.page,
            s.origin,
            allow_origins=s.allow_origins,
            started=started,
            deadline=deadline,
            declared=declared_requests(self.site.requests),
            allow=wall.allow if wall is not None else (),
            on_refused=None if wall is None else wall.during(self.effect_key),
            on_allowed=None if wall is None else wall.let_through,
        )
        error: BaseException | None = None
        try:
            async with asyncio.timeout(s.perform_timeout) as bound:
                await self._steps(guard, deadline)
        except TimeoutError as exc:
            error = self._overrun() if bound.expired() else exc
            if error is not exc:
                error.__cause__ = exc
        except BaseException as exc:  # closed below, then raised again
            error = exc
        await guard.close()
        details = guard.details()
        doubt = self._doubt = self._doubt_of(guard)
        if doubt is not None and (error is None or type(error) is OutcomeUnknown):
            why = f"{self.kind}: the submit is incomplete: {doubt}"
            cause, error = error, OutcomeUnknown(why if error is None else f"{why}; {error}")
            error.__cause__ = cause
        if error is None:
            self._here = True
            return details
        if isinstance(error, Exception):
            setattr(error, "details", details)  # noqa: B010  (any exception type)
        raise error

    @staticmethod
    def _doubt_of(guard: NetworkGuard) -> str | None:
        """Why a declared submit cannot be confirmed from the page (None: it can)."""
        doubt = guard.incomplete()
        if guard.window.declares and guard.failure is not None:
            failed = f"a declared request got no answer ({guard.failure})"
            doubt = failed if doubt is None else f"{doubt}; {failed}"
        return doubt

    def _overrun(self) -> Exception:
        why = f"{self.kind}: the perform exceeded perform_timeout={self.session.perform_timeout:g}s"
        if self._clicked:
            return OutcomeUnknown(f"{why} after the click; whether it took effect is unknown")
        return NotPerformed(f"{why} before the click; nothing was clicked")

    async def _steps(self, guard: NetworkGuard, deadline: float) -> None:
        s = self.session
        try:
            await self.site.prepare(s)
            await s.preflight()
            actual = normalize(await self.site.read_back(s))
            expected = normalize(self.site.expected())
            control = self.site.control(s)
            count = await control.count()
        except PlaywrightError as exc:
            raise NotPerformed(f"preparation failed: {first_line(exc)}") from exc
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
        try:
            if s._network_guard:
                await guard.open()
        except PlaywrightError as exc:
            raise NotPerformed(f"could not guard the network: {first_line(exc)}") from exc
        # The boundary: from the click on, the effect may have happened.
        self._clicked = True
        try:
            left = max(0.001, min(s.timeout, deadline - time.monotonic()))
            # no_wait_after: the confirmation step (bounded) waits for the answer.
            await control.click(timeout=left * 1000, no_wait_after=True)
            await self._confirm(guard, deadline)
        except (PlaywrightError, BrowserError, TimeoutError) as exc:
            why = f"{self.kind}: no confirmation after the click: {_reason(exc)}"
            wall = await s.blocking_screen(timeout=min(_WALL_CHECK, deadline - time.monotonic()))
            if wall is not None:
                # A wall answered the submit: the run must stop (no further
                # mutations), and whether the effect happened is still unknown.
                raise StoppedAfterClick(f"{wall} answered the submit; {why}") from exc
            raise OutcomeUnknown(why) from exc

    async def _confirm(self, guard: NetworkGuard, deadline: float) -> None:
        """Wait for the confirmation, bounded; the window then ends.

        The window never ends while the click's first mutating request is
        in flight, so its outcome is always recorded: an effect without a
        ``confirm`` step of its own waits for that request's answer, and a
        confirmation that comes before any request reached the guard keeps
        the window open ``_FIRST_REQUEST_GRACE`` seconds for it. A first
        request that got no answer ends the perform at once.
        """
        s = self.session
        budget = max(0.0, min(s.confirm_timeout, deadline - time.monotonic()))
        own_step = type(self.site).confirm is not SiteEffect.confirm
        step = self.site.confirm(s) if own_step or not guard.active else guard.settled.wait()
        confirm = asyncio.ensure_future(asyncio.wait_for(step, budget))
        failed = asyncio.ensure_future(guard.failed.wait())
        seen = asyncio.ensure_future(guard.seen.wait())
        answered = asyncio.ensure_future(guard.settled.wait())
        broken = asyncio.ensure_future(guard.broken.wait())
        try:
            await asyncio.wait({confirm, failed, broken}, return_when=asyncio.FIRST_COMPLETED)
            if broken.done() and not confirm.done():
                # A part of the submit was refused: the page cannot confirm
                # it any more. What was sent gets its answer recorded.
                if guard.in_flight:
                    await asyncio.wait({answered}, timeout=max(0.0, deadline - time.monotonic()))
                confirm.cancel()
            elif confirm.done() and confirm.exception() is None and guard.active:
                # Confirmed by the page. A submit that had not even reached the
                # guard gets a moment to show up; one in flight gets its answer.
                if not seen.done():
                    left = min(_FIRST_REQUEST_GRACE, deadline - time.monotonic())
                    await asyncio.wait({seen}, timeout=max(0.0, left))
                if guard.in_flight:
                    await asyncio.wait({answered}, timeout=max(0.0, deadline - time.monotonic()))
        finally:
            pending = [t for t in (confirm, failed, seen, answered, broken) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=_SETTLE)
        if guard.failure is not None:
            raise OutcomeUnknown(f"the submit got no answer ({guard.failure})")
        exc = None if confirm.cancelled() else confirm.exception()
        if isinstance(exc, TimeoutError) and not isinstance(exc, PlaywrightError):
            what = "no confirmation" if own_step else "no answer to a submit (no confirm step)"
            raise TimeoutError(f"{what} within confirm_timeout={budget:g}s") from exc
        if exc is not None:
            raise exc
        if guard.in_flight:
            raise OutcomeUnknown("the page looked confirmed, but the submit got no answer in time")

    async def verify(self, *, stops: bool = False) -> Verdict:
        """Read-only check; the world's failures become ``Unavailable``.

        With ``stops=True`` (what :func:`as_effect` hands the ledger) a page
        that cannot be trusted — a login wall, a CAPTCHA, a restriction, the
        wrong identity, another origin — raises ``HardStop`` instead: before
        the claim the run then ends as ``hard_stop``, after the perform (and
        in reconcile) the ledger counts it as ``Unavailable``. A rate-limit
        screen (``RateLimited``) stays ``Unavailable``: it passes by itself.
        The first verification after a confirmed perform asks the site's
        ``verify_here`` first (the page the click left, no page load).
        """
        here, self._here = self._here, False
        if self._doubt is not None:
            # This perform's own wire says the submit is incomplete: whatever
            # the page shows, it is not the effect as declared.
            return Unavailable(f"cannot confirm: the submit is incomplete: {self._doubt}")
        try:
            if here:
                verdict = await self.site.verify_here(self.session)
                if verdict is not None:
                    return verdict
            return await self.site.verify(self.session)
        except RateLimited as exc:
            return Unavailable(f"cannot check: {exc.reason}")
        except HardStop as exc:
            if stops:
                raise
            return Unavailable(f"cannot check: {exc.reason}")
        except (PlaywrightError, BrowserError) as exc:
            return Unavailable(f"cannot check: {_reason(exc)}")

    async def evidence(self, label: str) -> str | None:
        """Screenshot + HTML of the current page, and the perform's ``wire.json``.

        Returns the evidence directory, or None if nothing could be written.
        After a perform, ``wire.json`` is written first, so the directory is
        returned even when the page itself could not be captured.
        """
        files = {"wire.json": json.dumps(self.details(), indent=2)} if self._performed else {}
        try:
            target, page_error = await self.session._capture(f"{self.kind}-{label}", files)
        except OSError:
            return None
        return None if page_error is not None and not files else target
