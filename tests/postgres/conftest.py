"""Real processes against a real PostgreSQL: helpers and the schema fixture.

Skips (saying how to enable) without ``ACTONCE_TEST_POSTGRES_DSN``; with
``CI`` set, an unreachable server fails instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgtest import drop_schema, postgres_dsn

WORKER = Path(__file__).with_name("worker.py")


@pytest.fixture
def pg() -> Iterator[tuple[str, str]]:
    """(dsn, schema): a fresh schema on the test server, dropped afterwards."""
    dsn = postgres_dsn()
    schema = f"actonce_ptest_{uuid.uuid4().hex[:10]}"
    from actonce import PostgresStore

    PostgresStore(dsn, schema=schema, min_size=0, create=True).close()  # migrate once, up front
    try:
        yield dsn, schema
    finally:
        drop_schema(dsn, schema)


class Worker:
    """One worker process; talks JSON lines over its pipes."""

    def __init__(self, mode: str, **args: Any) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), mode, json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(30)
            raise AssertionError(f"worker exited with {self.proc.returncode} before answering")
        facts: dict[str, Any] = json.loads(line)
        return facts

    def send(self, word: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()

    def finish(self) -> dict[str, Any]:
        facts = self.read()
        assert self.proc.wait(60) == 0
        return facts


def start_all(workers: list[Worker]) -> list[dict[str, Any]]:
    """The barrier: wait until every worker is ready, then release them together."""
    ready = [w.read() for w in workers]
    for w in workers:
        w.send("go")
    return ready
