"""Approval packets and their reply codes, written once for SQL stores (statement work).

Like every ``*_ops`` module of the store: generators of
:class:`~actonce._store.stmts.Stmt` run inside one transaction, one event per
change under ``approval:<packet id>`` (:mod:`actonce._store.history`). A
packet's status moves by compare-and-set only (:func:`approval_update`); the
rules of what an answer or a commit may do are ``_rules.approvals``'. The
holds a gated claim takes on a packet are :mod:`actonce._store.gated_ops`'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .._rules.approvals import ApprovalStatus, Packet
from .._rules.model import EventType
from .history import approval_event_key, event_stmt
from .rows import json_text
from .stmts import Stmt, Work

__all__ = [
    "PACKET_COLUMNS",
    "approval_answer",
    "approval_get",
    "approval_list",
    "approval_put",
    "approval_replace",
    "approval_set_code",
    "approval_update",
    "code_failures",
    "code_packets",
    "packet_of",
]

PACKET_COLUMNS = "packet_id, intent_id, version, effect_key, user_id, status, packet, " \
    "code_digest, code_used, created_at, expires_at, updated_at"  # fmt: skip

#: The event each status a packet moves to is told by.
_EVENT_OF = {
    ApprovalStatus.APPROVED: EventType.APPROVAL_ANSWERED,
    ApprovalStatus.DENIED: EventType.APPROVAL_ANSWERED,
    ApprovalStatus.VOIDED: EventType.APPROVAL_VOIDED,
    ApprovalStatus.INVALIDATED: EventType.APPROVAL_INVALIDATED,
    ApprovalStatus.EXPIRED: EventType.APPROVAL_EXPIRED,
    ApprovalStatus.HELD: EventType.APPROVAL_HELD,
    ApprovalStatus.CONSUMED: EventType.APPROVAL_CONSUMED,
}


def packet_of(row: tuple[Any, ...]) -> Packet:
    """The packet of an ``approvals`` row (read in ``PACKET_COLUMNS`` order)."""
    data = json.loads(row[6])
    data["status"] = row[5]
    return Packet.from_json(data)


def approval_put(packet: Packet, code_digest: str | None, run_id: str) -> Work[None]:
    yield Stmt(
        f"INSERT INTO approvals ({PACKET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
        (
            packet.packet_id,
            packet.intent.intent_id,
            packet.intent.version,
            packet.effect_key,
            packet.user,
            packet.status.value,
            json_text(packet.as_json()),
            code_digest,
            packet.created_at,
            packet.expires_at,
            packet.created_at,
        ),
        True,
    )
    yield event_stmt(
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
        f"SELECT {PACKET_COLUMNS} FROM approvals WHERE packet_id = ?", (packet_id,), lock=lock
    )
    if not rows:
        return None
    row = rows[0]
    return packet_of(row), row[7], bool(row[8])


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
    text = f"SELECT {PACKET_COLUMNS} FROM approvals"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += " ORDER BY created_at, packet_id LIMIT ?"
    _, rows = yield Stmt(text, (*params, limit))
    # A refreshed packet made in the same instant as the one it replaces comes after it.
    return sorted((packet_of(r) for r in rows), key=lambda p: (p.created_at, p.revision))


def approval_update(
    packet: Packet,
    to: ApprovalStatus,
    now: float,
    run_id: str,
    message: str,
    *,
    expect: ApprovalStatus | None = None,
    use_code: bool = False,
    told: dict[str, str] | None = None,
    **changes: Any,
) -> Work[Packet | None]:
    """Compare-and-set a packet's status (and fields), with its event; ``None`` if it moved.

    ``told``: what the event records beyond the changed fields (an answer's channel).
    """
    new = replace(packet, status=to, **changes)
    was = packet.status if expect is None else expect
    done, _ = yield Stmt(
        "UPDATE approvals SET status = ?, packet = ?, updated_at = ?"
        + (", code_used = 1" if use_code else "")
        + " WHERE packet_id = ? AND status = ?",
        (
            to.value,
            json_text(new.as_json()),
            now,
            packet.packet_id,
            was.value,
        ),
        True,
    )
    if done != 1:
        return None
    type_ = _EVENT_OF[to]
    if to is ApprovalStatus.APPROVED and was is ApprovalStatus.HELD:
        type_ = EventType.APPROVAL_RELEASED
    yield event_stmt(
        approval_event_key(packet.packet_id),
        type_,
        now,
        run_id,
        message,
        status=to.value,
        previous=was.value,
        **{k: v for k, v in changes.items() if isinstance(v, str | int | float | None)},
        **(told or {}),
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
    via: str,
) -> Work[Packet | None]:
    """An accepted answer: compare-and-set from the status it was decided on.

    Its event names the channel it came through (``via``: api, cli, console, link, code).
    """
    verb = "approved" if to is ApprovalStatus.APPROVED else "denied"
    return (
        yield from approval_update(
            packet,
            to,
            now,
            run_id,
            f"{verb} by {by}" + (f": {note}" if note else ""),
            use_code=use_code,
            told={"via": via},
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
        yield event_stmt(
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
        f"SELECT {PACKET_COLUMNS} FROM approvals WHERE user_id = ? AND code_digest IS NOT NULL "
        "ORDER BY created_at DESC LIMIT 200",
        (user,),
    )
    return [(packet_of(r), str(r[7]), bool(r[8])) for r in rows]
