"""A booking agent: one browser, several users' trips, one operation pass at a time.

Used in process (the matrix tests, the demo's orchestrator) and as a worker
process of its own (``python -m actonce.demo._booking_agent CONFIG``), which
talks JSON lines:

- it prints ``{"ready": pid}`` once its browser is up and its users signed in;
- then, for every line it reads on stdin (``{"trips": [op ids]}`` or ``{}``
  for all of its trips; ``"add": [trip specs]`` gives it more trips first),
  it makes one pass of each trip's operation and prints one
  line per trip (``{"trip": ..., "state": ..., "runs": [...]}``), then
  ``{"round": n}``; end of input ends it.

Config: ``ledger`` (URL), ``origin`` (the sandbox), ``tenant``, ``trips``
(see :class:`TripSpec`), ``evidence_dir``, and ``stop_after_perform`` (n):
at the n-th ``after_perform`` crash point — a submit done, its outcome not
yet recorded — the process prints ``{"stopped": "after_perform"}`` and stops
itself (``SIGSTOP``) for its supervisor to kill it.

Everything here uses the public API only (``actonce``, ``actonce.browser``,
``actonce.testing``, ``actonce.sandbox``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from actonce import (
    ApprovalStatus,
    IntentRef,
    Ledger,
    Operation,
    OperationResult,
    Outcome,
    Packet,
    RequestPattern,
    Step,
    UsageError,
)
from actonce.browser import Browser, BrowserSession, Trip, booking_steps
from actonce.sandbox import SEED_USERS

__all__ = ["BookingAgent", "TripSpec", "newest_packet", "pass_summary"]

_DEAD = frozenset({ApprovalStatus.EXPIRED, ApprovalStatus.DENIED, ApprovalStatus.VOIDED})


@dataclass(frozen=True, slots=True)
class TripSpec:
    """One intent version to book: its intent, user, trip and first approval packet."""

    intent_id: str
    version: int
    user: str
    trip: Trip
    packet: str | None = None

    @property
    def ref(self) -> IntentRef:
        """The intent version."""
        return IntentRef(self.intent_id, self.version)

    @property
    def op_id(self) -> str:
        """The operation's id."""
        return f"booking:{self.ref}"

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON (for a worker's config)."""
        return {"intent_id": self.intent_id, "version": self.version, "user": self.user,
                "trip": asdict(self.trip), "packet": self.packet}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TripSpec:
        """A spec from :meth:`to_json`'s shape."""
        return cls(data["intent_id"], int(data["version"]), data["user"],
                   Trip(**data["trip"]), data.get("packet"))  # fmt: skip


def newest_packet(ledger: Ledger, packet_id: str | None) -> Packet | None:
    """The newest packet of a replacement chain (a price refresh replaces a packet)."""
    return None if packet_id is None else ledger.approvals.latest(packet_id)


def _dead(packet: Packet | None) -> bool:
    """Whether a packet can never authorize its commit (nor be refreshed into one that can)."""
    return packet is not None and packet.status in _DEAD


def pass_summary(spec: TripSpec, result: OperationResult) -> dict[str, Any]:
    """One pass as a JSON line."""
    return {
        "trip": spec.op_id,
        "state": result.state.value,
        "reason": result.reason,
        "runs": [
            [name, r.outcome.value, None if r.status is None else r.status.value, r.performed]
            for name, r in result.runs
        ],
        "receipt": None if result.receipt is None else result.receipt.state.value,
    }


class BookingAgent:
    """Runs booking operations for several users through one browser.

    Args:
        ledger: the ledger (approvals need no signing key here: the agent
            never makes or answers a packet).
        browser: the browser; one signed-in session per user.
        origin: the sandbox's URL.
        tenant: the effect keys' tenant.
        evidence_dir: where each user's evidence goes.
        session_options: passed to ``Browser.new_session``.
        step_options: passed to ``booking_steps``.
    """

    def __init__(
        self,
        ledger: Ledger,
        browser: Browser,
        origin: str,
        *,
        tenant: str,
        evidence_dir: str | Path | None = None,
        session_options: dict[str, Any] | None = None,
        step_options: dict[str, Any] | None = None,
    ) -> None:
        self.ledger, self.browser, self.origin, self.tenant = ledger, browser, origin, tenant
        self.evidence_dir = None if evidence_dir is None else Path(evidence_dir)
        self.session_options = {"timeout": 8.0, "confirm_timeout": 4.0, **(session_options or {})}
        self.step_options = step_options or {}
        self._sessions: dict[str, BrowserSession] = {}
        self._signed_out: set[str] = set()
        self.specs: list[TripSpec] = []
        """The trips this agent has run (``resume`` finds their operations)."""

    def session(self, user: str) -> BrowserSession:
        """The user's session, signed in (again, after a pass found it signed out)."""
        session = self._sessions.get(user)
        if session is None:
            where = None if self.evidence_dir is None else self.evidence_dir / user
            # The write firewall is on, its refusals in the ledger: signing in
            # is the one request allowed outside the booking's effects.
            login = RequestPattern("POST", "/login", origin=self.origin)
            options = {"ledger": self.ledger, "allow": [login], **self.session_options}
            session = self.browser.new_session(self.origin, user, evidence_dir=where, **options)
            self._sessions[user] = session
            self._signed_out.add(user)
        if user in self._signed_out:
            session.login(SEED_USERS[user])
            self._signed_out.discard(user)
        return session

    def signed_out(self, user: str) -> None:
        """Sign the user in again before their next pass."""
        self._signed_out.add(user)

    def steps(self, spec: TripSpec) -> tuple[list[Step], Packet | None]:
        """The trip's steps, gated by the newest packet of its approval."""
        if spec not in self.specs:
            self.specs.append(spec)
        packet = newest_packet(self.ledger, spec.packet)
        trip = spec.trip
        if packet is not None and packet.ceiling is not None:
            # The money steps may commit up to what the newest packet approves.
            trip = replace(trip, ceiling=int(packet.ceiling * 100))
        steps = booking_steps(
            self.session(spec.user),
            trip,
            spec.ref,
            tenant=self.tenant,
            approval=None if packet is None else packet.packet_id,
            amount=None if packet is None else packet.amount,
            **self.step_options,
        )
        return steps, packet

    def operation(self, spec: TripSpec) -> Operation:
        """The trip's operation, as it stands now."""
        steps, packet = self.steps(spec)
        approval = None if packet is None else packet.packet_id
        return Operation(self.ledger, spec.op_id, steps, intent=spec.ref, approval=approval)

    def run(self, spec: TripSpec) -> OperationResult:
        """One pass of the trip's operation.

        A version that can commit nothing any more is withdrawn through the
        public API: a superseded one by its revision already (in the revision's
        own transaction), one whose approval expired, was denied or voided
        here (``Operation.withdraw``). The pass then undoes its verified steps,
        newest first, and finds it compensated.
        """
        op = self.operation(spec)
        packet = newest_packet(self.ledger, spec.packet)
        if packet is not None and _dead(packet) and not self._withdrawn(spec):
            why = f"approval {packet.packet_id} is {packet.status.value}"
            op.withdraw(by="booking-agent", reason=why)
        result = op.run()
        if any(r.outcome is Outcome.HARD_STOP for _, r in result.runs):
            self.signed_out(spec.user)  # a wall stopped it: sign in, then resume
        return result

    def _withdrawn(self, spec: TripSpec) -> bool:
        try:
            return self.ledger.operations.get(spec.op_id).closed
        except UsageError:  # never run: nothing to undo, nothing withdrawn yet
            return False

    def resume(self, op_id: str) -> Operation | None:
        """The operation of one of this agent's trips, by id (``None``: not one of them)."""
        spec = next((s for s in self.specs if s.op_id == op_id), None)
        return None if spec is None else self.operation(spec)

    def close(self) -> None:
        """Close every session."""
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()


# --- the worker process ------------------------------------------------------------------


def _say(obj: Any) -> None:
    print(json.dumps(obj, default=str), flush=True)


def _stop_after(n: int) -> None:
    from actonce.testing import observe_points

    seen = [0]

    def hit(point: str) -> None:
        if point != "after_perform":
            return
        seen[0] += 1
        if seen[0] == n:
            _say({"stopped": point, "pid": os.getpid()})
            os.kill(os.getpid(), signal.SIGSTOP)

    observe_points(hit)


def _commands() -> Iterator[dict[str, Any]]:
    for line in sys.stdin:
        line = line.strip()
        if line:
            yield json.loads(line)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m actonce.demo._booking_agent CONFIG`` (CONFIG: JSON text)."""
    cfg = json.loads((argv or sys.argv[1:])[0])
    specs = [TripSpec.from_json(t) for t in cfg["trips"]]
    if cfg.get("stop_after_perform"):
        _stop_after(int(cfg["stop_after_perform"]))
    with Ledger.open(cfg["ledger"]) as ledger, Browser() as browser:
        agent = BookingAgent(
            ledger,
            browser,
            cfg["origin"],
            tenant=cfg["tenant"],
            evidence_dir=cfg.get("evidence_dir"),
            session_options=cfg.get("session_options"),
            step_options=cfg.get("step_options"),
        )
        try:
            for user in sorted({s.user for s in specs}):
                agent.session(user)
            _say({"ready": os.getpid()})
            for n, command in enumerate(_commands(), 1):
                specs += [TripSpec.from_json(t) for t in command.get("add") or []]
                wanted = set(command.get("trips") or [s.op_id for s in specs])
                for spec in specs:
                    if spec.op_id in wanted:
                        _say(pass_summary(spec, agent.run(spec)))
                _say({"round": n})
        finally:
            agent.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
