"""An effect left open: its perform timed out and its verifier cannot answer since."""

from __future__ import annotations

from typing import Any

from actonce import Absent, Effect, EffectRecord, Ledger, Policy, Status


def left_open(ledger: Ledger, key: str = "post:1", kind: str = "post") -> EffectRecord:
    """Run ``key`` once: the perform times out, every later look finds the site down.

    The run ends ``unknown`` (the default policy's single verify after the
    perform cannot answer): reconcile finds it open, to verify again.
    """
    tried: list[int] = []

    def perform() -> None:
        tried.append(1)
        raise TimeoutError("no answer")

    def verify() -> Any:
        if tried:
            raise ConnectionError("the site does not answer")
        return Absent()

    policy = Policy(settle_seconds=0, verify_attempts=1)
    result = ledger.run(Effect(key, kind, {}, perform, verify, policy=policy))
    assert result.status is Status.UNKNOWN, result
    record = ledger.get(key)
    assert record is not None
    return record
