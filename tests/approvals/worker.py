"""A worker process that commits an approved booking: ``python worker.py JSON``.

JSON: ``ledger`` (a SQLite path) or ``dsn`` + ``schema`` (PostgreSQL),
``provider`` (the fake provider's SQLite file), ``intent_id``, ``version``,
``packet``. The worker opens its own store, prints ``{"ready": pid}``, waits
for ``go`` on stdin (the parent's barrier), then runs the gated effect. If it
wins the commit, its perform prints ``{"performing": pid}`` and waits for
``finish`` before it submits, so that the others run while it holds the
commit. Prints one JSON line with its outcome and exits.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from actonce import Approvals, Effect, IntentRef, Ledger, Policy, SQLiteStore, intent_key
from actonce.testing import FakeProvider


def say(**facts: Any) -> None:
    print(json.dumps(facts), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"expected {word!r}, got {line!r}")


def main() -> None:
    cfg = json.loads(sys.argv[1])
    if "dsn" in cfg:
        from actonce import PostgresStore

        store: Any = PostgresStore(cfg["dsn"], schema=cfg["schema"], min_size=0, max_size=2)
    else:
        store = SQLiteStore(cfg["ledger"])
    ledger = Ledger(store)
    provider = FakeProvider(cfg["provider"])
    ref = IntentRef(cfg["intent_id"], cfg["version"])
    packet = ledger.approvals.get(cfg["packet"])

    def book() -> str:
        say(performing=os.getpid())
        wait_for("finish")
        return provider.submit(str(ref), {"packet": packet.packet_id, "pid": os.getpid()})

    effect = Effect(
        key=intent_key(ref, "book", tenant="t1", actor="agent"),
        kind="book",
        payload={"intent": ref.intent_id, "version": ref.version},
        perform=book,
        verify=lambda: provider.lookup(str(ref)),
        gate=Approvals.gate(packet),
        refresh=lambda: {"price": "110", "session": True},
        policy=Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1),
    )
    say(ready=os.getpid())
    wait_for("go")
    result = ledger.run(effect)
    say(
        pid=os.getpid(),
        outcome=result.outcome.value,
        performed=result.performed,
        reason=result.reason,
    )
    ledger.close()
    provider.close()


if __name__ == "__main__":
    main()
