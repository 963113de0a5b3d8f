"""Holds: inventory reserved for a while, released or expired or booked.

A hold reserves ``qty`` units of a product (each night of a stay, or from
stock) until it expires; it reserves inventory, not the price: its
``amount`` is always the current price times nights times quantity.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .rows import (
    DEFAULT_HOLD_SECONDS,
    MAX_HOLD_SECONDS,
    MAX_NIGHTS,
    Created,
    Hold,
    Refused,
    nights_of,
    parse_date,
)
from .tables import BookingTables

__all__ = ["HoldDesk"]


class HoldDesk(BookingTables):
    """Create, read and release holds."""

    def _hold_row(self, c: sqlite3.Connection, hold_id: int) -> Hold | None:
        row = c.execute(
            "SELECT h.*, p.price AS unit_price, p.name, p.venue, p.kind FROM bk_holds h"
            " JOIN bk_products p ON p.sku = h.sku WHERE h.id = ?",
            (hold_id,),
        ).fetchone()
        return None if row is None else self._hold(row)

    def _hold(self, row: sqlite3.Row) -> Hold:
        d = dict(row)
        if d["status"] == "held" and d["expires_at"] <= self.clock():
            d["status"] = "expired"
        d["amount"] = int(d["unit_price"]) * int(d["nights"]) * int(d["qty"])
        return Hold(**d)

    def create_hold(
        self,
        user: str,
        sku: str,
        *,
        date: str = "",
        nights: int = 1,
        qty: int = 1,
        client_ref: str = "",
        quoted_price: int | None = None,
        seconds: float = DEFAULT_HOLD_SECONDS,
        idempotency_key: str | None = None,
    ) -> Created:
        """Reserve ``qty`` units (each night of the stay) for ``seconds``.

        ``quoted_price`` (the unit price the client saw) must still be the
        price, else ``Refused(price_changed)``.
        """
        product = self.product(sku)
        if product is None:
            raise Refused("not_found", f"no such product: {sku!r}", 404)
        if product.kind == "room":
            if not date:
                raise Refused("invalid", "a room hold needs a date (YYYY-MM-DD)", 400)
            date = parse_date(date)
            if not 1 <= nights <= MAX_NIGHTS:
                raise Refused("invalid", f"nights must be between 1 and {MAX_NIGHTS}", 400)
        else:
            date, nights = "", 1
        if not 1 <= qty <= product.capacity:
            raise Refused("invalid", f"quantity must be between 1 and {product.capacity}", 400)
        if not 1 <= seconds <= MAX_HOLD_SECONDS:
            raise Refused("invalid", f"a hold lasts 1 to {MAX_HOLD_SECONDS} seconds", 400)
        seconds = float(seconds)
        params = {
            "sku": sku,
            "date": date,
            "nights": nights,
            "qty": qty,
            "client_ref": client_ref,
            "quoted_price": quoted_price,
            "seconds": seconds,
        }
        now = self.clock()
        with self._tx() as c:
            earlier = self._replayed(c, user, "hold", idempotency_key, params)
            if earlier is not None:
                return Created(earlier, created=False)
            price = int(
                c.execute("SELECT price FROM bk_products WHERE sku = ?", (sku,)).fetchone()[0]
            )
            if quoted_price is not None and quoted_price != price:
                raise Refused(
                    "price_changed",
                    "The price changed since you saw the offer. Review it and try again.",
                    409,
                    sku=sku,
                    quoted_price=quoted_price,
                    price=price,
                )
            used = self._used(c, sku, now)
            free = min(
                product.capacity - sum(used.get(n, {}).values()) for n in nights_of(date, nights)
            )
            if free < qty:
                raise Refused(
                    "sold_out", f"only {max(free, 0)} left for this date", 409, available=free
                )
            cur = c.execute(
                "INSERT INTO bk_holds (user, sku, date, nights, qty, client_ref, status,"
                " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, 'held', ?, ?)",
                (user, sku, date, nights, qty, client_ref, now, now + seconds),
            )
            hold_id = int(cur.lastrowid or 0)
            self._remember(c, user, "hold", idempotency_key, params, hold_id)
        return Created(hold_id)

    def hold(self, hold_id: int) -> Hold | None:
        """One hold by id, with its effective status and current total."""
        with self._lock:
            return self._hold_row(self._conn, hold_id)

    def holds(self, user: str | None = None, *, client_ref: str | None = None) -> list[Hold]:
        """Holds, oldest first, optionally of one user and one client reference."""
        sql = (
            "SELECT h.*, p.price AS unit_price, p.name, p.venue, p.kind FROM bk_holds h"
            " JOIN bk_products p ON p.sku = h.sku WHERE 1 = 1"
        )
        args: list[Any] = []
        if user is not None:
            sql += " AND h.user = ?"
            args.append(user)
        if client_ref is not None:
            sql += " AND h.client_ref = ?"
            args.append(client_ref)
        return [self._hold(r) for r in self._all(sql + " ORDER BY h.id", *args)]

    def release_hold(self, user: str, hold_id: int) -> Created:
        """Release a live hold (its inventory is free again).

        Releasing a released or expired hold changes nothing (``created``
        False); a booked or rejected one is refused.
        """
        with self._tx() as c:
            hold = self._user_hold(c, user, hold_id)
            if hold.status in ("released", "expired"):
                return Created(hold_id, created=False)
            if hold.status != "held":
                raise Refused("hold_not_active", f"the hold is {hold.status}", 409, hold_id=hold_id)
            c.execute(
                "UPDATE bk_holds SET status = 'released', ended_at = ? WHERE id = ?",
                (self.clock(), hold_id),
            )
        return Created(hold_id)

    def _user_hold(self, c: sqlite3.Connection, user: str, hold_id: int) -> Hold:
        hold = self._hold_row(c, hold_id)
        if hold is None or hold.user != user:
            raise Refused("not_found", f"no such hold: {hold_id}", 404)
        return hold
