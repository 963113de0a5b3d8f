"""browser-use driven by a scripted model, in real Chromium, against the sandbox.

browser-use is not in the ``test`` extra (its exact pins clash with the
``mcp`` one): these tests run where it is installed (``.ci/run`` makes a
venv for them) and are skipped elsewhere — unless
``ACTONCE_REQUIRE_BROWSER_USE`` is set, where its absence is a failure.

Every test checks that no connection left the machine: browser-use talks to
nothing but the local Chromium, the sandbox and the ledger (an audit hook
sees every ``connect``).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import AsyncLedger
from actonce.sandbox import SandboxServer

# browser-use phones home unless told not to (telemetry, cloud sync, a
# version check on the package index), read as it is imported: none of it here.
for _name, _value in {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_LOGGING_LEVEL": "warning",
}.items():
    os.environ.setdefault(_name, _value)


def need_browser_use() -> None:
    """Skip the calling test module without browser-use (fail under ACTONCE_REQUIRE_BROWSER_USE)."""
    if os.environ.get("ACTONCE_REQUIRE_BROWSER_USE"):
        import browser_use  # noqa: F401  (a failure here is the point)
    else:
        pytest.importorskip("browser_use", reason="pip install 'actonce[browser-use]'")


_far: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "socket.connect":
        return
    address = args[1]
    if not isinstance(address, tuple):
        return  # a Unix socket
    try:
        local = ipaddress.ip_address(str(address[0])).is_loopback
    except ValueError:
        local = False  # a name: nothing here connects by name
    if not local:
        _far.append(repr(address))


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _no_far_connections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BROWSER_USE_CONFIG_DIR", str(tmp_path / "browseruse-config"))
    before = len(_far)
    yield
    assert _far[before:] == [], "a connection left the machine"


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with SandboxServer(seed=5) as srv:
        yield srv


@pytest.fixture
def base(server: SandboxServer) -> str:
    """A fresh sandbox database and no faults; the server's URL."""
    server.db.reset()
    server.sandbox.faults.reset(seed=5)
    return server.url


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[AsyncLedger]:
    led = AsyncLedger.open(str(tmp_path / "ledger.db"), create=True)
    try:
        yield led
    finally:
        await led.aclose()


def mutating(server: SandboxServer) -> list[tuple[str, str]]:
    """The mutating requests the sandbox received (method, path)."""
    return [
        (e["method"], e["path"])
        for e in server.sandbox.faults.log()
        if e["method"] not in ("GET", "HEAD", "OPTIONS")
    ]
