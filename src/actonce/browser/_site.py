"""The shape of one browser effect on one site: ``SiteEffect``.

A site effect is written once, as ``async`` methods over an
``AsyncBrowserSession`` (``session.page`` is a Playwright async ``Page``).
Both session types run it; the session adds what is the same for every site:
preflight, read-back comparison, the single click, error translation and
evidence. A subclass supplies:

- ``payload()``: the JSON-able intended effect (what a ledger hashes);
- ``prepare(session)``: navigate and fill the form — reversible, no submit;
- ``read_back(session)`` / ``expected()``: the prepared state as the page
  holds it, and what it must equal (compared after ``normalize``);
- ``control(session)``: the one control whose click is the side effect;
- ``confirm(session)``: optional wait for the site's confirmation;
- ``verify(session)``: read-only check returning ``Confirmed``/``Absent``/
  ``Unavailable``;
- ``verify_here(session)``: optional, the first verification after a
  confirmed perform read from the page the click left, without a page load
  (default ``None``: ``verify`` runs);
- ``listing()`` / ``read_listing(session)`` / ``judge(session, rows)``:
  optional, one page listing every object ``verify`` could count, shared by
  many effects of the kind, read once and judged per effect (``verify_many``,
  ``Listings`` for reconcile; default: no shared listing);
- ``precondition(session)``: optional business check (default True);
- ``requests``: optional, the mutating requests the submit makes, in order
  (``("POST /notes", "POST /notes/{id}/publish")``): each goes out at most
  once through the network guard, anything else is refused, and a submit
  left incomplete is an unknown outcome (see :func:`declared_requests`).
"""

from __future__ import annotations

import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from actonce import RequestPattern, UsageError, Verdict

if TYPE_CHECKING:
    from playwright.async_api import Locator

    from ._session import AsyncBrowserSession

__all__ = ["SiteEffect", "declared_requests", "normalize", "normalize_text", "request_pattern"]


def normalize_text(text: str) -> str:
    """The documented text normalisation used by read-back and verification.

    Unicode NFC, line endings to ``\\n``, leading and trailing whitespace of the
    whole text removed. Inner whitespace is kept: it is part of the payload.
    """
    return unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n").strip()


def normalize(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``normalize_text`` on every string value; ``None`` becomes ``""``."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            value = ""
        out[name] = normalize_text(value) if isinstance(value, str) else value
    return out


def request_pattern(spec: RequestPattern | str) -> RequestPattern:
    """``"POST /notes/{id}/publish"`` (or a ``RequestPattern``) as a ``RequestPattern``."""
    if isinstance(spec, RequestPattern):
        return spec
    if not isinstance(spec, str) or len(spec.split()) != 2:
        raise UsageError(f"a declared request is 'METHOD /path' or a RequestPattern, not {spec!r}")
    method, path = spec.split()
    return RequestPattern(method, path)


def declared_requests(specs: Sequence[RequestPattern | str]) -> tuple[RequestPattern, ...]:
    """The declared requests of an effect, in order; ``()`` means the default
    (one mutating request of any method to any path of the session's origin)."""
    if isinstance(specs, str):
        raise UsageError("requests is a sequence of 'METHOD /path' values, not one string")
    return tuple(request_pattern(spec) for spec in specs)


class SiteEffect(ABC):
    """One kind of side effect on one site. Subclass it; see the module doc."""

    kind: str = "effect"
    """Names the effect kind in payloads, evidence labels and errors."""

    requests: Sequence[RequestPattern | str] = ()
    """The mutating requests its submit makes, in order, each at most once:
    ``"POST /notes"``, ``"POST /notes/{id}/publish"`` (a placeholder is one
    path segment), or ``RequestPattern`` values. Empty (the default): one
    mutating request of any method to any path of the session's origin."""

    @abstractmethod
    def payload(self) -> dict[str, Any]:
        """The intended effect as JSON-able data."""

    async def precondition(self, session: AsyncBrowserSession) -> bool:
        """Business precondition, checked before the claim. Default: True."""
        return True

    @abstractmethod
    async def prepare(self, session: AsyncBrowserSession) -> None:
        """Open the target and fill the form. Must not submit anything."""

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        """The prepared state as the page holds it (keys as in ``expected``)."""
        return {}

    def expected(self) -> Mapping[str, Any]:
        """What ``read_back`` must return, before normalisation."""
        return {}

    @abstractmethod
    def control(self, session: AsyncBrowserSession) -> Locator:
        """The control whose single click is the side effect."""

    async def confirm(self, session: AsyncBrowserSession) -> None:
        """Wait for the site's confirmation after the click (optional)."""
        return None

    @abstractmethod
    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        """Read-only: does the intended result exist?"""

    async def verify_here(self, session: AsyncBrowserSession) -> Verdict | None:
        """Read-only, without navigating: the verdict the page the click left gives.

        Asked once per perform, for the first verification after a perform
        whose confirmation the page showed; ``None`` (the default) means
        "not enough here": ``verify`` runs as usual. Return a verdict only
        when this page alone counts every match, i.e. the site makes one
        object per accepted submit and the page is that object: the
        verification before the click (under the claim) proved no earlier
        match, and every later verification (a retry, reconcile) still
        counts on the site's own listing with ``verify``.
        """
        return None

    def listing(self) -> str | None:
        """Optional: the path of a page listing every object ``verify`` could count.

        The same path for the many effects of this kind one read of it can
        judge (the sandbox's invoices: ``/invoices``; its posts:
        ``/search?author=alice``). With ``read_listing`` and ``judge`` it
        lets ``verify_many`` and reconcile (``Listings``) verify many
        effects from one page load. ``None`` (the default): no shared
        listing, each effect runs ``verify``.
        """
        return None

    async def read_listing(self, session: AsyncBrowserSession) -> Any:
        """Read the listing page the session is on (``listing()``, loaded), whole.

        Return plain data (the rows) for ``judge``. Raise ``PageUnavailable``
        when the page does not show the whole list (cut short, a next
        page, a count that disagrees with the rows): every effect it would
        have judged is then ``Unavailable``. Read-only; no navigation.
        """
        self._no_listing()

    def judge(self, session: AsyncBrowserSession, rows: Any) -> Verdict:
        """This effect's verdict on rows ``read_listing`` returned.

        It must be the verdict ``verify`` gives on a page holding the same
        rows (write ``verify`` as a load of its own page, ``read_listing``
        and ``judge``, and both paths share the rule): match exactly what
        this effect made, count every match. Pure: no page access.
        """
        self._no_listing()

    def _no_listing(self) -> NoReturn:
        raise UsageError(
            f"{type(self).__name__} declares listing() but not read_listing() and judge()"
        )
