from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from actonce.browser import Browser, BrowserSession
from actonce.sandbox import SEED_USERS, SandboxServer


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with SandboxServer(seed=3) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


@pytest.fixture
def base(server: SandboxServer) -> str:
    httpx.post(server.url + "/admin/reset").raise_for_status()
    return server.url


SessionFactory = Callable[..., BrowserSession]


@pytest.fixture
def new_session(browser: Browser, base: str, tmp_path: Path) -> Iterator[SessionFactory]:
    """``new_session(user, login=True, **kwargs)``: a fresh context bound to ``user``,
    logged in under a bound of its own (``LOGIN_MS``), not the session's ``timeout``."""
    made: list[BrowserSession] = []

    def make(
        user: str = "alice", *, login: bool = True, as_user: str | None = None, **kwargs: Any
    ) -> BrowserSession:
        kwargs.setdefault("evidence_dir", tmp_path / "evidence")
        kwargs.setdefault("confirm_timeout", 3.0)
        kwargs.setdefault("timeout", 5.0)
        session = browser.new_session(base, user, **kwargs)
        made.append(session)
        if login:
            who = as_user or user
            session.run(lambda s: _login_as(s, who))
        return session

    yield make
    for s in made:
        s.close()


#: The login's own bound (ms), whatever the session's timeout: a test that shortens the
#: timeout to pin what happens past it must not have its login fail on a loaded machine.
LOGIN_MS = 30_000


async def _login_as(session: Any, user: str) -> None:
    page = session.page
    await page.goto(session.url("/login"), timeout=LOGIN_MS)
    await page.get_by_label("Username").fill(user, timeout=LOGIN_MS)
    await page.get_by_label("Password").fill(SEED_USERS[user], timeout=LOGIN_MS)
    async with page.expect_navigation(timeout=LOGIN_MS):
        await page.get_by_role("button", name="Sign in").click(timeout=LOGIN_MS)


@pytest.fixture
def set_faults(base: str) -> Callable[..., None]:
    def apply(*rules: dict[str, object], seed: int | None = None) -> None:
        body: dict[str, object] = {"rules": list(rules)}
        if seed is not None:
            body["seed"] = seed
        httpx.post(base + "/admin/faults", json=body).raise_for_status()

    return apply


@pytest.fixture
def truth(base: str) -> Callable[[], dict[str, Any]]:
    def read() -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(base + "/admin/ground-truth").json()
        return data

    return read
