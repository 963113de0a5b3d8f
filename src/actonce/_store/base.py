"""The store interfaces every ledger backend implements, per domain.

A store knows rows, not rules: it offers a handful of atomic primitives and
leaves hashing, expiry, the lifecycle and the decision table to the layers
above. Each write primitive that changes an effect appends its event in the
same transaction. A lost race is a value, never an exception.

- :class:`EffectStore`: ``claim(new, expect, event, durable=)`` (insert if
  absent when ``expect`` is ``None``, else compare-and-set on ``(status,
  fence)``; answers who holds the key now), ``transition(expect, new, event,
  durable=)`` (compare-and-set; ``None`` when the row no longer matches),
  ``extend(key, expect, lease_expires_at)`` (an owner's fenced lease
  extension while it performs; no event: nothing changes state),
  ``append_event``, ``get``, ``match_prefix``, ``select`` (keyset pages:
  ``after=(updated_at, key)``; a store of your own is asked for ``after``
  only when a caller pages), ``open_effects``, ``counts`` (of chosen
  ``statuses``, likewise only when asked), ``duplicates``, ``events``,
  ``close``.
- :class:`LeaseStore`: operator leases (see :mod:`actonce._leases`).
- :class:`QueueStore`: work hand-out (see :mod:`actonce._queue`).
- :class:`RunStore`: operator run summaries (see :mod:`actonce._store.summary_ops`).
- :class:`FirewallStore`: the write firewall's refusals (see
  :mod:`actonce._store.firewall_ops`).
- :class:`IntentStore`, :class:`ApprovalStore`: versioned intents, approval
  packets and the holds of gated claims (see :mod:`actonce._store.intent_ops`,
  :mod:`actonce._store.approval_ops`, :mod:`actonce._store.gated_ops`).
  A claim may carry a ``gate`` (the store checks and holds it in the claim's
  transaction, or answers ``refused``); a transition may carry ``settle``
  (the store consumes or releases the effect's holds in its transaction).

``durable=True`` asks for the write to be on stable storage before the call
returns (the ``executing`` mark, a reviewer's decision: see
:data:`actonce._rules.lifecycle.DURABLE`). Write primitives raise
:class:`~actonce.LedgerUnavailable` when nothing was written and
:class:`~actonce.LedgerOutcomeUnknown` when a write may have committed.

:class:`Store` and :class:`AsyncStore` are all three together: what the
bundled backends (memory, SQLite, PostgreSQL) offer. A store of your own
needs only :class:`EffectStore` unless you use leases or queues; run
``actonce.testing.conformance`` against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from .._rules.approvals import ApprovalStatus, Packet
from .._rules.budgets import Pool, PoolUsage
from .._rules.firewall import RefusalReason, WriteRefusal
from .._rules.holds import Gate, Hold, Settle
from .._rules.intents import Intent, IntentRef, IntentStatus
from .._rules.model import EffectRecord, Event, Status
from .._rules.operator import RunSummary
from .records import ClaimResult, IntentRow, LeaseRecord, LeaseResult, QueueItem, RevisionResult

__all__ = [
    "ApprovalStore",
    "AsyncEffectStore",
    "AsyncLeaseStore",
    "AsyncQueueStore",
    "AsyncStore",
    "BudgetStore",
    "ClaimResult",
    "EffectStore",
    "Expect",
    "FirewallStore",
    "IntentStore",
    "LeaseStore",
    "OperationStore",
    "QueueStore",
    "RunStore",
    "Store",
]

Expect = tuple[Status, int] | None


@runtime_checkable
class EffectStore(Protocol):
    """Effects and their history, synchronous."""

    def get(self, key: str) -> EffectRecord | None: ...

    def match_prefix(self, prefix: str, limit: int = 2) -> list[str]: ...

    def claim(
        self,
        new: EffectRecord,
        expect: Expect,
        event: Event,
        *,
        durable: bool = False,
        gate: Gate | None = None,
    ) -> ClaimResult: ...

    def transition(
        self,
        expect: tuple[Status, int],
        new: EffectRecord,
        event: Event,
        *,
        durable: bool = False,
        settle: Settle | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> EffectRecord | None: ...

    def release(
        self,
        key: str,
        expect: tuple[Status, int],
        restore: EffectRecord | None,
        event: Event,
    ) -> bool: ...

    def extend(self, key: str, expect: tuple[Status, int], lease_expires_at: float) -> bool: ...

    def append_event(self, event: Event) -> None: ...

    def events(self, key: str) -> list[Event]: ...

    def select(
        self,
        statuses: Iterable[Status] | None = None,
        limit: int = 100,
        kind: str | None = None,
        after: tuple[float, str] | None = None,
    ) -> list[EffectRecord]: ...

    def open_effects(self, limit: int = 1000) -> list[EffectRecord]: ...

    def counts(self, statuses: Iterable[Status] | None = None) -> dict[Status, int]: ...

    def duplicates(self) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class LeaseStore(Protocol):
    """Operator leases, synchronous."""

    def lease_acquire(
        self, name: str, owner: str, now: float, expires_at: float
    ) -> LeaseResult: ...

    def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None: ...

    def lease_release(self, name: str, token: int, owner: str, now: float) -> bool: ...

    def lease_get(self, name: str) -> LeaseRecord | None: ...


@runtime_checkable
class QueueStore(Protocol):
    """Work hand-out, synchronous."""

    def queue_put(self, kind: str, payload: str, now: float) -> int: ...

    def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]: ...

    def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool: ...

    def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool: ...

    def queue_counts(self) -> dict[str, int]: ...


@runtime_checkable
class IntentStore(Protocol):
    """Versioned intents, synchronous."""

    def intent_get(self, intent_id: str, version: int | None = None) -> IntentRow | None: ...

    def intent_chain(self, intent_id: str) -> list[IntentRow]: ...

    def intent_list(
        self, status: IntentStatus | None, user: str | None, limit: int
    ) -> list[IntentRow]: ...

    def intent_create(self, intent: Intent, now: float, run_id: str) -> IntentRow: ...

    def intent_revise(
        self, old: IntentRef, new: Intent, changed: tuple[str, ...], now: float, run_id: str
    ) -> RevisionResult: ...

    def intent_touch(
        self, intent: Intent, changed: tuple[str, ...], now: float, run_id: str
    ) -> bool: ...

    def intent_withdraw(
        self, ref: IntentRef, by: str, reason: str, now: float, run_id: str
    ) -> RevisionResult: ...


@runtime_checkable
class ApprovalStore(Protocol):
    """Approval packets, reply-code attempts and holds, synchronous."""

    def approval_get(
        self, packet_id: str, *, lock: bool = False
    ) -> tuple[Packet, str | None, bool] | None: ...

    def approval_list(
        self,
        statuses: Iterable[ApprovalStatus] | None,
        user: str | None,
        limit: int,
        effect_key: str | None = None,
    ) -> list[Packet]: ...

    def approval_put(self, packet: Packet, code_digest: str | None, run_id: str) -> None: ...

    def approval_update(
        self,
        packet: Packet,
        to: ApprovalStatus,
        now: float,
        run_id: str,
        message: str,
        *,
        expect: ApprovalStatus | None = None,
        use_code: bool = False,
        **changes: Any,
    ) -> Packet | None: ...

    def approval_answer(
        self,
        packet: Packet,
        to: ApprovalStatus,
        by: str,
        now: float,
        run_id: str,
        note: str | None,
        use_code: bool,
        via: str,
    ) -> Packet | None: ...

    def approval_set_code(
        self, packet_id: str, code_digest: str, now: float, run_id: str
    ) -> bool: ...

    def approval_replace(
        self, old: Packet, reason: str, new: Packet, code_digest: str | None, run_id: str
    ) -> Packet | None: ...

    def code_failures(self, user: str, now: float, window: float, add: int) -> int: ...

    def code_packets(self, user: str) -> list[tuple[Packet, str, bool]]: ...

    def holds_of(self, key: str) -> list[Hold]: ...


@runtime_checkable
class BudgetStore(Protocol):
    """Budget pools and their usage per window, synchronous."""

    def pool_define(self, pool: Pool, now: float, run_id: str) -> Pool: ...

    def pool_get(self, name: str, *, lock: bool = False) -> Pool | None: ...

    def budget_usage(self, names: list[str] | None, now: float) -> list[PoolUsage]: ...


@runtime_checkable
class OperationStore(Protocol):
    """Operation definitions and receipts, synchronous."""

    def operation_put(
        self, op_id: str, intent: IntentRef | None, spec: str, now: float, run_id: str
    ) -> str: ...

    def operation_get(self, op_id: str) -> str | None: ...

    def receipt_put(
        self,
        op_id: str,
        state: str,
        text: str,
        data: str,
        now: float,
        run_id: str,
        due_at: float | None = None,
        update_only: bool = False,
    ) -> bool: ...

    def receipt_get(self, op_id: str) -> tuple[str, str, str, float] | None: ...

    def receipt_list(
        self, limit: int, before: float | None
    ) -> list[tuple[str, str, str, str, float]]: ...

    def operation_of(self, key: str) -> str | None: ...

    def operations_in(self, state: str, limit: int) -> list[tuple[str, float]]: ...

    def operations_due(self, now: float, limit: int) -> list[str]: ...

    def decisions_of(self, op_id: str) -> list[tuple[Any, ...]]: ...

    def decision_put(
        self,
        op_id: str,
        n: int,
        decision: str,
        step: str | None,
        attempt: int,
        by: str,
        now: float,
        reason: str,
        run_id: str,
    ) -> bool: ...


class RunStore(Protocol):
    """Operator run summaries, synchronous (see :mod:`actonce._store.summary_ops`)."""

    def summary_put(self, summary: RunSummary) -> bool: ...

    def summary_get(self, run_id: str) -> RunSummary | None: ...

    def summary_list(self, operator: str | None, limit: int) -> list[RunSummary]: ...


class FirewallStore(Protocol):
    """The write firewall's refusals, synchronous (see :mod:`actonce._store.firewall_ops`).

    ``refusal_put`` appends one refusal at ledger time ``now`` and answers it
    with its ``id`` and ``at``; ``refusal_list`` answers the newest first
    (``before``: an id, to page on); ``refusal_counts``: per actor, per reason.
    """

    def refusal_put(self, refusal: WriteRefusal, now: float) -> WriteRefusal: ...

    def refusal_list(
        self, actor: str | None, limit: int, before: int | None
    ) -> list[WriteRefusal]: ...

    def refusal_counts(self) -> dict[str, dict[RefusalReason, int]]: ...


@runtime_checkable
class Store(
    EffectStore,
    LeaseStore,
    QueueStore,
    IntentStore,
    ApprovalStore,
    BudgetStore,
    RunStore,
    FirewallStore,
    Protocol,
):
    """A synchronous ledger backend with every domain."""


@runtime_checkable
class AsyncEffectStore(Protocol):
    """Effects and their history, asynchronous (same primitives, awaitable)."""

    async def get(self, key: str) -> EffectRecord | None: ...

    async def match_prefix(self, prefix: str, limit: int = 2) -> list[str]: ...

    async def claim(
        self,
        new: EffectRecord,
        expect: Expect,
        event: Event,
        *,
        durable: bool = False,
        gate: Gate | None = None,
    ) -> ClaimResult: ...

    async def transition(
        self,
        expect: tuple[Status, int],
        new: EffectRecord,
        event: Event,
        *,
        durable: bool = False,
        settle: Settle | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> EffectRecord | None: ...

    async def release(
        self,
        key: str,
        expect: tuple[Status, int],
        restore: EffectRecord | None,
        event: Event,
    ) -> bool: ...

    async def extend(
        self, key: str, expect: tuple[Status, int], lease_expires_at: float
    ) -> bool: ...

    async def append_event(self, event: Event) -> None: ...

    async def events(self, key: str) -> list[Event]: ...

    async def select(
        self,
        statuses: Iterable[Status] | None = None,
        limit: int = 100,
        kind: str | None = None,
        after: tuple[float, str] | None = None,
    ) -> list[EffectRecord]: ...

    async def open_effects(self, limit: int = 1000) -> list[EffectRecord]: ...

    async def counts(self, statuses: Iterable[Status] | None = None) -> dict[Status, int]: ...

    async def duplicates(self) -> int: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class AsyncLeaseStore(Protocol):
    """Operator leases, asynchronous."""

    async def lease_acquire(
        self, name: str, owner: str, now: float, expires_at: float
    ) -> LeaseResult: ...

    async def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None: ...

    async def lease_release(self, name: str, token: int, owner: str, now: float) -> bool: ...

    async def lease_get(self, name: str) -> LeaseRecord | None: ...


@runtime_checkable
class AsyncQueueStore(Protocol):
    """Work hand-out, asynchronous."""

    async def queue_put(self, kind: str, payload: str, now: float) -> int: ...

    async def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]: ...

    async def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool: ...

    async def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool: ...

    async def queue_counts(self) -> dict[str, int]: ...


@runtime_checkable
class AsyncStore(AsyncEffectStore, AsyncLeaseStore, AsyncQueueStore, Protocol):
    """An asynchronous ledger backend with every domain."""
