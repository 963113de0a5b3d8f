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
round); after three failed opens in a row it ends, to be restarted. When
the server itself restarts (``spec.reconnect_s``), the worker keeps trying
to open a new store for that long instead, and reports ``+`` once it has one
(``#`` if it gave up, ``*`` for each failed try): see :class:`_Link`.

With slow performs on (``spec.slow_rate``), a fraction of the performs wait
longer than lease + settle before their request (see ``_slow``), and the
worker comes back to the intents it left open (owned by another worker,
say) for ``spec.revisit_s`` seconds after its first pass.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any

from actonce import (
    Ledger,
    LedgerError,
    LedgerOutcomeUnknown,
    Outcome,
    Policy,
    Registry,
    SQLiteStore,
    SystemClock,
)
from actonce.testing import POINTS, FakeProvider, Faults, arm, disarm, observe_points

from ._slow import SlowLog, revisit

__all__ = [
    "GAVE_UP",
    "LEDGER_ERROR",
    "LEDGER_UNKNOWN",
    "RECONNECTED",
    "REOPEN",
    "STOPPED",
    "WorkerSpec",
    "decode",
    "run_worker",
]

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
#: A worker opened a new store after its last one failed (it recovered).
RECONNECTED = ord("+")
#: A worker ended because it could not open a store again.
GAVE_UP = ord("#")
#: A failed try to open a new store, to be tried again (``spec.reconnect_s``).
REOPEN = ord("*")


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
    slow_rate: float = 0.0  # the fraction of performs that are slow (see _slow)
    slow_seconds: float = 0.0
    slow_path: str | None = None  # where slow performs are written down
    revisit_s: float = 0.0  # how long to come back to intents another worker owned
    reconnect_s: float = 0.0  # how long to keep trying to open a new store (0: 3 tries)


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


def _ledger_byte(exc: LedgerError) -> int:
    return LEDGER_UNKNOWN if isinstance(exc, LedgerOutcomeUnknown) else LEDGER_ERROR


def _report(spec: WorkerSpec, byte: int) -> None:
    if spec.report_fd is not None:
        os.write(spec.report_fd, bytes([byte]))


def _work(spec: WorkerSpec, clock: SystemClock) -> None:
    provider = FakeProvider(spec.provider_path, faults=spec.faults, clock=clock, seed=spec.seed)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=spec.policy)
    slow = None
    if spec.slow_rate > 0 and spec.slow_path is not None:
        window = spec.policy.lease_seconds + spec.policy.settle_seconds
        slow = SlowLog(spec.slow_path, spec.slow_rate, spec.slow_seconds, window, spec.seed)
    link = _Link(spec, clock, registry)

    def run(ref: str) -> bool:
        """Run one intent; True when it is left open (another worker owns it, say)."""
        effect = provider.effect(ref, policy=spec.policy)
        if slow is not None:
            effect = slow.wrap(effect, ref)
        result = None
        try:
            ledger = link.ledger()
            if ledger is None:
                return False
            result = ledger.run(effect)
        except LedgerError as exc:
            # Nothing was performed after a failed checkpoint write; the
            # intent stays pending for the next round. A dead connection is
            # replaced by a new store (PostgreSQL: a new connection).
            link.failed(exc)
            if slow is not None:
                slow.ended(None, exc)
            return False
        if slow is not None:
            slow.ended(result)
        open_ = result.status is not None and result.status.is_open
        return open_ or result.outcome is Outcome.DEFERRED

    deferred = []
    for ref in spec.refs:
        if link.gave_up:
            break
        if run(ref):
            deferred.append(ref)
    if spec.revisit_s > 0 and not link.gave_up:
        # Another worker owned these, or left them open: come back while it
        # may still be at work (a slow perform), as a queue redelivers an
        # item later.
        pause = spec.policy.lease_seconds / 2
        revisit(deferred, time.monotonic() + spec.revisit_s, pause, run)
    link.close()
    if slow is not None:
        slow.close()
    provider.close()


class _Link:
    """The worker's ledger, replaced by a new one (a new connection) after a ledger error.

    Without ``spec.reconnect_s`` a worker gives up after three failed opens
    in a row, one per intent (it ends quietly and is restarted next round).
    With it, a worker whose store failed keeps trying to open a new one,
    pausing between tries, for up to that many seconds, without skipping
    intents; once it has one again it reports ``RECONNECTED``; if the time
    runs out it reports ``GAVE_UP`` and ends. A worker whose last intent failed reconnects all the
    same before it ends: it shows that it recovered.
    """

    def __init__(self, spec: WorkerSpec, clock: SystemClock, registry: Registry) -> None:
        self._spec = spec
        self._clock = clock
        self._registry = registry
        self._ledger: Ledger | None = None
        self._broken = False  # the last store failed: the next open is a reconnect
        self._failed_opens = 0
        self.gave_up = False

    def ledger(self) -> Ledger | None:
        """The worker's ledger, opened if need be; ``None`` when this intent is skipped."""
        if self._ledger is not None:
            return self._ledger
        spec = self._spec
        deadline = time.monotonic() + spec.reconnect_s
        while True:
            try:
                self._ledger = Ledger(_open(spec), clock=self._clock, registry=self._registry)
            except LedgerError as exc:
                self._failed_opens += 1
                if spec.reconnect_s <= 0:
                    _report(spec, _ledger_byte(exc))
                    # Ends quietly, as it always did: restarted next round.
                    self.gave_up = self._failed_opens >= 3
                    return None
                _report(spec, REOPEN)
                if time.monotonic() >= deadline:
                    self._give_up()
                    return None
                # The server is away (restarting): try again shortly.
                time.sleep(0.1)  # sync-ok: a reconnect backoff, polling a server that is down
                continue
            self._failed_opens = 0
            if self._broken:
                self._broken = False
                _report(spec, RECONNECTED)
            return self._ledger

    def failed(self, exc: LedgerError) -> None:
        """The store raised ``exc``: report it; on PostgreSQL, drop the store."""
        _report(self._spec, _ledger_byte(exc))
        if self._ledger is not None and self._spec.conninfo is not None:
            with contextlib.suppress(Exception):
                self._ledger.close()
            self._ledger = None
            self._broken = True

    def _give_up(self) -> None:
        self.gave_up = True
        _report(self._spec, GAVE_UP)

    def close(self) -> None:
        if self._broken and self._spec.reconnect_s > 0 and not self.gave_up:
            self.ledger()
        if self._ledger is not None:
            self._ledger.close()
