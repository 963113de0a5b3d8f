"""One operator run in a process of its own: ``python _operator_proc.py CONFIG``.

CONFIG (JSON): ``ledger`` (a SQLite path) or ``dsn`` + ``schema``;
``provider`` (the world's SQLite file); ``name`` (the operator's lease);
``refs`` (the candidates); ``ttl``; ``hold`` (print ``observing`` from the
observe hook and wait for a line on stdin before going on); ``offset``
(seconds added to the clock). Every effect draws one unit of the pool
``original``.

Prints ``{"ready": pid}`` and waits for a line (the parent's barrier), then
``{"planned": ref}`` as each candidate is planned, and ``{"summary": ...}``
at the end. Crash points are armed the ordinary way (``ACTONCE_CRASH_AT``,
``ACTONCE_CRASH_MODE=kill``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from actonce import Effect, Hooks, Ledger, Operator, Policy, Registry, SQLiteStore, SystemClock
from actonce.testing import FakeProvider

POLICY = Policy(settle_seconds=0.2, absence_authoritative=True, verify_attempts=3,
                verify_backoff=0.05, lease_seconds=5.0)  # fmt: skip


def say(**facts: Any) -> None:
    print(json.dumps(facts), flush=True)


class Publisher(Hooks[str]):
    def __init__(self, ledger: Ledger, provider: FakeProvider, refs: list[str], hold: bool):
        self.ledger = ledger
        self.provider = provider
        self.refs = refs
        self.hold = hold

    def observe(self) -> Iterable[str]:
        if self.hold:
            say(observing=os.getpid())
            sys.stdin.readline()
        return self.refs

    def plan(self, candidate: str) -> Effect:
        say(planned=candidate)
        base = self.provider.effect(candidate, policy=POLICY)
        return replace(base, gate=self.ledger.budgets.gate("original"))


def open_ledger(cfg: dict[str, Any], clock: SystemClock | None = None) -> Ledger:
    if "dsn" in cfg:
        from actonce import PostgresStore

        store: Any = PostgresStore(cfg["dsn"], schema=cfg["schema"], min_size=0, max_size=2)
    else:
        store = SQLiteStore(cfg["ledger"], busy_timeout=60)
    provider = FakeProvider(cfg["provider"], clock=clock or SystemClock())
    registry = Registry()
    registry.register("fake", provider.verifier, policy=POLICY)
    ledger = Ledger(store, clock=clock, registry=registry)
    ledger.provider = provider  # type: ignore[attr-defined]
    return ledger


def main() -> None:
    cfg = json.loads(sys.argv[1])
    clock = SystemClock(offset=cfg["offset"]) if cfg.get("offset") else None
    ledger = open_ledger(cfg, clock)
    hooks = Publisher(ledger, ledger.provider, cfg["refs"], cfg.get("hold", False))  # type: ignore[attr-defined]
    op = Operator(ledger, cfg["name"], hooks, kinds=("fake",), ttl=cfg.get("ttl", 30.0),
                  owner=f"proc-{os.getpid()}")  # fmt: skip
    say(ready=os.getpid())
    sys.stdin.readline()
    summary = op.run()
    say(summary=summary.as_json())
    ledger.close()


if __name__ == "__main__":
    main()
