"""Gated claims and their holds, and intent revisions, written once for SQL stores.

Every primitive here is a generator of :class:`~actonce._store.stmts.Stmt`
(see :mod:`actonce._store.stmts`), run inside one transaction by the SQLite
store, the PostgreSQL stores and the memory store. These are the primitives
that cross domains: a gated claim checks the intent, the effect, the budget
pools and the approval packet (:func:`check_gate`) and takes its holds
(:func:`take_holds`); a verdict settles them (:func:`settle`); a revision
supersedes an intent version and closes what it authorized
(:func:`intent_revise`). The rows of each domain are read and written by its
own module (``intent_ops``, ``approval_ops``, ``budget_ops``,
``operation_ops``; their history keys in ``history``). The rules they apply
come from ``_rules`` (``approvals.check_commit``, ``budgets.over``,
``holds.settlement``); these generators only read, check and write rows, and
append one event per change (invariant 5).

Locks. On PostgreSQL a locking read (``lock=True``) is ``FOR UPDATE``; every
transaction here takes its row locks in one order, so that none waits for
another in a circle: **the intent, then the effect, then its holds, then the
budget pools (in name order), then the approval**. A gated claim locks the
intent version, the effect row, the pools it draws on, the packet; a transition that settles holds starts at the effect (it reads the
intent without a lock); a revision locks the intent, the old version's
claimed effects, their holds, then the packets. SQLite's write lock covers
the whole file, so there the order is moot.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from .._rules.approvals import ApprovalStatus, Refusal, check_commit
from .._rules.budgets import over
from .._rules.holds import Gate, Hold, HoldKind, HoldStatus, Settle
from .._rules.intents import Intent, IntentRef
from .._rules.model import EffectRecord, Event, EventType, Status
from . import sql as q
from .approval_ops import PACKET_COLUMNS, approval_get, approval_update, packet_of
from .budget_ops import pool_usage
from .history import event_stmt, intent_event_key
from .intent_ops import INTENT_COLUMNS, intent_get, intent_is_current
from .operation_ops import withdraw_operations
from .records import RevisionResult
from .rows import EFFECT_COLUMNS, event_params, json_text, record_from_row, record_params
from .stmts import Stmt, Work

__all__ = ["check_gate", "holds_of", "intent_revise", "intent_withdraw", "settle", "take_holds"]


# --- gated claims and their holds ------------------------------------------------------------


def _effect_state(key: str) -> Work[tuple[str, int] | None]:
    _, rows = yield Stmt("SELECT status, fence FROM effects WHERE key = ?", (key,), lock=True)
    return (str(rows[0][0]), int(rows[0][1])) if rows else None


def _loses(state: tuple[str, int] | None, expect: tuple[Status, int] | None) -> bool:
    """Whether a claim expecting ``expect`` loses against the row as it stands."""
    if expect is None:
        return state is not None
    return state != (expect[0].value, expect[1])


def check_gate(
    gate: Gate, key: str, expect: tuple[Status, int] | None, now: float
) -> Work[Refusal | None]:
    """Whether a claim may take what ``gate`` asks for (rows stay locked).

    A claim that loses its race anyway is not refused: ``None``, and its
    insert or compare-and-set then loses as every claim does, so that the run
    observes the winner (a worker that came second to an approved commit sees
    it done, not "the approval is held"). Locks in the order of "Locks".
    """
    ref = gate.intent
    if ref is None and gate.approval is not None:
        found = yield from approval_get(gate.approval)  # unlocked: only to learn its intent
        if found is None:
            return Refusal(f"no approval packet {gate.approval}")
        ref = found[0].intent
    current = True
    if ref is not None:
        current = yield from intent_is_current(ref, lock=True)
    state = yield from _effect_state(key)
    if _loses(state, expect):
        return None
    if gate.intent is not None and not current:
        return Refusal(
            f"{gate.intent} has been superseded: make the effect for the new version",
            kind="intent",
        )
    # Pools are locked in name order, so two claims never wait on each other in a ring.
    for draw in sorted(gate.draws, key=lambda d: d.pool):
        usage = yield from pool_usage(draw.pool, now, lock=True)
        if usage is None:
            return Refusal(f"no budget pool {draw.pool!r}", kind="budget")
        why = over(usage, draw)
        if why is not None:
            return Refusal(why, kind="budget")
    if gate.approval is None:
        return None
    found = yield from approval_get(gate.approval, lock=True)
    if found is None:
        return Refusal(f"no approval packet {gate.approval}")
    if state is None:
        # On PostgreSQL another claim may have inserted the row (and held the
        # packet) while this one waited for the packet's lock: look again.
        state = yield from _effect_state(key)
        if _loses(state, expect):
            return None
    return check_commit(
        found[0],
        effect_key=key,
        intent=gate.intent,
        intent_current=current,
        amount=gate.amount,
        now=now,
        refreshed=gate.facts,
    )


def take_holds(gate: Gate, key: str, fence: int, now: float, run_id: str) -> Work[None]:
    """Write the holds of a won claim (after :func:`check_gate` said yes)."""
    holds: list[tuple[str, str, str]] = []
    if gate.intent is not None:
        holds.append((HoldKind.INTENT.value, str(gate.intent), "0"))
    if gate.approval is not None:
        holds.append((HoldKind.APPROVAL.value, gate.approval, "1"))
        found = yield from approval_get(gate.approval, lock=True)
        assert found is not None
        yield from approval_update(
            found[0], ApprovalStatus.HELD, now, run_id, f"held by the claim of attempt {fence}",
            held_by=key,
        )  # fmt: skip
    for draw in gate.draws:
        holds.append((HoldKind.BUDGET.value, draw.pool, str(draw.amount)))
    for kind, ref, amount in holds:
        yield Stmt(
            "INSERT INTO holds (key, fence, kind, ref, amount, status, at, settled_at) "
            "VALUES (?, ?, ?, ?, ?, 'held', ?, NULL)",
            (key, fence, kind, ref, amount, now),
            True,
        )


def settle(key: str, fence: int, how: Settle, now: float, run_id: str) -> Work[int]:
    """Consume or release every hold of attempt ``fence`` of ``key``."""
    _, rows = yield Stmt(
        "SELECT kind, ref, amount FROM holds WHERE key = ? AND fence = ? AND status = 'held'",
        (key, fence),
        lock=True,
    )
    if not rows:
        return 0
    to = HoldStatus.CONSUMED if how is Settle.CONSUME else HoldStatus.RELEASED
    yield Stmt(
        "UPDATE holds SET status = ?, settled_at = ? WHERE key = ? AND fence = ? AND status = 'held'",
        (to.value, now, key, fence),
        True,
    )
    for kind, ref, _amount in rows:
        if kind != HoldKind.APPROVAL.value:
            continue
        found = yield from approval_get(str(ref), lock=True)
        if found is None or found[0].status is not ApprovalStatus.HELD:
            continue
        packet = found[0]
        if how is Settle.CONSUME:
            yield from approval_update(
                packet, ApprovalStatus.CONSUMED, now, run_id, "the commit it authorized is done"
            )
            continue
        # Unlocked: the intent comes first in the lock order, the packet last.
        current = yield from intent_is_current(packet.intent, lock=False)
        back = ApprovalStatus.APPROVED if current else ApprovalStatus.VOIDED
        why = (
            "released: the commit provably did not happen; it may authorize the retry"
            if current
            else f"released, and void: {packet.intent} has been superseded"
        )
        yield from approval_update(packet, back, now, run_id, why, held_by=None)
    return len(rows)


def holds_of(key: str) -> Work[list[Hold]]:
    """Every hold of ``key``, by attempt."""
    _, rows = yield Stmt(
        "SELECT fence, kind, ref, amount, status, at, settled_at FROM holds WHERE key = ? "
        "ORDER BY fence, kind, ref",
        (key,),
    )
    return [
        Hold(
            int(r[0]),
            HoldKind(r[1]),
            str(r[2]),
            Decimal(str(r[3])),
            HoldStatus(r[4]),
            float(r[5]),
            None if r[6] is None else float(r[6]),
        )
        for r in rows
    ]


# --- intent revisions ------------------------------------------------------------------------


def intent_revise(
    old: IntentRef, new: Intent, changed: tuple[str, ...], now: float, run_id: str
) -> Work[RevisionResult]:
    """Version ``new`` supersedes ``old``, in one transaction (see ``_rules.intents``).

    ``old`` is closed with it (:func:`_close_version`): its open approvals are
    voided, its effects that have not crossed the boundary (``claimed``) are
    closed (``failed``, their holds released), its effects in flight are left
    to reconcile, and its operations are withdrawn (no unstarted step runs
    any more; their verified steps are undone by their next pass).
    """
    done, _ = yield Stmt(
        "UPDATE intents SET status = 'superseded', superseded_at = ? "
        "WHERE intent_id = ? AND version = ? AND status = 'current'",
        (now, old.intent_id, old.version),
        True,
    )
    if done != 1:
        current = yield from intent_get(old.intent_id)
        return RevisionResult(False, current, (), (), ())
    text = json_text(new.as_json())
    yield Stmt(
        f"INSERT INTO intents ({INTENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, 'current', ?, NULL)",
        (new.intent_id, new.version, new.kind, new.user, text, now),
        True,
    )
    yield event_stmt(
        intent_event_key(old.intent_id),
        EventType.INTENT_REVISED,
        now,
        run_id,
        f"{old} superseded by v{new.version} (changed: {', '.join(changed)})",
        from_version=old.version,
        version=new.version,
        changed=list(changed),
    )
    why = f"superseded by v{new.version}"
    result = yield from _close_version(old, why, "system", now, run_id, superseded_by=new.version)
    current = yield from intent_get(new.intent_id)
    return replace(result, current=current)


def intent_withdraw(
    ref: IntentRef, by: str, reason: str, now: float, run_id: str
) -> Work[RevisionResult]:
    """Close version ``ref`` without a new one: it commits nothing any more.

    The same closing as a revision's (:func:`_close_version`), one event
    under ``intent:<id>``. ``applied`` is False when there is no such version.
    """
    row = yield from intent_get(ref.intent_id, ref.version)
    if row is None:
        return RevisionResult(False, None, (), (), ())
    yield event_stmt(
        intent_event_key(ref.intent_id), EventType.INTENT_REVISED, now, run_id,
        f"{ref} withdrawn by {by}: {reason}", version=ref.version, withdrawn=True, by=by,
    )  # fmt: skip
    result = yield from _close_version(ref, f"withdrawn by {by}: {reason}", by, now, run_id)
    return replace(result, current=row)


def _close_version(
    old: IntentRef,
    why: str,
    by: str,
    now: float,
    run_id: str,
    *,
    superseded_by: int | None = None,
) -> Work[RevisionResult]:
    """Close what version ``old`` authorized, inside the caller's transaction."""
    # Effects of the old version that hold nothing in the world yet: close them.
    # (The effect rows only are locked here, their holds by settle(): see "Locks".)
    _, rows = yield Stmt(
        f"SELECT {', '.join('e.' + c for c in EFFECT_COLUMNS)} FROM effects e "
        "WHERE e.status = 'claimed' AND EXISTS (SELECT 1 FROM holds h WHERE h.key = e.key "
        "AND h.fence = e.fence AND h.kind = 'intent' AND h.ref = ? AND h.status = 'held') "
        "ORDER BY e.key",
        (str(old),),
        lock=True,
    )
    closed: list[str] = []
    for row in rows:
        record = record_from_row(row)
        yield from _close_claimed(record, old, why, now, run_id, superseded_by)
        closed.append(record.key)
    # Open approvals of the old version authorize nothing any more.
    _, prow = yield Stmt(
        f"SELECT {PACKET_COLUMNS} FROM approvals WHERE intent_id = ? AND version = ? "
        "AND status IN ('pending', 'approved')",
        (old.intent_id, old.version),
        lock=True,
    )
    voided = []
    for r in prow:
        packet = packet_of(r)
        yield from approval_update(packet, ApprovalStatus.VOIDED, now, run_id, f"{old} {why}")
        voided.append(packet.packet_id)
    # Effects in flight (executing, unknown, in review) stay to reconcile.
    _, frow = yield Stmt(
        "SELECT e.key FROM effects e JOIN holds h ON h.key = e.key AND h.fence = e.fence "
        "WHERE h.kind = 'intent' AND h.ref = ? AND h.status = 'held' "
        "AND e.status IN ('executing', 'unknown', 'needs_review')",
        (str(old),),
    )
    # Its operations are withdrawn: their next pass undoes what they did.
    ops = yield from withdraw_operations(old, by, f"{old} {why}", now, run_id)
    return RevisionResult(
        True, None, tuple(closed), tuple(voided), tuple(r[0] for r in frow), tuple(ops)
    )


def _close_claimed(
    record: EffectRecord,
    old: IntentRef,
    why: str,
    now: float,
    run_id: str,
    superseded_by: int | None,
) -> Work[None]:
    reason = f"{old} {why} before this claim crossed the boundary"
    values = record_params(record)
    new_values = list(values)
    columns = list(EFFECT_COLUMNS)
    new_values[columns.index("status")] = Status.FAILED.value
    new_values[columns.index("reason")] = reason
    new_values[columns.index("updated_at")] = now
    new_values[columns.index("lease_expires_at")] = min(now, record.lease_expires_at)
    done, _ = yield Stmt(
        f"UPDATE effects SET {q.SET} WHERE key = ? AND status = ? AND fence = ?",
        (*new_values[1:], record.key, Status.CLAIMED.value, record.fence),
        True,
    )
    if done != 1:  # pragma: no cover - the row was locked above
        return
    data = {"superseded_by": superseded_by} if superseded_by is not None else {"withdrawn": True}
    e = Event(
        key=record.key,
        type=EventType.FAILED,
        at=now,
        fence=record.fence,
        run_id=run_id,
        from_status=Status.CLAIMED,
        to_status=Status.FAILED,
        message=reason,
        data=data,
    )
    yield Stmt(q.EVENT, event_params(e), True)
    yield from settle(record.key, record.fence, Settle.RELEASE, now, run_id)
