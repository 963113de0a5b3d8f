"""Fixtures: a real ledger with effects in every state, a real console serving it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from actonce.console import ConsoleServer, Settings
from actonce.testing import FrozenClock

from .world import PASSWORDS, World, build

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world for the tests of a module that only read (or write what they undo)."""
    w = build(tmp_path_factory.mktemp("world"))
    yield w
    w.close()


@pytest.fixture(scope="module")
def still(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A world whose clock stands still, 125 s after it was built: every time and age is known."""
    clock = FrozenClock()
    w = build(tmp_path_factory.mktemp("still"), clock=clock)
    clock.advance(125)
    yield w
    w.close()


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[ConsoleServer]:
    with ConsoleServer(world.ledger, world.reviewers(), Settings()) as srv:
        yield srv


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[World]:
    """A world of its own, for a test that decides."""
    w = build(tmp_path)
    yield w
    w.close()


def sign_in(url: str, name: str, password: str | None = None) -> tuple[httpx.Client, str]:
    """A client signed in as ``name``, and its session's CSRF token."""
    client = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
    page = client.get("/login")
    nonce = CSRF.search(page.text)
    assert nonce, page.text
    answer = client.post(
        "/login",
        data={"csrf": nonce.group(1), "name": name, "password": password or PASSWORDS[name]},
        headers={"origin": url},
    )
    assert answer.status_code == 303, answer.text
    queue = client.get("/")
    token = CSRF.search(queue.text)
    assert queue.status_code == 200 and token
    return client, token.group(1)


@pytest.fixture
def signed_in(server: ConsoleServer) -> Iterator[Callable[..., tuple[httpx.Client, str]]]:
    made: list[httpx.Client] = []

    def make(name: str = "ana", url: str | None = None) -> tuple[httpx.Client, str]:
        client, token = sign_in(url or server.url, name)
        made.append(client)
        return client, token

    yield make
    for c in made:
        c.close()
