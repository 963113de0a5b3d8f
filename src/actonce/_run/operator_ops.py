"""The store operations an operator run asks for: its lease and its stored summary.

Each is a :class:`~actonce._run.ops.StoreOp`: the driver calls the store
primitive it names with its fields, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._rules.operator import RunSummary
from .ops import StoreOp

__all__ = ["LeaseAcquire", "LeaseRelease", "LeaseRenew", "SummaryGet", "SummaryList", "SummaryPut"]


@dataclass(frozen=True, slots=True)
class LeaseAcquire(StoreOp):
    primitive: ClassVar[str] = "lease_acquire"
    name: str
    owner: str
    now: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class LeaseRenew(StoreOp):
    primitive: ClassVar[str] = "lease_renew"
    name: str
    token: int
    owner: str
    now: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class LeaseRelease(StoreOp):
    primitive: ClassVar[str] = "lease_release"
    name: str
    token: int
    owner: str
    now: float


@dataclass(frozen=True, slots=True)
class SummaryPut(StoreOp):
    primitive: ClassVar[str] = "summary_put"
    summary: RunSummary


@dataclass(frozen=True, slots=True)
class SummaryGet(StoreOp):
    primitive: ClassVar[str] = "summary_get"
    run_id: str


@dataclass(frozen=True, slots=True)
class SummaryList(StoreOp):
    primitive: ClassVar[str] = "summary_list"
    operator: str | None
    limit: int
