"""A real provider on 127.0.0.1 (``provider_app``), providers of ours, a ledger file."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import Ledger
from actonce.http import Provider

from .provider_app import ProviderApp


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture(scope="module", params=[False, True], ids=["no-key", "key"])
def app(request: pytest.FixtureRequest) -> Iterator[ProviderApp]:
    """The provider, with or without idempotency keys (one server per module and mode)."""
    with ProviderApp(keys=bool(request.param)) as served:
        yield served


@pytest.fixture
def keys(app: ProviderApp) -> bool:
    return app.keys


@pytest.fixture
def make_provider() -> Iterator[Callable[..., Provider]]:
    made: list[Provider] = []

    def make(base_url: str, **kw: Any) -> Provider:
        kw.setdefault("backoff", 0.02)
        provider = Provider(base_url, **kw)
        made.append(provider)
        return provider

    yield make
    for p in made:
        p.close()


@pytest.fixture
def ledger_path(tmp_path: Path) -> str:
    return str(tmp_path / "ledger.db")


@pytest.fixture
def ledger(ledger_path: str) -> Iterator[Ledger]:
    with Ledger.open(ledger_path, create=True) as opened:
        yield opened
