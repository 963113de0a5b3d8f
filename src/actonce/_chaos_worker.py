"""One chaos worker: the body of a forked child process.

The child opens its own ledger and provider connections (nothing opened by
the parent is used across ``fork``), runs the pending intents in its own
random order under the virtual clock of its round, and reports every crash
point it passes to the parent through a pipe: one byte per pass, an
uppercase byte just before an armed point kills it. The parent uses the
stream to time its own random-moment ``SIGKILL`` and to know where a kill
happened. The child always ends with ``os._exit``: it must never return into
the parent's code (a test runner, the CLI).
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass

from . import _crash
from ._clock import SystemClock
from ._errors import LedgerError
from ._ledger import Ledger
from ._model import Policy
from ._registry import Registry
from .testing import FakeProvider, Faults

__all__ = ["WorkerSpec", "decode", "run_worker"]

#: Exit code of a worker that hit an unexpected exception (a finding).
EXIT_ERROR = 3

_PASS = {name: bytes([ord("a") + i]) for i, name in enumerate(_crash.POINTS)}
_FATAL = {name: bytes([ord("A") + i]) for i, name in enumerate(_crash.POINTS)}


def decode(byte: int) -> tuple[str, bool]:
    """The point a reported byte stands for, and whether the pass was fatal."""
    if byte >= ord("a"):
        return _crash.POINTS[byte - ord("a")], False
    return _crash.POINTS[byte - ord("A")], True


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """Everything one worker needs; built by the parent before ``fork``."""

    ledger_path: str
    provider_path: str
    error_path: str
    offset: float
    refs: tuple[str, ...]
    policy: Policy
    faults: Faults
    seed: int
    arm: tuple[str, int] | None = None


def run_worker(spec: WorkerSpec, wfd: int) -> None:
    """Run ``spec`` and end the process (never returns)."""
    code = 0
    try:
        _tap(spec.arm, wfd)
        _work(spec)
    except BaseException:
        code = EXIT_ERROR
        try:
            with open(spec.error_path, "a", encoding="utf-8") as fh:
                fh.write(traceback.format_exc())
        finally:
            os._exit(code)
    os._exit(code)


def _tap(arm: tuple[str, int] | None, wfd: int) -> None:
    """Arm the crash point (if any) and report every pass to the parent."""
    real_hit = _crash.hit
    if arm is None:
        _crash.disarm()
    else:
        _crash.arm(arm[0], nth=arm[1], mode="kill")
    passes = 0

    def hit(point: str) -> None:
        nonlocal passes
        fatal = False
        if arm is not None and point == arm[0]:
            passes += 1
            fatal = passes == arm[1]
        os.write(wfd, _FATAL[point] if fatal else _PASS[point])
        real_hit(point)

    # The protocol driver and the fake provider look ``_crash.hit`` up at each
    # pass, so replacing the module attribute in this (forked) process taps
    # every point without touching the core.
    _crash.hit = hit


def _work(spec: WorkerSpec) -> None:
    clock = SystemClock(offset=spec.offset)
    provider = FakeProvider(spec.provider_path, faults=spec.faults, clock=clock, seed=spec.seed)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=spec.policy)
    from ._sqlite import SQLiteStore

    ledger = Ledger(SQLiteStore(spec.ledger_path), clock=clock, registry=registry)
    for ref in spec.refs:
        try:
            ledger.run(provider.effect(ref, policy=spec.policy))
        except LedgerError:
            # Nothing was performed after a failed checkpoint write; the
            # intent stays pending for the next round.
            continue
    ledger.close()
    provider.close()
