"""Outbound messages, one per (user, message key), delivered at most once.

A send of a new or undelivered key delivers it (unless the
``message_dropped`` fault drops it); a send of a delivered key is a replay.
Every send is recorded as an attempt.
"""

from __future__ import annotations

from .rows import Created, Message, Refused
from .tables import BookingTables

__all__ = ["MessageDesk"]


class MessageDesk(BookingTables):
    """Send and read messages."""

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
