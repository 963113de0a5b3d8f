"""A browser agent whose side effects go through the ledger.

This is the glue a user writes once: it turns a site effect of the Playwright
adapter (``precondition``/``perform``/``verify``/``evidence``) into an
:class:`actonce.Effect` with a stable key and a policy per kind, runs it,
publishes threads part by part, and registers the verifiers reconcile needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from actonce import (
    Effect,
    EffectKey,
    EffectRecord,
    Ledger,
    Outcome,
    Policy,
    Registry,
    RunResult,
    Status,
    Verdict,
)
from actonce.browser import Browser, BrowserSession, as_effect
from actonce.browser import Effect as SiteBound
from actonce.sandbox import SEED_USERS

from ._intents import Intent

__all__ = ["POLICIES", "Agent", "to_effect"]

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
}


def to_effect(site: SiteBound, key: EffectKey | str, policy: Policy,
              extra: dict[str, Any] | None = None) -> Effect:
    """An :class:`actonce.Effect` that runs a bound site effect (see ``as_effect``)."""
    return as_effect(site, key, policy=policy, extra=extra)


class Agent:
    """Runs intents in one browser, one signed-in session per actor."""

    def __init__(self, ledger: Ledger, browser: Browser, origin: str, *,
                 evidence_dir: str | Path, run_id: str, confirm_timeout: float = 4.0) -> None:
        self.ledger = ledger
        self.browser = browser
        self.origin = origin
        self.evidence_dir = Path(evidence_dir)
        self.run_id = run_id
        self.confirm_timeout = confirm_timeout
        self._sessions: dict[str, BrowserSession] = {}

    def session(self, actor: str) -> BrowserSession:
        """The signed-in session of ``actor`` (logs in on first use)."""
        if actor not in self._sessions:
            session = self.browser.new_session(
                self.origin, actor, evidence_dir=self.evidence_dir / actor, timeout=8.0,
                confirm_timeout=self.confirm_timeout)
            self._sessions[actor] = session
            session.login(SEED_USERS[actor])
        return self._sessions[actor]

    def site_effect(self, intent: Intent, part: int | None = None,
                    parent: str | None = None) -> SiteBound:
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
               parent: str | None = None) -> Effect:
        """The ledger effect for an intent (or one thread part)."""
        site = self.site_effect(intent, part, parent)
        extra: dict[str, Any] = {"intent": intent.id}
        if part is not None:
            extra["part"] = part
        return to_effect(site, intent.key(part), POLICIES[site.kind], extra)

    def run_intent(self, intent: Intent, *, replans: int = 1) -> Iterator[tuple[int | None, RunResult]]:
        """Run every effect of ``intent``; yields (part, result) as they end.

        A proven failure (``failed``) is replanned up to ``replans`` times; a
        thread stops at its first part that is not verified.
        """
        if intent.kind != "thread":
            yield from self._run_one(intent, None, None, replans)
            return
        verified: list[str] = []
        for part in range(len(intent.parts)):
            record = self.ledger.get(intent.key(part).value)
            if record is not None and record.status is Status.CONFIRMED and record.result_ref:
                verified.append(record.result_ref)
                continue
            parent = verified[-1] if verified else None
            last: RunResult | None = None
            for part_, result in self._run_one(intent, part, parent, replans):
                last = result
                yield part_, result
            if last is None or not last.done or not last.result_ref:
                return
            verified.append(last.result_ref)

    def _run_one(self, intent: Intent, part: int | None, parent: str | None,
                 replans: int) -> Iterator[tuple[int | None, RunResult]]:
        for _ in range(replans + 1):
            result = self.ledger.run(self.effect(intent, part, parent), run_id=self.run_id)
            yield part, result
            if result.outcome is not Outcome.FAILED:
                return

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
