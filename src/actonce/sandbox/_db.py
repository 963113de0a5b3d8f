"""The sandbox's own SQLite database: the ground truth of what was created.

It is deliberately separate from any actonce ledger. Everything a client
managed to create lands here, whether or not the client ever saw the
confirmation, so duplicates can be counted independently of the ledger.

One connection, guarded by a lock: the app runs on one event loop thread and
every statement is short.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._sqlite import SQLiteTables

__all__ = ["SEED_ITEMS", "SEED_USERS", "SandboxDB"]

SEED_USERS: dict[str, str] = {
    "alice": "alice-password",
    "bob": "bob-password",
    "carol": "carol-password",
}
"""Seeded accounts and their passwords (a test target, not a secret)."""

SEED_ITEMS: tuple[tuple[str, str, int], ...] = (
    ("room-101", "Room 101, one night", 12000),
    ("kayak", "Kayak tour", 4500),
    ("museum", "Museum ticket", 1800),
)
"""Shop items: (slug, name, price in cents)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, password_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, user TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS posts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    author TEXT NOT NULL, text TEXT NOT NULL, parent_id INTEGER,
    media_type TEXT, media_name TEXT, alt TEXT,
    created_at REAL NOT NULL, visible_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS likes (user TEXT NOT NULL, post_id INTEGER NOT NULL,
    PRIMARY KEY (user, post_id));
CREATE TABLE IF NOT EXISTS follows (user TEXT NOT NULL, target TEXT NOT NULL,
    PRIMARY KEY (user, target));
CREATE TABLE IF NOT EXISTS toggle_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, user TEXT NOT NULL,
    target TEXT NOT NULL, state INTEGER NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS invoices (
    id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, reference TEXT NOT NULL,
    amount INTEGER NOT NULL, created_at REAL NOT NULL, visible_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT NOT NULL, account TEXT NOT NULL, body_hash TEXT NOT NULL,
    invoice_id INTEGER NOT NULL, PRIMARY KEY (account, key));
CREATE TABLE IF NOT EXISTS items (slug TEXT PRIMARY KEY, name TEXT NOT NULL,
    price INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bookings (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, item TEXT NOT NULL,
    price INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, author TEXT NOT NULL, text TEXT NOT NULL,
    published INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS beacons (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT, event TEXT NOT NULL, at REAL NOT NULL);
"""

_DATA_TABLES = (
    "sessions",
    "posts",
    "likes",
    "follows",
    "toggle_events",
    "invoices",
    "idempotency",
    "bookings",
    "notes",
    "beacons",
    "items",
    "users",
)


def _hash_password(password: str) -> str:
    return hashlib.sha256(b"actonce-sandbox:" + password.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Post:
    """One post row."""

    id: int
    author: str
    text: str
    parent_id: int | None
    media_type: str | None
    media_name: str | None
    alt: str | None
    created_at: float
    visible_at: float


@dataclass(frozen=True, slots=True)
class Invoice:
    """One invoice row."""

    id: int
    account: str
    reference: str
    amount: int
    created_at: float
    visible_at: float


class SandboxDB(SQLiteTables):
    """The sandbox's SQLite store.

    Args:
        path: database file; ``None`` keeps it in memory.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path, _SCHEMA)
        self._seed()

    def _seed(self) -> None:
        with self._tx() as c:
            for name, password in SEED_USERS.items():
                c.execute(
                    "INSERT OR IGNORE INTO users VALUES (?, ?)", (name, _hash_password(password))
                )
            for slug, name, price in SEED_ITEMS:
                c.execute("INSERT OR IGNORE INTO items VALUES (?, ?, ?)", (slug, name, price))

    def reset(self) -> None:
        """Delete everything created and restore the seed data."""
        with self._tx() as c:
            for table in _DATA_TABLES:
                c.execute(f"DELETE FROM {table}")
            c.execute("DELETE FROM sqlite_sequence")
        self._seed()

    # -- accounts ---------------------------------------------------------

    def check_password(self, user: str, password: str) -> bool:
        """True when the user exists and the password matches."""
        row = self._one("SELECT password_hash FROM users WHERE name = ?", user)
        return row is not None and secrets.compare_digest(row[0], _hash_password(password))

    def user_exists(self, user: str) -> bool:
        """True when the account exists."""
        return self._one("SELECT 1 FROM users WHERE name = ?", user) is not None

    def new_session(self, user: str) -> str:
        """Create a session token for the user."""
        token = secrets.token_urlsafe(24)
        with self._tx() as c:
            c.execute("INSERT INTO sessions VALUES (?, ?)", (token, user))
        return token

    def session_user(self, token: str | None) -> str | None:
        """The user a session token belongs to, if any."""
        if not token:
            return None
        row = self._one("SELECT user FROM sessions WHERE token = ?", token)
        return None if row is None else str(row[0])

    def end_session(self, token: str | None) -> None:
        """Forget a session token."""
        if token:
            with self._tx() as c:
                c.execute("DELETE FROM sessions WHERE token = ?", (token,))

    # -- posts ------------------------------------------------------------

    def create_post(
        self,
        author: str,
        text: str,
        parent_id: int | None,
        media_type: str | None,
        media_name: str | None,
        alt: str | None,
        *,
        hidden_for: float = 0.0,
    ) -> int:
        """Insert a post; ``hidden_for`` seconds of late indexing."""
        now = time.time()
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO posts (author, text, parent_id, media_type, media_name, alt,"
                " created_at, visible_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (author, text, parent_id, media_type, media_name, alt, now, now + hidden_for),
            )
            return int(cur.lastrowid or 0)

    def post(self, post_id: int) -> Post | None:
        """One post by id (visible or not: its own URL always works)."""
        row = self._one("SELECT * FROM posts WHERE id = ?", post_id)
        return None if row is None else Post(**dict(row))

    def search_posts(self, author: str | None = None, q: str | None = None) -> list[Post]:
        """Indexed posts by exact author and text substring, oldest first."""
        sql = "SELECT * FROM posts WHERE visible_at <= ?"
        args: list[Any] = [time.time()]
        if author:
            sql += " AND author = ?"
            args.append(author)
        if q:
            sql += " AND instr(text, ?) > 0"
            args.append(q)
        return [Post(**dict(r)) for r in self._all(sql + " ORDER BY id", *args)]

    def replies(self, post_id: int) -> list[Post]:
        """Indexed replies to a post."""
        rows = self._all(
            "SELECT * FROM posts WHERE parent_id = ? AND visible_at <= ? ORDER BY id",
            post_id,
            time.time(),
        )
        return [Post(**dict(r)) for r in rows]

    # -- toggles ----------------------------------------------------------

    def liked(self, user: str, post_id: int) -> bool:
        """Whether the user currently likes the post."""
        return (
            self._one("SELECT 1 FROM likes WHERE user = ? AND post_id = ?", user, post_id)
            is not None
        )

    def like_count(self, post_id: int) -> int:
        """How many users like the post now."""
        row = self._one("SELECT count(*) FROM likes WHERE post_id = ?", post_id)
        return int(row[0]) if row else 0

    def toggle_like(self, user: str, post_id: int) -> bool:
        """Flip the like; record the event; return the new state."""
        with self._tx() as c:
            gone = c.execute(
                "DELETE FROM likes WHERE user = ? AND post_id = ?", (user, post_id)
            ).rowcount
            if not gone:
                c.execute("INSERT INTO likes VALUES (?, ?)", (user, post_id))
            c.execute(
                "INSERT INTO toggle_events (kind, user, target, state, at)"
                " VALUES ('like', ?, ?, ?, ?)",
                (user, str(post_id), int(not gone), time.time()),
            )
        return not gone

    def following(self, user: str, target: str) -> bool:
        """Whether the user currently follows the target."""
        return (
            self._one("SELECT 1 FROM follows WHERE user = ? AND target = ?", user, target)
            is not None
        )

    def toggle_follow(self, user: str, target: str) -> bool:
        """Flip the follow; record the event; return the new state."""
        with self._tx() as c:
            gone = c.execute(
                "DELETE FROM follows WHERE user = ? AND target = ?", (user, target)
            ).rowcount
            if not gone:
                c.execute("INSERT INTO follows VALUES (?, ?)", (user, target))
            c.execute(
                "INSERT INTO toggle_events (kind, user, target, state, at)"
                " VALUES ('follow', ?, ?, ?, ?)",
                (user, target, int(not gone), time.time()),
            )
        return not gone

    # -- invoices ---------------------------------------------------------

    def create_invoice(
        self, account: str, reference: str, amount: int, *, hidden_for: float = 0.0
    ) -> int:
        """Insert an invoice (no uniqueness: duplicates are what we count)."""
        now = time.time()
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO invoices (account, reference, amount, created_at, visible_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (account, reference, amount, now, now + hidden_for),
            )
            return int(cur.lastrowid or 0)

    def create_invoice_idempotent(
        self, account: str, key: str, body_hash: str, reference: str, amount: int
    ) -> tuple[int, bool | None]:
        """Create under an idempotency key, atomically.

        Returns ``(invoice_id, created)``: ``created`` is True for a new
        invoice, False for a replay of the same body and None when the key
        was used with another body (no invoice id then: 0).
        """
        now = time.time()
        with self._tx() as c:
            row = c.execute(
                "SELECT body_hash, invoice_id FROM idempotency WHERE account = ? AND key = ?",
                (account, key),
            ).fetchone()
            if row is not None:
                return (int(row[1]), False) if row[0] == body_hash else (0, None)
            cur = c.execute(
                "INSERT INTO invoices (account, reference, amount, created_at, visible_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (account, reference, amount, now, now),
            )
            invoice_id = int(cur.lastrowid or 0)
            c.execute(
                "INSERT INTO idempotency VALUES (?, ?, ?, ?)", (key, account, body_hash, invoice_id)
            )
            return invoice_id, True

    def invoice(self, invoice_id: int) -> Invoice | None:
        """One invoice by id."""
        row = self._one("SELECT * FROM invoices WHERE id = ?", invoice_id)
        return None if row is None else Invoice(**dict(row))

    def list_invoices(self, reference: str | None = None) -> list[Invoice]:
        """Indexed invoices, optionally by exact reference."""
        sql = "SELECT * FROM invoices WHERE visible_at <= ?"
        args: list[Any] = [time.time()]
        if reference:
            sql += " AND reference = ?"
            args.append(reference)
        return [Invoice(**dict(r)) for r in self._all(sql + " ORDER BY id", *args)]

    # -- shop -------------------------------------------------------------

    def items(self) -> list[dict[str, Any]]:
        """Shop items with their current prices."""
        return [dict(r) for r in self._all("SELECT * FROM items ORDER BY slug")]

    def item(self, slug: str) -> dict[str, Any] | None:
        """One item."""
        row = self._one("SELECT * FROM items WHERE slug = ?", slug)
        return None if row is None else dict(row)

    def change_price(self, slug: str, delta: int) -> None:
        """Move an item's price (the price-change fault)."""
        with self._tx() as c:
            c.execute("UPDATE items SET price = price + ? WHERE slug = ?", (delta, slug))

    def book(self, user: str, slug: str, quoted: int) -> int | None:
        """Book at the quoted price; None if the price is no longer the quote."""
        with self._tx() as c:
            row = c.execute("SELECT price FROM items WHERE slug = ?", (slug,)).fetchone()
            if row is None or int(row[0]) != quoted:
                return None
            cur = c.execute(
                "INSERT INTO bookings (user, item, price, created_at) VALUES (?, ?, ?, ?)",
                (user, slug, quoted, time.time()),
            )
            return int(cur.lastrowid or 0)

    def bookings(self, user: str | None = None) -> list[dict[str, Any]]:
        """Bookings, optionally of one user."""
        if user is None:
            return [dict(r) for r in self._all("SELECT * FROM bookings ORDER BY id")]
        return [
            dict(r) for r in self._all("SELECT * FROM bookings WHERE user = ? ORDER BY id", user)
        ]

    # -- notes ------------------------------------------------------------

    def create_note(self, author: str, text: str) -> int:
        """A draft note."""
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO notes (author, text, created_at) VALUES (?, ?, ?)",
                (author, text, time.time()),
            )
            return int(cur.lastrowid or 0)

    def publish_note(self, author: str, note_id: int) -> bool:
        """Publish one of the author's notes (again: no change); False if none."""
        with self._tx() as c:
            cur = c.execute(
                "UPDATE notes SET published = 1 WHERE id = ? AND author = ?", (note_id, author)
            )
            return cur.rowcount == 1

    def notes(self, author: str | None = None) -> list[dict[str, Any]]:
        """Notes (drafts and published), oldest first."""
        if author is None:
            return [dict(r) for r in self._all("SELECT * FROM notes ORDER BY id")]
        return [
            dict(r) for r in self._all("SELECT * FROM notes WHERE author = ? ORDER BY id", author)
        ]

    def add_beacon(self, user: str | None, event: str) -> None:
        """One analytics beacon."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO beacons (user, event, at) VALUES (?, ?, ?)", (user, event, time.time())
            )

    def beacon_count(self) -> int:
        """How many analytics beacons arrived."""
        row = self._one("SELECT COUNT(*) FROM beacons")
        return 0 if row is None else int(row[0])

    # -- ground truth -----------------------------------------------------

    def ground_truth(self) -> dict[str, Any]:
        """Everything created, grouped by natural key, with duplicates."""
        groups: dict[str, list[dict[str, Any]]] = {}

        def group(kind: str, rows: list[sqlite3.Row], fields: tuple[str, ...]) -> None:
            by_key: dict[tuple[Any, ...], list[int]] = {}
            for r in rows:
                by_key.setdefault(tuple(r[f] for f in fields), []).append(int(r["id"]))
            groups[kind] = [
                {"key": dict(zip(fields, k, strict=True)), "count": len(ids), "ids": ids}
                for k, ids in by_key.items()
            ]

        group(
            "posts",
            self._all("SELECT id, author, text, parent_id AS parent FROM posts ORDER BY id"),
            ("author", "text", "parent"),
        )
        group(
            "invoices",
            self._all("SELECT id, account, reference FROM invoices ORDER BY id"),
            ("account", "reference"),
        )
        group(
            "bookings",
            self._all("SELECT id, user, item FROM bookings ORDER BY id"),
            ("user", "item"),
        )
        group(
            "likes",
            self._all("SELECT id, user, target FROM toggle_events WHERE kind = 'like' ORDER BY id"),
            ("user", "target"),
        )
        group(
            "follows",
            self._all(
                "SELECT id, user, target FROM toggle_events WHERE kind = 'follow' ORDER BY id"
            ),
            ("user", "target"),
        )
        group(
            "notes",
            self._all("SELECT id, author, text, published FROM notes ORDER BY id"),
            ("author", "text", "published"),
        )
        duplicates = [
            {"kind": kind, **entry}
            for kind, entries in groups.items()
            for entry in entries
            if entry["count"] > 1
        ]
        totals = {kind: sum(e["count"] for e in entries) for kind, entries in groups.items()}
        return {
            **groups,
            "totals": totals,
            "duplicates": duplicates,
            "beacons": self.beacon_count(),
        }
