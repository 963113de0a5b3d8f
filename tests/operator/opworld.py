"""The operator tests' world: a ground truth, and hooks that record their calls.

``World`` is the external system: ``perform`` records an object (or does
what the test scripted for that ref), ``verify`` looks it up. ``Script``
hooks run a list of candidates (refs) through the operator and write down
every stage they were asked, so a test can say which stages never ran.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EffectPlan,
    EffectRecord,
    HardStop,
    Hooks,
    NotPerformed,
    Policy,
    Unavailable,
    Verdict,
    effect_key,
)

POLICY = Policy(settle_seconds=0.0, absence_authoritative=True, verify_attempts=2,
                verify_backoff=0.1, lease_seconds=30.0)  # fmt: skip
DOUBT = Policy(settle_seconds=0.0, absence_authoritative=False, verify_attempts=2,
               verify_backoff=0.1, lease_seconds=30.0)  # fmt: skip


class World:
    """Refs and what happens to them.

    ``how[ref]``: ``ok`` (default), ``declined`` (stops before the boundary),
    ``absent`` (the click does nothing; the page says so), ``lost`` (it
    happens, verification stays unavailable), ``doubt`` (nothing happens and
    absence proves nothing: a human decides), ``captcha`` (the precondition
    sees a CAPTCHA: hard stop before the claim).
    """

    def __init__(self) -> None:
        self.performed: dict[str, int] = {}
        self.tried: set[str] = set()
        self.how: dict[str, str] = {}

    def perform(self, ref: str) -> None:
        self.tried.add(ref)
        how = self.how.get(ref, "ok")
        if how == "declined":
            raise NotPerformed("the editor appended instead of replacing")
        if how in ("ok", "lost"):
            self.performed[ref] = self.performed.get(ref, 0) + 1
        if how == "lost":
            raise TimeoutError("the response was lost")

    def verify(self, ref: str) -> Verdict:
        if self.how.get(ref) == "lost" and ref in self.tried:
            return Unavailable("the search page times out")
        n = self.performed.get(ref, 0)
        return Confirmed(f"https://site/{ref}", count=n) if n else Absent()

    def precondition(self, ref: str) -> bool:
        if self.how.get(ref) == "captcha":
            raise HardStop("a CAPTCHA screen is visible")
        return True

    def verifier(self, record: EffectRecord) -> Verdict:
        return self.verify(str(record.data["ref"]))

    def key(self, ref: str, kind: str = "post") -> str:
        return effect_key(tenant="t", actor="alice", kind=kind, object=ref,
                          operation="create").value  # fmt: skip

    def effect(self, ref: str, *, kind: str = "post", gate: Any = None,
               payload: dict[str, Any] | None = None) -> Effect:  # fmt: skip
        policy = DOUBT if self.how.get(ref) == "doubt" else POLICY
        return Effect(
            key=effect_key(tenant="t", actor="alice", kind=kind, object=ref, operation="create"),
            kind=kind,
            payload={"ref": ref, **(payload or {})},
            perform=lambda: self.perform(ref),
            verify=lambda: self.verify(ref),
            precondition=lambda: self.precondition(ref),
            policy=policy,
            gate=gate,
        )


class Script(Hooks[str]):
    """Hooks over a list of refs; every call is written down in ``calls``."""

    def __init__(self, world: World, refs: Iterable[str], *, gate: Any = None,
                 quality: dict[str, str] | None = None) -> None:  # fmt: skip
        self.world = world
        self.refs = list(refs)
        self.gate = gate
        self.skips = quality or {}
        self.calls: list[str] = []
        self.who: bool | str | None = None
        self.before_plan: dict[str, Callable[[], None]] = {}

    def identity(self) -> bool | str | None:
        self.calls.append("identity")
        return self.who

    def observe(self) -> Iterable[str]:
        self.calls.append("observe")
        return list(self.refs)

    def quality(self, candidate: str) -> str | None:
        self.calls.append(f"quality {candidate}")
        return self.skips.get(candidate)

    def plan(self, candidate: str) -> EffectPlan:
        self.calls.append(f"plan {candidate}")
        if candidate in self.before_plan:
            self.before_plan[candidate]()
        if candidate == "nothing":
            return None
        return self.world.effect(candidate, gate=self.gate)
