"""One chaos worker: the body of a forked child process.

The child opens its own ledger and provider connections (nothing opened by
the parent is used across ``fork``), runs the pending intents in its own
random order under the virtual clock of its round, and reports every crash
point it passes to the parent through a pipe: one byte per pass, an
uppercase byte just before an armed point kills it. The parent uses the
stream to time its own random-moment ``SIGKILL`` and to know where a kill
happened. A *zombie* stops itself (``SIGSTOP``) after reporting ``!``, at
each of its ``stops`` in turn (the n-th pass of a point, counted from the
previous stop); when the parent resumes it (``SIGCONT``), it first reads the
parent's current offset from its resume pipe (waiting there if a stray
``SIGCONT`` came first), as a real process finds the wall clock moved on
after a pause. The child always ends
with ``os._exit``: it must never return into the parent's code (a test
runner, the CLI).

On PostgreSQL (``spec.conninfo``) the worker opens its own store after the
fork, one connection named ``spec.app_name``. When the parent terminates
that connection, the store raises ``LedgerOutcomeUnknown`` (a write) or
``LedgerUnavailable``; the protocol has performed nothing after the failed
write. The worker reports ``?`` (outcome unknown) or ``~``, closes the store, opens a new one and goes
on with its next intent (the one it was on stays pending for the next
round); after three failed opens in a row it ends, to be restarted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import traceback
from dataclasses import dataclass
from typing import Any

from actonce import (
    Ledger,
    LedgerError,
    LedgerOutcomeUnknown,
    Policy,
    Registry,
    SQLiteStore,
    SystemClock,
)
from actonce.testing import POINTS, FakeProvider, Faults, arm, disarm, observe_points

__all__ = ["LEDGER_ERROR", "LEDGER_UNKNOWN", "STOPPED", "WorkerSpec", "decode", "run_worker"]

#: Exit code of a worker that hit an unexpected exception (a finding).
EXIT_ERROR = 3

_PASS = {name: bytes([ord("a") + i]) for i, name in enumerate(POINTS)}
_FATAL = {name: bytes([ord("A") + i]) for i, name in enumerate(POINTS)}
#: The byte a zombie reports right before it stops itself.
STOPPED = ord("!")
#: The bytes a worker reports for each ``LedgerError`` its store raised:
#: ``LedgerOutcomeUnknown`` (a write that may have committed), any other.
LEDGER_UNKNOWN = ord("?")
LEDGER_ERROR = ord("~")


def decode(byte: int) -> tuple[str, bool]:
    """The point a reported byte (not ``STOPPED``) stands for, and whether it was fatal."""
    if byte >= ord("a"):
        return POINTS[byte - ord("a")], False
    return POINTS[byte - ord("A")], True


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
    stops: tuple[tuple[str, int], ...] = ()
    resume_fd: int | None = None  # a zombie's resume pipe: the parent writes the offset
    report_fd: int | None = None  # the pipe to the parent (set by the parent's fork)
    conninfo: str | None = None  # PostgreSQL: the ledger is there, not at ledger_path
    schema: str | None = None
    app_name: str | None = None  # this worker's connection name (the killer finds it)


def run_worker(spec: WorkerSpec, wfd: int) -> None:
    """Run ``spec`` and end the process (never returns)."""
    code = 0
    try:
        clock = SystemClock(offset=spec.offset)
        _tap(spec, wfd, clock)
        _work(spec, clock)
    except BaseException:
        code = EXIT_ERROR
        try:
            with open(spec.error_path, "a", encoding="utf-8") as fh:
                fh.write(traceback.format_exc())
        finally:
            os._exit(code)
    os._exit(code)


def _tap(spec: WorkerSpec, wfd: int, clock: SystemClock) -> None:
    """Arm the crash point (if any), report every pass, stop where planned."""
    armed = spec.arm
    stops = list(spec.stops)
    if armed is None:
        disarm()
    else:
        arm(armed[0], nth=armed[1], mode="kill")
    passes: dict[str, int] = {}
    since_stop: dict[str, int] = {}

    def hit(point: str) -> None:
        n = passes[point] = passes.get(point, 0) + 1
        fatal = armed is not None and point == armed[0] and n == armed[1]
        os.write(wfd, _FATAL[point] if fatal else _PASS[point])
        if stops and point == stops[0][0] and spec.resume_fd is not None:
            k = since_stop[point] = since_stop.get(point, 0) + 1
            if k == stops[0][1]:
                stops.pop(0)
                since_stop.clear()
                os.write(wfd, bytes([STOPPED]))
                os.kill(os.getpid(), signal.SIGSTOP)
                clock.offset = _read_offset(spec.resume_fd)

    # Told of every pass before an armed point acts (the public hook).
    observe_points(hit)


def _read_offset(fd: int) -> float:
    """Block until the parent resumes us for real: it writes the offset, a line."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 64)
        if not chunk:
            raise RuntimeError("the parent closed the resume pipe")
        line += chunk
    return float(line)


def _open(spec: WorkerSpec) -> Any:
    if spec.conninfo is None:
        return SQLiteStore(spec.ledger_path)
    from ._pg import open_store

    # The pool warns on stderr about each connection the parent terminated;
    # the worker reports those through its pipe instead.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    assert spec.schema is not None and spec.app_name is not None
    return open_store(spec.conninfo, spec.schema, spec.app_name)


def _report_ledger_error(spec: WorkerSpec, exc: LedgerError) -> None:
    if spec.report_fd is not None:
        unknown = isinstance(exc, LedgerOutcomeUnknown)
        os.write(spec.report_fd, bytes([LEDGER_UNKNOWN if unknown else LEDGER_ERROR]))


def _work(spec: WorkerSpec, clock: SystemClock) -> None:
    provider = FakeProvider(spec.provider_path, faults=spec.faults, clock=clock, seed=spec.seed)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=spec.policy)
    ledger: Ledger | None = None
    failed_opens = 0
    for ref in spec.refs:
        try:
            if ledger is None:
                ledger = Ledger(_open(spec), clock=clock, registry=registry)
                failed_opens = 0
            ledger.run(provider.effect(ref, policy=spec.policy))
        except LedgerError as exc:
            # Nothing was performed after a failed checkpoint write; the
            # intent stays pending for the next round. A dead connection is
            # replaced by a new store (PostgreSQL: a new connection).
            _report_ledger_error(spec, exc)
            if ledger is None:
                failed_opens += 1
                if failed_opens >= 3:
                    break
            elif spec.conninfo is not None:
                with contextlib.suppress(Exception):
                    ledger.close()
                ledger = None
    if ledger is not None:
        ledger.close()
    provider.close()
