"""Named crash points: inert unless armed or observed.

The run protocol passes through named points (``after_claim``,
``after_perform`` ...). Tests and ``actonce chaos`` arm one to stop the
process there, either by raising :class:`SimulatedCrash` (in-process tests)
or by ``SIGKILL`` (real crash tests). Arm from code with :func:`arm`, or
from the environment: ``ACTONCE_CRASH_AT=after_perform`` (optionally
``name:n`` for the n-th pass) and ``ACTONCE_CRASH_MODE=kill|raise``.

An *observer* (:func:`observe`) is told of every pass before the armed
point acts: a campaign counts passes, stops itself (``SIGSTOP``) or moves a
test's clock there, without replacing any of actonce's code.
"""

from __future__ import annotations

import enum
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "POINTS",
    "CrashPoint",
    "SimulatedCrash",
    "arm",
    "armed",
    "disarm",
    "hit",
    "observe",
]


class CrashPoint(enum.StrEnum):
    """Every point the protocol (and the fake provider) passes, in order."""

    BEFORE_CLAIM = "before_claim"
    AFTER_CLAIM = "after_claim"
    BEFORE_MARK_EXECUTING = "before_mark_executing"
    AFTER_MARK_EXECUTING = "after_mark_executing"
    PROVIDER_COMMITTED = "provider_committed"
    AFTER_PERFORM = "after_perform"
    BEFORE_RECORD = "before_record"
    AFTER_RECORD = "after_record"


#: The point names, in order (the values of :class:`CrashPoint`).
POINTS: tuple[str, ...] = tuple(p.value for p in CrashPoint)


class SimulatedCrash(BaseException):
    """Raised at an armed crash point in ``raise`` mode.

    A ``BaseException`` so that ``except Exception`` in user code or in the
    protocol cannot swallow it, just as nothing can swallow a SIGKILL.
    """


@dataclass
class _Arming:
    point: str
    remaining: int
    mode: str


_lock = threading.Lock()
_armed: _Arming | None = None
_observer: Callable[[str], None] | None = None
_env_loaded = False


def arm(point: str, *, nth: int = 1, mode: str = "raise") -> None:
    """Crash at the ``nth`` pass through ``point`` (``mode``: raise or kill)."""
    global _armed, _env_loaded
    if point not in POINTS:
        raise ValueError(f"unknown crash point {point!r}; known: {', '.join(POINTS)}")
    if mode not in ("raise", "kill"):
        raise ValueError("mode must be 'raise' or 'kill'")
    if nth < 1:
        raise ValueError("nth counts passes from 1")
    with _lock:
        _armed = _Arming(point, nth, mode)
        _env_loaded = True


def disarm() -> None:
    """Make every point inert again (an observer stays)."""
    global _armed, _env_loaded
    with _lock:
        _armed = None
        _env_loaded = True


def observe(fn: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Call ``fn(point)`` at every pass, before an armed point acts.

    Returns the previous observer; ``observe(None)`` removes it.
    """
    global _observer
    with _lock:
        previous, _observer = _observer, fn
    return previous


def armed() -> str | None:
    """The armed point, if any."""
    _load_env()
    return None if _armed is None else _armed.point


def _load_env() -> None:
    global _env_loaded
    if _env_loaded:
        return
    spec = os.environ.get("ACTONCE_CRASH_AT")
    _env_loaded = True
    if spec:
        name, _, nth = spec.partition(":")
        arm(name, nth=int(nth or 1), mode=os.environ.get("ACTONCE_CRASH_MODE", "kill"))


def hit(point: str) -> None:
    """Pass through ``point``: tell the observer, crash here if it is armed."""
    global _armed
    if _observer is not None:
        _observer(point)
    if _env_loaded and _armed is None:
        return
    _load_env()
    with _lock:
        if _armed is None or _armed.point != point:
            return
        _armed.remaining -= 1
        if _armed.remaining > 0:
            return
        mode, _armed = _armed.mode, None
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise SimulatedCrash(point)
