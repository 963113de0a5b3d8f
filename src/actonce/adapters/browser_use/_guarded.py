"""``GuardedBrowser``: a browser-use browser under the write firewall, with guarded actions.

The model browses with browser-use's own actions; every mutating request
any page makes outside a guarded action's perform is refused at the
DevTools-protocol layer (``_cdp``) by the one rule, :func:`actonce.judge_request`,
and recorded in the ledger (``ledger.firewall``, ``via="cdp"``). The action
that caused it answers the model with the refusal and the guarded action to
use instead. A guarded action is an actonce effect: its key comes from the
action's business arguments (never from the model's call), it is claimed,
marked, performed once through actonce's browser session (preflight,
read-back, one click, the network guard), verified and given evidence — in
a page of the same browser (Playwright connected over the DevTools
protocol), with the agent's cookies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from browser_use import ActionResult, Tools
from playwright.async_api import async_playwright

from actonce import (
    ActOnceError,
    AsyncLedger,
    EffectKey,
    Policy,
    RefusalReason,
    RequestPattern,
    UsageError,
    WireAction,
    WriteRefusal,
    judge_request,
)
from actonce.browser import (
    DEFAULT_ARGS,
    AsyncBrowserSession,
    AsyncEffect,
    Screens,
    SiteEffect,
    as_effect,
    find_chromium,
)

from .._result import error_result, tool_result
from ._cdp import CDPFirewall, Refused, Request

__all__ = ["GuardedBrowser", "refusal_advice"]

MakeEffect = Callable[..., AsyncEffect | SiteEffect]
"""``make(session, **arguments)``: the site effect of one guarded action call."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Guarded:
    name: str
    requests: tuple[RequestPattern, ...]


def refusal_advice(refused: Sequence[Refused], actions: Sequence[str]) -> str:
    """What the model is told after its action made requests the firewall refused."""
    named = "; ".join(f"{r.method} {r.url} ({r.text})" for r in refused[:5])
    more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
    use = (
        f"call the guarded action {' or '.join(actions)} instead"
        if actions
        else "no guarded action was registered for it: stop and report it"
    )
    return (
        f"actonce's write firewall refused {len(refused)} request(s) that would change "
        f"something outside any guarded action: {named}{more}. Nothing was sent. "
        f"Do not retry it with a click, a form or a script: {use}."
    )


class GuardedBrowser:
    """One actor's browser-use browser, firewalled, and its guarded actions.

    Make one with :meth:`start`; give the agent ``browser_session`` and
    ``tools``; register guarded actions with :meth:`action`. ``session`` is
    the actonce browser session the guarded actions run in (a page of the
    same browser; sign in with it: ``await guarded.session.login(...)``,
    with the login form allowlisted).
    """

    def __init__(
        self,
        ledger: AsyncLedger,
        *,
        actor: str,
        allow: Sequence[RequestPattern],
        browser_session: Any,
        owns_browser: bool,
    ) -> None:
        if not isinstance(ledger, AsyncLedger):
            raise UsageError(f"a GuardedBrowser records in an AsyncLedger, not {ledger!r}")
        for entry in allow:
            if not isinstance(entry, RequestPattern) or entry.origin is None:
                raise UsageError(
                    f"an allowlist entry is a RequestPattern with its origin: {entry!r}"
                )
        self.ledger = ledger
        self.actor = actor
        self.allow = tuple(allow)
        self.browser_session = browser_session
        """The browser-use ``BrowserSession`` to give the ``Agent``."""
        self.firewall = CDPFirewall(self._judge, self._record)
        self.tools: Any = _FirewalledTools(self)
        """The browser-use ``Tools`` to give the ``Agent``: its own actions, the guarded ones."""
        self.errors: list[str] = []
        """Refusals the ledger could not record (they were refused all the same)."""
        self._owns_browser = owns_browser
        self._actions: dict[str, _Guarded] = {}
        self._performing: list[tuple[str, tuple[RequestPattern, ...]]] = []
        self._reported = 0
        self._pw: Any = None
        self._pw_browser: Any = None
        self._session: AsyncBrowserSession | None = None

    @classmethod
    async def start(
        cls,
        ledger: AsyncLedger,
        origin: str,
        username: str,
        *,
        actor: str | None = None,
        allow: Sequence[RequestPattern] = (),
        browser_session: Any = None,
        executable_path: str | None = None,
        headless: bool = True,
        evidence_dir: str | Path | None = None,
        screens: Screens | None = None,
        timeout: float = 10.0,
        confirm_timeout: float = 10.0,
        perform_timeout: float | None = None,
        allow_origins: Sequence[str] = (),
        profile: Mapping[str, Any] | None = None,
    ) -> GuardedBrowser:
        """Start (or take) the browser, put the firewall on it, open the guarded page.

        Args:
            ledger: where effects and refusals are recorded.
            origin, username: the actor's site and identity (the guarded
                actions' preflight checks both).
            actor: the name refusals are recorded under (default ``username``).
            allow: what may pass outside a guarded action: ``RequestPattern``
                values with their origin (a login form, a search form). None
                by default.
            browser_session: a browser-use ``BrowserSession`` of your own
                (started here if it is not; give it ``keep_alive=True``, or
                the agent's run closes the browser when it ends); default: a
                headless one on actonce's Chromium (``find_chromium``), no
                extensions, kept alive until :meth:`aclose` kills it.
            allow_origins: other origins a guarded perform may send to.
            profile: more ``BrowserProfile`` settings for the default browser
                (``wait_between_actions=0.05`` ...).
        """
        owns = browser_session is None
        if browser_session is None:
            from browser_use import BrowserProfile, BrowserSession

            profile = BrowserProfile(
                executable_path=executable_path or find_chromium(),
                headless=headless,
                user_data_dir=None,
                enable_default_extensions=False,  # they would be downloaded
                keep_alive=True,  # an agent's run must not close the guarded actions' browser
                args=list(DEFAULT_ARGS),
                **(profile or {}),
            )
            browser_session = BrowserSession(browser_profile=profile)
        guarded = cls(
            ledger,
            actor=actor or username,
            allow=allow,
            browser_session=browser_session,
            owns_browser=owns,
        )
        try:
            await guarded._open(
                origin,
                username,
                evidence_dir=evidence_dir,
                screens=screens,
                timeout=timeout,
                confirm_timeout=confirm_timeout,
                perform_timeout=perform_timeout,
                allow_origins=allow_origins,
            )
        except BaseException:
            await guarded.aclose()
            raise
        return guarded

    async def _open(self, origin: str, username: str, **session: Any) -> None:
        await self.browser_session.start()
        cdp_url = self.browser_session.cdp_url
        if not cdp_url:
            raise UsageError("the browser-use session has no DevTools URL to firewall")
        # The firewall first: every target from now on is attached before it runs.
        await self.firewall.attach(cdp_url)
        self._pw = await async_playwright().start()
        self._pw_browser = await self._pw.chromium.connect_over_cdp(cdp_url)
        context = self._pw_browser.contexts[0]  # the agent's: its cookies, its profile
        page = await context.new_page()
        self._session = AsyncBrowserSession(page, origin=origin, username=username, **session)
        await self._agent_tab_in_front()

    async def _agent_tab_in_front(self) -> None:
        # Headless Chromium paints only the tab in front: browser-use's
        # screenshots of its own tab wait for a frame once ours was opened.
        target = getattr(self.browser_session, "agent_focus_target_id", None)
        if target:
            with contextlib.suppress(Exception):
                await self.firewall.activate(target)

    @property
    def session(self) -> AsyncBrowserSession:
        """The actonce session (a page of the agent's browser) guarded actions run in."""
        if self._session is None:
            raise UsageError("the GuardedBrowser is not started (GuardedBrowser.start)")
        return self._session

    async def aclose(self) -> None:
        """Close the guarded page and the firewall; kill the browser if it was made here."""
        with contextlib.suppress(Exception):
            if self._session is not None:
                await self._session.page.close()
        with contextlib.suppress(Exception):
            if self._pw is not None:
                await self._pw.stop()  # disconnects; the browser goes on
        await self.firewall.aclose()
        if self._owns_browser:
            with contextlib.suppress(Exception):
                await self.browser_session.kill()

    async def __aenter__(self) -> GuardedBrowser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- guarded actions ---------------------------------------------------------

    def action(
        self,
        description: str,
        *,
        key: Callable[..., EffectKey | str],
        requests: Sequence[RequestPattern | tuple[str, str]] = (),
        policy: Policy | None = None,
        name: str | None = None,
    ) -> Callable[[MakeEffect], MakeEffect]:
        """Decorator: register ``make`` as a guarded browser-use action.

        ``make(session, **arguments)`` returns the site effect (a
        ``SiteEffect``, or one bound with ``session.effect(...)`` /
        ``session.post_effect(...)``); the action's parameters are
        ``make``'s after ``session``. ``key(**arguments)`` is the effect
        key: from the business arguments only, so that the model calling
        again (a retry, a second step) meets the same effect.
        ``requests``: the mutating requests the submit makes (method and
        path), in order: a refused click that made one of them is answered
        with this action's name, and an effect that declares none of its own
        (``SiteEffect.requests``) declares these — each sent once, anything
        else refused, an incomplete submit never confirmed.
        """

        def deco(make: MakeEffect) -> MakeEffect:
            signature = inspect.signature(make, eval_str=True)
            params = list(signature.parameters.values())[1:]
            names = [p.name for p in params]
            action_name = name or make.__name__
            declared = tuple(
                p if isinstance(p, RequestPattern) else RequestPattern(*p) for p in requests
            )

            async def guarded_action(*values: Any) -> Any:
                arguments = dict(zip(names, values, strict=True))
                answer = await self._run(make, key, arguments, policy, declared)
                memory = f"{action_name}: {answer['outcome']} ({answer['advice']})"
                return ActionResult(extracted_content=json.dumps(answer), long_term_memory=memory)

            guarded_action.__name__ = action_name
            guarded_action.__qualname__ = action_name
            guarded_action.__signature__ = signature.replace(  # type: ignore[attr-defined]
                parameters=params, return_annotation=inspect.Signature.empty
            )
            guarded_action.__annotations__ = {p.name: p.annotation for p in params}
            self.tools.registry.action(description)(guarded_action)
            self._actions[action_name] = _Guarded(action_name, declared)
            return make

        return deco

    async def _run(
        self,
        make: MakeEffect,
        key: Callable[..., EffectKey | str],
        arguments: dict[str, Any],
        policy: Policy | None,
        declared: tuple[RequestPattern, ...] = (),
    ) -> dict[str, Any]:
        session = self.session
        try:
            made = make(session, **arguments)
            if not isinstance(made, AsyncEffect | SiteEffect):
                raise UsageError(f"a guarded action makes a SiteEffect, not {made!r}")
            bound = made if isinstance(made, AsyncEffect) else session.effect(made)
            if declared and not bound.site.requests:
                bound.site.requests = declared  # the action's declaration, for this effect
            effect = as_effect(bound, key(**arguments), policy=policy)
            perform = bound.perform
            allowed = tuple(RequestPattern("*", "*", origin=o) for o in session.allow_origins)

            async def perform_in_window() -> dict[str, Any]:
                # What the network guard lets pass untouched during the perform
                # (the other origins it allows) must pass here too; the guard
                # itself sends the effect's own requests, outside the browser.
                entry = (
                    effect.key.value if isinstance(effect.key, EffectKey) else effect.key,
                    allowed,
                )
                self._performing.append(entry)
                try:
                    return await perform()
                finally:
                    self._performing.remove(entry)

            try:
                result = await self.ledger.run(
                    dataclasses.replace(effect, perform=perform_in_window)
                )
            finally:
                await self._agent_tab_in_front()
        except ActOnceError as exc:
            return error_result(exc)
        return tool_result(result)

    # -- the firewall's rule and records ------------------------------------------

    def _judge(self, request: Request) -> tuple[str, str] | None:
        allow = self.allow + tuple(p for _key, extra in self._performing for p in extra)
        decision = judge_request(
            request.method,
            request.url,
            window=None,
            allow=allow,
            beacon=request.resource_type == "Ping",
        )
        if decision.action is not WireAction.REFUSE:
            return None
        reason = decision.reason or RefusalReason.OUTSIDE_EFFECT
        return reason.value, reason.text

    async def _record(self, refused: Refused) -> None:
        try:
            reason = RefusalReason(refused.reason)
        except ValueError:
            reason = RefusalReason.OUTSIDE_EFFECT  # the rule itself failed: refused all the same
        performing = self._performing[-1][0] if self._performing else None
        try:
            await self.ledger.firewall.record(
                WriteRefusal(
                    actor=self.actor,
                    method=refused.method,
                    url=refused.url,
                    reason=reason,
                    page=refused.page,
                    effect_key=performing,
                    via="cdp",
                )
            )
        except ActOnceError as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])

    def take_refusals(self) -> list[Refused]:
        """The refusals since the last call (what the model has not been told yet)."""
        new = self.firewall.refused[self._reported :]
        self._reported = len(self.firewall.refused)
        return new

    def _guarded_for(self, refused: Sequence[Refused]) -> list[str]:
        origin = self.session.origin
        named = [
            g.name
            for g in self._actions.values()
            if any(p.matches(r.method, r.url, origin=origin) for p in g.requests for r in refused)
        ]
        return named or list(self._actions)

    async def _answer(self, result: Any) -> Any:
        """The action's result, with what the firewall refused meanwhile."""
        await self.firewall.settled()
        refused = self.take_refusals()
        if self.firewall.lost.is_set():
            return ActionResult(
                error="actonce's write firewall lost its connection to the browser: "
                "nothing can be guarded any more; stop",
                is_done=True,
                success=False,
            )
        if not refused:
            return result
        advice = refusal_advice(refused, self._guarded_for(refused))
        error = f"{result.error}\n{advice}" if getattr(result, "error", None) else advice
        return result.model_copy(update={"error": error})


class _FirewalledTools(Tools):  # type: ignore[misc,unused-ignore]
    """browser-use's ``Tools``: each action's result also says what the firewall refused."""

    def __init__(self, guarded: GuardedBrowser, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._guarded = guarded

    async def act(self, action: Any, browser_session: Any, *args: Any, **kwargs: Any) -> Any:
        if self._guarded.firewall.lost.is_set():
            return await self._guarded._answer(None)
        result = await super().act(action, browser_session, *args, **kwargs)
        return await self._guarded._answer(result)
