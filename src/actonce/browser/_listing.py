"""Many effects of one kind verified from one read of a shared listing.

A site effect may declare a listing (``SiteEffect.listing``): one page that
lists every object its ``verify`` could count, the same page for many
effects of its kind. ``verify_many(session, sites)`` loads each listing
once and asks every effect's ``judge`` for its verdict on the rows
``read_listing`` read; ``Listings`` does the same for reconcile, one read
of each listing per pass.

What one read may never do is turn an uncertain listing into a verdict:

- a listing that fails to load, shows a wall, or is cut short
  (``read_listing`` raised) is ``Unavailable`` for every effect it would
  have judged — never an absence;
- each verdict is the effect's own ``judge`` on the rows, the rule its
  ``verify`` applies to the same rows on its own page;
- in reconcile an absence counts only when the listing was read after the
  effect's settle window had passed (on the ledger's clock, read before the
  page load began); an absence read earlier is looked at again by the
  effect's own ``verify``, as if there were no listing. Each effect gets the
  listing's verdict once per pass: a second look at it within the pass (a
  retry, a record that changed under the pass) is its own ``verify``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from playwright.async_api import Error as PlaywrightError

from actonce import (
    Absent,
    Confirmed,
    EffectRecord,
    HardStop,
    Policy,
    Registry,
    Unavailable,
    Verdict,
)

from ._errors import BrowserError, first_line
from ._site import SiteEffect

if TYPE_CHECKING:
    from ._session import AsyncBrowserSession
    from ._sync import BrowserSession

__all__ = ["Listings", "verify_many"]

RecordVerifier = Callable[[EffectRecord], Verdict | Awaitable[Verdict]]


class LedgerClock(Protocol):
    """What ``Listings`` reads of the ledger's clock (``ledger.clock``)."""

    def now(self) -> float: ...

    def trusted(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Read:
    """One read of a listing: its rows, or why there are none."""

    rows: Any
    failure: str | None
    at: float
    """The ledger clock before the page load began (0.0: no clock)."""
    trusted: bool


def _why(exc: BaseException) -> str:
    if isinstance(exc, HardStop):
        return exc.reason
    if isinstance(exc, PlaywrightError):
        return first_line(exc)
    return str(exc) or type(exc).__name__


async def _read(
    session: AsyncBrowserSession, site: SiteEffect, path: str, clock: LedgerClock | None
) -> _Read:
    at, trusted = (clock.now(), clock.trusted()) if clock is not None else (0.0, False)
    try:
        await session.goto(path)
        rows = await site.read_listing(session)
    except (HardStop, PlaywrightError, BrowserError) as exc:
        return _Read(None, f"{path}: {_why(exc)}", at, trusted)
    return _Read(rows, None, at, trusted)


def _judged(session: AsyncBrowserSession, site: SiteEffect, read: _Read) -> Verdict:
    if read.failure is not None:
        return Unavailable(f"cannot check: the shared listing {read.failure}")
    try:
        verdict = site.judge(session, read.rows)
    except (HardStop, BrowserError, LookupError, TypeError, ValueError) as exc:
        return Unavailable(f"cannot check: {site.kind} cannot judge the listing: {_why(exc)}")
    if not isinstance(verdict, (Confirmed, Absent, Unavailable)):
        return Unavailable(f"cannot check: judge returned {type(verdict).__name__}, not a verdict")
    return verdict


async def verify_many(session: AsyncBrowserSession, sites: Sequence[SiteEffect]) -> list[Verdict]:
    """The verdict of every site effect, in order; one page load per shared listing.

    Effects whose ``listing()`` is the same path (and of the same class)
    share one read of it; an effect without a listing runs its own
    ``verify``. A listing that fails or is cut short is ``Unavailable`` for
    all it would have judged. Read-only, like ``verify``.
    """
    reads: dict[tuple[type, str], _Read] = {}
    verdicts: list[Verdict] = []
    for site in sites:
        path = site.listing()
        if path is None:
            verdicts.append(await session.effect(site).verify())
            continue
        read = reads.get((type(site), path))
        if read is None:
            read = reads[type(site), path] = await _read(session, site, path, None)
        verdicts.append(_judged(session, site, read))
    return verdicts


def _settled(record: EffectRecord, policy: Policy, read: _Read) -> bool:
    """Whether an absence read at ``read.at`` is past the record's settle window.

    The same rule the decision table applies to reconcile's look, at the
    time the listing was read instead of the time the verdict is handed
    over; in doubt (no mark time, an untrusted clock) it is not.
    """
    if record.executing_at is None:
        return True  # never marked: nothing was performed, no window to wait out
    since = read.at - max(record.executing_at, record.lease_expires_at)
    return read.trusted and since >= policy.settle_seconds


class Listings:
    """Reconcile's verifiers for site effects, one read of each listing per pass.

    ::

        listings = Listings(session, ledger.clock)
        listings.register(ledger.registry, "invoice", invoice_of, policy=INVOICE)
        with listings.one_pass():
            report = ledger.reconcile()

    ``invoice_of(record)`` makes the site effect a stored record describes.
    Inside ``one_pass()`` the first effect of a listing loads it; the
    others are judged on the same rows. Outside it (and for an effect
    without a listing) each effect runs its own ``verify``. A sync
    ``BrowserSession`` makes sync verifiers (for ``Ledger``), an
    ``AsyncBrowserSession`` async ones (for ``AsyncLedger``).
    """

    def __init__(self, session: BrowserSession | AsyncBrowserSession, clock: LedgerClock) -> None:
        self.session = session
        self.clock = clock
        self._reads: dict[tuple[type, str], _Read] | None = None
        self._served: set[str] = set()
        self.loads = 0
        """Listing page loads so far (all passes)."""

    @contextmanager
    def one_pass(self) -> Iterator[None]:
        """A reconcile pass: each listing is read at most once inside it."""
        self._reads, self._served = {}, set()
        try:
            yield
        finally:
            self._reads, self._served = None, set()

    def register(
        self,
        registry: Registry,
        kind: str,
        make: Callable[[EffectRecord], SiteEffect],
        *,
        policy: Policy | None = None,
    ) -> None:
        """Register reconcile's verifier of ``kind``: ``make(record)``, verified here."""
        policy = policy or Policy()
        registry.register(kind, self._verifier(make, policy), policy=policy)

    def _verifier(
        self, make: Callable[[EffectRecord], SiteEffect], policy: Policy
    ) -> RecordVerifier:
        from ._session import AsyncBrowserSession

        session = self.session
        if isinstance(session, AsyncBrowserSession):
            return functools.partial(self._verify, session, make=make, policy=policy)

        def verify(record: EffectRecord) -> Verdict:
            return session.run(
                functools.partial(self._verify, record=record, make=make, policy=policy)
            )

        return verify

    async def _verify(
        self,
        session: AsyncBrowserSession,
        record: EffectRecord,
        *,
        make: Callable[[EffectRecord], SiteEffect],
        policy: Policy,
    ) -> Verdict:
        site = make(record)
        path = site.listing()
        reads = self._reads
        if reads is None or path is None or record.key in self._served:
            return await session.effect(site).verify()
        self._served.add(record.key)
        read = reads.get((type(site), path))
        if read is None:
            self.loads += 1
            read = reads[type(site), path] = await _read(session, site, path, self.clock)
        verdict = _judged(session, site, read)
        if isinstance(verdict, Absent) and not _settled(record, policy, read):
            # Read before this effect's window passed: it proves nothing yet.
            return await session.effect(site).verify()
        return verdict
