"""Real Chromium against a real sandbox, through a real SQLite ledger.

One Chromium and one sandbox server per module; every test gets a fresh
sandbox database (and no faults), a fresh ledger file and its own sessions,
and closes what it opened. Helpers count how often ``perform`` and
``verify`` ran, so every test can check both sides: the ledger (status,
outcome, events) and the sandbox's ground truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from actonce import Effect, EventType, Ledger, Policy, Status, effect_key
from actonce.browser import Browser, BrowserSession, PostEffect, as_effect
from actonce.browser import Effect as SiteBound
from actonce.sandbox import SEED_USERS, FaultRule, SandboxServer

# Short settle windows keep the package fast; the rules are the same.
POST = Policy(
    settle_seconds=0.6,
    absence_authoritative=False,
    verify_attempts=5,
    verify_backoff=0.1,
    verify_backoff_max=0.4,
    lease_seconds=30.0,
)
INVOICE = Policy(
    settle_seconds=0.6,
    absence_authoritative=True,
    verify_attempts=5,
    verify_backoff=0.1,
    verify_backoff_max=0.4,
    lease_seconds=30.0,
)


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with SandboxServer(seed=7) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


@pytest.fixture
def base(server: SandboxServer) -> str:
    """A fresh sandbox database and no faults; the server's URL."""
    server.db.reset()
    server.sandbox.faults.reset(seed=7)
    return server.url


@pytest.fixture
def faults(server: SandboxServer, base: str) -> Callable[..., None]:
    """``faults(FaultRule(...), ...)``: replace the sandbox's fault rules."""

    def apply(*rules: FaultRule) -> None:
        server.sandbox.faults.configure(rules)

    return apply


@pytest.fixture
def truth(server: SandboxServer, base: str) -> Callable[[], dict[str, Any]]:
    """The sandbox's ground truth, read straight from its database."""
    return server.db.ground_truth


@pytest.fixture
def submits(server: SandboxServer, base: str) -> Callable[[], list[str]]:
    """Actions of every mutating request the sandbox saw (logins aside)."""

    def read() -> list[str]:
        return [
            r["action"]
            for r in server.sandbox.faults.log()
            if r["method"] == "POST" and r["action"] != "login"
        ]

    return read


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(ledger_path: Path) -> Iterator[Ledger]:
    with Ledger.open(str(ledger_path), create=True) as led:
        yield led


SessionFactory = Callable[..., BrowserSession]


@pytest.fixture
def session(browser: Browser, base: str, tmp_path: Path) -> Iterator[SessionFactory]:
    """``session(user="alice", **kwargs)``: a fresh signed-in context bound to ``user``."""
    made: list[BrowserSession] = []

    def make(user: str = "alice", **kwargs: Any) -> BrowserSession:
        kwargs.setdefault("evidence_dir", tmp_path / "evidence" / user)
        kwargs.setdefault("confirm_timeout", 1.5)
        kwargs.setdefault("timeout", 5.0)
        s = browser.new_session(base, user, **kwargs)
        made.append(s)
        s.login(SEED_USERS[user])
        return s

    yield make
    for s in made:
        s.close()


@dataclass
class Counted:
    """A bound site effect whose callables count their calls.

    ``before_perform`` / ``after_perform`` / ``before_verify`` run around the
    real calls (to change the world at a precise step of the protocol).
    """

    site: SiteBound
    performs: int = 0
    verifies: int = 0
    preconditions: int = 0
    before_perform: Callable[[], None] | None = None
    after_perform: Callable[[], None] | None = None
    before_verify: Callable[[int], None] | None = None
    verdicts: list[Any] = field(default_factory=list)

    def perform(self) -> Any:
        self.performs += 1
        if self.before_perform:
            self.before_perform()
        try:
            return self.site.perform()  # its wire records go to the history
        finally:
            if self.after_perform:
                self.after_perform()

    def verify(self) -> Any:
        self.verifies += 1
        if self.before_verify:
            self.before_verify(self.verifies)
        verdict = self.site.verify()
        self.verdicts.append(verdict)
        return verdict

    def precondition(self) -> bool:
        self.preconditions += 1
        return self.site.precondition()

    def effect(self, key: Any, policy: Policy, extra: dict[str, Any] | None = None) -> Effect:
        """The ledger effect (built by ``as_effect``), with counting callables."""
        eff = as_effect(self.site, key, policy=policy, extra=extra)
        return Effect(
            key=eff.key,
            kind=eff.kind,
            payload=eff.payload,
            perform=self.perform,
            verify=self.verify,
            precondition=self.precondition,
            evidence=eff.evidence,
            policy=eff.policy,
        )


def key(name: str, actor: str = "alice", kind: str = "post") -> Any:
    """A stable effect key for a test object."""
    return effect_key(
        tenant="browser-ledger", actor=actor, kind=kind, object=name, operation="create"
    )


def types(ledger: Ledger, k: Any) -> list[EventType]:
    """Event types of one key, oldest first (also for keys without a record)."""
    return [e.type for e in ledger.store.events(getattr(k, "value", k))]


def status(ledger: Ledger, k: Any) -> Status | None:
    record = ledger.get(getattr(k, "value", k))
    return None if record is None else record.status


def totals(gt: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in gt["totals"].items() if v}


class ListingOnlyPost(PostEffect):
    """A post verified on the search listing only, never from the page the click left.

    For the tests of a late listing (the ``late_index`` fault): the post's own
    page confirms it at once, the listing does not show it yet.
    """

    async def verify_here(self, session: Any) -> None:
        return None
