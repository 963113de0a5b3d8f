"""The booking world's ground truth: everything created, per natural key.

Counted from the provider's own tables, independently of any ledger: a
group with ``count`` > 1 is a duplicate (a double hold, a double charge, a
message delivered twice), plus the open authorizations and the inventory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .bookings import BookingDesk
from .messages import MessageDesk
from .rows import HOLD_STATUSES, PAYMENT_STATUSES, nights_of

__all__ = ["GroundTruth"]


class GroundTruth(BookingDesk, MessageDesk):
    """``ground_truth()`` over every desk's rows."""

    def ground_truth(self) -> dict[str, Any]:
        """Everything created, grouped by natural key, with duplicates.

        Natural keys: a hold by (user, sku, date, nights, qty); an
        authorization, a booking by the booking intent (user, sku, date);
        a void or refund by payment; a message by (user, recipient, body).
        A group with ``count`` > 1 is a duplicate (for messages ``count``
        counts deliveries: what the recipient saw).
        """
        holds = self.holds()
        by_hold = {h.id: h for h in holds}
        payments = self.payments()
        bookings = self.bookings()
        messages = self.messages()
        voids = [dict(r) for r in self._all("SELECT * FROM bk_voids ORDER BY id")]
        attempts = [dict(r) for r in self._all("SELECT * FROM bk_message_attempts ORDER BY id")]

        def grouped(
            rows: list[Any], key: Callable[[Any], dict[str, Any]]
        ) -> list[tuple[dict[str, Any], list[Any]]]:
            out: dict[str, tuple[dict[str, Any], list[Any]]] = {}
            for row in rows:
                k = key(row)
                out.setdefault(json.dumps(k, sort_keys=True), (k, []))[1].append(row)
            return list(out.values())

        def statuses(rows: list[Any], names: tuple[str, ...]) -> dict[str, int]:
            return {n: sum(1 for r in rows if r.status == n) for n in names}

        hold_groups = [
            {
                "key": k,
                "count": len(rows),
                "ids": [h.id for h in rows],
                "statuses": statuses(rows, HOLD_STATUSES),
            }
            for k, rows in grouped(
                holds,
                lambda h: {
                    "user": h.user,
                    "sku": h.sku,
                    "date": h.date,
                    "nights": h.nights,
                    "qty": h.qty,
                },
            )
        ]

        def intent(user: str, hold_id: int) -> dict[str, Any]:
            hold = by_hold.get(hold_id)
            return {
                "user": user,
                "sku": hold.sku if hold else None,
                "date": hold.date if hold else None,
            }

        payment_groups = [
            {
                "key": k,
                "count": len(rows),
                "ids": [p.id for p in rows],
                "hold_ids": sorted({p.hold_id for p in rows}),
                "amount": sum(p.amount for p in rows),
                "standing": sum(1 for p in rows if p.status in ("authorized", "captured")),
                "statuses": statuses(rows, PAYMENT_STATUSES),
            }
            for k, rows in grouped(payments, lambda p: intent(p.user, p.hold_id))
        ]
        booking_groups = [
            {
                "key": k,
                "count": len(rows),
                "ids": [b.id for b in rows],
                "references": [b.reference for b in rows],
                "amount": sum(b.amount for b in rows),
                "statuses": statuses(rows, ("confirmed", "cancelled")),
            }
            for k, rows in grouped(
                bookings, lambda b: {"user": b.user, "sku": b.sku, "date": b.date}
            )
        ]
        by_payment: dict[int, list[dict[str, Any]]] = {}
        for v in voids:
            by_payment.setdefault(int(v["payment_id"]), []).append(v)
        void_groups = [
            {
                "key": {"payment_id": pid},
                "count": len(rows),
                "ids": [int(v["id"]) for v in rows],
                "kinds": [str(v["kind"]) for v in rows],
                "amount": sum(int(v["amount"]) for v in rows),
            }
            for pid, rows in by_payment.items()
        ]
        tries: dict[int, list[str]] = {}
        for a in attempts:
            tries.setdefault(int(a["message_id"]), []).append(str(a["outcome"]))
        message_groups = [
            {
                "key": k,
                "count": sum(1 for m in rows if m.delivered),
                "ids": [m.id for m in rows],
                "message_keys": [m.message_key for m in rows],
                "attempts": sum(len(tries.get(m.id, [])) for m in rows),
                "undelivered": sum(1 for m in rows if not m.delivered),
            }
            for k, rows in grouped(
                messages, lambda m: {"user": m.user, "recipient": m.recipient, "body": m.body}
            )
        ]
        by_key = [
            {
                "user": m.user,
                "message_key": m.message_key,
                "status": m.status,
                "attempts": tries.get(m.id, []),
            }
            for m in messages
        ]
        open_authorizations = [
            {
                "id": p.id,
                "user": p.user,
                "hold_id": p.hold_id,
                "amount": p.amount,
                "hold_status": by_hold[p.hold_id].status if p.hold_id in by_hold else None,
            }
            for p in payments
            if p.status == "authorized"
        ]
        groups: dict[str, list[dict[str, Any]]] = {
            "holds": hold_groups,
            "authorizations": payment_groups,
            "voids": void_groups,
            "bookings": booking_groups,
            "messages": message_groups,
        }
        duplicates = [
            {"kind": kind, **entry}
            for kind, entries in groups.items()
            for entry in entries
            if entry["count"] > 1
        ]
        totals = {
            "holds": len(holds),
            "authorizations": len(payments),
            "authorized_amount": sum(p.amount for p in payments),
            "standing_amount": sum(
                p.amount for p in payments if p.status in ("authorized", "captured")
            ),
            "captured_amount": sum(p.amount for p in payments if p.status == "captured"),
            "voids": sum(1 for v in voids if v["kind"] == "void"),
            "refunds": sum(1 for v in voids if v["kind"] == "refund"),
            "bookings": len(bookings),
            "messages": len(messages),
            "deliveries": sum(1 for m in messages if m.delivered),
            "message_attempts": len(attempts),
        }
        return {
            **groups,
            "messages_by_key": by_key,
            "open_authorizations": open_authorizations,
            "inventory": self._inventory(),
            "totals": totals,
            "duplicates": duplicates,
            "now": self.clock(),
        }

    def _inventory(self) -> list[dict[str, Any]]:
        """Per product and night (or stock): capacity, held, booked, available.

        Rooms list only the nights some hold or booking ever touched.
        """
        out: list[dict[str, Any]] = []
        now = self.clock()
        with self._lock:
            for p in self.products():
                used = self._used(self._conn, p.sku, now)
                if p.kind == "room":
                    touched: set[str] = set()
                    for r in self._conn.execute(
                        "SELECT date, nights FROM bk_holds WHERE sku = ?", (p.sku,)
                    ).fetchall():
                        touched.update(nights_of(str(r[0]), int(r[1])))
                    nights = sorted(touched)
                else:
                    nights = [""]
                for night in nights:
                    slot = used.get(night, {"held": 0, "booked": 0})
                    out.append(
                        {
                            "sku": p.sku,
                            "date": night,
                            "capacity": p.capacity,
                            "held": slot["held"],
                            "booked": slot["booked"],
                            "available": p.capacity - slot["held"] - slot["booked"],
                            "price": p.price,
                        }
                    )
        return out
