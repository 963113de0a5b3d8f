"""The write firewall's rule: may this request leave the browser?

Theory of operation. In a browser an agent drives, the model may choose any
action, but only a keyed, verified effect may change the world (invariant
11). Every request a browser is about to send is judged by one pure
function, :func:`judge_request`, from what is known at that moment:

- the request: its method, its URL, and whether it is a beacon
  (``navigator.sendBeacon``: Playwright's and the DevTools protocol's
  resource type ``ping``);
- the **window**: ``None`` outside any effect's perform, else a
  :class:`SubmitWindow` — the session's origin, the requests the effect
  declared (an ordered list of :class:`RequestPattern`, each at most once;
  by default one request of any method to any path of the origin), how many
  of them were sent already, and the other origins allowed during a perform;
- the **allowlist**: :class:`RequestPattern` values naming method, origin
  and path of requests that change nothing that matters (a login form, a
  search form). There is no default allowlist.

It answers a :class:`WireDecision`:

================  =========================================================
``PASS``          GET, HEAD, OPTIONS, or not http(s): untouched, not recorded
``SEND``          the effect's next declared request: sent exactly once by the
                  guard (no transport retry), its answer handed to the page
``ALLOW``         allowlisted, or another origin allowed during the perform:
                  goes to the network untouched
``REFUSE``        never sent; ``reason`` (a :class:`RefusalReason`) says why
================  =========================================================

The order of the questions, for a mutating request: the next declared
request (``SEND``); the allowlist (``ALLOW``); else it is refused — ``outside
an effect`` when there is no window; inside one, ``second mutating request``
for a repeat of a request already sent (same method and URL: a double
submit, a 307), unless it goes to an allowed other origin (``ALLOW``);
``out of order`` when it matches a declared request further down the list;
``other origin``; or ``undeclared request``. An undeclared or out-of-order
refusal may leave the submit incomplete (:attr:`RefusalReason.breaks_submit`):
the perform's outcome is then unknown. A beacon never counts as
a declared request; it passes only by an allowlist entry made for beacons
(``beacon=True``), the documented opt-in for same-origin analytics.

The window is data: the caller (the Playwright guard, the DevTools-protocol
firewall of the browser-use adapter) keeps it and moves it on with
:meth:`SubmitWindow.advanced` after a ``SEND``, before it awaits anything
(so that two requests cannot both be the next one).

A refused request is recorded as a :class:`WriteRefusal` (actor, method, the
URL without userinfo, query or fragment, the page that made it, the ledger
time, why; never headers, cookies or bodies) through ``ledger.firewall``.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar
from urllib.parse import urlsplit

from .errors import UsageError

__all__ = [
    "ANY_REQUEST",
    "SAFE_METHODS",
    "RefusalReason",
    "RequestPattern",
    "SubmitWindow",
    "WireAction",
    "WireDecision",
    "WriteRefusal",
    "bare_url",
    "judge_request",
    "origin_of",
]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing: they pass the firewall untouched."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TOKEN = re.compile(r"^[A-Z][A-Z0-9_-]{0,31}$")
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_VIA = re.compile(r"^[a-z][a-z0-9_.-]{0,39}$")
_MAX_URL = 2000


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL: lower case, no userinfo, no default port.

    A port that is no port (``:80001``) is kept as written, so that such a
    URL never has the origin of a valid one.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port: int | str | None = parts.port
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
    keep = port is not None and port != _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}{f':{port}' if keep else ''}"


def bare_url(url: str) -> str:
    """The URL as a record may hold it: origin and path; no userinfo, query or fragment."""
    return (origin_of(url) + urlsplit(url).path)[:_MAX_URL]


class RefusalReason(enum.StrEnum):
    """Why the firewall refused a mutating request. The values are stored."""

    OUTSIDE_EFFECT = "outside_effect"  # no effect was performing
    UNDECLARED = "undeclared"  # inside a perform, not a request the effect declared
    OUT_OF_ORDER = "out_of_order"  # a declared request, before the ones ahead of it
    SECOND = "second"  # a declared request sent already (each goes out at most once)
    OTHER_ORIGIN = "other_origin"  # inside a perform, to an origin not allowed

    @property
    def text(self) -> str:
        """The reason in words, as wire evidence and messages say it."""
        return _TEXT[self]

    @property
    def breaks_submit(self) -> bool:
        """Refused inside a perform, it may leave the effect's submit incomplete.

        An undeclared or out-of-order request at the effect's origin may be
        a part of the submit the effect did not declare: the perform's
        outcome is then unknown. A repeat of a request already sent (a
        double submit, a 307) and a request to another origin are not.
        """
        return self in (RefusalReason.UNDECLARED, RefusalReason.OUT_OF_ORDER)


_TEXT = {
    RefusalReason.OUTSIDE_EFFECT: "outside an effect",
    RefusalReason.UNDECLARED: "undeclared request",
    RefusalReason.OUT_OF_ORDER: "out of order",
    RefusalReason.SECOND: "second mutating request",
    RefusalReason.OTHER_ORIGIN: "other origin",
}


@functools.lru_cache(maxsize=512)
def _path_regex(path: str) -> re.Pattern[str]:
    if path == "*":
        return re.compile(r".*", re.DOTALL)
    rest = path.endswith("*")
    body = path[:-1] if rest else path
    out, at = [], 0
    for m in _PLACEHOLDER.finditer(body):
        out.append(re.escape(body[at : m.start()]))
        out.append(r"[^/]+")
        at = m.end()
    out.append(re.escape(body[at:]))
    return re.compile("".join(out) + (r".*" if rest else ""), re.DOTALL)


@dataclass(frozen=True, slots=True)
class RequestPattern:
    """A kind of mutating request: method, path pattern, origin.

    ``method``: ``"POST"``, ``"PUT"`` … or ``"*"`` (any but GET, HEAD,
    OPTIONS). ``path``: ``/notes``, ``/notes/{id}/publish`` (a placeholder
    is one path segment), ``/api/*`` (a trailing ``*``: any rest), or ``*``
    (any path). The query is never part of the match. ``origin``:
    ``https://host[:port]``; ``None`` in an effect's declared list means the
    session's origin (an allowlist entry must name its origin). ``beacon``:
    the pattern matches ``navigator.sendBeacon`` requests only (and a pattern
    without it never matches a beacon).
    """

    method: str
    path: str
    origin: str | None = None
    beacon: bool = False
    ANY: ClassVar[RequestPattern]
    """One mutating request of any method to any path of the session's origin:
    what an effect that declares nothing submits."""

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not isinstance(self.path, str):
            raise UsageError("a request pattern's method and path are text")
        method = self.method.strip().upper()
        if method != "*" and (not _TOKEN.match(method) or method in SAFE_METHODS):
            raise UsageError(
                f"a request pattern's method is a mutating method (POST, PUT, PATCH, DELETE …) "
                f"or '*', not {self.method!r}"
            )
        if self.path != "*" and not self.path.startswith("/"):
            raise UsageError(
                f"a request pattern's path starts with '/' (or is '*'), not {self.path!r}"
            )
        if "*" in self.path[:-1] or "?" in self.path or "#" in self.path:
            raise UsageError(
                f"a request pattern's path has no query and '*' only at its end: {self.path!r}"
            )
        object.__setattr__(self, "method", method)
        if self.origin is not None:
            if not isinstance(self.origin, str):
                raise UsageError("a request pattern's origin is text (https://host[:port])")
            origin = origin_of(self.origin)
            if not origin.startswith(("http://", "https://")) or origin.endswith("://"):
                raise UsageError(f"origin must be http(s)://host[:port], not {self.origin!r}")
            object.__setattr__(self, "origin", origin)
        if not isinstance(self.beacon, bool):
            raise UsageError("beacon is True or False")

    def matches(
        self, method: str, url: str, *, origin: str | None = None, beacon: bool = False
    ) -> bool:
        """Does the request match? ``origin``: the one a pattern without its own stands for."""
        if beacon is not self.beacon:
            return False
        if self.method != "*" and self.method != method.upper():
            return False
        if origin_of(url) != (self.origin or origin):
            return False
        return _path_regex(self.path).fullmatch(urlsplit(url).path or "/") is not None

    def describe(self) -> str:
        """``POST /notes/{id}/publish`` (with its origin when it names one)."""
        where = f"{self.origin}{self.path}" if self.origin else self.path
        return f"{self.method} {where}{' (beacon)' if self.beacon else ''}"


ANY_REQUEST = RequestPattern.ANY = RequestPattern("*", "*")


@dataclass(frozen=True, slots=True)
class SubmitWindow:
    """One effect's perform window, as the rule sees it.

    ``declared``: the requests the submit makes, in order, each at most
    once. ``sent``: the requests sent so far, as ``"METHOD url"`` (the URL
    as :func:`bare_url` gives it). ``allow_origins``: other origins whose
    mutating requests may pass during the perform.
    """

    origin: str
    declared: tuple[RequestPattern, ...] = (ANY_REQUEST,)
    sent: tuple[str, ...] = ()
    allow_origins: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.declared or not all(isinstance(p, RequestPattern) for p in self.declared):
            raise UsageError("an effect declares at least one request (RequestPattern values)")
        if any(p.beacon for p in self.declared):
            raise UsageError("a beacon is never an effect's submit: allowlist it instead")

    def advanced(self, method: str, url: str) -> SubmitWindow:
        """The window after its next declared request (``method url``) was sent."""
        return replace(self, sent=(*self.sent, _sent(method, url)))

    @property
    def missing(self) -> tuple[RequestPattern, ...]:
        """The declared requests not sent (yet)."""
        return self.declared[len(self.sent) :]

    @property
    def declares(self) -> bool:
        """The effect declared its requests (not the default: one of any kind)."""
        return self.declared != (ANY_REQUEST,)


def _sent(method: str, url: str) -> str:
    return f"{method.upper()} {bare_url(url)}"


class WireAction(enum.StrEnum):
    """What to do with one request (see :func:`judge_request`)."""

    PASS = "pass"
    SEND = "send"
    ALLOW = "allow"
    REFUSE = "refuse"


@dataclass(frozen=True, slots=True)
class WireDecision:
    """The rule's answer: the action, and why."""

    action: WireAction
    reason: RefusalReason | None = None
    """Set when refused."""
    step: int | None = None
    """For ``SEND``: which declared request (0-based)."""
    rule: RequestPattern | None = None
    """The declared request (``SEND``) or allowlist entry (``ALLOW``) that matched."""

    @property
    def outcome(self) -> str | None:
        """What wire evidence says of it: ``refused: …``, ``allowed: …``, or None."""
        if self.reason is not None:
            return f"refused: {self.reason.text}"
        if self.action is WireAction.ALLOW:
            return "allowed: allowlist" if self.rule is not None else "allowed: other origin"
        return None


_PASS = WireDecision(WireAction.PASS)


def judge_request(
    method: str,
    url: str,
    *,
    window: SubmitWindow | None,
    allow: Sequence[RequestPattern] = (),
    beacon: bool = False,
) -> WireDecision:
    """May this request leave the browser? Pure: the module's doc gives the rule."""
    method = method.upper()
    if method in SAFE_METHODS or urlsplit(url).scheme.lower() not in _DEFAULT_PORTS:
        return _PASS
    origin = None if window is None else window.origin
    if window is not None and len(window.sent) < len(window.declared):
        step = window.declared[len(window.sent)]
        if step.matches(method, url, origin=origin, beacon=beacon):
            return WireDecision(WireAction.SEND, step=len(window.sent), rule=step)
    for entry in allow:
        if entry.matches(method, url, origin=origin, beacon=beacon):
            return WireDecision(WireAction.ALLOW, rule=entry)
    if window is None:
        return WireDecision(WireAction.REFUSE, RefusalReason.OUTSIDE_EFFECT)
    if _sent(method, url) in window.sent:
        return WireDecision(WireAction.REFUSE, RefusalReason.SECOND)
    there = origin_of(url)
    if there != window.origin and there in window.allow_origins:
        return WireDecision(WireAction.ALLOW)
    for step in window.missing[1:]:
        if step.matches(method, url, origin=origin, beacon=beacon):
            return WireDecision(WireAction.REFUSE, RefusalReason.OUT_OF_ORDER, rule=step)
    if there != window.origin:
        return WireDecision(WireAction.REFUSE, RefusalReason.OTHER_ORIGIN)
    return WireDecision(WireAction.REFUSE, RefusalReason.UNDECLARED)


@dataclass(frozen=True, slots=True)
class WriteRefusal:
    """One mutating request the write firewall refused.

    ``url`` and ``page`` are held without userinfo, query or fragment
    (:func:`bare_url`; the ledger scrubs them again when it records).
    ``effect_key``: the effect whose perform window refused it, when known
    (``None`` outside any effect). ``via``: which firewall saw it
    (``"playwright"``, ``"cdp"``). ``at``: ledger time, set when recorded;
    ``id``: the ledger's number for it, set when recorded.
    """

    actor: str
    method: str
    url: str
    reason: RefusalReason
    page: str = ""
    effect_key: str | None = None
    via: str = "playwright"
    at: float = 0.0
    id: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.actor, str) or not self.actor.strip() or len(self.actor) > 200:
            raise UsageError("a refusal names its actor (1 to 200 characters)")
        if not isinstance(self.method, str) or not _TOKEN.match(self.method.upper()):
            raise UsageError(f"a refusal's method is an HTTP method, not {self.method!r}")
        if self.method.upper() in SAFE_METHODS:
            raise UsageError(f"{self.method} changes nothing: the firewall never refuses it")
        if not isinstance(self.url, str) or not isinstance(self.page, str):
            raise UsageError("a refusal's url and page are text")
        try:
            reason = RefusalReason(self.reason)
        except ValueError:
            raise UsageError(
                f"a refusal's reason is one of {[r.value for r in RefusalReason]}, "
                f"not {self.reason!r}"
            ) from None
        if self.effect_key is not None and not isinstance(self.effect_key, str):
            raise UsageError("a refusal's effect_key is text or None")
        if not isinstance(self.via, str) or not _VIA.match(self.via):
            raise UsageError(
                f"via is a short lower-case name ('playwright', 'cdp'), not {self.via!r}"
            )
        object.__setattr__(self, "method", self.method.upper())
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "url", bare_url(self.url) if "://" in self.url else self.url)
        object.__setattr__(self, "page", bare_url(self.page) if "://" in self.page else self.page)

    def describe(self) -> str:
        """``POST http://…/compose (outside an effect)``: for reasons and tables."""
        return f"{self.method} {self.url} ({self.reason.text})"
