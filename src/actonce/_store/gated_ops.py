"""Intents, approvals and the holds of gated claims, written once for SQL stores.

Every primitive here is a generator of :class:`~actonce._store.stmts.Stmt`
(see :mod:`actonce._store.stmts`), run inside one transaction by the SQLite
store, the PostgreSQL stores and the memory store (which keeps these domains
in an in-memory SQLite database beside its effect rows). The rules they
apply come from ``_rules`` (``approvals.answer``/``check_commit``,
``intents``, ``holds.settlement``); these generators only read, check and
write rows, and append one event per change (invariant 5). Events of
intents and approvals live in the same history as effects, under the keys
``intent:<id>`` and ``approval:<packet id>``.

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

import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from .._rules.approvals import ApprovalStatus, Packet, Refusal, check_commit
from .._rules.budgets import Pool, PoolUsage, over, window_of
from .._rules.holds import Gate, Hold, HoldKind, HoldStatus, Settle
from .._rules.intents import Intent, IntentRef, IntentStatus
from .._rules.model import EffectRecord, Event, EventType, Status
from . import sql as q
from .records import IntentRow, RevisionResult
from .rows import EFFECT_COLUMNS, event_params, record_from_row, record_params
from .stmts import Stmt, Work

__all__ = [
    "approval_answer",
    "approval_event_key",
    "approval_get",
    "approval_list",
    "approval_put",
    "approval_replace",
    "approval_set_code",
    "approval_update",
    "budget_event_key",
    "budget_usage",
    "check_gate",
    "code_failures",
    "code_packets",
    "holds_of",
    "intent_chain",
    "intent_create",
    "intent_event_key",
    "intent_get",
    "intent_list",
    "intent_revise",
    "intent_touch",
    "pool_define",
    "pool_get",
    "pool_names",
    "pool_usage",
    "settle",
    "take_holds",
]

_P_COLS = "packet_id, intent_id, version, effect_key, user_id, status, packet, code_digest, " \
    "code_used, created_at, expires_at, updated_at"  # fmt: skip
_I_COLS = "intent_id, version, kind, user_id, fields, status, created_at, superseded_at"


def intent_event_key(intent_id: str) -> str:
    """The history key of an intent's events."""
    return f"intent:{intent_id}"


def approval_event_key(packet_id: str) -> str:
    """The history key of an approval packet's events."""
    return f"approval:{packet_id}"


def _event(key: str, type_: EventType, now: float, run_id: str, message: str, **data: Any) -> Stmt:
    e = Event(key=key, type=type_, at=now, run_id=run_id, message=message, data=data)
    return Stmt(q.EVENT, event_params(e), True)


# --- intents -------------------------------------------------------------------------------


def _intent_row(row: tuple[Any, ...]) -> IntentRow:
    return IntentRow(
        intent=Intent.from_json(json.loads(row[4])),
        status=IntentStatus(row[5]),
        created_at=float(row[6]),
        superseded_at=None if row[7] is None else float(row[7]),
    )


def intent_get(intent_id: str, version: int | None = None) -> Work[IntentRow | None]:
    params: tuple[Any, ...]
    if version is None:
        where, params = "intent_id = ? AND status = 'current'", (intent_id,)
    else:
        where, params = "intent_id = ? AND version = ?", (intent_id, version)
    _, rows = yield Stmt(f"SELECT {_I_COLS} FROM intents WHERE {where}", params)
    return _intent_row(rows[0]) if rows else None


def intent_list(status: IntentStatus | None, user: str | None, limit: int) -> Work[list[IntentRow]]:
    """Intent versions (of one status, one user), oldest first."""
    where: list[str] = []
    params: list[Any] = []
    if status is not None:
        where.append("status = ?")
        params.append(status.value)
    if user is not None:
        where.append("user_id = ?")
        params.append(user)
    text = f"SELECT {_I_COLS} FROM intents"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += " ORDER BY created_at, intent_id, version LIMIT ?"
    _, rows = yield Stmt(text, (*params, limit))
    return [_intent_row(r) for r in rows]


def intent_chain(intent_id: str) -> Work[list[IntentRow]]:
    sql_text = f"SELECT {_I_COLS} FROM intents WHERE intent_id = ? ORDER BY version"
    _, rows = yield Stmt(sql_text, (intent_id,))
    return [_intent_row(r) for r in rows]


def intent_create(intent: Intent, now: float, run_id: str) -> Work[IntentRow]:
    """Insert version ``intent.version`` if the intent is new; answer the current row."""
    text = json.dumps(intent.as_json(), sort_keys=True, separators=(",", ":"))
    won, _ = yield Stmt(
        f"INSERT INTO intents ({_I_COLS}) VALUES (?, ?, ?, ?, ?, 'current', ?, NULL) "
        "ON CONFLICT DO NOTHING",
        (intent.intent_id, intent.version, intent.kind, intent.user, text, now),
        True,
    )
    if won == 1:
        yield _event(
            intent_event_key(intent.intent_id),
            EventType.INTENT_CREATED,
            now,
            run_id,
            f"{intent.ref} created",
            version=intent.version,
        )
    row = yield from intent_get(intent.intent_id)
    assert row is not None
    return row


def intent_touch(intent: Intent, changed: tuple[str, ...], now: float, run_id: str) -> Work[bool]:
    """A cosmetic change: the same version's fields, rewritten in place."""
    text = json.dumps(intent.as_json(), sort_keys=True, separators=(",", ":"))
    done, _ = yield Stmt(
        "UPDATE intents SET fields = ? WHERE intent_id = ? AND version = ? AND status = 'current'",
        (text, intent.intent_id, intent.version),
        True,
    )
    if done == 1:
        yield _event(
            intent_event_key(intent.intent_id),
            EventType.INTENT_REVISED,
            now,
            run_id,
            f"cosmetic change to {intent.ref}: {', '.join(changed)} (same version)",
            version=intent.version,
            changed=list(changed),
            material=False,
        )
    return done == 1


def intent_revise(
    old: IntentRef, new: Intent, changed: tuple[str, ...], now: float, run_id: str
) -> Work[RevisionResult]:
    """Version ``new`` supersedes ``old``, in one transaction (see ``_rules.intents``).

    ``old``'s open approvals are voided, its effects that have not crossed
    the boundary (``claimed``) are closed (``failed``, their holds released),
    its effects in flight are left to reconcile.
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
    text = json.dumps(new.as_json(), sort_keys=True, separators=(",", ":"))
    yield Stmt(
        f"INSERT INTO intents ({_I_COLS}) VALUES (?, ?, ?, ?, ?, 'current', ?, NULL)",
        (new.intent_id, new.version, new.kind, new.user, text, now),
        True,
    )
    yield _event(
        intent_event_key(old.intent_id),
        EventType.INTENT_REVISED,
        now,
        run_id,
        f"{old} superseded by v{new.version} (changed: {', '.join(changed)})",
        from_version=old.version,
        version=new.version,
        changed=list(changed),
    )
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
        yield from _close_superseded(record, old, new.version, now, run_id)
        closed.append(record.key)
    # Open approvals of the old version authorize nothing any more.
    _, prow = yield Stmt(
        f"SELECT {_P_COLS} FROM approvals WHERE intent_id = ? AND version = ? "
        "AND status IN ('pending', 'approved')",
        (old.intent_id, old.version),
        lock=True,
    )
    voided = []
    for r in prow:
        packet = _packet(r)
        yield from approval_update(
            packet, ApprovalStatus.VOIDED, now, run_id, f"{old} superseded by v{new.version}"
        )
        voided.append(packet.packet_id)
    # Effects in flight (executing, unknown, in review) stay to reconcile.
    _, frow = yield Stmt(
        "SELECT e.key FROM effects e JOIN holds h ON h.key = e.key AND h.fence = e.fence "
        "WHERE h.kind = 'intent' AND h.ref = ? AND h.status = 'held' "
        "AND e.status IN ('executing', 'unknown', 'needs_review')",
        (str(old),),
    )
    current = yield from intent_get(new.intent_id)
    return RevisionResult(True, current, tuple(closed), tuple(voided), tuple(r[0] for r in frow))


def _close_superseded(
    record: EffectRecord, old: IntentRef, version: int, now: float, run_id: str
) -> Work[None]:
    reason = f"superseded: {old} was revised to v{version} before this claim crossed the boundary"
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
    e = Event(
        key=record.key,
        type=EventType.FAILED,
        at=now,
        fence=record.fence,
        run_id=run_id,
        from_status=Status.CLAIMED,
        to_status=Status.FAILED,
        message=reason,
        data={"superseded_by": version},
    )
    yield Stmt(q.EVENT, event_params(e), True)
    yield from settle(record.key, record.fence, Settle.RELEASE, now, run_id)


# --- approvals -----------------------------------------------------------------------------


def _packet(row: tuple[Any, ...]) -> Packet:
    data = json.loads(row[6])
    data["status"] = row[5]
    return Packet.from_json(data)


def approval_put(packet: Packet, code_digest: str | None, run_id: str) -> Work[None]:
    yield Stmt(
        f"INSERT INTO approvals ({_P_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
        (
            packet.packet_id,
            packet.intent.intent_id,
            packet.intent.version,
            packet.effect_key,
            packet.user,
            packet.status.value,
            json.dumps(packet.as_json(), sort_keys=True, separators=(",", ":")),
            code_digest,
            packet.created_at,
            packet.expires_at,
            packet.created_at,
        ),
        True,
    )
    yield _event(
        approval_event_key(packet.packet_id),
        EventType.APPROVAL_REQUESTED,
        packet.created_at,
        run_id,
        packet.summary(),
        status=packet.status.value,
        revision=packet.revision,
        replaces=packet.replaces,
        effect_key=packet.effect_key,
    )


def approval_get(
    packet_id: str, *, lock: bool = False
) -> Work[tuple[Packet, str | None, bool] | None]:
    _, rows = yield Stmt(
        f"SELECT {_P_COLS} FROM approvals WHERE packet_id = ?", (packet_id,), lock=lock
    )
    if not rows:
        return None
    row = rows[0]
    return _packet(row), row[7], bool(row[8])


def approval_list(
    statuses: Iterable[ApprovalStatus] | None,
    user: str | None,
    limit: int,
    effect_key: str | None = None,
) -> Work[list[Packet]]:
    """Packets (of some statuses, one user, one effect), oldest first."""
    where: list[str] = []
    params: list[Any] = []
    if effect_key is not None:
        where.append("effect_key = ?")
        params.append(effect_key)
    if statuses is not None:
        wanted = [s.value for s in statuses]
        where.append(f"status IN ({', '.join('?' for _ in wanted)})")
        params.extend(wanted)
    if user is not None:
        where.append("user_id = ?")
        params.append(user)
    text = f"SELECT {_P_COLS} FROM approvals"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += " ORDER BY created_at, packet_id LIMIT ?"
    _, rows = yield Stmt(text, (*params, limit))
    # A refreshed packet made in the same instant as the one it replaces comes after it.
    return sorted((_packet(r) for r in rows), key=lambda p: (p.created_at, p.revision))


def approval_update(
    packet: Packet,
    to: ApprovalStatus,
    now: float,
    run_id: str,
    message: str,
    *,
    expect: ApprovalStatus | None = None,
    use_code: bool = False,
    **changes: Any,
) -> Work[Packet | None]:
    """Compare-and-set a packet's status (and fields), with its event; ``None`` if it moved."""
    from dataclasses import replace

    new = replace(packet, status=to, **changes)
    was = packet.status if expect is None else expect
    done, _ = yield Stmt(
        "UPDATE approvals SET status = ?, packet = ?, updated_at = ?"
        + (", code_used = 1" if use_code else "")
        + " WHERE packet_id = ? AND status = ?",
        (
            to.value,
            json.dumps(new.as_json(), sort_keys=True, separators=(",", ":")),
            now,
            packet.packet_id,
            was.value,
        ),
        True,
    )
    if done != 1:
        return None
    types = {
        ApprovalStatus.APPROVED: EventType.APPROVAL_ANSWERED,
        ApprovalStatus.DENIED: EventType.APPROVAL_ANSWERED,
        ApprovalStatus.VOIDED: EventType.APPROVAL_VOIDED,
        ApprovalStatus.INVALIDATED: EventType.APPROVAL_INVALIDATED,
        ApprovalStatus.EXPIRED: EventType.APPROVAL_EXPIRED,
        ApprovalStatus.HELD: EventType.APPROVAL_HELD,
        ApprovalStatus.CONSUMED: EventType.APPROVAL_CONSUMED,
    }
    type_ = types[to]
    if to is ApprovalStatus.APPROVED and was is ApprovalStatus.HELD:
        type_ = EventType.APPROVAL_RELEASED
    yield _event(
        approval_event_key(packet.packet_id),
        type_,
        now,
        run_id,
        message,
        status=to.value,
        previous=was.value,
        **{k: v for k, v in changes.items() if isinstance(v, str | int | float | None)},
    )
    return new


def approval_answer(
    packet: Packet,
    to: ApprovalStatus,
    by: str,
    now: float,
    run_id: str,
    note: str | None,
    use_code: bool,
) -> Work[Packet | None]:
    """An accepted answer: compare-and-set from the status it was decided on."""
    verb = "approved" if to is ApprovalStatus.APPROVED else "denied"
    return (
        yield from approval_update(
            packet,
            to,
            now,
            run_id,
            f"{verb} by {by}" + (f": {note}" if note else ""),
            use_code=use_code,
            decided_by=by,
            decided_at=now,
            note=note,
        )
    )


def approval_set_code(packet_id: str, code_digest: str, now: float, run_id: str) -> Work[bool]:
    """Replace a pending packet's reply code (the old one stops working)."""
    done, _ = yield Stmt(
        "UPDATE approvals SET code_digest = ?, code_used = 0, updated_at = ? "
        "WHERE packet_id = ? AND status = 'pending'",
        (code_digest, now, packet_id),
        True,
    )
    if done == 1:
        yield _event(
            approval_event_key(packet_id),
            EventType.APPROVAL_REQUESTED,
            now,
            run_id,
            "a new reply code was issued (the old one stops working)",
            status=ApprovalStatus.PENDING.value,
        )
    return done == 1


def approval_replace(
    old: Packet, reason: str, new: Packet, code_digest: str | None, run_id: str
) -> Work[Packet | None]:
    """Invalidate ``old`` and issue ``new`` (its refreshed revision) in one transaction.

    Only an ``approved`` packet is replaced (``None`` otherwise): a held one
    authorizes a claim already on its way, and a final one was replaced, or
    answered, or voided before.
    """
    moved = yield from approval_update(
        old,
        ApprovalStatus.INVALIDATED,
        new.created_at,
        run_id,
        reason,
        expect=ApprovalStatus.APPROVED,
        replaced_by=new.packet_id,
    )
    if moved is None:
        return None
    yield from approval_put(new, code_digest, run_id)
    return new


def code_failures(user: str, now: float, window: float, add: int) -> Work[int]:
    """Reply-code attempts ``user`` has counted in the current window, after adding ``add``.

    ``add=1`` counts an attempt *before* the code is compared (so that
    attempts made at the same time cannot all pass the limit), ``add=-1``
    gives it back once the code proved right, ``add=0`` only reads.
    """
    if add:
        # The row first, so that the locking read below serializes every counter.
        yield Stmt(
            "INSERT INTO code_failures (user_id, window_start, failures) VALUES (?, ?, 0) "
            "ON CONFLICT (user_id) DO NOTHING",
            (user, now),
            True,
        )
    _, rows = yield Stmt(
        "SELECT window_start, failures FROM code_failures WHERE user_id = ?", (user,), lock=add != 0
    )
    start, failures = (float(rows[0][0]), int(rows[0][1])) if rows else (now, 0)
    if now - start >= window:
        start, failures = now, 0
    if add:
        failures = max(0, failures + add)
        yield Stmt(
            "UPDATE code_failures SET window_start = ?, failures = ? WHERE user_id = ?",
            (start, failures, user),
            True,
        )
    return failures


def code_packets(user: str) -> Work[list[tuple[Packet, str, bool]]]:
    """The packets of ``user`` that have a reply code (to compare a code against)."""
    _, rows = yield Stmt(
        f"SELECT {_P_COLS} FROM approvals WHERE user_id = ? AND code_digest IS NOT NULL "
        "ORDER BY created_at DESC LIMIT 200",
        (user,),
    )
    return [(_packet(r), str(r[7]), bool(r[8])) for r in rows]


# --- gated claims and their holds ------------------------------------------------------------


def _intent_current(ref: IntentRef, *, lock: bool) -> Work[bool]:
    _, rows = yield Stmt(
        "SELECT status FROM intents WHERE intent_id = ? AND version = ?",
        (ref.intent_id, ref.version),
        lock=lock,
    )
    return bool(rows) and rows[0][0] == IntentStatus.CURRENT.value


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
        current = yield from _intent_current(ref, lock=True)
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
        current = yield from _intent_current(packet.intent, lock=False)
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


# --- budget pools ----------------------------------------------------------------------------


def budget_event_key(name: str) -> str:
    """The history key of a budget pool's events."""
    return f"budget:{name}"


def _pool(text: str) -> Pool:
    data = json.loads(text)
    return Pool(data["name"], data["limit"], data["unit"], data["window"])


def pool_define(pool: Pool, now: float, run_id: str) -> Work[Pool]:
    """Create a pool, or change its limit, unit or window (history kept)."""
    text = json.dumps(pool.as_json(), sort_keys=True, separators=(",", ":"))
    yield Stmt(
        "INSERT INTO pools (name, pool, created_at, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET pool = excluded.pool, updated_at = excluded.updated_at",
        (pool.name, text, now, now),
        True,
    )
    yield _event(
        budget_event_key(pool.name), EventType.BUDGET_DEFINED, now, run_id,
        f"{pool.name}: {pool.limit} {pool.unit} per {pool.window}", **pool.as_json(),
    )  # fmt: skip
    return pool


def pool_get(name: str, *, lock: bool = False) -> Work[Pool | None]:
    _, rows = yield Stmt("SELECT pool FROM pools WHERE name = ?", (name,), lock=lock)
    return _pool(rows[0][0]) if rows else None


def pool_names() -> Work[list[str]]:
    _, rows = yield Stmt("SELECT name FROM pools ORDER BY name")
    return [str(r[0]) for r in rows]


def pool_usage(name: str, now: float, *, lock: bool = False) -> Work[PoolUsage | None]:
    """A pool in the window that holds ``now``: reserved (held) and consumed."""
    pool = yield from pool_get(name, lock=lock)
    if pool is None:
        return None
    start, end = window_of(pool.window, now)
    _, rows = yield Stmt(
        "SELECT amount, status FROM holds WHERE kind = 'budget' AND ref = ? AND at >= ? "
        "AND at < ? AND status IN ('held', 'consumed')",
        (name, start, end),
    )
    reserved = sum((Decimal(str(a)) for a, st in rows if st == "held"), Decimal(0))
    consumed = sum((Decimal(str(a)) for a, st in rows if st == "consumed"), Decimal(0))
    return PoolUsage(pool, start, end, reserved, consumed)


def budget_usage(names: list[str] | None, now: float) -> Work[list[PoolUsage]]:
    """Every pool (or the named ones) in its current window."""
    wanted = names if names is not None else (yield from pool_names())
    out = []
    for name in wanted:
        usage = yield from pool_usage(name, now)
        if usage is not None:
            out.append(usage)
    return out


# --- operations and receipts -------------------------------------------------------------------


def operation_event_key(op_id: str) -> str:
    """The history key of an operation's events."""
    return f"operation:{op_id}"


def operation_put(
    op_id: str, intent: IntentRef | None, spec: str, now: float, run_id: str
) -> Work[str]:
    """Record an operation's definition once; answer the recorded one."""
    won, _ = yield Stmt(
        "INSERT INTO operations (op_id, intent_id, version, spec, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (op_id, None if intent is None else intent.intent_id,
         None if intent is None else intent.version, spec, now),
        True,
    )  # fmt: skip
    if won == 1:
        yield _event(operation_event_key(op_id), EventType.OPERATION_STARTED, now, run_id,
                     f"operation {op_id} defined", intent=None if intent is None else str(intent))  # fmt: skip
    _, rows = yield Stmt("SELECT spec FROM operations WHERE op_id = ?", (op_id,))
    return str(rows[0][0])


def operation_get(op_id: str) -> Work[str | None]:
    _, rows = yield Stmt("SELECT spec FROM operations WHERE op_id = ?", (op_id,))
    return str(rows[0][0]) if rows else None


def receipt_put(
    op_id: str, state: str, text: str, data: str, now: float, run_id: str
) -> Work[bool]:
    """Write (or rewrite, when the ledger has more to say) an operation's receipt."""
    _, rows = yield Stmt("SELECT state, text FROM receipts WHERE op_id = ?", (op_id,), lock=True)
    if rows and (rows[0][0], rows[0][1]) == (state, text):
        return False
    yield Stmt(
        "INSERT INTO receipts (op_id, state, text, data, written_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (op_id) DO UPDATE SET state = excluded.state, text = excluded.text, "
        "data = excluded.data, written_at = excluded.written_at",
        (op_id, state, text, data, now),
        True,
    )
    yield _event(operation_event_key(op_id), EventType.RECEIPT_WRITTEN, now, run_id,
                 f"receipt: {state}", state=state)  # fmt: skip
    return True


def receipt_get(op_id: str) -> Work[tuple[str, str, str, float] | None]:
    _, rows = yield Stmt(
        "SELECT state, text, data, written_at FROM receipts WHERE op_id = ?", (op_id,)
    )
    if not rows:
        return None
    r = rows[0]
    return str(r[0]), str(r[1]), str(r[2]), float(r[3])
