"""One round of chaos workers, seen from the parent: fork, watch, kill, pause, reap.

Each worker reports its crash-point passes through a pipe (see
``_chaos_worker``). The parent counts them to time its random ``SIGKILL``,
learns where an armed point killed a worker, and handles *zombies*: a worker
that reported ``STOPPED`` has stopped itself (confirmed with
``waitpid(WUNTRACED)``); a short pause is resumed within the round after a
planned number of further passes (or once the others are done), a long one
outlives the round and is handed back to the caller, to be resumed in the
next round with its clock moved on. On PostgreSQL a :class:`Killer` (see
``_chaos_pg``) may terminate a random worker's connection whenever the
passes seen reach one of its planned counts; a worker reports every
``LedgerError`` it then gets (``LEDGER_UNKNOWN``, ``LEDGER_ERROR``), each
new store it opened after one (``RECONNECTED``), each failed try to
(``REOPEN``) and whether it gave up (``GAVE_UP``). With a ``stall`` bound, a
round in which no running worker reports anything for that long kills them
as *stuck* (a worker that never recovered from a server restart, say).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ._worker import (
    EXIT_ERROR,
    GAVE_UP,
    LEDGER_ERROR,
    LEDGER_UNKNOWN,
    RECONNECTED,
    REOPEN,
    STOPPED,
    WorkerSpec,
    decode,
    run_worker,
)

__all__ = ["Child", "Stats", "Striker", "Zombie", "abandon", "consume", "resume", "run_round"]

_MAX_FINDINGS = 20


@dataclass
class Stats:
    """What rounds count: kills, where they happened, pauses, worker errors."""

    points: Counter[str] = field(default_factory=Counter)
    kills: int = 0
    random_kills: int = 0
    pauses: int = 0
    worker_errors: int = 0
    ledger_errors: int = 0
    outcome_unknown: int = 0
    reconnects: int = 0  # new stores opened after a failed one
    reopen_retries: int = 0  # failed tries to open one, tried again
    gave_up: int = 0  # workers that ended because no store could be opened again
    workers_hit: int = 0  # workers (not killed) that got a ledger error ...
    workers_recovered: int = 0  # ... and ended normally, with a working store
    stuck: int = 0  # workers killed because they made no progress for ``stall`` seconds
    findings: list[str] = field(default_factory=list)

    def find(self, text: str) -> None:
        """Note a problem (the first few are kept)."""
        if len(self.findings) < _MAX_FINDINGS:
            self.findings.append(text)


@dataclass(frozen=True, slots=True)
class Zombie:
    """Where one worker stops itself, and when the parent resumes it."""

    worker: int
    stops: tuple[tuple[str, int, bool], ...]  # (point, n-th pass since the last stop, long)
    early: bool  # after a long pause: resumed before the next round's reconcile
    short_after: int  # after a short pause: resumed once this many more passes were seen


@dataclass
class Child:
    """The parent's handle on one worker process."""

    worker: int
    pid: int
    fd: int
    resume_w: int | None = None  # a zombie's resume pipe (write end)
    open: bool = True  # its pipe is open: it has not ended
    stopped: bool = False  # a zombie, stopped by itself
    resume_after: int | None = None  # resume once this round has seen this many passes
    pauses: list[bool] = field(default_factory=list)  # long or short, one per planned stop
    short_after: int = 0
    fatal_at: str | None = None
    killed_by_parent: bool = False
    status: int | None = None  # its wait status, once reaped
    app: str | None = None  # its database connection's application_name (PostgreSQL)
    hit: bool = False  # it got a ledger error
    gave_up: bool = False  # it ended without a working store
    stuck: bool = False  # killed by the parent for making no progress
    passes: int = 0  # crash-point passes it reported


class Striker(Protocol):
    """Strikes at the workers' connections as the passes seen grow (``_chaos_pg.Killer``)."""

    def step(self, passes: int, children: Sequence[Child]) -> None: ...


def fork(worker: int, spec: WorkerSpec, others: Sequence[Child], zombie: Zombie | None) -> Child:
    """Start one worker; the child closes the other workers' pipes it inherited.

    A zombie also gets a resume pipe: after it stopped itself it waits there
    for the parent's offset, so that a stray ``SIGCONT`` (the kernel sends one
    to a stopped member of a newly orphaned process group) cannot resume it.
    """
    rfd, wfd = os.pipe()
    spec = replace(spec, report_fd=wfd)
    resume_r, resume_w = os.pipe() if zombie is not None else (None, None)
    if resume_r is not None:
        spec = replace(spec, resume_fd=resume_r)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(rfd)
        if resume_w is not None:
            os.close(resume_w)
        for other in others:
            _close(other)
        run_worker(spec, wfd)
    os.close(wfd)
    if resume_r is not None:
        os.close(resume_r)
    child = Child(worker, pid, rfd, resume_w=resume_w, app=spec.app_name)
    if zombie is not None:
        child.pauses = [long for _, _, long in zombie.stops]
        child.short_after = zombie.short_after
    return child


def _close(child: Child) -> None:
    if child.open:
        os.close(child.fd)
        child.open = False
    if child.resume_w is not None:
        os.close(child.resume_w)
        child.resume_w = None


def resume(child: Child, offset: float) -> None:
    """Let a stopped zombie go on, its clock moved on to ``offset``."""
    assert child.resume_w is not None
    child.stopped = False
    child.resume_after = None
    os.write(child.resume_w, f"{offset!r}\n".encode())
    os.kill(child.pid, signal.SIGCONT)


def abandon(children: Sequence[Child]) -> None:
    """Kill and reap every child still there (the parent itself is failing)."""
    for child in children:
        if child.status is None:
            with contextlib.suppress(OSError):
                os.kill(child.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
            child.status = -1
        _close(child)


def run_round(
    carried: list[Child],
    specs: Sequence[tuple[int, WorkerSpec, Zombie | None]],
    kill: tuple[int, int] | None,
    offset: float,
    stats: Stats,
    striker: Striker | None = None,
    stall: float | None = None,
) -> tuple[list[int], list[Child]]:
    """Fork one worker per spec next to the carried zombies; watch, kill, reap.

    Returns the workers that died by ``SIGKILL``, and the zombies that
    stopped in this round (to be resumed in the next one). With ``stall``,
    a running worker that reports nothing for that many seconds while no
    other one does either is *stuck*: killed, counted, and reported.
    """
    children = list(carried)
    try:
        for worker, spec, zombie in specs:
            children.append(fork(worker, spec, children, zombie))
        _watch(children, kill, offset, stats, striker, stall)
    except BaseException:
        abandon(children)
        raise
    killed: list[int] = []
    stopped: list[Child] = []
    for child in children:
        if child.open and child.stopped:
            stopped.append(child)
            continue
        status = child.status if child.status is not None else os.waitpid(child.pid, 0)[1]
        child.status = status
        _close(child)
        killed_by = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        if child.stuck:
            killed.append(child.worker)
            stats.stuck += 1
            stats.find(f"worker {child.worker} stuck: no progress for {stall}s")
            continue
        if child.hit and not killed_by:
            stats.workers_hit += 1
            exited = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            stats.workers_recovered += exited and not child.gave_up
        if killed_by:
            killed.append(child.worker)
            stats.kills += 1
            if child.fatal_at is not None:
                stats.points[child.fatal_at] += 1
            else:
                stats.random_kills += 1
        elif not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            stats.worker_errors += 1
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
            why = "raised" if code == EXIT_ERROR else f"ended with {code}"
            stats.find(f"worker {child.worker} {why}")
    return killed, stopped


def _watch(
    children: list[Child],
    kill: tuple[int, int] | None,
    offset: float,
    stats: Stats,
    striker: Striker | None,
    stall: float | None = None,
) -> None:
    by_fd = {c.fd: c for c in children}
    passes = 0
    new = [c for c in children if c.resume_after is None and not c.stopped]
    victim = None if kill is None or not new else new[kill[1] % len(new)]
    while True:
        for c in children:
            if c.stopped and c.resume_after is not None and passes >= c.resume_after:
                resume(c, offset)
        if not any(c.open and not c.stopped for c in children):
            waiting = [c for c in children if c.stopped and c.resume_after is not None]
            if not waiting:
                return
            for c in waiting:
                resume(c, offset)
        ready, _, _ = select.select([c.fd for c in children if c.open], [], [], stall)
        if not ready:
            _stuck(children)
            continue
        for fd in ready:
            passes += consume(by_fd[fd], passes, stats)
        if striker is not None:
            striker.step(passes, children)
        if kill is not None and victim is not None and passes >= kill[0]:
            if victim.open and victim.status is None:
                os.kill(victim.pid, signal.SIGKILL)
                victim.killed_by_parent = True
                victim.stopped = False
                victim.resume_after = None
            victim = None


def _stuck(children: Sequence[Child]) -> None:
    """Nothing was reported for ``stall`` seconds: kill the running workers (stuck)."""
    for c in children:
        if c.open and not c.stopped and c.status is None and not c.stuck:
            c.stuck = True
            with contextlib.suppress(OSError):
                os.kill(c.pid, signal.SIGKILL)


def consume(child: Child, passes: int, stats: Stats) -> int:
    """Read what ``child`` reported (it has something); the number of passes in it."""
    data = os.read(child.fd, 4096)
    if not data:
        os.close(child.fd)
        child.open = False
        child.stopped = False
        return 0
    seen = 0
    for byte in data:
        if byte == STOPPED:
            _confirm_stop(child)
            long = child.pauses.pop(0) if child.pauses else True
            if child.stopped and not long:
                stats.pauses += 1
                child.resume_after = passes + seen + child.short_after
            continue
        if byte in (LEDGER_ERROR, LEDGER_UNKNOWN):
            stats.ledger_errors += 1
            stats.outcome_unknown += byte == LEDGER_UNKNOWN
            child.hit = True
            continue
        if byte in _LINK:
            _LINK[byte](child, stats)
            continue
        point, fatal = decode(byte)
        seen += 1
        child.passes += 1
        if fatal:
            child.fatal_at = point
    return seen


def _reconnected(child: Child, stats: Stats) -> None:
    stats.reconnects += 1


def _reopen(child: Child, stats: Stats) -> None:
    stats.reopen_retries += 1
    child.hit = True


def _gave_up(child: Child, stats: Stats) -> None:
    stats.gave_up += 1
    child.gave_up = True
    stats.find(f"worker {child.worker} gave up: no store could be opened again")


_LINK = {RECONNECTED: _reconnected, REOPEN: _reopen, GAVE_UP: _gave_up}


def _confirm_stop(child: Child) -> None:
    """The child said it stops itself: wait until it has (or has died)."""
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        child.stopped = True
    else:
        child.status = status  # killed meanwhile: reaped here, its pipe ends next
