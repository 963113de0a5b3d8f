"""``ledger.firewall``: the write firewall's refusals in the ledger, sync and async.

A write firewall (``actonce.browser.firewall`` for Playwright, the
DevTools-protocol one of the browser-use adapter) refuses every mutating
request of an agent's browser that belongs to no effect, and records each
refusal here::

    stored = ledger.firewall.record(WriteRefusal(
        actor="alice", method="POST", url="https://shop.example/compose",
        reason=RefusalReason.OUTSIDE_EFFECT, page="https://shop.example/compose",
        via="playwright"))
    ledger.firewall.refusals(actor="alice", limit=20)   # newest first
    ledger.firewall.counts()                            # {"alice": {RefusalReason.OUTSIDE_EFFECT: 1}}
    ledger.firewall.totals()                            # {"alice": 1}

The rule that decides is :func:`actonce.judge_request` (pure, one place).
"""

from __future__ import annotations

from ._rules.firewall import RefusalReason, WriteRefusal
from ._run import firewall as gen
from ._run.drive import AsyncDrives, Drives

__all__ = ["AsyncFirewallLog", "FirewallLog"]


def _totals(counts: dict[str, dict[RefusalReason, int]]) -> dict[str, int]:
    return {actor: sum(by.values()) for actor, by in counts.items()}


class FirewallLog:
    """The refusals of a :class:`~actonce.Ledger`'s write firewalls (``ledger.firewall``)."""

    def __init__(self, ledger: Drives) -> None:
        self._ledger = ledger

    def record(self, refusal: WriteRefusal) -> WriteRefusal:
        """Append one refusal; answer it as stored (its ``id``, the ledger time ``at``).

        Its URLs are kept as origin and path only, and scrubbed like every
        text from the world.
        """
        return self._ledger._drive(gen.record(refusal))

    def refusals(
        self, *, actor: str | None = None, limit: int = 100, before: int | None = None
    ) -> list[WriteRefusal]:
        """Refusals newest first, of one ``actor`` or all; page on with ``before=last.id``."""
        return self._ledger._drive(gen.refusals(actor, limit, before))

    def counts(self) -> dict[str, dict[RefusalReason, int]]:
        """How many refusals, per actor and reason."""
        return self._ledger._drive(gen.counts())

    def totals(self) -> dict[str, int]:
        """How many refusals per actor."""
        return _totals(self.counts())


class AsyncFirewallLog:
    """The refusals of an :class:`~actonce.AsyncLedger`; same names as :class:`FirewallLog`."""

    def __init__(self, ledger: AsyncDrives) -> None:
        self._ledger = ledger

    async def record(self, refusal: WriteRefusal) -> WriteRefusal:
        """See :meth:`FirewallLog.record`."""
        return await self._ledger._drive(gen.record(refusal))

    async def refusals(
        self, *, actor: str | None = None, limit: int = 100, before: int | None = None
    ) -> list[WriteRefusal]:
        """See :meth:`FirewallLog.refusals`."""
        return await self._ledger._drive(gen.refusals(actor, limit, before))

    async def counts(self) -> dict[str, dict[RefusalReason, int]]:
        """See :meth:`FirewallLog.counts`."""
        return await self._ledger._drive(gen.counts())

    async def totals(self) -> dict[str, int]:
        """See :meth:`FirewallLog.totals`."""
        return _totals(await self.counts())
