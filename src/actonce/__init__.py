"""actonce: make the side effects of automations safe to retry.

One intent produces at most one accepted external effect, or an explicit
unknown state before any further action.
"""

from __future__ import annotations

from ._clock import Clock, SystemClock
from ._errors import (
    ActOnceError,
    BadLedgerURL,
    HardStop,
    InvalidKey,
    InvalidTransition,
    LeaseError,
    LeaseHeld,
    LeaseLost,
    LedgerError,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    NotPerformed,
    PayloadMismatch,
    ProtocolError,
    SchemaTooNew,
    UnknownEffect,
    UsageError,
)
from ._keys import EffectKey, canonical_json, effect_key
from ._leases import AsyncLease, Lease, LeaseRecord
from ._ledger import AsyncLedger, Effect, Ledger, ReconcileReport, Resolution
from ._model import (
    Absent,
    Confirmed,
    EffectRecord,
    Event,
    EventType,
    Outcome,
    Policy,
    RunResult,
    Status,
    Unavailable,
    Verdict,
)
from ._queue import AsyncWorkQueue, ItemStatus, QueueItem, WorkQueue
from ._registry import Registry, registry

__version__ = "0.1.0"


def open_ledger(url: str | None = None) -> Ledger:
    """Open a ledger by URL or path.

    ``sqlite:///path.db`` (or a plain path), ``postgresql://...``, or
    ``memory://``. With no URL: ``$ACTONCE_LEDGER``, else ``actonce.db`` in
    the current folder. Migrations run automatically.
    """
    return Ledger.open(url)


__all__ = [
    "Absent",
    "ActOnceError",
    "AsyncLease",
    "AsyncLedger",
    "AsyncWorkQueue",
    "BadLedgerURL",
    "Clock",
    "Confirmed",
    "Effect",
    "EffectKey",
    "EffectRecord",
    "Event",
    "EventType",
    "HardStop",
    "InvalidKey",
    "InvalidTransition",
    "ItemStatus",
    "Lease",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LeaseRecord",
    "Ledger",
    "LedgerError",
    "LedgerOutcomeUnknown",
    "LedgerUnavailable",
    "NotPerformed",
    "Outcome",
    "PayloadMismatch",
    "Policy",
    "ProtocolError",
    "QueueItem",
    "ReconcileReport",
    "Registry",
    "Resolution",
    "RunResult",
    "SchemaTooNew",
    "Status",
    "SystemClock",
    "Unavailable",
    "UnknownEffect",
    "UsageError",
    "Verdict",
    "WorkQueue",
    "__version__",
    "canonical_json",
    "effect_key",
    "open_ledger",
    "registry",
]
