"""The operator loop of seed 000 ("A complete run"), as one generator of typed operations.

Theory of operation. ``operate(config)`` is the whole run, written once for
``Operator`` and ``AsyncOperator``. It never does I/O: it yields store
operations (the lease, the reconcile listing, the budgets, the summary) and
``Hook`` operations that the facade's *host* answers: the user's stages
(``owns``, ``identity``, ``observe``, ``rank``, ``label``, ``quality``,
``plan``) and the ledger work they lead to (``reconcile`` one record,
``run`` one effect, ``source``/``advance`` over a plan's effects). The
drivers answer both; the async driver awaits what is awaitable.

The stages, and what each guarantees:

1. **lease**: take the operator's lease (fenced). Held by another run:
   ``locked_skip``, nothing else happens.
2. **reconcile**: every open effect of the operator's kinds that it owns is
   verified and moved on first. Whatever is still open or ambiguous after
   that (``claimed``, ``executing``, ``unknown``, ``needs_review``) is a hard
   stop: new work never starts while an effect of this operator may have
   happened (seed 000, section 7). The summary names each one and why.
3. **identity**: the hook confirms who the run acts as; doubt is a hard stop.
4. **operations**: each operation with work due (a message to resend after
   its backoff, a queued undo) that the ``resume`` hook hands back: one pass.
5. **observe**, **rank**: the candidates, in the order worth trying (a model
   may rank; it never touches the guarantees below).
6. per candidate: **quality** (a reason not to do it is a quality skip,
   recorded, not an error) → **plan** (its effects; a thread's parts one
   after another, each seeing the result of the one before) → **budget**
   (a read-only pre-check: no room, no claim) → **act** (``Ledger.run``:
   the reservation is taken in the claim's transaction, consumed when the
   effect is confirmed, held while in doubt).
   An effect that ends ambiguous stops the run: nothing new starts until it
   is reconciled or reviewed. A hard stop ends the run.
7. **heartbeat** between steps and right before every act: a lost lease
   stops the run at once, before any further mutation.
8. the lease is given back (also when a hook crashed: the crash is re-raised
   after), and the :class:`~actonce._rules.operator.RunSummary` is stored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .._rules.budgets import PoolUsage, over
from .._rules.errors import ActOnceError, HardStop, LedgerError, PayloadMismatch, UsageError
from .._rules.model import EffectRecord, RunResult, Status
from .._rules.operator import (
    AMBIGUOUS_STATUSES,
    ItemClass,
    RunStage,
    RunStatus,
    RunStop,
    RunSummary,
    SummaryItem,
    classify,
    may_have_happened,
    open_why,
)
from .._rules.text import world_text
from .._store.records import LeaseRecord, LeaseResult
from .budgets import BudgetUsage
from .operation_review import OperationsDue, OperationsIn
from .operator_ops import (
    LeaseAcquire,
    LeaseRelease,
    LeaseRenew,
    SummaryGet,
    SummaryList,
    SummaryPut,
)
from .ops import NOW, Get, Hook, Hooked, Op, OpenEffects, Select, Tick

__all__ = [
    "Config",
    "LeaseAcquire",
    "LeaseRelease",
    "LeaseRenew",
    "SummaryGet",
    "SummaryList",
    "SummaryPut",
    "operate",
]

Gen = Generator[Op, Any, Any]


@dataclass(frozen=True, slots=True)
class Config:
    """One operator run's settings (the facade checks them)."""

    name: str
    owner: str
    ttl: float
    run_id: str
    kinds: frozenset[str]
    limit: int = 1000


# --- control flow inside the run ------------------------------------------------------------


class _Stopped(Exception):
    """The run stops here (a hard stop); the summary records ``stop``."""

    def __init__(self, stop: RunStop) -> None:
        super().__init__(stop.reason)
        self.stop = stop


class _Crash(Exception):
    """A hook raised a ``BaseException``: give the lease back, then re-raise it."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(repr(exc))
        self.exc = exc


@dataclass(slots=True)
class _Run:
    cfg: Config
    started: float
    lease: LeaseRecord | None = None
    token: int = 0
    stage: RunStage = RunStage.LEASE
    items: list[SummaryItem] = field(default_factory=list)
    stops: list[RunStop] = field(default_factory=list)
    reconciled: dict[str, int] = field(default_factory=dict)
    candidates: int = 0
    held_by: str | None = None
    owned: dict[str, bool] = field(default_factory=dict)
    operations: dict[str, int] = field(default_factory=dict)


def _text(value: Any, limit: int = 500) -> str:
    return world_text(value, limit=limit)


def _error(exc: BaseException) -> str:
    if isinstance(exc, HardStop):
        return _text(exc.reason)
    return _text(f"{type(exc).__name__}: {exc}")


def _call(name: str, *args: Any) -> Generator[Op, Any, Hooked]:
    """Ask the host's hook ``name``; a crash inside it ends the loop (after cleanup)."""
    got: Hooked = yield Hook(name, args)
    if got.error is not None and not isinstance(got.error, Exception):
        raise _Crash(got.error)
    return got


# --- the run ----------------------------------------------------------------------------------


def operate(cfg: Config) -> Generator[Op, Any, RunSummary]:
    """One operator run, start to summary (see the module's doc)."""
    tick: Tick = yield NOW
    run = _Run(cfg, tick.now)
    try:
        got: LeaseResult = yield LeaseAcquire(cfg.name, cfg.owner, tick.now, tick.now + cfg.ttl)
    except LedgerError as exc:
        run.stops.append(RunStop(RunStage.LEASE, f"the lease could not be taken: {_error(exc)}"))
        return (yield from _finish(run))
    if not got.acquired:
        holder = got.record
        run.held_by = "another run" if holder is None else _text(holder.owner, 200)
        return (yield from _finish(run))
    assert got.record is not None
    run.lease, run.token = got.record, got.record.token
    crash: BaseException | None = None
    try:
        yield from _stages(run)
    except _Stopped as stopped:
        run.stops.append(stopped.stop)
    except _Crash as crashed:
        crash = crashed.exc
    except LedgerError as exc:  # a listing or a pre-check the store could not answer
        run.stops.append(RunStop(run.stage, f"the ledger could not answer: {_error(exc)}"))
    yield from _release(run)
    if crash is not None:
        raise crash
    return (yield from _finish(run))


def _stages(run: _Run) -> Gen:
    yield from _reconcile(run)
    yield from _beat(run)
    run.stage = RunStage.IDENTITY
    got = yield from _call("identity")
    if got.error is not None:
        raise _Stopped(RunStop(RunStage.IDENTITY, f"identity in doubt: {_error(got.error)}"))
    if got.value is False or isinstance(got.value, str):
        why = "not confirmed" if got.value is False else (_text(got.value) or "not confirmed")
        raise _Stopped(RunStop(RunStage.IDENTITY, f"identity in doubt: {why}"))
    yield from _operations(run)
    yield from _beat(run)
    run.stage = RunStage.OBSERVE
    observed = yield from _listed(run, "observe")
    run.stage = RunStage.RANK
    ranked = yield from _listed(run, "rank", observed)
    run.candidates = len(ranked)
    for candidate in ranked:
        yield from _beat(run)
        yield from _candidate(run, candidate)


def _listed(run: _Run, name: str, *args: Any) -> Generator[Op, Any, list[Any]]:
    got = yield from _call(name, *args)
    try:
        if got.error is not None:
            raise got.error
        if got.value is None:
            raise UsageError("it returned None, not its candidates (an empty list: none)")
        return list(got.value)
    except Exception as exc:
        raise _Stopped(
            RunStop(run.stage, f"{name} failed, nothing was done: {_error(exc)}")
        ) from None


def _beat(run: _Run) -> Gen:
    """Renew the lease; a lost lease stops the run before any further mutation."""
    held = run.lease
    assert held is not None
    tick: Tick = yield NOW
    cfg = run.cfg
    try:
        renewed: LeaseRecord | None = yield LeaseRenew(
            cfg.name, held.token, cfg.owner, tick.now, tick.now + cfg.ttl
        )
    except LedgerError as exc:
        raise _Stopped(
            RunStop(
                RunStage.HEARTBEAT,
                f"the lease could not be renewed ({_error(exc)}); stopped "
                "before any further mutation",
            )
        ) from None
    if renewed is None:
        run.lease = None
        raise _Stopped(
            RunStop(
                RunStage.HEARTBEAT,
                f"lease {cfg.name!r} was lost (it expired and another run "
                "took it over); stopped before any further mutation",
            )
        )
    run.lease = renewed


def _release(run: _Run) -> Gen:
    held = run.lease
    if held is None:
        return
    run.lease = None
    tick: Tick = yield NOW
    with contextlib.suppress(ActOnceError):  # its expiry frees it
        yield LeaseRelease(run.cfg.name, held.token, run.cfg.owner, tick.now)


# --- reconcile first ------------------------------------------------------------------------


def _mine(run: _Run, records: Iterable[EffectRecord]) -> Generator[Op, Any, list[EffectRecord]]:
    """The records of the operator's kinds that its ``owns`` hook claims."""
    out = []
    for record in records:
        if record.kind not in run.cfg.kinds:
            continue
        if record.key not in run.owned:
            got = yield from _call("owns", record)
            # A hook that cannot say counts the effect as this operator's: it may block.
            run.owned[record.key] = got.error is not None or bool(got.value)
        if run.owned[record.key]:
            out.append(record)
    return out


def _reconcile(run: _Run) -> Gen:
    run.stage = RunStage.RECONCILE
    cfg = run.cfg
    found: list[EffectRecord] = yield OpenEffects(cfg.limit)
    notes: dict[str, str] = {}
    for record in (yield from _mine(run, found)):
        yield from _beat(run)
        got = yield from _call("reconcile", record, cfg.run_id)
        if got.error is not None:
            notes[record.key] = f"reconcile failed: {_error(got.error)}"
            continue
        result: RunResult | None = got.value
        if result is None:
            notes[record.key] = f"no verifier registered for kind {record.kind!r}"
            continue
        status = result.status.value if result.status else result.outcome.value
        run.reconciled[status] = run.reconciled.get(status, 0) + 1
        if result.reason and result.status in AMBIGUOUS_STATUSES:
            notes[record.key] = _text(result.reason)
    left: list[EffectRecord] = []
    statuses = tuple(sorted(AMBIGUOUS_STATUSES))
    tick: Tick = yield NOW
    for kind in sorted(cfg.kinds):
        rows: list[EffectRecord] = yield Select(statuses, cfg.limit, kind)
        rows = [r for r in rows if may_have_happened(r, tick.now, tick.trusted)]
        left += yield from _mine(run, rows)
    if not left:
        return
    for record in left:
        why = notes.get(record.key) or _text(record.reason or open_why(record.status))
        run.items.append(
            SummaryItem(
                label=f"{record.kind} {record.key[:12]}",
                cls=ItemClass.AMBIGUOUS,
                stage=RunStage.RECONCILE,
                key=record.key,
                status=record.status.value,
                reason=why,
            )
        )
    shown = "; ".join(f"{r.kind} {r.key[:12]} is {r.status.value}" for r in left[:5])
    more = f" (and {len(left) - 5} more)" if len(left) > 5 else ""
    raise _Stopped(
        RunStop(
            RunStage.RECONCILE,
            f"{len(left)} effect(s) of this operator may have happened and are not settled: "
            f"{shown}{more}; reconcile or review them before new work",
            tuple(r.key for r in left),
        )
    )


# --- the operations' due work ----------------------------------------------------------------


def _operations(run: _Run) -> Gen:
    """One pass of each operation with work due that the ``resume`` hook hands back."""
    run.stage = RunStage.OPERATIONS
    tick: Tick = yield NOW
    for op_id in (yield OperationsDue(tick.now, run.cfg.limit)):
        yield from _beat(run)
        got = yield from _call("resume", op_id)
        if isinstance(got.error, HardStop):
            raise _Stopped(RunStop(RunStage.OPERATIONS, f"{op_id}: {_error(got.error)}"))
        if got.error is not None:
            why = f"its pass raised: {_error(got.error)}"
            run.items.append(SummaryItem(op_id, ItemClass.FAILED, RunStage.OPERATIONS, reason=why))
        elif got.value is not None:  # None: not this operator's
            state = str(got.value.state)
            run.operations[state] = run.operations.get(state, 0) + 1


# --- one candidate --------------------------------------------------------------------------


def _candidate(run: _Run, candidate: Any) -> Gen:
    got = yield from _call("label", candidate)
    label = _text(got.value if got.error is None else repr(candidate), 200)
    run.stage = RunStage.QUALITY
    got = yield from _call("quality", candidate)
    if got.error is not None or got.value:
        why = (
            f"the quality gate raised {_error(got.error)}; not acted on"
            if got.error is not None
            else _text(got.value)
        )
        run.items.append(SummaryItem(label, ItemClass.QUALITY_SKIP, RunStage.QUALITY, reason=why))
        return
    run.stage = RunStage.PLAN
    got = yield from _call("plan", candidate)
    if got.error is None:
        got = yield from _call("source", got.value)
    if got.error is not None:
        _plan_failed(run, label, got.error)
        return
    source = got.value
    last: RunResult | None = None
    made = 0
    while True:
        run.stage = RunStage.PLAN
        got = yield from _call("advance", source, last)
        if got.error is not None:
            _plan_failed(run, label, got.error)
            return
        if got.value is None:
            break
        made += 1
        name = label if made == 1 else f"{label} #{made}"
        last = yield from _act(run, name, got.value)
        if last is None:
            return
    if made == 0:
        run.items.append(
            SummaryItem(
                label,
                ItemClass.SKIPPED,
                RunStage.PLAN,
                why="nothing_to_do",
                reason="the plan made no effect",
            )
        )


def _plan_failed(run: _Run, label: str, exc: BaseException) -> None:
    """A plan that raised: a hard stop stops the run, anything else fails the candidate."""
    if isinstance(exc, HardStop):
        reason = _error(exc)
        run.items.append(SummaryItem(label, ItemClass.STOPPED, RunStage.PLAN, reason=reason))
        raise _Stopped(RunStop(RunStage.PLAN, f"{label}: {reason}"))
    run.items.append(
        SummaryItem(
            label,
            ItemClass.FAILED,
            RunStage.PLAN,
            reason=f"could not plan it, nothing was done: {_error(exc)}",
        )
    )


def _act(run: _Run, label: str, effect: Any) -> Generator[Op, Any, RunResult | None]:
    """Pre-check the budget, renew the lease, run the effect; ``None``: go no further."""
    raw = effect.key
    key = str(getattr(raw, "value", raw))
    if effect.kind not in run.cfg.kinds:
        # Its doubt would never block this operator: refuse it before any claim.
        refused = f"its kind {effect.kind!r} is not among this operator's kinds; nothing was done"
        run.items.append(
            SummaryItem(label, ItemClass.FAILED, RunStage.PLAN, key=key, reason=refused)
        )
        return None
    gate = getattr(effect, "gate", None)
    draws = () if gate is None else tuple(gate.draws)
    if draws:
        # Only a claim draws: an effect already recorded (done, in flight, in
        # review) makes none, and the run reports what it is.
        current: EffectRecord | None = yield Get(key)
        if current is not None and current.status is not Status.FAILED:
            draws = ()
    if draws:
        run.stage = RunStage.BUDGET
        tick: Tick = yield NOW
        usages: list[PoolUsage] = yield BudgetUsage([d.pool for d in draws], tick.now)
        by_name = {u.pool.name: u for u in usages}
        for draw in draws:
            usage = by_name.get(draw.pool)
            why = f"no budget pool {draw.pool!r}" if usage is None else over(usage, draw)
            if why is not None:
                run.items.append(
                    SummaryItem(
                        label,
                        ItemClass.SKIPPED,
                        RunStage.BUDGET,
                        why="over_budget",
                        key=key,
                        reason=_text(why),
                    )
                )
                return None
    yield from _beat(run)
    run.stage = RunStage.ACT
    got = yield from _call("run", effect, run.cfg.run_id)
    if got.error is not None:
        exc = got.error
        if isinstance(exc, PayloadMismatch):
            run.items.append(
                SummaryItem(
                    label,
                    ItemClass.SKIPPED,
                    RunStage.ACT,
                    why="refused",
                    key=key,
                    reason=_error(exc),
                )
            )
            return None
        if isinstance(exc, UsageError):
            run.items.append(
                SummaryItem(
                    label,
                    ItemClass.FAILED,
                    RunStage.ACT,
                    key=key,
                    reason=f"not a valid effect, nothing was done: {_error(exc)}",
                )
            )
            return None
        what = "the ledger could not record a step" if isinstance(exc, LedgerError) else "it raised"
        stop = f"{label}: {what} ({_error(exc)}); nothing was performed after the failure"
        run.items.append(
            SummaryItem(label, ItemClass.STOPPED, RunStage.ACT, key=key, reason=_error(exc))
        )
        raise _Stopped(RunStop(RunStage.ACT, stop, (key,)))
    result: RunResult = got.value
    cls, why = classify(result)
    status = None if result.status is None else result.status.value
    reason = None if result.reason is None else _text(result.reason)
    run.items.append(
        SummaryItem(
            label,
            cls,
            RunStage.ACT,
            why=why,
            key=result.key or key,
            outcome=result.outcome.value,
            status=status,
            reason=reason,
            result_ref=result.result_ref,
        )
    )
    if cls is ItemClass.AMBIGUOUS:
        raise _Stopped(
            RunStop(
                RunStage.ACT,
                f"{label} may have happened ({status}: {reason}); no new work "
                "until it is reconciled or reviewed",
                (result.key or key,),
            )
        )
    if cls is ItemClass.STOPPED:
        raise _Stopped(RunStop(RunStage.ACT, f"{label}: {reason}", (result.key or key,)))
    return result


# --- the summary ----------------------------------------------------------------------------


def _finish(run: _Run) -> Generator[Op, Any, RunSummary]:
    tick: Tick = yield NOW
    try:
        usages: list[PoolUsage] = yield BudgetUsage(None, tick.now)
        budget = tuple(u.as_json() for u in usages[:50])
    except LedgerError:
        budget = ()
    with contextlib.suppress(LedgerError):  # the operations waiting for a person
        run.operations["in_review"] = len((yield OperationsIn("needs_review", 10_000)))
    if run.held_by is not None:
        status = RunStatus.LOCKED_SKIP
    else:
        status = RunStatus.HARD_STOP if run.stops else RunStatus.COMPLETED
    summary = RunSummary(
        run_id=run.cfg.run_id,
        operator=run.cfg.name,
        owner=run.cfg.owner,
        token=run.token,
        status=status,
        started_at=run.started,
        ended_at=tick.now,
        reconciled=dict(run.reconciled),
        items=tuple(run.items),
        stops=tuple(run.stops[:1]),
        budget=budget,
        candidates=run.candidates,
        held_by=run.held_by,
        operations=dict(run.operations),
    )
    try:
        stored = yield SummaryPut(summary)
    except LedgerError:
        stored = False
    return summary if stored else replace(summary, stored=False)
