"""What ``Ledger`` and ``AsyncLedger`` share: configuration, plans, reconcile's triage.

:class:`LedgerBase` checks a ledger's configuration once (clock, registry,
fingerprint key, URL), plans an effect (:func:`actonce._effect.plan_of`),
says when a ledger on a database server should read the server's clock
again, and splits the open effects of a reconcile pass with the verifiers
the registry holds (:func:`actonce._run.reconcile.triage`). The two ledgers
(:mod:`actonce._ledger`) add their driver and their methods.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

from ._effect import Effect, fingerprint_key_from_env, plan_of, reconcile_plan
from ._registry import Registry
from ._registry import registry as default_registry
from ._rules.errors import UsageError
from ._rules.model import EffectRecord
from ._rules.secrets import FingerprintKey, mask_url
from ._run.clock import Clock, SystemClock
from ._run.plan import Plan
from ._run.reconcile import Work, triage
from ._run.telemetry import Telemetry

__all__ = ["ANCHOR_EVERY", "LedgerBase"]

#: Seconds between two readings of a database server's clock (PostgreSQL).
ANCHOR_EVERY = 60.0


class LedgerBase:
    """What both ledgers share: configuration, plans and the triage of reconcile."""

    def __init__(
        self,
        store: Any,
        *,
        clock: Clock | None,
        registry: Registry | None,
        fingerprint_key: FingerprintKey | None,
        url: str | None,
    ) -> None:
        if fingerprint_key is not None and not isinstance(fingerprint_key, FingerprintKey):
            raise UsageError(
                f"fingerprint_key must be a FingerprintKey, not {type(fingerprint_key).__name__}"
            )
        if registry is not None and not isinstance(registry, Registry):
            raise UsageError(f"registry must be a Registry, not {type(registry).__name__}")
        self.clock: Clock = clock or SystemClock()
        self.registry = registry or default_registry
        self.fingerprint_key = (
            fingerprint_key if fingerprint_key is not None else fingerprint_key_from_env()
        )
        self._url = url
        # A ledger on a database server compares windows on the server's clock.
        self._server_time = None if clock is not None else getattr(store, "server_time", None)

    _driver: Any  # Driver or AsyncDriver, set by the subclass

    @property
    def telemetry(self) -> Telemetry | None:
        """The observer of effect attempts (``None``: off, the default).

        Set it to an implementation of :class:`actonce.Telemetry` (e.g.
        ``actonce.otel.instrument(ledger)``): every run and reconcile of an
        effect is then told to it. Off, it costs one attribute check per run.
        """
        telemetry: Telemetry | None = self._driver.telemetry
        return telemetry

    @telemetry.setter
    def telemetry(self, value: Telemetry | None) -> None:
        if value is not None and not callable(getattr(value, "begin", None)):
            raise UsageError("telemetry needs a begin(run) method (see actonce.Telemetry)")
        self._driver.telemetry = value

    @property
    def url(self) -> str:
        """The ledger's URL, fit to print (credentials masked)."""
        return mask_url(self._url) if self._url else "(a store given directly)"

    def _plan(self, effect: Effect, run_id: str | None) -> Plan:
        if not isinstance(effect, Effect):
            raise UsageError(f"run() takes an actonce.Effect, not {type(effect).__name__}")
        return plan_of(effect, self.fingerprint_key, run_id)

    def _anchor_due(self) -> bool:
        if self._server_time is None or not isinstance(self.clock, SystemClock):
            return False
        since = self.clock.anchored_for()
        return since is None or since >= ANCHOR_EVERY

    def _triage(self, records: builtins.list[EffectRecord]) -> tuple[Work, int, builtins.list[str]]:
        """Split open effects into work for reconcile, live ones and unverifiable ones."""
        return triage(records, self.clock.now(), self.clock.trusted(), self._reconciler)

    def _reconciler(self, record: EffectRecord) -> tuple[Plan, Callable[[], Any]] | None:
        entry = self.registry.get(record.kind)
        if entry is None:
            return None
        return reconcile_plan(record, entry.policy), functools.partial(entry.verify, record)
