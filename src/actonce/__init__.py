"""actonce: make the side effects of automations safe to retry.

One intent produces at most one accepted external effect, or an explicit
unknown state before any further action.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ._approvals import Approvals, AsyncApprovals, AsyncIntents, Intents
from ._budgets import AsyncBudgets, Budgets
from ._effect import Effect
from ._firewall import AsyncFirewallLog, FirewallLog
from ._leases import AsyncLease, Lease
from ._ledger import AsyncLedger, Ledger
from ._operations import (
    AsyncOperation,
    AsyncOperations,
    Operation,
    Operations,
    Step,
    aprovider_retry,
    provider_retry,
)
from ._operator import AsyncHooks, AsyncOperator, EffectPlan, Hooks, Operator
from ._queue import AsyncWorkQueue, WorkQueue
from ._registry import Registry, registry
from ._rules.approvals import (
    Answered,
    AnswerResult,
    ApprovalStatus,
    Decision,
    Packet,
    Refusal,
    SigningKeys,
)
from ._rules.budgets import Pool, PoolUsage
from ._rules.errors import (
    ActOnceError,
    BadLedgerURL,
    HardStop,
    InvalidKey,
    InvalidTransition,
    LeaseError,
    LeaseHeld,
    LeaseLost,
    LedgerError,
    LedgerNotFound,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    NotPerformed,
    PayloadMismatch,
    ProtocolError,
    SchemaTooNew,
    SchemaTooOld,
    UnknownEffect,
    UsageError,
)
from ._rules.facts import Fact, Freshness
from ._rules.firewall import (
    RefusalReason,
    RequestPattern,
    SubmitWindow,
    WireAction,
    WireDecision,
    WriteRefusal,
    bare_url,
    judge_request,
    origin_of,
)
from ._rules.holds import Draw, Gate, Hold, HoldKind, HoldStatus
from ._rules.intents import Intent, IntentRef, IntentStatus, intent_key
from ._rules.keys import EffectKey, canonical_json, effect_key
from ._rules.model import (
    Absent,
    Confirmed,
    EffectRecord,
    Event,
    EventType,
    Outcome,
    Policy,
    ReconcileReport,
    Resolution,
    RunResult,
    Status,
    Unavailable,
    Verdict,
)
from ._rules.operations import (
    Assessment,
    DecisionRecord,
    OperationDecision,
    OperationState,
    Role,
)
from ._rules.operator import ItemClass, RunStage, RunStatus, RunStop, RunSummary, SummaryItem
from ._rules.receipts import Receipt
from ._rules.scrub import scrub_json, scrub_stored
from ._rules.secrets import FingerprintKey, is_secret_name, mask_url, scrub_text, scrub_url
from ._run.approvals import ApprovalRequest, IntentRevision
from ._run.clock import Clock, SystemClock
from ._run.operation import OperationResult
from ._run.operation_view import OperationView
from ._run.telemetry import Telemetry, TelemetryRun, TelemetryScope
from ._store.base import (
    AsyncEffectStore,
    AsyncLeaseStore,
    AsyncQueueStore,
    AsyncStore,
    EffectStore,
    FirewallStore,
    LeaseStore,
    QueueStore,
    RunStore,
    Store,
)
from ._store.memory import MemoryStore
from ._store.records import (
    ClaimResult,
    IntentRow,
    ItemStatus,
    LeaseRecord,
    LeaseResult,
    QueueItem,
    RevisionResult,
)
from ._store.sqlite import SQLiteStore
from ._store.threads import threaded
from ._store.urls import open_store

if TYPE_CHECKING:
    from ._store.postgres import AsyncPostgresStore, PostgresStore

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The PostgreSQL stores need psycopg (``pip install 'actonce[postgres]'``):
    # imported on first use, so that ``import actonce`` never needs it.
    if name in ("PostgresStore", "AsyncPostgresStore"):
        from ._store import postgres

        return getattr(postgres, name)
    raise AttributeError(f"module 'actonce' has no attribute {name!r}")


def open_ledger(
    url: str | None = None,
    *,
    create: bool = False,
    readonly: bool = False,
    fingerprint_key: FingerprintKey | None = None,
    signing_keys: SigningKeys | None = None,
) -> Ledger:
    """Open a ledger by URL or path.

    ``sqlite:///path.db`` (or a plain path), ``postgresql://...``, or
    ``memory://``. With no URL: ``$ACTONCE_LEDGER``, else ``actonce.db`` in
    the current folder. An older schema is migrated when opened for writing.

    A ledger is made once: ``create=True`` (or ``actonce init``) makes one
    where none exists; without it a missing ledger is
    :class:`LedgerNotFound`, so that a deleted or moved ledger is never
    silently replaced by an empty one. ``readonly=True`` never creates,
    migrates or writes.
    """
    return Ledger.open(
        url,
        create=create,
        readonly=readonly,
        fingerprint_key=fingerprint_key,
        signing_keys=signing_keys,
    )


__all__ = [
    "Absent",
    "ActOnceError",
    "AnswerResult",
    "Answered",
    "ApprovalRequest",
    "ApprovalStatus",
    "Approvals",
    "Assessment",
    "AsyncApprovals",
    "AsyncBudgets",
    "AsyncEffectStore",
    "AsyncFirewallLog",
    "AsyncHooks",
    "AsyncIntents",
    "AsyncLease",
    "AsyncLeaseStore",
    "AsyncLedger",
    "AsyncOperation",
    "AsyncOperations",
    "AsyncOperator",
    "AsyncPostgresStore",
    "AsyncQueueStore",
    "AsyncStore",
    "AsyncWorkQueue",
    "BadLedgerURL",
    "Budgets",
    "ClaimResult",
    "Clock",
    "Confirmed",
    "Decision",
    "DecisionRecord",
    "Draw",
    "Effect",
    "EffectKey",
    "EffectPlan",
    "EffectRecord",
    "EffectStore",
    "Event",
    "EventType",
    "Fact",
    "FingerprintKey",
    "FirewallLog",
    "FirewallStore",
    "Freshness",
    "Gate",
    "HardStop",
    "Hold",
    "HoldKind",
    "HoldStatus",
    "Hooks",
    "Intent",
    "IntentRef",
    "IntentRevision",
    "IntentRow",
    "IntentStatus",
    "Intents",
    "InvalidKey",
    "InvalidTransition",
    "ItemClass",
    "ItemStatus",
    "Lease",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LeaseRecord",
    "LeaseResult",
    "LeaseStore",
    "Ledger",
    "LedgerError",
    "LedgerNotFound",
    "LedgerOutcomeUnknown",
    "LedgerUnavailable",
    "MemoryStore",
    "NotPerformed",
    "Operation",
    "OperationDecision",
    "OperationResult",
    "OperationState",
    "OperationView",
    "Operations",
    "Operator",
    "Outcome",
    "Packet",
    "PayloadMismatch",
    "Policy",
    "Pool",
    "PoolUsage",
    "PostgresStore",
    "ProtocolError",
    "QueueItem",
    "QueueStore",
    "Receipt",
    "ReconcileReport",
    "Refusal",
    "RefusalReason",
    "Registry",
    "RequestPattern",
    "Resolution",
    "RevisionResult",
    "Role",
    "RunResult",
    "RunStage",
    "RunStatus",
    "RunStop",
    "RunStore",
    "RunSummary",
    "SQLiteStore",
    "SchemaTooNew",
    "SchemaTooOld",
    "SigningKeys",
    "Status",
    "Step",
    "Store",
    "SubmitWindow",
    "SummaryItem",
    "SystemClock",
    "Telemetry",
    "TelemetryRun",
    "TelemetryScope",
    "Unavailable",
    "UnknownEffect",
    "UsageError",
    "Verdict",
    "WireAction",
    "WireDecision",
    "WorkQueue",
    "WriteRefusal",
    "__version__",
    "aprovider_retry",
    "bare_url",
    "canonical_json",
    "effect_key",
    "intent_key",
    "is_secret_name",
    "judge_request",
    "mask_url",
    "open_ledger",
    "open_store",
    "origin_of",
    "provider_retry",
    "registry",
    "scrub_json",
    "scrub_stored",
    "scrub_text",
    "scrub_url",
    "threaded",
]


def _own_public_names() -> None:
    # Public objects say where users find them: ``actonce.Ledger``, not
    # ``actonce._ledger.Ledger`` (reprs, docs, pickles of enums).
    for name in __all__:
        obj = globals().get(name)
        if getattr(obj, "__module__", "").startswith("actonce._"):
            with contextlib.suppress(AttributeError, TypeError):  # builtins refuse
                obj.__module__ = "actonce"


_own_public_names()
