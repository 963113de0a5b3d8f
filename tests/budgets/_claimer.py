"""One claiming process of the overspend campaign: ``python _claimer.py CONFIG``.

CONFIG (JSON): ``ledger`` (a SQLite path) or ``dsn`` + ``schema``
(PostgreSQL); ``provider`` (the world's SQLite file, its ground truth);
``refs`` to run in order; ``pools`` each effect draws one on; ``policy``;
``faults`` (rates of :class:`actonce.testing.Faults`) and ``seed``.

Prints ``{"ready": pid}`` once connected, waits for a line on stdin (the
parent's barrier), then one JSON line per run. Crash points are armed the
ordinary way (``ACTONCE_CRASH_AT``, ``ACTONCE_CRASH_MODE=kill``): the
process SIGKILLs itself there.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from actonce import Effect, Ledger, LedgerError, Policy, SQLiteStore
from actonce.testing import FakeProvider, Faults


def say(**facts: Any) -> None:
    print(json.dumps(facts), flush=True)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    if "dsn" in cfg:
        from actonce import PostgresStore

        store: Any = PostgresStore(cfg["dsn"], schema=cfg["schema"], min_size=0, max_size=1,
                                   timeout=60)  # fmt: skip
    else:
        store = SQLiteStore(cfg["ledger"], busy_timeout=120)
    ledger = Ledger(store)
    provider = FakeProvider(cfg["provider"], faults=Faults(**cfg["faults"]),
                            clock=ledger.clock, seed=cfg["seed"])  # fmt: skip
    policy = Policy(**cfg["policy"])
    gate = ledger.budgets.gate(*cfg["pools"])
    say(ready=os.getpid())
    sys.stdin.readline()
    for ref in cfg["refs"]:
        base = provider.effect(ref, policy=policy)
        effect = Effect(key=base.key, kind=base.kind, payload=base.payload, perform=base.perform,
                        verify=base.verify, policy=policy, gate=gate)  # fmt: skip
        try:
            r = ledger.run(effect)
        except LedgerError as exc:
            say(ref=ref, error=f"{type(exc).__name__}: {exc}")
            continue
        say(ref=ref, outcome=r.outcome.value, performed=r.performed,
            status=None if r.status is None else r.status.value)  # fmt: skip
    ledger.close()
    provider.close()


if __name__ == "__main__":
    main()
