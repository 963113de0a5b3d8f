"""The ``actonce`` commands of purchase and booking agents, over the public API only.

``intents`` and ``approvals`` open the ledger read-only (``intents withdraw
ID`` closes a version); ``approve`` and ``deny`` record one answer, carried
by the user's own reply code (``--code``) or signed link (``--link``) — or,
explicitly, by an operator's override (``--override --reason``), recorded in
the packet's history with the operator's name and reason. The same answer
again is no error (exit 0, the existing state; a duplicated code too); a
refused answer exits 1 with its reason on one line. A reply code or a link
token given on the command line is never printed; ``--code -`` reads the
code from stdin instead of the process list. The signing keys come from
``ACTONCE_APPROVAL_KEYS`` (or ``ACTONCE_APPROVAL_KEYS_FILE``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from actonce import (
    Answered,
    ApprovalStatus,
    EffectRecord,
    IntentRow,
    Ledger,
    Packet,
    UnknownEffect,
    open_ledger,
)

from ._format import (
    clean,
    event_json,
    hold_json,
    intent_json,
    money,
    packet_json,
    print_json,
    table,
    when,
)

__all__ = ["approvals_section", "cmd_answer", "cmd_approvals", "cmd_intents", "gated_json"]

EXIT_OK, EXIT_REFUSED = 0, 1
_FIXED = ("version", "material")


def _read(args: argparse.Namespace) -> Ledger:
    return open_ledger(args.ledger, readonly=True)


def _changed(before: IntentRow | None, row: IntentRow) -> list[str]:
    if before is None:
        return []
    old, new = before.intent.as_json(), row.intent.as_json()
    return [f"{k}: {old[k]!r} -> {new[k]!r}" for k in new if k not in _FIXED and old[k] != new[k]]


def _status(p: Packet, now: float) -> str:
    if p.status is ApprovalStatus.PENDING and p.expired(now):
        return "pending (expired)"
    return p.status.value


# --- intents --------------------------------------------------------------------------


def cmd_intents(args: argparse.Namespace) -> int:
    if args.withdraw is not None:
        return _withdraw(args)
    with _read(args) as ledger:
        if args.intent_id is None:
            status = None if args.all else "current"
            rows = ledger.intents.list(status, user=args.user, limit=args.limit)
            return _intent_list(args, rows)
        chain = ledger.intents.chain(args.intent_id)
        events = ledger.intents.history(args.intent_id)
        packets = [
            p
            for p in ledger.approvals.list(limit=1_000_000)
            if p.intent.intent_id == args.intent_id
        ]
        now = ledger.clock.now()
    if args.json:
        versions = []
        for before, row in zip([None, *chain[:-1]], chain, strict=True):
            versions.append({**intent_json(row), "changed": _changed(before, row)})
        print_json(
            {
                "intent_id": args.intent_id,
                "current": chain[-1].intent.version,
                "chain": versions,
                "approvals": [packet_json(p, now) for p in packets],
                "events": [event_json(e) for e in events],
            }
        )
        return EXIT_OK
    head = chain[-1].intent
    print(f"intent   {head.intent_id} ({head.kind}, user {head.user or '-'})")
    print(f"current  v{head.version}: {_describe(chain[-1])}")
    print("\nsupersession chain:")
    cells = [
        [
            f"v{row.intent.version}",
            row.status.value,
            when(row.created_at),
            when(row.superseded_at),
            "; ".join(_changed(before, row)) or "-",
        ]
        for before, row in zip([None, *chain[:-1]], chain, strict=True)
    ]
    print(table(cells, ["version", "status", "created", "superseded", "changed"]))
    if packets:
        print("\napprovals:")
        print(_packet_table(packets, now))
    return EXIT_OK


def _withdraw(args: argparse.Namespace) -> int:
    with open_ledger(args.ledger) as ledger:
        done = ledger.intents.withdraw(args.withdraw, args.version, by=args.by, reason=args.reason)
        version = done.current.intent.version if done.current else args.version
    if args.json:
        print_json({"intent_id": args.withdraw, "version": version, "operations":
                    list(done.operations), "voided": list(done.voided),
                    "closed": list(done.closed), "in_flight": list(done.in_flight)})  # fmt: skip
        return EXIT_OK
    print(f"withdrawn: {args.withdraw}@v{version}")
    for what, items in (("operations withdrawn (their next pass undoes what they did)",
                         done.operations), ("approvals voided", done.voided),
                        ("effects closed before the boundary", done.closed),
                        ("effects in flight, left to reconcile", done.in_flight)):  # fmt: skip
        print(f"  {what}: {', '.join(items) if items else 'none'}")
    return EXIT_OK


def _describe(row: IntentRow) -> str:
    i = row.intent
    parts = [
        i.provider,
        ", ".join(i.items) or None,
        None if i.quantity is None else f"x{i.quantity}",
        i.when,
        i.destination,
        i.recipient,
        None if i.price_ceiling is None else f"at most {money(i.price_ceiling, i.currency)}",
    ]
    return clean(" · ".join(p for p in parts if p)) or "-"


def _intent_list(args: argparse.Namespace, rows: list[IntentRow]) -> int:
    if args.json:
        print_json([intent_json(r) for r in rows])
        return EXIT_OK
    if not rows:
        print("no intents")
        return EXIT_OK
    print(
        table(
            [
                [
                    r.intent.intent_id,
                    f"v{r.intent.version}",
                    r.status.value,
                    r.intent.kind,
                    r.intent.user or "-",
                    _describe(r)[:60],
                    when(r.created_at),
                ]
                for r in rows
            ],
            ["intent", "version", "status", "kind", "user", "what", "created"],
        )
    )
    return EXIT_OK


# --- approvals ---------------------------------------------------------------------------


def _packet_table(packets: list[Packet], now: float) -> str:
    return table(
        [
            [
                p.packet_id,
                str(p.intent),
                p.action,
                p.user,
                money(p.amount, p.currency),
                money(p.ceiling, p.currency),
                _status(p, now),
                when(p.expires_at),
                str(p.revision),
            ]
            for p in packets
        ],
        ["packet", "intent", "action", "user", "amount", "ceiling", "status", "expires", "rev"],
    )


def cmd_approvals(args: argparse.Namespace) -> int:
    status = "pending" if args.pending else args.status
    with _read(args) as ledger:
        packets = ledger.approvals.list(status, user=args.user, limit=args.limit)
        now = ledger.clock.now()
    if args.pending:  # the ones still waiting for an answer
        packets = [p for p in packets if not p.expired(now)]
    if args.json:
        print_json([packet_json(p, now) for p in packets])
        return EXIT_OK
    if not packets:
        print("no approvals" + (" waiting for an answer" if args.pending else ""))
        return EXIT_OK
    print(_packet_table(packets, now))
    return EXIT_OK


def cmd_answer(args: argparse.Namespace) -> int:
    decision = args.command  # "approve" or "deny"
    code = args.code
    if code == "-":
        code = sys.stdin.readline().strip()
    with open_ledger(args.ledger) as ledger:
        ap = ledger.approvals
        if code is not None:
            result = ap.answer_code(code, decision, by=args.by, packet_id=args.packet_id)
        elif args.link is not None:
            result = ap.answer_link(args.link, decision, by=args.by, packet_id=args.packet_id)
        else:  # no carrier of the user's: an operator's override, on the record
            note = f"operator override by {args.operator}: {args.reason}"
            if args.note:
                note += f" ({args.note})"
            result = ap.answer(args.packet_id, decision, by=args.by, note=note,
                               via="cli-override")  # fmt: skip
        packet = ap.get(args.packet_id)
    reason = clean(" ".join(result.reason.split())) or ""
    if args.json:
        print_json(
            {
                "packet_id": packet.packet_id,
                "decision": decision,
                "answer": result.answer.value,
                "status": packet.status.value,
                "reason": reason,
            }
        )
    elif result.answer is Answered.ACCEPTED:
        print(f"{packet.status.value}: {packet.packet_id}  {clean(packet.summary())}")
    elif result.answer is Answered.SAME:
        print(f"{packet.packet_id} is already {packet.status.value}: nothing changed")
    else:
        print(f"actonce: refused: {reason}", file=sys.stderr)
    return EXIT_REFUSED if result.answer is Answered.REFUSED else EXIT_OK


# --- the approval side of ``show`` -----------------------------------------------------------


def _gated(ledger: Ledger, key: str) -> tuple[list[Packet], list[Any], list[IntentRow]]:
    packets = ledger.approvals.list(key=key, limit=1_000)
    try:
        holds = ledger.holds(key)
    except UnknownEffect:
        holds = []
    intent_id = next((p.intent.intent_id for p in packets), None)
    if intent_id is None:
        ref = next((h.ref for h in holds if h.kind.value == "intent"), None)
        intent_id = None if ref is None else ref.rpartition("@v")[0]
    chain = [] if intent_id is None else ledger.intents.chain(intent_id)
    return packets, holds, chain


def gated_json(ledger: Ledger, key: str) -> dict[str, Any]:
    """The intent chain, the approvals and the holds of a gated effect, as JSON."""
    packets, holds, chain = _gated(ledger, key)
    now = ledger.clock.now()
    return {
        "intent": [intent_json(r) for r in chain],
        "approvals": [packet_json(p, now) for p in packets],
        "holds": [hold_json(h) for h in holds],
    }


def approvals_section(ledger: Ledger, key: str, record: EffectRecord | None) -> list[str]:
    """The lines ``show`` prints for a gated effect (none for an ungated one)."""
    packets, holds, chain = _gated(ledger, key)
    if not (packets or holds or chain):
        return []
    now = ledger.clock.now()
    lines: list[str] = []
    if chain:
        head = chain[-1].intent
        lines.append(f"\nintent   {head.intent_id} (current v{head.version})")
        for before, row in zip([None, *chain[:-1]], chain, strict=True):
            changed = "; ".join(_changed(before, row))
            lines.append(
                f"  v{row.intent.version}  {row.status.value:<10}  {_describe(row)}"
                + (f"  (changed {changed})" if changed else "")
            )
    if packets:
        lines.append("\napprovals:")
        lines.append(_packet_table(packets, now))
    if holds:
        lines.append("\nholds:")
        lines.append(
            table(
                [
                    [
                        str(h.fence),
                        h.kind.value,
                        h.ref,
                        h.status.value,
                        when(h.at),
                        when(h.settled_at),
                    ]
                    for h in holds
                ],
                ["attempt", "kind", "ref", "status", "taken", "settled"],
            )
        )
    elif record is None:
        lines.append("\nnot claimed yet: nothing is held")
    return lines
