"""Slow performs in ``actonce chaos``: a page that loads for longer than lease + settle.

A *slow perform* waits before its request goes out (a slow page load; the
process keeps running, nothing is frozen), for longer than the schedule's
``lease_seconds + settle_seconds``. Seen from the other workers, the owner's
``executing`` mark would look orphaned and the effect, being absent so far,
proven not to have happened, unless the owner keeps extending its lease
while it performs (the ledger's heartbeat). The others come back to an
intent they left open, owned by another worker (:func:`revisit`), so they
do look while the page loads.

With slow performs on, a schedule's lease and settle window are short and
real (:func:`policy`): ``lease = S * {0.4, 0.5, 0.6}``, ``settle = S *
{0, 0.02, 0.05}``, so ``lease + settle <= 0.65 * S``, and a slow perform
takes ``S * [1, 1.5)`` seconds, ``S`` being ``slow_seconds``: every slow
perform outlives its lease + settle window by half again at least. The
owner's heartbeat extends its lease every third of it: a lease of at least
``0.4 * MIN_SECONDS`` leaves it more than half a second of slack on a
loaded machine.

Each worker appends two JSON lines per slow perform to the schedule's
``slow.jsonl`` (one ``write`` each, ``O_APPEND``): one as the page starts
loading, one when ``Ledger.run`` has returned (or raised). The parent reads
them when the schedule ends (:func:`tally`): a start without an end is a
perform whose worker was killed.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from actonce import Effect, Policy, RunResult

__all__ = ["SlowLog", "SlowTally", "check", "policy", "read", "revisit"]

#: The bounds of ``slow_seconds``: the shortest lease, ``0.4 * S``, must
#: leave the heartbeat (a third of the lease) room on a loaded machine.
MIN_SECONDS = 2.0
MAX_SECONDS = 120.0


def check(rate: float, seconds: float) -> None:
    """Validate the campaign's slow-perform options.

    Raises:
        ValueError: ``rate`` is not in 0..1, or ``seconds`` not in
            ``MIN_SECONDS..MAX_SECONDS`` (NaN and infinities included).
    """
    if not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
        raise ValueError(f"slow_rate must be a number from 0 to 1, not {rate!r}")
    if not isinstance(seconds, int | float) or not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ValueError(
            f"slow_seconds must be from {MIN_SECONDS:g} to {MAX_SECONDS:g} seconds, not {seconds!r}"
        )


def policy(rng: random.Random, base: Policy, seconds: float, delay: float) -> tuple[Policy, float]:
    """A schedule's policy with a short, real lease and settle window; its visibility delay.

    ``delay`` is the plan's visibility delay: kept when absence is not
    authoritative (any delay is honest then), else replaced by one well
    inside the new settle window (the promise authoritative absence makes).
    """
    lease = seconds * rng.choice([0.4, 0.5, 0.6])
    settle = seconds * rng.choice([0.0, 0.02, 0.05])
    if base.absence_authoritative:
        delay = rng.choice([0.0, settle / 4])
    return replace(base, lease_seconds=lease, settle_seconds=settle), delay


@dataclass
class _Entry:
    id: str
    ref: str
    window: float
    started: float


class SlowLog:
    """A worker's side: makes a fraction of its performs slow, and writes down how each ended."""

    def __init__(self, path: str, rate: float, seconds: float, window: float, seed: int) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._rate = rate
        self._seconds = seconds
        self._window = window
        self._rng = random.Random(seed)
        self._n = 0
        self._current: _Entry | None = None

    def _write(self, line: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(line, sort_keys=True) + "\n").encode())

    def wrap(self, effect: Effect, ref: str) -> Effect:
        """``effect`` whose perform is slow, now and then: the page loads, then the request."""
        inner = effect.perform

        def perform() -> Any:
            if self._rng.random() >= self._rate:
                return inner()
            self._n += 1
            planned = self._seconds * self._rng.uniform(1.0, 1.5)
            entry = _Entry(f"{os.getpid()}:{self._n}", ref, self._window, time.monotonic())
            self._current = entry
            self._write({"id": entry.id, "ref": ref, "window": self._window, "planned": planned})
            # The page loads slowly: the perform takes long, nothing waits on
            # another process here (the simulated latency of the world).
            time.sleep(planned)  # sync-ok: a slow page load, the thing under test
            return inner()

        return replace(effect, perform=perform)

    def ended(self, result: RunResult | None, error: BaseException | None = None) -> None:
        """Write down how the run of the last slow perform ended (if the last run had one)."""
        entry, self._current = self._current, None
        if entry is None:
            return
        line: dict[str, Any] = {"id": entry.id, "seconds": time.monotonic() - entry.started}
        if result is not None:
            reason = result.reason or ""
            line.update(
                outcome=str(result.outcome),
                status=str(result.status) if result.status else None,
                overtaken="overtaken" in reason,
                performed=result.performed,
                reason=reason[:200],
            )
        else:
            line["outcome"] = f"raised {type(error).__name__}"
        self._write(line)

    def close(self) -> None:
        os.close(self._fd)


def revisit(deferred: list[str], until: float, pause: float, run: Callable[[str], bool]) -> int:
    """Come back to intents left open (another worker owned them) until ``until`` (monotonic).

    ``run`` runs one intent and answers whether it is still open. Returns
    how many runs it made.
    """
    runs = 0
    while deferred and time.monotonic() < until:
        # A queue's redelivery delay: another worker holds these intents.
        time.sleep(pause)  # sync-ok: a worker coming back to an intent later, not a wait
        still = []
        for ref in deferred:
            runs += 1
            if run(ref):
                still.append(ref)
        deferred[:] = still
    return runs


@dataclass
class SlowTally:
    """The parent's side: what became of every slow perform."""

    performs: int = 0
    crossed: int = 0
    overtaken: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    final: Counter[str] = field(default_factory=Counter)
    min_ratio: float | None = None
    max_seconds: float = 0.0
    max_window: float = 0.0

    def add(self, starts: dict[str, dict[str, Any]], ends: dict[str, dict[str, Any]]) -> set[str]:
        """Count one schedule's slow performs (``read``'s answer); the intents they were for."""
        refs = set()
        for key, start in starts.items():
            self.performs += 1
            refs.add(str(start["ref"]))
            window = float(start["window"])
            self.max_window = max(self.max_window, window)
            end = ends.get(key)
            if end is None:
                self.outcomes["killed"] += 1
                continue
            seconds = float(end["seconds"])
            self.max_seconds = max(self.max_seconds, seconds)
            ratio = seconds / window if window > 0 else float("inf")
            self.min_ratio = ratio if self.min_ratio is None else min(self.min_ratio, ratio)
            self.crossed += seconds > window
            if end.get("overtaken"):
                self.overtaken += 1
                self.outcomes[f"overtaken -> {end.get('status')}"] += 1
            elif end["outcome"] == "completed":
                self.outcomes["confirmed"] += 1
            else:
                self.outcomes[f"{end['outcome']} ({end.get('status')})"] += 1
        return refs


def read(path: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The starts and the ends in one schedule's ``slow.jsonl`` (nothing if there is none)."""
    starts: dict[str, dict[str, Any]] = {}
    ends: dict[str, dict[str, Any]] = {}
    for line in _lines(path):
        (starts if "window" in line else ends)[str(line["id"])] = line
    return starts, ends


def _lines(path: str) -> Iterator[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return
    for raw in text.splitlines():
        if raw.strip():
            yield json.loads(raw)
