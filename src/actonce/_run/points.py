"""Named crash points: inert unless armed.

The run protocol passes through named points (``after_claim``,
``after_perform`` ...). Tests and ``actonce chaos`` arm one to stop the
process there, either by raising :class:`SimulatedCrash` (in-process tests)
or by ``SIGKILL`` (real crash tests). Arm from code with :func:`arm`, or
from the environment: ``ACTONCE_CRASH_AT=after_perform`` (optionally
``name:n`` for the n-th pass) and ``ACTONCE_CRASH_MODE=kill|raise``.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass

__all__ = ["POINTS", "SimulatedCrash", "arm", "armed", "disarm", "hit"]

#: Every point the protocol (and the fake provider) passes, in order.
POINTS = (
    "before_claim",
    "after_claim",
    "before_mark_executing",
    "after_mark_executing",
    "provider_committed",
    "after_perform",
    "before_record",
    "after_record",
)


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
_env_loaded = False


def arm(point: str, *, nth: int = 1, mode: str = "raise") -> None:
    """Crash at the ``nth`` pass through ``point`` (``mode``: raise or kill)."""
    global _armed, _env_loaded
    if point not in POINTS:
        raise ValueError(f"unknown crash point {point!r}; known: {', '.join(POINTS)}")
    if mode not in ("raise", "kill"):
        raise ValueError("mode must be 'raise' or 'kill'")
    with _lock:
        _armed = _Arming(point, nth, mode)
        _env_loaded = True


def disarm() -> None:
    """Make every point inert again."""
    global _armed, _env_loaded
    with _lock:
        _armed = None
        _env_loaded = True


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
    """Pass through ``point``: crash here if it is armed."""
    global _armed
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
