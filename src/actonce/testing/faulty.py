"""A real store whose chosen writes fail: before they happen, or after they committed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._rules.errors import LedgerOutcomeUnknown, LedgerUnavailable
from .._rules.model import EffectRecord, Event, Status
from .._store.base import EffectStore
from .._store.records import ClaimResult

__all__ = ["FaultyStore"]


class FaultyStore:
    """A real store whose chosen writes fail, for ledger-failure tests.

    ``fail("transition", when="before")`` makes the next ``transition`` raise
    :class:`LedgerUnavailable` without writing; ``when="after"`` lets it
    commit and then raises :class:`LedgerOutcomeUnknown` (the commit's
    acknowledgement was lost). ``match`` narrows which call fails (it gets the
    new record), e.g. ``lambda r: r.status is Status.EXECUTING``.
    """

    def __init__(self, inner: EffectStore) -> None:
        self.inner = inner
        self._plans: list[tuple[str, str, Callable[[EffectRecord], bool]]] = []

    def fail(
        self,
        method: str,
        *,
        when: str = "before",
        match: Callable[[EffectRecord], bool] | None = None,
    ) -> None:
        """Arm one failure of ``method`` (``claim`` or ``transition``)."""
        if method not in ("claim", "transition") or when not in ("before", "after"):
            raise ValueError("fail('claim'|'transition', when='before'|'after')")
        self._plans.append((method, when, match or (lambda _r: True)))

    def _armed(self, method: str, new: EffectRecord) -> str | None:
        for i, (m, when, match) in enumerate(self._plans):
            if m == method and match(new):
                del self._plans[i]
                return when
        return None

    def claim(
        self,
        new: EffectRecord,
        expect: tuple[Status, int] | None,
        event: Event,
        *,
        durable: bool = False,
        gate: Any = None,
    ) -> ClaimResult:
        when = self._armed("claim", new)
        if when == "before":
            raise LedgerUnavailable("injected: claim failed before commit")
        result = self.inner.claim(new, expect, event, durable=durable, gate=gate)
        if when == "after":
            raise LedgerOutcomeUnknown("injected: claim committed, acknowledgement lost")
        return result

    def transition(
        self,
        expect: tuple[Status, int],
        new: EffectRecord,
        event: Event,
        *,
        durable: bool = False,
        settle: Any = None,
        fields: tuple[str, ...] | None = None,
    ) -> EffectRecord | None:
        when = self._armed("transition", new)
        if when == "before":
            raise LedgerUnavailable("injected: transition failed before commit")
        result = self.inner.transition(
            expect, new, event, durable=durable, settle=settle, fields=fields
        )
        if when == "after":
            raise LedgerOutcomeUnknown("injected: transition committed, acknowledgement lost")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
