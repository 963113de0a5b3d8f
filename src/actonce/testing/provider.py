"""A pretend external system with a ground truth, and faults on demand."""

from __future__ import annotations

import json
import random
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .._effect import Effect
from .._rules.keys import effect_key
from .._rules.model import Absent, Confirmed, EffectRecord, Policy, Unavailable, Verdict
from .._run import points
from .clock import FrozenClock

__all__ = ["FakeProvider", "Faults", "ProviderError"]


class ProviderError(Exception):
    """The fake provider refused a request (an HTTP 500, say)."""


@dataclass
class Faults:
    """How often the fake provider misbehaves (rates in 0..1, seeded).

    Attributes:
        lose_response: commit the effect, then raise ``TimeoutError``.
        fail_before_commit: raise ``ProviderError`` without committing.
        unavailable: make a lookup answer ``Unavailable``.
        visibility_delay: seconds a new effect stays invisible to lookups.
        script: one-shot faults consumed first, in order (``"lose_response"``,
            ``"fail_before_commit"``, ``"unavailable"`` or ``None`` for none).
    """

    lose_response: float = 0.0
    fail_before_commit: float = 0.0
    unavailable: float = 0.0
    visibility_delay: float = 0.0
    script: list[str | None] = field(default_factory=list)


_PROVIDER_SCHEMA = """
CREATE TABLE IF NOT EXISTS accepted (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ref TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    visible_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS accepted_ref ON accepted (ref);
CREATE TABLE IF NOT EXISTS calls (kind TEXT PRIMARY KEY, n INTEGER NOT NULL);
"""


class FakeProvider:
    """A pretend external system with a ground truth of accepted effects.

    ``submit(ref)`` is the side effect (it does *not* deduplicate: calling it
    twice makes two objects, like a naive web form). ``lookup(ref)`` is the
    read-only verification. Pass a file ``path`` to share one provider between
    processes; without one it lives in memory.
    """

    def __init__(
        self,
        path: str | None = None,
        *,
        faults: Faults | None = None,
        clock: Any = None,
        seed: int = 0,
    ) -> None:
        self.faults = faults or Faults()
        self.clock = clock or FrozenClock()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            path or ":memory:", timeout=60, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.executescript(_PROVIDER_SCHEMA)

    def _fault(self, choices: Iterable[tuple[str, float]]) -> str | None:
        if self.faults.script:
            return self.faults.script.pop(0)
        for name, rate in choices:
            if rate and self._rng.random() < rate:
                return name
        return None

    def _count_call(self, kind: str) -> None:
        self._db.execute(
            "INSERT INTO calls (kind, n) VALUES (?, 1) ON CONFLICT (kind) DO UPDATE SET n = n + 1",
            (kind,),
        )

    def submit(self, ref: str, payload: Any = None) -> str:
        """Accept one effect for ``ref`` (the perform). Returns the object id."""
        with self._lock:
            fault = self._fault(
                [
                    ("fail_before_commit", self.faults.fail_before_commit),
                    ("lose_response", self.faults.lose_response),
                ]
            )
            self._count_call("submit")
            if fault == "fail_before_commit":
                raise ProviderError(f"HTTP 500 before commit for {ref}")
            now = self.clock.now()
            cur = self._db.execute(
                "INSERT INTO accepted (ref, payload, created_at, visible_at) VALUES (?, ?, ?, ?)",
                (ref, json.dumps(payload, sort_keys=True), now, now + self.faults.visibility_delay),
            )
            object_id = f"obj-{cur.lastrowid}"
        points.hit("provider_committed")
        if fault == "lose_response":
            raise TimeoutError(f"response lost after commit for {ref}")
        return object_id

    def lookup(self, ref: str) -> Verdict:
        """Read-only verification: how many effects for ``ref`` are visible?

        ``Confirmed(count=n)`` with ``n > 1`` reports a duplicate.
        """
        with self._lock:
            self._count_call("lookup")
            if self._fault([("unavailable", self.faults.unavailable)]) == "unavailable":
                return Unavailable("provider lookup timed out")
            rows = self._db.execute(
                "SELECT id FROM accepted WHERE ref = ? AND visible_at <= ? ORDER BY id",
                (ref, self.clock.now()),
            ).fetchall()
        if not rows:
            return Absent()
        refs = tuple(f"obj-{r[0]}" for r in rows)
        return Confirmed(refs[0], count=len(refs), refs=refs if len(refs) > 1 else ())

    def count(self, ref: str) -> int:
        """How many effects were accepted for ``ref`` (visible or not)."""
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM accepted WHERE ref = ?", (ref,)).fetchone()
        return int(row[0])

    def accepted(self) -> dict[str, int]:
        """Ground truth: ref -> number of accepted effects."""
        with self._lock:
            rows = self._db.execute("SELECT ref, count(*) FROM accepted GROUP BY ref").fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def duplicates(self) -> dict[str, int]:
        """Refs with more than one accepted effect."""
        return {ref: n for ref, n in self.accepted().items() if n > 1}

    def calls(self, kind: str) -> int:
        """How many ``submit`` or ``lookup`` calls were made."""
        with self._lock:
            row = self._db.execute("SELECT n FROM calls WHERE kind = ?", (kind,)).fetchone()
        return 0 if row is None else int(row[0])

    def effect(
        self,
        ref: str,
        *,
        kind: str = "fake",
        payload: Any = None,
        policy: Policy | None = None,
        tenant: str = "test",
        actor: str = "tester",
    ) -> Effect:
        """An :class:`~actonce.Effect` that submits ``ref`` here and verifies it here."""
        body = {"ref": ref} if payload is None else {"ref": ref, **payload}
        return Effect(
            key=effect_key(tenant=tenant, actor=actor, kind=kind, object=ref, operation="create"),
            kind=kind,
            payload=body,
            perform=lambda: self.submit(ref, body),
            verify=lambda: self.lookup(ref),
            policy=policy or Policy(),
        )

    def verifier(self, record: EffectRecord) -> Verdict:
        """A registry verifier: looks up the ``ref`` stored in the payload."""
        return self.lookup(str(record.data["ref"]))

    def close(self) -> None:
        """Close the provider's database."""
        self._db.close()
