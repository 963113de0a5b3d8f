"""Real processes for the crash tests: a world of two files and workers to spawn.

A :class:`World` is one ledger file and one :class:`FakeProvider` file (the
ground truth). ``world.spawn(...)`` starts ``_proc.py`` in a new Python
process; ``world.open(offset)`` gives the test its own ledger and provider
under ``SystemClock(offset)``: a later offset is a later time, when the
leases of earlier runs have expired, without waiting for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import Ledger, Policy, Registry, SQLiteStore, Status, SystemClock
from actonce.testing import FakeProvider

HERE = Path(__file__).parent
#: Virtual seconds that make every lease expire and every settle window pass.
LATER = 10_000.0


class World:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ledger_path = str(folder / "ledger.db")
        self.provider_path = str(folder / "provider.db")
        with self.open(0.0):
            pass  # create and migrate both files before any process races for them

    @contextlib.contextmanager
    def open(
        self, offset: float, policy: Policy | None = None, *, busy_timeout: float = 30.0
    ) -> Iterator[tuple[Ledger, FakeProvider]]:
        clock = SystemClock(offset=offset)
        provider = FakeProvider(self.provider_path, clock=clock)
        registry = Registry()
        registry.register("fake", provider.verifier, policy=policy or Policy())
        store = SQLiteStore(self.ledger_path, busy_timeout=busy_timeout, create=True)
        ledger = Ledger(store, clock=clock, registry=registry)
        try:
            yield ledger, provider
        finally:
            ledger.close()
            provider.close()

    def spawn(
        self,
        refs: list[str],
        policy: dict[str, Any],
        *,
        env: dict[str, str] | None = None,
        **cfg: Any,
    ) -> subprocess.Popen[str]:
        config = {
            "ledger": self.ledger_path,
            "provider": self.provider_path,
            "refs": refs,
            "policy": policy,
            **cfg,
        }
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("ACTONCE_CRASH")}
        full_env.update(env or {})
        return subprocess.Popen(
            [sys.executable, str(HERE / "_proc.py"), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=full_env,
        )

    def status(self, ref: str) -> Status | None:
        with self.open(0.0) as (ledger, provider):
            record = ledger.get(_key(provider, ref))
        return None if record is None else record.status

    def accepted(self) -> dict[str, int]:
        with self.open(0.0) as (_, provider):
            return provider.accepted()

    def accepted_without_ledger(self) -> dict[str, int]:
        """The provider's ground truth, without opening (or creating) the ledger."""
        provider = FakeProvider(self.provider_path)
        try:
            return provider.accepted()
        finally:
            provider.close()


def _key(provider: FakeProvider, ref: str) -> str:
    key = provider.effect(ref).key
    return key if isinstance(key, str) else key.value


def read_json(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The next JSON line the process printed (it fails the test at EOF)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"process {proc.pid} ended early (returncode {proc.poll()})"
    out: dict[str, Any] = json.loads(line)
    return out


def finish(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """Wait for the process to end; the JSON lines it printed."""
    out, _ = proc.communicate()
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)
