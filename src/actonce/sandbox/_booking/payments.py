"""Payment authorizations against a hold, their voids and refunds.

An authorization must be for exactly the hold's current total; several may
be made against one hold (the double charge a retry can cause, counted by
the ground truth). A booking captures one; a void ends an uncaptured one,
a refund a captured one (and cancels its booking).
"""

from __future__ import annotations

import sqlite3

from .holds import HoldDesk
from .rows import Created, Payment, Refused

__all__ = ["PaymentDesk"]


class PaymentDesk(HoldDesk):
    """Authorize, read, void and refund payments."""

    def authorize(
        self,
        user: str,
        hold_id: int,
        amount: int,
        *,
        client_ref: str = "",
        idempotency_key: str | None = None,
    ) -> Created:
        """Authorize ``amount`` against a live hold.

        The amount must be the hold's current total (else
        ``Refused(price_changed)`` with the current total: a payment above or
        below the quote is never taken). Another authorization for the same
        hold is allowed: that is a double charge, counted by the ground truth.
        """
        params = {"hold_id": hold_id, "amount": amount, "client_ref": client_ref}
        now = self.clock()
        with self._tx() as c:
            earlier = self._replayed(c, user, "pay", idempotency_key, params)
            if earlier is not None:
                return Created(earlier, created=False)
            hold = self._user_hold(c, user, hold_id)
            if hold.status == "expired":
                raise Refused("hold_expired", "The hold expired.", 409, hold_id=hold_id)
            if not hold.active:
                raise Refused("hold_not_active", f"the hold is {hold.status}", 409, hold_id=hold_id)
            if amount != hold.amount:
                raise Refused(
                    "price_changed",
                    "The total is no longer the amount you approved. Review it and pay again.",
                    409,
                    hold_id=hold_id,
                    amount=amount,
                    total=hold.amount,
                    unit_price=hold.unit_price,
                )
            cur = c.execute(
                "INSERT INTO bk_payments (user, hold_id, amount, client_ref, status, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, 'authorized', ?, ?)",
                (user, hold_id, amount, client_ref, now, now),
            )
            payment_id = int(cur.lastrowid or 0)
            self._remember(c, user, "pay", idempotency_key, params, payment_id)
        return Created(payment_id)

    def payment(self, payment_id: int) -> Payment | None:
        """One authorization by id."""
        rows = self._all("SELECT * FROM bk_payments WHERE id = ?", payment_id)
        return Payment(**dict(rows[0])) if rows else None

    def payments(
        self,
        user: str | None = None,
        *,
        hold_id: int | None = None,
        client_ref: str | None = None,
    ) -> list[Payment]:
        """Authorizations, oldest first, filtered by user, hold, client reference."""
        sql, args = "SELECT * FROM bk_payments WHERE 1 = 1", []
        for column, value in (("user", user), ("hold_id", hold_id), ("client_ref", client_ref)):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        return [Payment(**dict(r)) for r in self._all(sql + " ORDER BY id", *args)]

    def _user_payment(self, c: sqlite3.Connection, user: str, payment_id: int) -> Payment:
        row = c.execute("SELECT * FROM bk_payments WHERE id = ?", (payment_id,)).fetchone()
        if row is None or row["user"] != user:
            raise Refused("not_found", f"no such payment: {payment_id}", 404)
        return Payment(**dict(row))

    def void(self, user: str, payment_id: int) -> Created:
        """Void an authorization that no booking captured.

        Voiding a voided one changes nothing (``created`` False); a captured
        one must be refunded instead.
        """
        with self._tx() as c:
            ended = self._end_payment(
                c, user, payment_id, needs="authorized", becomes="voided", kind="void",
                code="not_voidable", instead=("captured", "refund"),
            )  # fmt: skip
        return Created(payment_id, created=ended)

    def refund(self, user: str, payment_id: int) -> Created:
        """Refund a captured payment; its booking is cancelled (inventory freed).

        Refunding a refunded one changes nothing (``created`` False); an
        uncaptured one must be voided instead.
        """
        with self._tx() as c:
            ended = self._end_payment(
                c, user, payment_id, needs="captured", becomes="refunded", kind="refund",
                code="not_refundable", instead=("authorized", "void"),
            )  # fmt: skip
            if ended:
                c.execute(
                    "UPDATE bk_bookings SET status = 'cancelled' WHERE payment_id = ?",
                    (payment_id,),
                )
        return Created(payment_id, created=ended)

    def _end_payment(
        self,
        c: sqlite3.Connection,
        user: str,
        payment_id: int,
        *,
        needs: str,
        becomes: str,
        kind: str,
        code: str,
        instead: tuple[str, str],
    ) -> bool:
        """Move the user's payment from ``needs`` to ``becomes``, recorded as ``kind``.

        False when it already is ``becomes`` (nothing changes). Any other
        status is refused with ``code``, naming the other verb when the
        payment is in ``instead``'s status (a captured one is refunded, an
        authorized one voided).
        """
        payment = self._user_payment(c, user, payment_id)
        if payment.status == becomes:
            return False
        if payment.status != needs:
            hint = f": {instead[1]} it instead" if payment.status == instead[0] else ""
            raise Refused(
                code,
                f"the payment is {payment.status}{hint}",
                409,
                payment_id=payment_id,
                payment_status=payment.status,
            )
        now = self.clock()
        c.execute(
            "UPDATE bk_payments SET status = ?, updated_at = ? WHERE id = ?",
            (becomes, now, payment.id),
        )
        c.execute(
            "INSERT INTO bk_voids (payment_id, kind, amount, at) VALUES (?, ?, ?, ?)",
            (payment.id, kind, payment.amount, now),
        )
        return True
