"""Errors of the Playwright adapter, under actonce's one exception root.

    ActOnceError
    ├── HardStop
    │   ├── RateLimited        a rate-limit screen (HTTP 429): a stop that passes
    │   ├── StoppedBeforeClick a preflight doubt inside perform; nothing clicked
    │   └── ReadBackMismatch   the prepared form does not hold the payload; nothing clicked
    └── BrowserError           the browser or the page failed
        ├── BrowserNotFound    no Chromium to launch (install one)
        ├── PageUnavailable    a page could not be loaded or read (network, timeout, 5xx)
        ├── NotPerformed       ``perform`` failed before the click: provably nothing happened
        └── OutcomeUnknown     the click was sent; whether it took effect is not known
            └── StoppedAfterClick  a wall (login, CAPTCHA, rate limit) answered the
                                   click: unknown outcome *and* a hard stop

``StoppedBeforeClick``, ``ReadBackMismatch`` and ``NotPerformed`` are also
``actonce.NotPerformed``: the runner records them as ``failed`` at once,
since nothing crossed the side-effect boundary.

Playwright's own errors are translated here with ``raise ... from exc``.
"""

from __future__ import annotations

from typing import Any

from actonce import ActOnceError, HardStop
from actonce import NotPerformed as _CoreNotPerformed

__all__ = [
    "BrowserError",
    "BrowserNotFound",
    "NotPerformed",
    "OutcomeUnknown",
    "PageUnavailable",
    "RateLimited",
    "ReadBackMismatch",
    "StoppedAfterClick",
    "StoppedBeforeClick",
]


class RateLimited(HardStop):
    """A rate-limit screen (or HTTP 429): stop mutating; looking again later may work.

    The one blocking screen that passes by itself. Verification reports it as
    ``Unavailable`` (retried with backoff, ``deferred`` before a claim); a
    login wall, a CAPTCHA, a restriction or the wrong identity is a hard stop.
    """


class StoppedBeforeClick(HardStop, _CoreNotPerformed):
    """A hard stop raised inside ``perform`` before the click: nothing was submitted."""


class ReadBackMismatch(HardStop, _CoreNotPerformed):
    """The prepared state read back from the page is not the intended payload.

    Raised before the click, so nothing was submitted. ``field`` names the
    first differing field; ``expected`` and ``actual`` are its normalized
    values.
    """

    def __init__(self, field: str, expected: Any, actual: Any) -> None:
        super().__init__(
            f"read-back mismatch on {field!r}: expected {expected!r}, page holds {actual!r}"
        )
        self.field = field
        self.expected = expected
        self.actual = actual


class BrowserError(ActOnceError):
    """The browser or a page could not be used."""


class BrowserNotFound(BrowserError):
    """No Chromium executable was found."""


class PageUnavailable(BrowserError):
    """A page could not be loaded or read reliably."""


class NotPerformed(BrowserError, _CoreNotPerformed):
    """``perform`` stopped before the side-effecting click: nothing happened."""


class OutcomeUnknown(BrowserError):
    """The side-effecting click was sent but its outcome was not confirmed.

    The effect may or may not have happened: verify, never retry blindly.
    """


class StoppedAfterClick(OutcomeUnknown, HardStop):
    """A blocking screen answered the click: stop the run; the outcome is unknown."""

    def __init__(self, reason: str) -> None:
        HardStop.__init__(self, reason)


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 300 characters (for reasons)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
