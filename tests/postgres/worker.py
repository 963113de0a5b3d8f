"""A worker process for the PostgreSQL tests: ``python worker.py MODE JSON``.

Each worker opens its own store (its own connection), prints ``ready`` (with
facts as JSON), then waits for a ``go`` line on stdin: the parent's barrier.
It prints one JSON line with what it did and exits.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from actonce import (
    Absent,
    ClaimResult,
    Confirmed,
    Effect,
    Lease,
    LeaseLost,
    Ledger,
    LedgerError,
    Policy,
    PostgresStore,
    WorkQueue,
)


def say(**facts: Any) -> None:
    print(json.dumps(facts), flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"expected {word!r}, got {line!r}")


def effect(key: str, log: str) -> Effect:
    def perform() -> None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)

    def verify() -> Confirmed | Absent:
        with open(log, "a+") as f:
            f.seek(0)
            return Confirmed(f"perform-log:{key}") if f.read().strip() else Absent()

    return Effect(
        key=key,
        kind="test",
        payload={"key": key},
        perform=perform,
        verify=verify,
        policy=Policy(verify_after_claim=True, verify_attempts=1, settle_seconds=0),
    )


class PausingStore:
    """Passes every call through; stops after a won claim until told ``go2``."""

    def __init__(self, inner: PostgresStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def claim(self, *args: Any, **kwargs: Any) -> ClaimResult:
        result: ClaimResult = self.inner.claim(*args, **kwargs)
        if result.acquired:
            say(state="claimed")
            wait_for("go2")
        return result


def main() -> None:
    mode, args = sys.argv[1], json.loads(sys.argv[2])
    store = PostgresStore(args["dsn"], schema=args["schema"], min_size=1, max_size=1, create=True)
    with store._pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        backend = int(row[0]) if row else 0

    if mode == "race":
        say(state="ready", backend=backend)
        wait_for("go")
        result = Ledger(store).run(effect(args["key"], args["log"]))
        say(outcome=result.outcome.value, performed=result.performed)

    elif mode == "zombie":
        # Holds the operator lease, claims the effect, then is stopped (SIGSTOP)
        # right after the claim while the parent takes both over.
        lease = Lease(store, args["lease"], owner=f"zombie-{os.getpid()}", ttl=args["ttl"])
        assert lease.acquire()
        say(state="ready", token=lease.token, backend=backend)
        wait_for("go")
        result = Ledger(PausingStore(store)).run(effect(args["key"], args["log"]))  # type: ignore[arg-type]
        try:
            lease.heartbeat()
            heartbeat = "renewed"
        except LeaseLost:
            heartbeat = "lost"
        say(outcome=result.outcome.value, performed=result.performed, heartbeat=heartbeat)

    elif mode == "queue":
        queue = WorkQueue(store, worker=f"w{os.getpid()}")
        say(state="ready", backend=backend)
        wait_for("go")
        taken: list[int] = []
        while items := queue.take(args["batch"]):
            for item in items:
                taken.append(int(item.payload))
                queue.done(item)
        say(taken=taken)

    elif mode == "killed":
        ledger = Ledger(PausingStore(store))  # type: ignore[arg-type]
        say(state="ready", backend=backend)
        wait_for("go")
        try:
            result = ledger.run(effect(args["key"], args["log"]))
            say(outcome=result.outcome.value, performed=result.performed)
        except LedgerError as exc:
            say(error=type(exc).__name__, message=str(exc))
    else:
        raise SystemExit(f"unknown mode {mode}")
    store.close()


if __name__ == "__main__":
    main()
