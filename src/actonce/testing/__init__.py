"""Test helpers, public: test your own effects against actonce's guarantees.

- :class:`FrozenClock`: time that moves only when told (``sleep`` advances it).
- :class:`FakeProvider`: a pretend external system that records every
  accepted effect (its ground truth) and misbehaves on demand: lose the
  response after committing, fail before committing, delay visibility, make
  verification unavailable. Backed by SQLite, so several processes can share
  one (``FakeProvider(path)``).
- :class:`FaultyStore`: wraps a real store and makes chosen writes fail
  before they happen, or after they committed (outcome unknown).
- Named crash points: :func:`arm`, :func:`disarm`, :data:`POINTS`,
  :class:`SimulatedCrash` (inert unless armed).
- :class:`MemoryStore`: a store in memory.
"""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import _crash
from ._crash import POINTS, SimulatedCrash, arm, disarm
from ._errors import LedgerOutcomeUnknown, LedgerUnavailable
from ._keys import effect_key
from ._ledger import Effect
from ._model import Absent, Confirmed, EffectRecord, Event, Policy, Status, Unavailable, Verdict
from ._store import ClaimResult, MemoryStore, Store

__all__ = [
    "POINTS",
    "FakeProvider",
    "Faults",
    "FaultyStore",
    "FrozenClock",
    "MemoryStore",
    "ProviderError",
    "SimulatedCrash",
    "arm",
    "crash_at",
    "disarm",
]


class FrozenClock:
    """A clock that stands still until :meth:`advance` or :meth:`sleep` moves it."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    async def asleep(self, seconds: float) -> None:
        self.advance(seconds)


@contextlib.contextmanager
def crash_at(point: str, *, nth: int = 1, mode: str = "raise") -> Iterator[None]:
    """Arm ``point`` for the duration of the ``with`` block."""
    arm(point, nth=nth, mode=mode)
    try:
        yield
    finally:
        disarm()


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
        _crash.hit("provider_committed")
        if fault == "lose_response":
            raise TimeoutError(f"response lost after commit for {ref}")
        return object_id

    def lookup(self, ref: str) -> Verdict:
        """Read-only verification: is an effect for ``ref`` visible?"""
        with self._lock:
            self._count_call("lookup")
            if self._fault([("unavailable", self.faults.unavailable)]) == "unavailable":
                return Unavailable("provider lookup timed out")
            row = self._db.execute(
                "SELECT id FROM accepted WHERE ref = ? AND visible_at <= ? ORDER BY id LIMIT 1",
                (ref, self.clock.now()),
            ).fetchone()
        return Absent() if row is None else Confirmed(f"obj-{row[0]}")

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
        return self.lookup(str(json.loads(record.payload)["ref"]))

    def close(self) -> None:
        """Close the provider's database."""
        self._db.close()


class FaultyStore:
    """A real store whose chosen writes fail, for ledger-failure tests.

    ``fail("transition", when="before")`` makes the next ``transition`` raise
    :class:`LedgerUnavailable` without writing; ``when="after"`` lets it
    commit and then raises :class:`LedgerOutcomeUnknown` (the commit's
    acknowledgement was lost). ``match`` narrows which call fails (it gets the
    new record), e.g. ``lambda r: r.status is Status.EXECUTING``.
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self._plans: list[tuple[str, str, Callable[[EffectRecord], bool]]] = []

    def fail(
        self,
        method: str,
        *,
        when: str = "before",
        match: Callable[[EffectRecord], bool] | None = None,
    ) -> None:
        """Arm one failure of ``method`` (``claim`` or ``transition``)."""
        if method not in ("claim", "transition") or when not in ("before", "after"):
            raise ValueError("fail('claim'|'transition', when='before'|'after')")
        self._plans.append((method, when, match or (lambda _r: True)))

    def _armed(self, method: str, new: EffectRecord) -> str | None:
        for i, (m, when, match) in enumerate(self._plans):
            if m == method and match(new):
                del self._plans[i]
                return when
        return None

    def claim(
        self, new: EffectRecord, expect: tuple[Status, int] | None, event: Event
    ) -> ClaimResult:
        when = self._armed("claim", new)
        if when == "before":
            raise LedgerUnavailable("injected: claim failed before commit")
        result = self.inner.claim(new, expect, event)
        if when == "after":
            raise LedgerOutcomeUnknown("injected: claim committed, acknowledgement lost")
        return result

    def transition(
        self, expect: tuple[Status, int], new: EffectRecord, event: Event
    ) -> EffectRecord | None:
        when = self._armed("transition", new)
        if when == "before":
            raise LedgerUnavailable("injected: transition failed before commit")
        result = self.inner.transition(expect, new, event)
        if when == "after":
            raise LedgerOutcomeUnknown("injected: transition committed, acknowledgement lost")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
