from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from actonce.sandbox import SEED_USERS, SandboxServer


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with SandboxServer(seed=7) as srv:
        yield srv


@pytest.fixture
def base(server: SandboxServer) -> Iterator[str]:
    httpx.post(server.url + "/admin/reset").raise_for_status()
    yield server.url


@pytest.fixture
def client_for(base: str) -> Iterator[Callable[[str], httpx.Client]]:
    clients: list[httpx.Client] = []

    def make(user: str) -> httpx.Client:
        c = httpx.Client(base_url=base, timeout=10)
        clients.append(c)
        r = c.post("/login", data={"username": user, "password": SEED_USERS[user]})
        assert r.status_code == 303
        return c

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def alice(client_for: Callable[[str], httpx.Client]) -> httpx.Client:
    return client_for("alice")


SetFaults = Callable[..., None]


@pytest.fixture
def set_faults() -> SetFaults:
    """``set_faults(base, *rules, seed=None)``: replace the server's fault rules."""

    def apply(base: str, *rules: dict[str, object], seed: int | None = None) -> None:
        body: dict[str, object] = {"rules": list(rules)}
        if seed is not None:
            body["seed"] = seed
        httpx.post(base + "/admin/faults", json=body).raise_for_status()

    return apply
