"""Bookings: a live hold confirmed with its authorization, at most once.

``book`` captures the authorization and turns the hold into a booking
(reference ``BK-<1000 + id>``); the ``booking_failed`` fault rejects the
hold after every check passed and leaves the authorization standing.
"""

from __future__ import annotations

from .payments import PaymentDesk
from .rows import Booking, Created, Refused

__all__ = ["BookingDesk"]


class BookingDesk(PaymentDesk):
    """Book a hold with its payment; read bookings."""

    def book(
        self,
        user: str,
        hold_id: int,
        payment_id: int,
        *,
        client_ref: str = "",
        idempotency_key: str | None = None,
        fail: bool = False,
    ) -> Created:
        """Confirm a live hold with its authorization: capture it, make a booking.

        ``fail`` (the ``booking_failed`` fault): after every check passed the
        provider refuses to confirm — the hold is rejected (its inventory
        freed), the authorization stands, ``Refused(booking_failed)`` is
        raised once that is committed.
        """
        params = {"hold_id": hold_id, "payment_id": payment_id, "client_ref": client_ref}
        now = self.clock()
        booking_id = 0
        with self._tx() as c:
            earlier = self._replayed(c, user, "book", idempotency_key, params)
            if earlier is not None:
                return Created(earlier, created=False)
            hold = self._user_hold(c, user, hold_id)
            payment = self._user_payment(c, user, payment_id)
            if hold.status == "booked":
                row = c.execute(
                    "SELECT reference FROM bk_bookings WHERE hold_id = ?", (hold_id,)
                ).fetchone()
                raise Refused(
                    "already_booked",
                    "This hold is booked already.",
                    409,
                    hold_id=hold_id,
                    reference=None if row is None else str(row[0]),
                )
            if hold.status == "expired":
                raise Refused("hold_expired", "The hold expired.", 409, hold_id=hold_id)
            if not hold.active:
                raise Refused("hold_not_active", f"the hold is {hold.status}", 409, hold_id=hold_id)
            if payment.hold_id != hold_id:
                raise Refused(
                    "payment_mismatch",
                    "The payment is for another hold.",
                    409,
                    payment_id=payment_id,
                )
            if payment.status != "authorized":
                raise Refused(
                    "payment_not_authorized",
                    f"the payment is {payment.status}",
                    409,
                    payment_id=payment_id,
                    payment_status=payment.status,
                )
            if fail:
                c.execute(
                    "UPDATE bk_holds SET status = 'rejected', ended_at = ? WHERE id = ?",
                    (now, hold_id),
                )
            else:
                cur = c.execute(
                    "INSERT INTO bk_bookings (reference, user, hold_id, payment_id, sku, date,"
                    " nights, qty, amount, client_ref, status, created_at)"
                    " VALUES ('', ?, ?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?)",
                    (
                        user,
                        hold_id,
                        payment_id,
                        hold.sku,
                        hold.date,
                        hold.nights,
                        hold.qty,
                        payment.amount,
                        client_ref,
                        now,
                    ),
                )
                booking_id = int(cur.lastrowid or 0)
                c.execute(
                    "UPDATE bk_bookings SET reference = ? WHERE id = ?",
                    (f"BK-{1000 + booking_id}", booking_id),
                )
                c.execute(
                    "UPDATE bk_holds SET status = 'booked', ended_at = ? WHERE id = ?",
                    (now, hold_id),
                )
                c.execute(
                    "UPDATE bk_payments SET status = 'captured', updated_at = ? WHERE id = ?",
                    (now, payment_id),
                )
                self._remember(c, user, "book", idempotency_key, params, booking_id)
        if fail:
            raise Refused(
                "booking_failed",
                "The provider could not confirm the booking. Your payment authorization stands.",
                409,
                hold_id=hold_id,
                payment_id=payment_id,
                payment_status="authorized",
            )
        return Created(booking_id)

    def booking(self, reference: str) -> Booking | None:
        """One booking by reference (``BK-1001``)."""
        rows = self._all("SELECT * FROM bk_bookings WHERE reference = ?", reference)
        return Booking(**dict(rows[0])) if rows else None

    def booking_by_id(self, booking_id: int) -> Booking | None:
        """One booking by id."""
        rows = self._all("SELECT * FROM bk_bookings WHERE id = ?", booking_id)
        return Booking(**dict(rows[0])) if rows else None

    def bookings(
        self,
        user: str | None = None,
        *,
        hold_id: int | None = None,
        client_ref: str | None = None,
    ) -> list[Booking]:
        """Bookings, oldest first, filtered by user, hold, client reference."""
        sql, args = "SELECT * FROM bk_bookings WHERE 1 = 1", []
        for column, value in (("user", user), ("hold_id", hold_id), ("client_ref", client_ref)):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        return [Booking(**dict(r)) for r in self._all(sql + " ORDER BY id", *args)]
