"""The Playwright adapter: browser effects that are safe to hand to a runner.

A session is bound to one actor (expected origin and username). Effects
made from it expose the runner's shapes — ``precondition() -> bool``,
``perform() -> dict`` (at most once; the wire evidence), ``verify() ->
Verdict`` (read-only), ``evidence(label) -> str | None`` — plus ``kind``
and ``payload``. During a perform the network guard (``_wire``) lets one
mutating request leave the browser, once: a browser's own resend of a POST
whose connection died without an answer cannot happen (issue 15)::

    with Browser() as browser:
        session = browser.new_session("http://127.0.0.1:8765", "alice")
        session.login("alice-password")
        effect = session.post_effect("Hello")
        print(effect.perform())   # {"wire": [...], "sent": 1, "refused": 0}
        print(effect.verify())

``Browser``/``BrowserSession``/``Effect`` are the sync twins of
``AsyncBrowser``/``AsyncBrowserSession``/``AsyncEffect`` (``close`` /
``aclose``). Write effects for another site by subclassing ``SiteEffect``
(see docs/browser.md). Errors: see ``actonce.browser._errors``.
"""

from __future__ import annotations

from ._booking import (
    BookEffect,
    HoldEffect,
    NotifyEffect,
    PayEffect,
    ProviderBusy,
    ProviderRefused,
    ReleaseHoldEffect,
    SignedOut,
    Trip,
    VoidPaymentEffect,
)
from ._booking_steps import BOOKING_POLICY, booking_operation, booking_steps, money_of
from ._browser import AsyncBrowser
from ._discovery import DEFAULT_ARGS, chromium_version, find_chromium
from ._effect import AsyncEffect
from ._effects import InvoiceEffect, Media, PostEffect, ToggleEffect, follow, like
from ._errors import (
    BrowserError,
    BrowserNotFound,
    NotPerformed,
    OutcomeUnknown,
    PageUnavailable,
    RateLimited,
    ReadBackMismatch,
    StoppedAfterClick,
    StoppedBeforeClick,
)
from ._firewall import AsyncFirewall, FirewallWarning, firewall, refusal_page
from ._guard import as_effect
from ._install import Obtained, ensure_chromium
from ._listing import Listings, verify_many
from ._notes import NoteEffect
from ._screens import Screens
from ._session import AsyncBrowserSession
from ._site import SiteEffect, declared_requests, normalize, normalize_text
from ._sync import Browser, BrowserSession, Effect, Firewall
from ._threads import ThreadPart, next_thread_part

__all__ = [
    "BOOKING_POLICY",
    "DEFAULT_ARGS",
    "AsyncBrowser",
    "AsyncBrowserSession",
    "AsyncEffect",
    "AsyncFirewall",
    "BookEffect",
    "Browser",
    "BrowserError",
    "BrowserNotFound",
    "BrowserSession",
    "Effect",
    "Firewall",
    "FirewallWarning",
    "HoldEffect",
    "InvoiceEffect",
    "Listings",
    "Media",
    "NotPerformed",
    "NoteEffect",
    "NotifyEffect",
    "Obtained",
    "OutcomeUnknown",
    "PageUnavailable",
    "PayEffect",
    "PostEffect",
    "ProviderBusy",
    "ProviderRefused",
    "RateLimited",
    "ReadBackMismatch",
    "ReleaseHoldEffect",
    "Screens",
    "SignedOut",
    "SiteEffect",
    "StoppedAfterClick",
    "StoppedBeforeClick",
    "ThreadPart",
    "ToggleEffect",
    "Trip",
    "VoidPaymentEffect",
    "as_effect",
    "booking_operation",
    "booking_steps",
    "chromium_version",
    "declared_requests",
    "ensure_chromium",
    "find_chromium",
    "firewall",
    "follow",
    "like",
    "money_of",
    "next_thread_part",
    "normalize",
    "normalize_text",
    "refusal_page",
    "verify_many",
]
