"""The booking provider's SQLite connection and what every desk shares.

One connection (autocommit, one re-entrant lock), ``BEGIN IMMEDIATE``
transactions, the seeded products and their reset, the
``Idempotency-Key`` table (holds, payments and bookings keep their keys
there), and products with their inventory per night or in stock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._sqlite import SQLiteTables
from .rows import (
    SCHEMA,
    SEED_PRODUCTS,
    TABLES,
    BookingClock,
    Product,
    Refused,
    nights_of,
    params_hash,
)

__all__ = ["BookingTables"]


class BookingTables(SQLiteTables):
    """The connection, transactions, idempotency keys, products and inventory.

    Args:
        path: database file (the sandbox's own file: the tables are prefixed
            ``bk_``); ``None`` keeps it in memory.
        clock: the world's time in seconds; ``BookingClock().now`` by default.
    """

    def __init__(
        self, path: str | Path | None = None, *, clock: Callable[[], float] | None = None
    ) -> None:
        super().__init__(path, SCHEMA)
        self.clock = clock or BookingClock().now
        self._seed()

    def _seed(self) -> None:
        with self._tx() as c:
            for row in SEED_PRODUCTS:
                c.execute("INSERT OR IGNORE INTO bk_products VALUES (?, ?, ?, ?, ?, ?)", row)

    def reset(self) -> None:
        """Delete everything created and restore the seeded products and prices."""
        with self._tx() as c:
            for table in TABLES:
                c.execute(f"DELETE FROM {table}")
            c.execute(
                "DELETE FROM sqlite_sequence WHERE name IN ({})".format(
                    ",".join("?" * len(TABLES))
                ),
                TABLES,
            )
        self._seed()

    # -- idempotency ------------------------------------------------------

    @staticmethod
    def _replayed(
        c: sqlite3.Connection, user: str, action: str, key: str | None, params: Mapping[str, Any]
    ) -> int | None:
        """The object an earlier request with this key created, or None.

        Raises ``Refused(idempotency_mismatch, 422)`` when the key was used
        with other parameters.
        """
        if not key:
            return None
        row = c.execute(
            "SELECT params_hash, object_id FROM bk_idempotency"
            " WHERE user = ? AND action = ? AND key = ?",
            (user, action, key),
        ).fetchone()
        if row is None:
            return None
        if row[0] != params_hash(params):
            raise Refused(
                "idempotency_mismatch",
                "Idempotency-Key reused with different parameters",
                422,
                idempotency_key=key,
            )
        return int(row[1])

    @staticmethod
    def _remember(
        c: sqlite3.Connection,
        user: str,
        action: str,
        key: str | None,
        params: Mapping[str, Any],
        object_id: int,
    ) -> None:
        if key:
            c.execute(
                "INSERT INTO bk_idempotency VALUES (?, ?, ?, ?, ?)",
                (user, action, key, params_hash(params), object_id),
            )

    def idempotency_object(self, user: str, action: str, key: str) -> int | None:
        """The id an ``Idempotency-Key`` created (action: hold, pay, book)."""
        rows = self._all(
            "SELECT object_id FROM bk_idempotency WHERE user = ? AND action = ? AND key = ?",
            user,
            action,
            key,
        )
        return int(rows[0][0]) if rows else None

    # -- products and inventory -------------------------------------------

    def products(self) -> list[Product]:
        """Every product, rooms first."""
        rows = self._all("SELECT * FROM bk_products ORDER BY kind DESC, sku")
        return [Product(**dict(r)) for r in rows]

    def product(self, sku: str) -> Product | None:
        """One product."""
        rows = self._all("SELECT * FROM bk_products WHERE sku = ?", sku)
        return Product(**dict(rows[0])) if rows else None

    def change_price(self, sku: str, delta: int) -> None:
        """Move a product's price (the ``price_change`` fault)."""
        with self._tx() as c:
            c.execute("UPDATE bk_products SET price = price + ? WHERE sku = ?", (delta, sku))

    def _used(self, c: sqlite3.Connection, sku: str, now: float) -> dict[str, dict[str, int]]:
        """Units per night (``""`` for items): held by live holds, booked."""
        used: dict[str, dict[str, int]] = {}
        holds = c.execute(
            "SELECT date, nights, qty FROM bk_holds"
            " WHERE sku = ? AND status = 'held' AND expires_at > ?",
            (sku, now),
        ).fetchall()
        booked = c.execute(
            "SELECT date, nights, qty FROM bk_bookings WHERE sku = ? AND status = 'confirmed'",
            (sku,),
        ).fetchall()
        for what, rows in (("held", holds), ("booked", booked)):
            for r in rows:
                for night in nights_of(str(r[0]), int(r[1])):
                    slot = used.setdefault(night, {"held": 0, "booked": 0})
                    slot[what] += int(r[2])
        return used

    def available(self, sku: str, date: str = "", nights: int = 1) -> int:
        """Units free on every night of the stay (rooms) or in stock (items)."""
        product = self.product(sku)
        if product is None:
            return 0
        with self._lock:
            used = self._used(self._conn, sku, self.clock())
        return min(
            product.capacity - sum(used.get(n, {}).values())
            for n in nights_of(date if product.kind == "room" else "", nights)
        )
