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

from .truth import GroundTruth

__all__ = ["BookingDB"]


class BookingDB(GroundTruth):
    """The booking provider's SQLite store: its tables and every desk over them.

    One connection and what the desks share (``tables.BookingTables``), a
    desk per object (``holds``, ``payments``, ``bookings``, ``messages``) and
    the ground truth (``truth``), assembled into one class.

    Args:
        path: database file (the sandbox's own file: the tables are prefixed
            ``bk_``); ``None`` keeps it in memory.
        clock: the world's time in seconds; ``BookingClock().now`` by default.
    """
