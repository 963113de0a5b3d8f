"""browser-use (``pip install 'actonce[browser-use]'``): the model drives, the firewall guards.

browser-use (0.13) drives Chromium over the DevTools protocol itself
(``cdp-use``), not through Playwright. So the write firewall sits at that
layer, on the same browser: its own DevTools connection auto-attaches to
every target (pages, popups, cross-process iframes; service and shared
workers are never let run) and intercepts each request (``Fetch``, request
stage). A mutating request outside a guarded action is refused by
:func:`actonce.judge_request`, recorded (``ledger.firewall``, ``via="cdp"``)
and answered to the model, in the action's result, with the guarded action
to use instead. Guarded actions are browser-use actions that run an actonce
effect in a page of the same browser::

    guarded = await GuardedBrowser.start(ledger, origin, "alice",
                                         allow=[RequestPattern("POST", "/login", origin=origin)])
    await guarded.session.login(password)

    @guarded.action("Publish a post (at most once)", requests=[("POST", "/compose")],
                    key=lambda text: effect_key(tenant="demo", actor="alice", kind="post",
                                                object=text, operation="publish"))
    def publish_post(session, text: str):
        return session.post_effect(text)

    agent = Agent(task=..., llm=model, browser_session=guarded.browser_session,
                  tools=guarded.tools)
    await agent.run()

:class:`ScriptedModel` is a browser-use chat model that plays a script
(no provider, no key): for tests and examples. See docs/browser.md.
"""

from __future__ import annotations

from ._cdp import CDPFirewall, Refused, Request
from ._guarded import GuardedBrowser, refusal_advice
from ._model import ScriptedModel, Step, element_index

__all__ = [
    "CDPFirewall",
    "GuardedBrowser",
    "Refused",
    "Request",
    "ScriptedModel",
    "Step",
    "element_index",
    "refusal_advice",
]
