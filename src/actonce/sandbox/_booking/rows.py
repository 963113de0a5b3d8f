"""The booking world's vocabulary: its tables, row types, clock and refusal.

The schema (tables prefixed ``bk_``), the seeded products, the limits of a
hold, the frozen rows the store hands out (``Product``, ``Hold``,
``Payment``, ``Booking``, ``Message``), what a creating call answers
(``Created``), the one exception of the provider (``Refused``) and the
world's clock (``BookingClock``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_HOLD_SECONDS",
    "HOLD_STATUSES",
    "MAX_HOLD_SECONDS",
    "MAX_NIGHTS",
    "PAYMENT_STATUSES",
    "SCHEMA",
    "SEED_PRODUCTS",
    "TABLES",
    "Booking",
    "BookingClock",
    "Created",
    "Hold",
    "Message",
    "Payment",
    "Product",
    "Refused",
    "nights_of",
    "params_hash",
    "parse_date",
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

SCHEMA = """
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

TABLES = (
    "bk_products",
    "bk_holds",
    "bk_payments",
    "bk_voids",
    "bk_bookings",
    "bk_messages",
    "bk_message_attempts",
    "bk_idempotency",
)

HOLD_STATUSES = ("held", "expired", "released", "booked", "rejected")
PAYMENT_STATUSES = ("authorized", "captured", "voided", "refunded")


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


def params_hash(params: Mapping[str, Any]) -> str:
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def nights_of(date: str, nights: int) -> list[str]:
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
