"""The booking world's own SQLite tables: the ground truth of a booking provider.

A small hotel-and-shop provider with the pieces a purchase or booking agent
crosses: **products** with prices and inventory (hotel rooms per night, shop
items in stock), **holds** that reserve inventory for a while and expire,
**payment authorizations** against a hold (voided or refunded later),
**bookings** that confirm a hold with its authorization, and **outbound
messages** keyed by a message key. Everything a client manages to create
lands here, whether or not it ever saw the answer, so ``ground_truth()`` can
count per natural key independently of any ledger.

Time comes from a clock function (``BookingClock`` by default: wall time plus
an offset that tests move), so hold expiry is driven without sleeping.

Deliberate provider semantics (documented in ``docs/browser.md``):

- a hold reserves inventory, not the price: the total is the *current* price
  times nights times quantity, and an authorization must be for exactly that
  total (otherwise ``price_changed``, nothing authorized);
- several authorizations may be made against one hold (that is the double
  charge a retry can cause, and what the ground truth counts);
- a hold becomes a booking at most once, and an authorization is captured by
  at most one booking;
- a message key is delivered at most once; a send of an undelivered key
  delivers it, a send of a delivered key is a replay;
- ``Idempotency-Key`` (holds, payments, bookings): the same key with the same
  parameters returns the original object, with other parameters is refused
  (422). Only a creation stores its key; a refusal does not use it up.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_NIGHTS",
    "SEED_PRODUCTS",
    "BookingClock",
    "BookingDB",
    "Refused",
]

SEED_PRODUCTS: tuple[tuple[str, str, str, str, int, int], ...] = (
    ("harbor-double", "room", "Harbor Hotel", "Double room", 12000, 2),
    ("harbor-suite", "room", "Harbor Hotel", "Suite", 26000, 1),
    ("alpine-single", "room", "Alpine Lodge", "Single room", 8000, 3),
    ("umbrella", "item", "Sandbox Shop", "Travel umbrella", 1500, 5),
    ("adapter", "item", "Sandbox Shop", "Plug adapter", 900, 2),
    ("guidebook", "item", "Sandbox Shop", "City guidebook", 2200, 1),
)
"""Products: (sku, kind ``room`` | ``item``, venue, name, price in cents per
night or per item, capacity: rooms per night or items in stock)."""

MAX_NIGHTS = 14
"""Longest stay one hold may cover."""

DEFAULT_HOLD_SECONDS = 600
"""How long a hold reserves its inventory unless the request says otherwise."""

MAX_HOLD_SECONDS = 3600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bk_products (
    sku TEXT PRIMARY KEY, kind TEXT NOT NULL, venue TEXT NOT NULL, name TEXT NOT NULL,
    price INTEGER NOT NULL, capacity INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bk_holds (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, sku TEXT NOT NULL,
    date TEXT NOT NULL, nights INTEGER NOT NULL, qty INTEGER NOT NULL,
    client_ref TEXT NOT NULL, status TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL, ended_at REAL);
CREATE TABLE IF NOT EXISTS bk_payments (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, hold_id INTEGER NOT NULL,
    amount INTEGER NOT NULL, client_ref TEXT NOT NULL, status TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bk_voids (
    id INTEGER PRIMARY KEY AUTOINCREMENT, payment_id INTEGER NOT NULL, kind TEXT NOT NULL,
    amount INTEGER NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bk_bookings (
    id INTEGER PRIMARY KEY AUTOINCREMENT, reference TEXT NOT NULL UNIQUE, user TEXT NOT NULL,
    hold_id INTEGER NOT NULL UNIQUE, payment_id INTEGER NOT NULL UNIQUE, sku TEXT NOT NULL,
    date TEXT NOT NULL, nights INTEGER NOT NULL, qty INTEGER NOT NULL, amount INTEGER NOT NULL,
    client_ref TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bk_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, message_key TEXT NOT NULL,
    recipient TEXT NOT NULL, body TEXT NOT NULL, booking_ref TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL, created_at REAL NOT NULL,
    delivered_at REAL, UNIQUE (user, message_key));
CREATE TABLE IF NOT EXISTS bk_message_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id INTEGER NOT NULL, outcome TEXT NOT NULL,
    at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bk_idempotency (
    user TEXT NOT NULL, action TEXT NOT NULL, key TEXT NOT NULL, params_hash TEXT NOT NULL,
    object_id INTEGER NOT NULL, PRIMARY KEY (user, action, key));
"""

_TABLES = (
    "bk_products",
    "bk_holds",
    "bk_payments",
    "bk_voids",
    "bk_bookings",
    "bk_messages",
    "bk_message_attempts",
    "bk_idempotency",
)

_HOLD_STATUSES = ("held", "expired", "released", "booked", "rejected")
_PAYMENT_STATUSES = ("authorized", "captured", "voided", "refunded")


class BookingClock:
    """Wall time plus an offset that only moves forward (``advance``).

    The booking world reads every timestamp from ``now()``; a test moves time
    with ``advance(seconds)`` (in process) or ``POST /admin/booking/clock``.
    """

    def __init__(self, base: Callable[[], float] = time.time) -> None:
        self._base = base
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """The booking world's current time (seconds since the epoch)."""
        with self._lock:
            return self._base() + self._offset

    @property
    def offset(self) -> float:
        """Seconds the clock was moved ahead of its base."""
        with self._lock:
            return self._offset

    def advance(self, seconds: float) -> float:
        """Move the clock ahead by ``seconds`` (>= 0); return the new offset."""
        if not seconds >= 0:
            raise ValueError("the clock only moves forward: seconds must be >= 0")
        with self._lock:
            self._offset += float(seconds)
            return self._offset

    def reset(self) -> None:
        """Back to the base clock."""
        with self._lock:
            self._offset = 0.0


class Refused(Exception):
    """The provider refused a request; nothing was changed by it.

    Attributes:
        code: machine-readable reason (``sold_out``, ``price_changed`` …).
        message: human-readable reason.
        status: the HTTP status the app answers with.
        details: JSON-able facts for the client (current price, ids …).
    """

    def __init__(self, code: str, message: str, status: int = 409, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details = details

    def to_json(self) -> dict[str, Any]:
        """``{"error": code, "message": …, **details}``."""
        return {"error": self.code, "message": self.message, **self.details}


@dataclass(frozen=True, slots=True)
class Product:
    """A hotel room type (inventory per night) or a shop item (stock)."""

    sku: str
    kind: str
    venue: str
    name: str
    price: int
    capacity: int


@dataclass(frozen=True, slots=True)
class Hold:
    """A reservation of inventory until ``expires_at``.

    ``status`` is effective: a ``held`` hold past its expiry reads ``expired``.
    ``amount`` is the current total (current price x nights x quantity).
    """

    id: int
    user: str
    sku: str
    date: str
    nights: int
    qty: int
    client_ref: str
    status: str
    created_at: float
    expires_at: float
    ended_at: float | None
    unit_price: int
    amount: int
    name: str
    venue: str
    kind: str

    @property
    def active(self) -> bool:
        """Whether the hold still reserves its inventory."""
        return self.status == "held"


@dataclass(frozen=True, slots=True)
class Payment:
    """A payment authorization against a hold."""

    id: int
    user: str
    hold_id: int
    amount: int
    client_ref: str
    status: str
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class Booking:
    """A confirmed booking: a hold plus its captured authorization."""

    id: int
    reference: str
    user: str
    hold_id: int
    payment_id: int
    sku: str
    date: str
    nights: int
    qty: int
    amount: int
    client_ref: str
    status: str
    created_at: float


@dataclass(frozen=True, slots=True)
class Message:
    """An outbound message, one per (user, message key)."""

    id: int
    user: str
    message_key: str
    recipient: str
    body: str
    booking_ref: str
    status: str
    attempts: int
    created_at: float
    delivered_at: float | None

    @property
    def delivered(self) -> bool:
        """Whether the recipient got it."""
        return self.status == "delivered"


@dataclass(slots=True)
class Created:
    """What a creating call did: the object id and whether it is new.

    ``created`` is False for an ``Idempotency-Key`` replay (or a message key
    that was delivered already).
    """

    id: int
    created: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _params_hash(params: Mapping[str, Any]) -> str:
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _nights(date: str, nights: int) -> list[str]:
    """The nights a stay covers, as ISO dates (``[""]`` for a shop item)."""
    if not date:
        return [""]
    first = dt.date.fromisoformat(date)
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(nights)]


def parse_date(text: str) -> str:
    """A ``YYYY-MM-DD`` date, or ``Refused(invalid)``."""
    try:
        return dt.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise Refused("invalid", f"not a date (YYYY-MM-DD): {text!r}", 400) from None


class BookingDB:
    """The booking provider's SQLite store.

    Args:
        path: database file (the sandbox's own file: the tables are prefixed
            ``bk_``); ``None`` keeps it in memory.
        clock: the world's time in seconds; ``BookingClock().now`` by default.
    """

    def __init__(
        self, path: str | Path | None = None, *, clock: Callable[[], float] | None = None
    ) -> None:
        self.path = str(path) if path is not None else ":memory:"
        self.clock = clock or BookingClock().now
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            self._conn.executescript(_SCHEMA)
        self._seed()

    # -- plumbing ---------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _all(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, args).fetchall())

    def _seed(self) -> None:
        with self._tx() as c:
            for row in SEED_PRODUCTS:
                c.execute("INSERT OR IGNORE INTO bk_products VALUES (?, ?, ?, ?, ?, ?)", row)

    def reset(self) -> None:
        """Delete everything created and restore the seeded products and prices."""
        with self._tx() as c:
            for table in _TABLES:
                c.execute(f"DELETE FROM {table}")
            c.execute(
                "DELETE FROM sqlite_sequence WHERE name IN ({})".format(
                    ",".join("?" * len(_TABLES))
                ),
                _TABLES,
            )
        self._seed()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

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
        if row[0] != _params_hash(params):
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
                (user, action, key, _params_hash(params), object_id),
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
                for night in _nights(str(r[0]), int(r[1])):
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
            for n in _nights(date if product.kind == "room" else "", nights)
        )

    # -- holds ------------------------------------------------------------

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
                product.capacity - sum(used.get(n, {}).values()) for n in _nights(date, nights)
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

    # -- payments ---------------------------------------------------------

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
            payment = self._user_payment(c, user, payment_id)
            if payment.status == "voided":
                return Created(payment_id, created=False)
            if payment.status != "authorized":
                raise Refused(
                    "not_voidable",
                    f"the payment is {payment.status}"
                    + (": refund it instead" if payment.status == "captured" else ""),
                    409,
                    payment_id=payment_id,
                    payment_status=payment.status,
                )
            self._end_payment(c, payment, "voided", "void")
        return Created(payment_id)

    def refund(self, user: str, payment_id: int) -> Created:
        """Refund a captured payment; its booking is cancelled (inventory freed).

        Refunding a refunded one changes nothing (``created`` False); an
        uncaptured one must be voided instead.
        """
        with self._tx() as c:
            payment = self._user_payment(c, user, payment_id)
            if payment.status == "refunded":
                return Created(payment_id, created=False)
            if payment.status != "captured":
                raise Refused(
                    "not_refundable",
                    f"the payment is {payment.status}"
                    + (": void it instead" if payment.status == "authorized" else ""),
                    409,
                    payment_id=payment_id,
                    payment_status=payment.status,
                )
            self._end_payment(c, payment, "refunded", "refund")
            c.execute(
                "UPDATE bk_bookings SET status = 'cancelled' WHERE payment_id = ?", (payment_id,)
            )
        return Created(payment_id)

    def _end_payment(self, c: sqlite3.Connection, payment: Payment, status: str, kind: str) -> None:
        now = self.clock()
        c.execute(
            "UPDATE bk_payments SET status = ?, updated_at = ? WHERE id = ?",
            (status, now, payment.id),
        )
        c.execute(
            "INSERT INTO bk_voids (payment_id, kind, amount, at) VALUES (?, ?, ?, ?)",
            (payment.id, kind, payment.amount, now),
        )

    # -- bookings ---------------------------------------------------------

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

    # -- messages ---------------------------------------------------------

    def send_message(
        self,
        user: str,
        message_key: str,
        recipient: str,
        body: str,
        *,
        booking_ref: str = "",
        drop: bool = False,
    ) -> Created:
        """Accept a message under its key and deliver it, unless ``drop``.

        A new key: stored, then delivered (or, with ``drop``, left
        undelivered). A known undelivered key: this send delivers it (unless
        dropped again). A delivered key: a replay, nothing is delivered again
        (``created`` False). The same key with another recipient, body or
        booking is refused (422). ``extra["outcome"]`` is ``delivered``,
        ``dropped`` or ``replayed``.
        """
        if not message_key.strip() or not recipient.strip() or not body.strip():
            raise Refused("invalid", "message_key, recipient and body are required", 400)
        if len(body) > 2000 or len(recipient) > 200 or len(message_key) > 200:
            raise Refused("invalid", "message too long", 400)
        now = self.clock()
        with self._tx() as c:
            if booking_ref:
                owner = c.execute(
                    "SELECT user FROM bk_bookings WHERE reference = ?", (booking_ref,)
                ).fetchone()
                if owner is None or owner[0] != user:
                    raise Refused("not_found", f"no such booking: {booking_ref!r}", 404)
            row = c.execute(
                "SELECT * FROM bk_messages WHERE user = ? AND message_key = ?", (user, message_key)
            ).fetchone()
            if row is None:
                cur = c.execute(
                    "INSERT INTO bk_messages (user, message_key, recipient, body, booking_ref,"
                    " status, attempts, created_at) VALUES (?, ?, ?, ?, ?, 'undelivered', 0, ?)",
                    (user, message_key, recipient, body, booking_ref, now),
                )
                message_id, status = int(cur.lastrowid or 0), "undelivered"
            else:
                if (row["recipient"], row["body"], row["booking_ref"]) != (
                    recipient,
                    body,
                    booking_ref,
                ):
                    raise Refused(
                        "idempotency_mismatch",
                        "message key reused with a different recipient, body or booking",
                        422,
                        message_key=message_key,
                    )
                message_id, status = int(row["id"]), str(row["status"])
            if status == "delivered":
                outcome = "replayed"
            elif drop:
                outcome = "dropped"
            else:
                outcome = "delivered"
                c.execute(
                    "UPDATE bk_messages SET status = 'delivered', delivered_at = ? WHERE id = ?",
                    (now, message_id),
                )
            c.execute("UPDATE bk_messages SET attempts = attempts + 1 WHERE id = ?", (message_id,))
            c.execute(
                "INSERT INTO bk_message_attempts (message_id, outcome, at) VALUES (?, ?, ?)",
                (message_id, outcome, now),
            )
        return Created(message_id, created=outcome != "replayed", extra={"outcome": outcome})

    def message(self, user: str | None, message_key: str) -> Message | None:
        """One message by key (of one user, or of anyone when ``user`` is None)."""
        sql, args = "SELECT * FROM bk_messages WHERE message_key = ?", [message_key]
        if user is not None:
            sql += " AND user = ?"
            args.append(user)
        rows = self._all(sql + " ORDER BY id", *args)
        return Message(**dict(rows[0])) if rows else None

    def message_by_id(self, message_id: int) -> Message | None:
        """One message by id."""
        rows = self._all("SELECT * FROM bk_messages WHERE id = ?", message_id)
        return Message(**dict(rows[0])) if rows else None

    def messages(self, user: str | None = None) -> list[Message]:
        """Messages, oldest first, optionally of one user."""
        if user is None:
            rows = self._all("SELECT * FROM bk_messages ORDER BY id")
        else:
            rows = self._all("SELECT * FROM bk_messages WHERE user = ? ORDER BY id", user)
        return [Message(**dict(r)) for r in rows]

    # -- ground truth -----------------------------------------------------

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
                "statuses": statuses(rows, _HOLD_STATUSES),
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
                "statuses": statuses(rows, _PAYMENT_STATUSES),
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
                        touched.update(_nights(str(r[0]), int(r[1])))
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
