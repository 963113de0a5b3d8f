"""The sync twins, ``as_effect`` and a profile's one firewall, without Chromium (issue 23).

``BrowserSession``, ``Effect`` and ``Firewall`` run the async core on a
private loop thread and must hand every call and value through unchanged;
``as_effect`` is the one line of glue to the ledger; a persistent profile
keeps the firewall of its first guarded session. Pinned with a stand-in
page (it takes its default timeouts, names its context) and a stand-in
context (it records routes): what they are asked is all that matters here.
"""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from stub_site import StubSite

from actonce import (
    Confirmed,
    EffectKey,
    Gate,
    HardStop,
    IntentRef,
    Policy,
    RefusalReason,
    RequestPattern,
    Unavailable,
    UsageError,
    WriteRefusal,
)
from actonce.browser import AsyncEffect, AsyncFirewall, as_effect
from actonce.browser._browser import _same_profile_firewall
from actonce.browser._session import AsyncBrowserSession
from actonce.browser._sync import BrowserSession, Effect, Firewall, _LoopThread

ORIGIN = "http://127.0.0.1:8765"


class _Context:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.service_workers: list[Any] = []
        self._impl_obj = SimpleNamespace(_options={"serviceWorkers": "block"})

    async def route(self, pattern: str, handler: Any) -> None:
        self.calls.append("route")

    async def unroute(self, pattern: str, handler: Any) -> None:
        self.calls.append("unroute")

    def on(self, event: str, handler: Any) -> None:
        self.calls.append(f"on {event}")

    def remove_listener(self, event: str, handler: Any) -> None:
        self.calls.append(f"off {event}")


class _Page:
    url = "about:blank"

    def __init__(self) -> None:
        self.context = _Context()
        self.closed = False

    def set_default_timeout(self, ms: float) -> None:
        return None

    def set_default_navigation_timeout(self, ms: float) -> None:
        return None

    async def close(self) -> None:
        self.closed = True


class _Site(StubSite):
    kind = "probe"


@pytest.fixture
def loop() -> Any:
    thread = _LoopThread()
    yield thread
    thread.close()


def _inner(**kwargs: Any) -> AsyncBrowserSession:
    return AsyncBrowserSession(_Page(), origin=ORIGIN, username="ana", **kwargs)  # type: ignore[arg-type]


def test_the_loop_thread_runs_coroutines_and_closes_once(loop: _LoopThread) -> None:
    async def answer() -> int:
        return 42

    assert loop.run(answer()) == 42
    assert loop._thread.name == "actonce-browser" and loop._thread.daemon
    loop.close()
    assert loop.loop.is_closed() and not loop._thread.is_alive()
    loop.close()  # a second close does nothing


def test_a_sync_session_hands_its_values_through(loop: _LoopThread, tmp_path: Any) -> None:
    inner = _inner(evidence_dir=tmp_path)
    session = BrowserSession(loop, inner)
    assert (session.origin, session.username, session.evidence_dir) == (ORIGIN, "ana", tmp_path)
    assert session.async_session is inner and session.firewall is None

    async def page_url(s: AsyncBrowserSession) -> str:
        return s.page.url

    assert session.run(page_url) == "about:blank"
    effect = session.effect(_Site(Confirmed(ORIGIN + "/x")))
    assert isinstance(effect, Effect) and isinstance(effect._inner, AsyncEffect)
    assert (effect.kind, effect.payload) == ("probe", {"n": 1})
    assert effect.site is effect._inner.site
    assert effect.details() == {"wire": [], "sent": 0, "refused": 0} and effect.wire == []
    assert effect.verify() == Confirmed(ORIGIN + "/x")
    post = session.post_effect("hi", parent="/posts/7")
    assert post.payload == {"author": "ana", "text": "hi", "media": None, "parent": "/posts/7"}
    assert session.like_effect("/posts/7", liked=False).kind == "unlike"
    assert session.follow_effect("bob", following=False).payload == {"target": "bob", "on": False}
    assert session.invoice_effect("INV-1", 5).payload["amount"] == 5
    part = session.thread_effect(["a", "b"], [ORIGIN + "/posts/3"])
    assert part is not None and part.payload["parent"] == "/posts/3"
    assert session.thread_effect(["a"], [], root_parent="/posts/1").payload["parent"] == (  # type: ignore[union-attr]
        "/posts/1"
    )
    assert session.thread_effect(["a"], ["/posts/3"]) is None


def test_a_sync_effects_verification_may_stop(loop: _LoopThread) -> None:
    session = BrowserSession(loop, _inner())
    walled = session.effect(_Site(failure=HardStop("login wall is visible")))
    assert walled.verify() == Unavailable("cannot check: login wall is visible")
    with pytest.raises(HardStop):
        walled.verify(stops=True)


def test_closing_a_sync_session_closes_what_it_owns(loop: _LoopThread) -> None:
    page = _Page()
    inner = AsyncBrowserSession(page, origin=ORIGIN, username="ana", _owned_page=True)  # type: ignore[arg-type]
    with BrowserSession(loop, inner) as session:
        assert session.origin == ORIGIN
    assert page.closed, "a page of a persistent profile is the session's to close"
    assert inner._owned_page is False


def test_a_sync_firewall_hands_its_values_through(loop: _LoopThread) -> None:
    login = RequestPattern("POST", "/login", origin=ORIGIN)
    inner_wall = AsyncFirewall(_Context(), actor="ana", allow=(login,))  # type: ignore[arg-type]
    loop.run(inner_wall.install())
    wall = Firewall(loop, inner_wall)
    assert (wall.actor, wall.allow) == ("ana", (login,))
    refusal = WriteRefusal("ana", "POST", ORIGIN + "/x", RefusalReason.OUTSIDE_EFFECT)
    inner_wall.refused.append(refusal)
    inner_wall.problems.append("a service worker runs")
    inner_wall.errors.append("OSError: disk full")
    refused, problems, errors = wall.refused, wall.problems, wall.errors
    assert (refused, problems, errors) == (
        [refusal],
        ["a service worker runs"],
        ["OSError: disk full"],
    )
    refused.clear(), problems.clear(), errors.clear()
    assert len(wall.refused) == len(wall.problems) == len(wall.errors) == 1, "copies"
    assert wall.counts() == {RefusalReason.OUTSIDE_EFFECT: 1}
    wall.settled(0.1)
    wall.close()
    assert inner_wall.context.calls == [  # type: ignore[attr-defined]
        "on serviceworker",
        "route",
        "off serviceworker",
        "unroute",
    ]


# --- as_effect ---------------------------------------------------------------------------


def test_as_effect_hands_the_bound_effect_to_the_ledger(loop: _LoopThread) -> None:
    bound = BrowserSession(loop, _inner()).effect(_Site(failure=HardStop("CAPTCHA screen")))
    key = EffectKey("k-1", "{}")
    effect = as_effect(bound, key, extra={"intent": "i-1", "n": 0})
    assert effect.key == key and bound._inner.effect_key == "k-1"
    assert (effect.kind, effect.payload) == ("probe", {"intent": "i-1", "n": 1})
    assert effect.perform == bound.perform and effect.precondition == bound.precondition
    assert effect.evidence == bound.evidence
    assert effect.policy == Policy() and effect.gate is None and effect.refresh is None
    with pytest.raises(HardStop):  # the ledger's verifier stops on an untrusted page
        effect.verify()
    plain = as_effect(_inner().effect(_Site()), "k-2", policy=Policy(settle_seconds=3.0))
    assert plain.payload == {"n": 1} and plain.policy == Policy(settle_seconds=3.0)


def test_as_effect_refreshes_only_under_an_approval() -> None:
    site = _inner().effect(_Site())
    intent = IntentRef("i", 1)
    refresh = dict
    why = (
        "^as_effect\\(refresh=...\\) needs gate= with an approval packet "
        "\\(gate=ledger.approvals.gate\\(packet\\)\\): the refreshed facts are checked against "
        "the approved ceiling, and without an approval there is none$"
    )
    with pytest.raises(UsageError, match=why):
        as_effect(site, "k", refresh=refresh)
    with pytest.raises(UsageError, match=why):
        as_effect(site, "k", gate=Gate(intent), refresh=refresh)
    gate = Gate(intent, "packet-1", Decimal("5.00"))
    effect = as_effect(site, "k", gate=gate, refresh=refresh)
    assert (effect.gate, effect.refresh) == (gate, refresh)
    assert site.effect_key == "k"


# --- a persistent profile's one firewall ----------------------------------------------------


def test_a_profiles_later_session_must_agree_with_its_firewall() -> None:
    login = RequestPattern("POST", "/login", origin=ORIGIN)
    wall = AsyncFirewall(_Context(), actor="ana", allow=(login,))  # type: ignore[arg-type]
    _same_profile_firewall(None, "bob", (), False)  # no firewall yet: nothing to agree with
    _same_profile_firewall(wall, "ana", (), None)
    _same_profile_firewall(wall, "ana", (login,), True)
    with pytest.raises(UsageError) as caught:
        _same_profile_firewall(wall, "ana", (), False)
    assert str(caught.value) == (
        "this profile's pages are under the write firewall of 'ana': "
        "a session of it cannot turn it off"
    )
    with pytest.raises(UsageError) as caught:
        _same_profile_firewall(wall, "bob", (), None)
    assert str(caught.value) == (
        "a persistent profile is one actor's: its firewall records as 'ana', not 'bob' "
        "(use a profile, or a fresh context, per actor)"
    )
    with pytest.raises(UsageError) as caught:
        _same_profile_firewall(wall, "ana", (RequestPattern("POST", "/x", origin=ORIGIN),), True)
    assert str(caught.value) == (
        "this profile's firewall has the allowlist of its first session; "
        "a later session cannot change it"
    )
