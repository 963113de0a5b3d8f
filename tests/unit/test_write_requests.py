"""What each write of a run asks of the store: durable or not, and which columns it sets.

Invariant 2 (marker first) needs the ``executing`` mark *durably* committed
before the perform: the mark (a move from ``claimed``, or a direct claim,
which is its own mark) and a human's decision are fsynced, a verdict is not.
A move names the columns it changes (``fields``): a SQL store writes only
those, so every column it changes must be among them, and nothing a
concurrent lease extension wrote is written back. Both drivers ask the same
of the store, write for write. Memory store (SQLite in memory), frozen clock.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    Ledger,
    MemoryStore,
    Policy,
    Status,
    Unavailable,
)
from actonce.testing import FrozenClock

AUTHORITATIVE = Policy(
    settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0
)
CONSERVATIVE = Policy(settle_seconds=0, verify_attempts=1, verify_backoff=0)
DIRECT = dataclasses.replace(AUTHORITATIVE, verify_after_claim=False)

MARK = ("executing_at", "lease_expires_at", "status", "reason", "updated_at")
VERDICT = ("lease_expires_at", "status", "reason", "updated_at")
CONFIRM = ("result_ref", "matches", *VERDICT)
DUPLICATE = ("matches", "result_ref", *VERDICT)
HUMAN = ("status", "updated_at", "reason", "result_ref")


class Recording(MemoryStore):
    """Records what each claim and transition asks; checks a move names what it changes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[Any, ...]] = []
        self.settled: list[str] = []  # the moves that settle a gated claim's holds

    def claim(self, new: Any, expect: Any, event: Any, *, durable: bool = False,
              gate: Any = None) -> Any:  # fmt: skip
        self.writes.append(("claim", new.key, new.status, durable))
        return super().claim(new, expect, event, durable=durable, gate=gate)

    def transition(self, expect: Any, new: Any, event: Any, *, durable: bool = False,
                   settle: Any = None, fields: Any = None) -> Any:  # fmt: skip
        before = self.get(new.key)
        assert before is not None and fields is not None
        changed = {
            f.name
            for f in dataclasses.fields(before)
            if getattr(before, f.name) != getattr(new, f.name)
        }
        assert changed <= set(fields), (changed, fields)
        self.writes.append(("move", new.key, expect[0], new.status, durable, fields))
        if settle is not None:
            self.settled.append(f"{new.key}:{new.status}")
        return super().transition(expect, new, event, durable=durable, settle=settle, fields=fields)


def _effects(gate: Any) -> Iterator[tuple[Effect, Status]]:
    """Effects whose verifier answers absent until they performed, then ``after``."""
    made: set[str] = set()
    twice = Confirmed("r-a", count=2, refs=("r-a", "r-b"))
    shapes = [
        ("done", Confirmed("r-1"), AUTHORITATIVE, Status.CONFIRMED),
        ("gone", Absent(), AUTHORITATIVE, Status.FAILED),
        ("direct", Absent(), DIRECT, Status.FAILED),
        ("doubt", Absent(), CONSERVATIVE, Status.NEEDS_REVIEW),
        ("dark", Unavailable("down"), CONSERVATIVE, Status.UNKNOWN),
        ("twice", twice, AUTHORITATIVE, Status.NEEDS_REVIEW),
        ("paid", Confirmed("r-2"), AUTHORITATIVE, Status.CONFIRMED),  # settles its hold
    ]
    for key, after, policy, status in shapes:
        drawn = gate if key == "paid" else None

        def perform(key: str = key) -> None:
            made.add(key)

        def verify(key: str = key, after: Any = after) -> Any:
            return after if key in made else Absent()

        yield Effect(key=key, kind="pin", payload={}, perform=perform, verify=verify,
                     policy=policy, gate=drawn), status  # fmt: skip


EXPECTED = [
    ("claim", "done", Status.CLAIMED, False),
    ("move", "done", Status.CLAIMED, Status.EXECUTING, True, MARK),
    ("move", "done", Status.EXECUTING, Status.CONFIRMED, False, CONFIRM),
    ("claim", "gone", Status.CLAIMED, False),
    ("move", "gone", Status.CLAIMED, Status.EXECUTING, True, MARK),
    ("move", "gone", Status.EXECUTING, Status.FAILED, False, VERDICT),
    ("claim", "direct", Status.EXECUTING, True),
    ("move", "direct", Status.EXECUTING, Status.FAILED, False, VERDICT),
    ("claim", "doubt", Status.CLAIMED, False),
    ("move", "doubt", Status.CLAIMED, Status.EXECUTING, True, MARK),
    ("move", "doubt", Status.EXECUTING, Status.NEEDS_REVIEW, False, VERDICT),
    ("claim", "dark", Status.CLAIMED, False),
    ("move", "dark", Status.CLAIMED, Status.EXECUTING, True, MARK),
    ("move", "dark", Status.EXECUTING, Status.UNKNOWN, False, VERDICT),
    ("claim", "twice", Status.CLAIMED, False),
    ("move", "twice", Status.CLAIMED, Status.EXECUTING, True, MARK),
    ("move", "twice", Status.EXECUTING, Status.NEEDS_REVIEW, False, DUPLICATE),
    ("claim", "paid", Status.CLAIMED, False),
    ("move", "paid", Status.CLAIMED, Status.EXECUTING, True, MARK),
    ("move", "paid", Status.EXECUTING, Status.CONFIRMED, False, CONFIRM),
    # a human's decision is fsynced, whatever it decides
    ("move", "doubt", Status.NEEDS_REVIEW, Status.CONFIRMED, True, HUMAN),
    ("move", "twice", Status.NEEDS_REVIEW, Status.ABANDONED, True, HUMAN),
]


def _sync() -> list[tuple[Any, ...]]:
    store = Recording()
    ledger = Ledger(store, clock=FrozenClock())
    ledger.budgets.define("rooms", 3)
    for effect, status in _effects(ledger.budgets.gate("rooms")):
        assert ledger.run(effect).status is status, effect.key
    ledger.resolve("doubt", "happened", reviewer="ana", reason="seen on the site")
    ledger.resolve("twice", "abandon", reviewer="ana", reason="one was refunded")
    assert store.settled == ["paid:confirmed"]
    return store.writes


async def _async() -> list[tuple[Any, ...]]:
    store = Recording()
    ledger = AsyncLedger(store, clock=FrozenClock())
    await ledger.budgets.define("rooms", 3)
    for effect, status in _effects(ledger.budgets.gate("rooms")):
        assert (await ledger.run(effect)).status is status, effect.key
    await ledger.resolve("doubt", "happened", reviewer="ana", reason="seen on the site")
    await ledger.resolve("twice", "abandon", reviewer="ana", reason="one was refunded")
    await ledger.aclose()
    assert store.settled == ["paid:confirmed"]
    return store.writes


def test_the_mark_and_a_human_s_decision_are_durable_and_moves_name_their_columns() -> None:
    assert _sync() == EXPECTED


def test_the_async_driver_asks_the_store_the_same() -> None:
    assert asyncio.run(_async()) == EXPECTED
