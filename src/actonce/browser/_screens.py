"""Which screens a site shows: its signed-in identity and its blocking screens."""

from __future__ import annotations

__all__ = ["CONFIGURE", "RATE_LIMIT", "Screens"]

RATE_LIMIT = "rate-limit screen"
"""The reason a rate-limit screen is reported with (a ``RateLimited``, not a ``HardStop``)."""

CONFIGURE = "configure Screens(whoami=..., whoami_attribute=...) for this site"
"""The hint that ends every identity problem."""


class Screens:
    """CSS selectors that recognise a site's identity and blocking screens.

    The defaults fit the actonce sandbox and catch common generic cases
    (any password form is a login wall; reCAPTCHA/hCaptcha frames).

    Args:
        whoami: the one element that shows who is signed in.
        whoami_attribute: read the identity from this attribute of that
            element (e.g. ``"data-username"``) instead of its ``textContent``.
            ``textContent`` is the text as the site wrote it, before CSS
            (``text-transform: uppercase`` does not change it); surrounding
            whitespace is stripped either way.
        login, captcha, rate_limit, restricted: blocking screens.
    """

    def __init__(
        self,
        *,
        whoami: str = '[data-testid="whoami"]',
        whoami_attribute: str | None = None,
        login: str = '[data-testid="login-form"], form:has(input[type="password"])',
        captcha: str = '[data-testid="captcha"], iframe[src*="captcha"], .g-recaptcha, .h-captcha',
        rate_limit: str = '[data-testid="rate-limit"]',
        restricted: str = '[data-testid="restricted"]',
    ) -> None:
        self.whoami = whoami
        self.whoami_attribute = whoami_attribute
        self.blocking = {
            "login wall": login,
            "CAPTCHA screen": captcha,
            RATE_LIMIT: rate_limit,
            "restriction screen": restricted,
        }

    def describe_whoami(self) -> str:
        """Where the identity is read from, for messages."""
        what = f"attribute {self.whoami_attribute!r}" if self.whoami_attribute else "textContent"
        return f"the {what} of {self.whoami!r}"
