"""A worker in a process of its own, driven by the crash tests.

``python _proc.py CONFIG`` where CONFIG is a JSON object:

- ``ledger``, ``provider``: the two SQLite files;
- ``refs``: the intents to run, in order;
- ``policy``: keyword arguments of :class:`actonce.Policy`;
- ``offset`` (seconds added to the wall clock), or ``offset_file``: a file
  holding the offset, read at every clock reading (the test moves this
  process's time on while it is stopped);
- ``gate``: print ``ready`` once connected, then wait for a line on stdin;
- ``stop_at``: crash points where the process prints ``{"stopped": point}``
  and stops itself with ``SIGSTOP`` (the test resumes it with ``SIGCONT``);
- ``run_id``: the run id of every run;
- ``create``: whether the worker may create a missing ledger (default: yes;
  ``false`` is what a user's worker does by default);
- ``perform_gate``: every perform prints ``{"performing": ref}`` and waits
  for a line on stdin before it sends its request (a slow page load: the
  process keeps running, its heartbeat with it).

Crash points are armed the ordinary way (``ACTONCE_CRASH_AT``,
``ACTONCE_CRASH_MODE``). Prints one JSON line per finished run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable

from actonce import Ledger, LedgerError, Policy, Registry, SQLiteStore, SystemClock
from actonce.testing import FakeProvider, observe_points


class FileClock(SystemClock):
    """Wall-clock time shifted by the offset written in a file."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def now(self) -> float:
        with open(self.path, encoding="utf-8") as fh:
            return time.time() + float(fh.read())


def say(obj: object) -> None:
    print(json.dumps(obj), flush=True)


def _gated(perform: Callable[[], object], ref: str) -> Callable[[], object]:
    def slow() -> object:
        say({"performing": ref})
        sys.stdin.readline()
        return perform()

    return slow


def main() -> None:
    cfg = json.loads(sys.argv[1])
    clock = (
        FileClock(cfg["offset_file"])
        if "offset_file" in cfg
        else SystemClock(cfg.get("offset", 0.0))
    )
    policy = Policy(**cfg.get("policy", {}))
    provider = FakeProvider(cfg["provider"], clock=clock)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    ledger = Ledger(
        SQLiteStore(cfg["ledger"], create=cfg.get("create", True)), clock=clock, registry=registry
    )

    stops = set(cfg.get("stop_at", ()))
    if stops:

        def hit(point: str) -> None:
            if point in stops:
                say({"stopped": point})
                os.kill(os.getpid(), signal.SIGSTOP)

        observe_points(hit)

    if cfg.get("gate"):
        say({"ready": os.getpid()})
        sys.stdin.readline()
    for ref in cfg["refs"]:
        effect = provider.effect(ref, policy=policy)
        if cfg.get("perform_gate"):
            effect = dataclasses.replace(effect, perform=_gated(effect.perform, ref))
        try:
            r = ledger.run(effect, run_id=cfg.get("run_id"))
        except LedgerError as exc:
            say({"ref": ref, "error": type(exc).__name__})
            continue
        say(
            {
                "ref": ref,
                "outcome": r.outcome.value,
                "performed": r.performed,
                "status": None if r.status is None else r.status.value,
                "attempt": r.attempt,
            }
        )


if __name__ == "__main__":
    main()
