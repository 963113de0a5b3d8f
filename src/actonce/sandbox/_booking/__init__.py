"""The booking world: a hotel-and-shop provider inside the sandbox.

``db`` assembles its store (``rows``: schema and row types; ``tables``: the
connection, idempotency keys, products and inventory; one desk per object:
``holds``, ``payments``, ``bookings``, ``messages``; ``truth``: the ground
truth); ``world`` assembles its web side (``web``: what every handler
shares; ``pages``: HTML; ``api``: JSON).
"""

from __future__ import annotations

from .db import BookingDB
from .rows import MAX_NIGHTS, SEED_PRODUCTS, BookingClock, Refused
from .world import BookingWorld

__all__ = ["MAX_NIGHTS", "SEED_PRODUCTS", "BookingClock", "BookingDB", "BookingWorld", "Refused"]
