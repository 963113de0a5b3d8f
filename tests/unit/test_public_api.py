"""The public surface: exported names are deliberate, and typed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import actonce
import actonce.testing

ROOT = Path(__file__).resolve().parents[2]

EXPORTED = [
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


def test_all_is_sorted_and_equals_the_committed_list() -> None:
    assert actonce.__all__ == sorted(actonce.__all__)
    assert actonce.__all__ == EXPORTED, (
        "the public surface changed: update EXPORTED here on purpose "
        f"(added {sorted(set(actonce.__all__) - set(EXPORTED))}, "
        f"removed {sorted(set(EXPORTED) - set(actonce.__all__))})"
    )


@pytest.mark.parametrize("module", [actonce, actonce.testing])
def test_every_exported_name_exists_and_public_ones_are_documented(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        value = getattr(module, name)
        if name.startswith("__") or not callable(value):
            continue
        assert value.__doc__, f"{module.__name__}.{name} has no docstring"  # type: ignore[attr-defined]


def test_exported_objects_claim_the_public_module() -> None:
    # Private modules are an implementation detail; errors say where they live.
    for name in ("Ledger", "Effect", "ActOnceError", "Status"):
        assert getattr(actonce, name).__module__ == "actonce"


@pytest.mark.skipif(shutil.which("mypy") is None, reason="mypy is not installed")
def test_typing_probe_passes_mypy_strict() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "tests/typing/api.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
