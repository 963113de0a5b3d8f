"""A browser agent on :class:`actonce.Operator`: the glue a user writes once.

``Agent`` turns the Playwright adapter's site effects into
:class:`actonce.Effect` values with stable keys and a policy per kind, and
registers the verifiers reconcile needs. ``Stages`` are one actor's operator
hooks: who is signed in, which intents are due, which are worth doing, and
the effects of each (a thread part by part, each naming the one before; a
proven failure replanned once). The loop, the lease, reconcile-first, the
budget and the summary are actonce's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from actonce import (
    Effect,
    EffectRecord,
    Hooks,
    Ledger,
    Outcome,
    Policy,
    Registry,
    RequestPattern,
    RunResult,
    Status,
    Verdict,
)
from actonce.browser import Browser, BrowserSession, as_effect
from actonce.browser import Effect as SiteBound
from actonce.sandbox import SEED_USERS

from ._intents import Intent, quality_gate

__all__ = ["KINDS", "POLICIES", "Agent", "Stages", "settled"]

#: How each kind is verified. Posts are found by search, which may index
#: late: their absence never proves anything (a human decides). Invoices,
#: likes and follows are read from authoritative pages.
POLICIES: dict[str, Policy] = {
    "post": Policy(settle_seconds=4.0, absence_authoritative=False, verify_attempts=5,
                   verify_backoff=0.4, verify_backoff_max=1.6, lease_seconds=20.0),
    "invoice": Policy(settle_seconds=1.5, absence_authoritative=True, verify_attempts=5,
                      verify_backoff=0.3, verify_backoff_max=1.2, lease_seconds=20.0),
    "like": Policy(settle_seconds=1.0, absence_authoritative=True, verify_attempts=4,
                   verify_backoff=0.3, lease_seconds=20.0),
    "follow": Policy(settle_seconds=1.0, absence_authoritative=True, verify_attempts=4,
                     verify_backoff=0.3, lease_seconds=20.0),
}  # fmt: skip
KINDS = tuple(POLICIES)
_SETTLED = {Status.CONFIRMED, Status.NEEDS_REVIEW, Status.ABANDONED}


def settled(ledger: Ledger, intent: Intent) -> bool:
    """Every effect of ``intent`` is done, or one waits for a human (a thread stops there)."""
    for part in range(intent.effects):
        record = ledger.get(intent.key(part if intent.kind == "thread" else None).value)
        if record is None or record.status not in _SETTLED:
            return False
        if record.status is not Status.CONFIRMED:
            return True
    return True


class Agent:
    """Effects of intents in one browser, one signed-in session per actor."""

    def __init__(self, browser: Browser, origin: str, *, evidence_dir: str | Path,
                 confirm_timeout: float = 4.0) -> None:  # fmt: skip
        self.browser = browser
        self.origin = origin
        self.evidence_dir = Path(evidence_dir)
        self.confirm_timeout = confirm_timeout
        self._sessions: dict[str, BrowserSession] = {}

    def session(self, actor: str) -> BrowserSession:
        """The signed-in session of ``actor`` (logs in on first use)."""
        if actor not in self._sessions:
            # The write firewall is on: the agent changes nothing outside its
            # effects; signing in is the one request allowed besides them.
            session = self.browser.new_session(
                self.origin, actor, evidence_dir=self.evidence_dir / actor, timeout=8.0,
                confirm_timeout=self.confirm_timeout, firewall=True,
                allow=[RequestPattern("POST", "/login", origin=self.origin)])  # fmt: skip
            self._sessions[actor] = session
            session.login(SEED_USERS[actor])
        return self._sessions[actor]

    def site_effect(self, intent: Intent, part: int | None = None,
                    parent: str | None = None) -> SiteBound:  # fmt: skip
        """The adapter's effect for an intent (or one thread part)."""
        s = self.session(intent.actor)
        if intent.kind == "post":
            return s.post_effect(intent.text)
        if intent.kind == "thread":
            assert part is not None
            return s.post_effect(intent.parts[part], parent=parent)
        if intent.kind == "like":
            return s.like_effect(intent.target)
        if intent.kind == "follow":
            return s.follow_effect(intent.target)
        if intent.kind == "invoice":
            return s.invoice_effect(intent.reference, intent.amount)
        raise ValueError(f"unknown intent kind {intent.kind!r}")

    def effect(self, intent: Intent, part: int | None = None,
               parent: str | None = None) -> Effect:  # fmt: skip
        """The ledger effect for an intent (or one thread part)."""
        site = self.site_effect(intent, part, parent)
        extra: dict[str, Any] = {"intent": intent.id}
        if part is not None:
            extra["part"] = part
        return as_effect(site, intent.key(part), policy=POLICIES[site.kind], extra=extra)

    def register_verifiers(self, registry: Registry, intents: dict[str, Intent]) -> None:
        """Teach reconcile how to verify each kind from a stored record."""

        def verify(record: EffectRecord) -> Verdict:
            payload = json.loads(record.payload)
            intent = intents[payload["intent"]]
            return self.site_effect(intent, payload.get("part"), payload.get("parent")).verify()

        for kind, policy in POLICIES.items():
            registry.register(kind, verify, policy=policy)

    def close(self) -> None:
        """Close every session."""
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()


class Stages(Hooks[Intent]):
    """One actor's operator run: the intents due, in one browser session.

    ``emit`` is told of every effect's result as it ends. Posts and threads
    draw on the ``original`` budget (a thread once, with its first part).
    """

    def __init__(self, agent: Agent, ledger: Ledger, actor: str, batch: list[Intent],
                 emit: Callable[[Intent, int | None, RunResult], None]) -> None:  # fmt: skip
        self.agent, self.ledger, self.actor, self.batch, self.emit = (
            agent, ledger, actor, batch, emit)  # fmt: skip

    def owns(self, record: EffectRecord) -> bool:
        return bool(json.loads(record.scope).get("actor") == self.actor)

    def identity(self) -> str | None:
        who = self.agent.session(self.actor).whoami()  # logs in first; a wall is a HardStop
        return None if who == self.actor else f"signed in as {who!r}, not {self.actor!r}"

    def observe(self) -> Iterable[Intent]:
        mine = [i for i in self.batch if i.actor == self.actor]
        return [i for i in mine if not settled(self.ledger, i)]

    def label(self, candidate: Intent) -> str:
        return candidate.id

    def quality(self, candidate: Intent) -> str | None:
        return quality_gate(candidate, self.batch)

    def plan(self, candidate: Intent) -> Generator[Effect, RunResult, None]:
        parent: str | None = None
        parts = range(len(candidate.parts)) if candidate.kind == "thread" else [None]
        for part in parts:
            if part is not None:
                record = self.ledger.get(candidate.key(part).value)
                if record is not None and record.status is Status.CONFIRMED:
                    parent = record.result_ref
                    continue
            for _ in range(2):  # a proven failure is replanned once
                effect = self.agent.effect(candidate, part, parent)
                if candidate.kind in ("post", "thread") and not part:
                    effect = replace(effect, gate=self.ledger.budgets.gate("original"))
                result = yield effect
                self.emit(candidate, part, result)
                if result.outcome is not Outcome.FAILED:
                    break
            if not result.done:
                return  # a thread stops at its first part that is not verified
            parent = result.result_ref
