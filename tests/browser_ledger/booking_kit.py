"""The booking matrix's world: a sandbox, a ledger (SQLite or PostgreSQL), trips, workers.

A ``World`` is one test's everything: the module's sandbox (reset), a fresh
ledger on the backend under test, an in-process ``BookingAgent`` on the
module's Chromium, and the sandbox's ground truth and request log. A ``Case``
is one user's booking intent with its approval packet. ``Worker`` is a real
worker process (``actonce.demo._booking_agent``) with its own Chromium,
driven over JSON lines; every worker a test starts is stopped by its PID.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from actonce import (
    AnswerResult,
    ApprovalRequest,
    Event,
    EventType,
    Fact,
    Intent,
    Ledger,
    OperationResult,
    SigningKeys,
    intent_key,
)
from actonce.browser import Browser, Trip, money_of
from actonce.demo._booking_agent import BookingAgent, TripSpec
from actonce.sandbox import FaultRule, SandboxServer

KEYS = SigningKeys.parse("matrix:" + "5a" * 16)
TENANT = "matrix"
DATE, DATE2 = "2030-05-01", "2030-06-01"
CEILING = Decimal("250.00")
SESSION = {"timeout": 6.0, "confirm_timeout": 3.0}
READ_TIMEOUT = 240.0


@dataclass
class World:
    """One test's sandbox, ledger and agent."""

    server: SandboxServer
    ledger: Ledger
    url: str
    agent: BookingAgent
    tmp: Path
    workers: list[Worker] = field(default_factory=list)

    def truth(self) -> dict[str, Any]:
        """The booking world's ground truth (its own database)."""
        return self.server.sandbox.booking.db.ground_truth()

    def totals(self) -> dict[str, int]:
        return {k: v for k, v in self.truth()["totals"].items() if v}

    def faults(self, *rules: FaultRule) -> None:
        self.server.sandbox.faults.configure(rules)

    def log(self) -> list[dict[str, Any]]:
        return self.server.sandbox.faults.log()

    def posts(self, action: str) -> int:
        """How many submits of ``action`` reached the provider (a resend counts)."""
        return sum(1 for r in self.log() if r["action"] == action and r["method"] == "POST")

    def case(
        self,
        intent_id: str,
        user: str = "alice",
        *,
        sku: str = "harbor-double",
        when: str = DATE,
        nights: int = 2,
        version: int = 1,
    ) -> Case:
        """A booking intent (recorded, or its given version), its trip and its approval packet."""
        if version == 1:
            intent = self.ledger.intents.put(
                Intent(intent_id, "booking", user=user, provider="Harbor Hotel", items=(sku,),
                       quantity=1, when=when, price_ceiling=CEILING, currency="EUR",
                       recipient=f"{user}@example.com", constraints={"nights": nights})
            )  # fmt: skip
        else:
            intent = self.ledger.intents.get(intent_id, version)
        product = self.server.sandbox.booking.db.product(sku)
        assert product is not None
        total = money_of(product.price * nights)
        trip = Trip(
            str(intent.ref), sku, when, nights, 1, int(CEILING * 100), intent.recipient or ""
        )
        key = intent_key(intent, "pay", tenant=TENANT, actor=user)
        request = self.ledger.approvals.request(
            intent, "pay", key, amount=total, ceiling=CEILING,
            details={"room": sku, "check-in": when, "nights": nights},
            terms="free cancellation until 48 h before check-in",
            facts=[Fact("total", str(total), observed_at=self.ledger.clock.now())],
        )  # fmt: skip
        spec = TripSpec(intent.intent_id, intent.version, user, trip, request.packet.packet_id)
        return Case(self, intent, spec, request)

    def worker(self, specs: list[TripSpec], **config: Any) -> Worker:
        w = Worker(self, specs, **config)
        self.workers.append(w)
        return w

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.agent.close()
        self.ledger.close()


@dataclass
class Case:
    """One user's booking intent version: its trip, its packet, its operation."""

    world: World
    intent: Intent
    spec: TripSpec
    request: ApprovalRequest

    @property
    def user(self) -> str:
        return self.spec.user

    def approve(self, link: str | None = None) -> AnswerResult:
        """The user answers the signed link (the packet's own, unless given)."""
        ledger = self.world.ledger
        return ledger.approvals.answer_link(link or self.request.link, "approve", by=self.user)

    def run(self) -> OperationResult:
        """One pass of the trip's operation by the in-process agent."""
        return self.world.agent.run(self.spec)

    def key(self, action: str) -> str:
        return intent_key(self.spec.ref, action, tenant=TENANT, actor=self.user).value

    def status(self, action: str) -> str | None:
        record = self.world.ledger.get(self.key(action))
        return None if record is None else record.status.value

    def events(self, action: str) -> list[Event]:
        """A step's history, oldest first (also for a key the ledger has no record of)."""
        events: list[Event] = self.world.ledger.store.events(self.key(action))
        return events

    def executions(self, action: str) -> list[Event]:
        """The commits of a step: one ``executing`` event per perform that started."""
        return [e for e in self.events(action) if e.type is EventType.EXECUTING]

    def receipt_text(self) -> str:
        receipt = self.world.ledger.receipt(self.spec.op_id)
        assert receipt is not None
        return receipt.text

    def told(
        self,
        outcome: str,
        *,
        charged: str,
        released: str | None = None,
        ceiling: str = "250.00 EUR",
        raised_from: str | None = None,
        exceptions: str = "none.",
    ) -> dict[str, str]:
        """Check what the receipt tells the user, field by field; answers its lines.

        ``charged`` is the line's words (``240.00 EUR.``, ``nothing.``, ...);
        the same facts are checked in ``data["user"]``, the operators' JSON.
        """
        receipt = self.world.ledger.receipt(self.spec.op_id)
        assert receipt is not None
        lines = receipt.text.splitlines()
        told = {"headline": lines[0]}
        for line in lines[1:]:
            label, _, value = line.partition(": ")
            told[label] = value
        user = receipt.data["user"]
        assert user["outcome"] == outcome, (user, receipt.text)
        heads = {"done": "is done.", "undone": "did not go through; what had been done was undone.",
                 "in review": "is stopped: a person checks it",
                 "withdrawn": "was withdrawn"}  # fmt: skip
        assert told["headline"].startswith("Your booking with Harbor Hotel (harbor-double, ")
        assert heads[outcome] in told["headline"], receipt.text
        assert told["Charged"] == charged, receipt.text
        assert told.get("Released or refunded") == released, receipt.text
        raised = f", raised from {raised_from} by a later approval" if raised_from else ""
        assert told["Approved ceiling"] == f"{ceiling}{raised}.", receipt.text
        assert told["Cancellation terms"] == "free cancellation until 48 h before check-in"
        assert told["Exceptions"] == exceptions, receipt.text
        assert told["Who to contact"].endswith(f"{self.spec.op_id}; for the booking itself, "
                                               "Harbor Hotel.")  # fmt: skip
        assert "What happens next" in told and "What was done" in told
        # The operators' JSON holds the same facts as fields.
        assert user["ceiling"] == ceiling.split()[0] and user["currency"] == "EUR"
        assert user["ceiling_raised_from"] == (raised_from.split()[0] if raised_from else None)
        assert user["released"] == (released.split()[0] if released else None)
        return told


def runs(result: OperationResult) -> list[tuple[str, str, bool]]:
    """(step, outcome, performed) of every run of a pass."""
    return [(name, r.outcome.value, r.performed) for name, r in result.runs]


class Worker:
    """A worker process of its own (``actonce.demo._booking_agent``), own Chromium."""

    def __init__(self, world: World, specs: list[TripSpec], **config: Any) -> None:
        cfg = {
            "ledger": world.url,
            "origin": world.server.url,
            "tenant": TENANT,
            "trips": [s.to_json() for s in specs],
            "session_options": SESSION,
            "evidence_dir": str(world.tmp / f"worker-{len(world.workers)}"),
            **config,
        }
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "actonce.demo._booking_agent", json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.pid = self.proc.pid
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def read(self) -> dict[str, Any]:
        """The worker's next JSON line (waits for it)."""
        try:
            line = self._lines.get(timeout=READ_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"worker {self.pid} said nothing for {READ_TIMEOUT:g} s") from None
        if line is None:
            code = self.proc.wait(30)
            raise AssertionError(f"worker {self.pid} exited with {code} before answering")
        out: dict[str, Any] = json.loads(line)
        return out

    def until(self, key: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Lines up to the first one holding ``key``: (that line, the ones before it)."""
        seen = []
        while True:
            line = self.read()
            if key in line:
                return line, seen
            seen.append(line)

    def send(self, command: dict[str, Any] | None = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command or {}) + "\n")
        self.proc.stdin.flush()

    def round(self) -> list[dict[str, Any]]:
        """One pass of every trip: its summaries."""
        self.send()
        return self.until("round")[1]

    def kill(self) -> None:
        """SIGKILL, by PID: the worker dies wherever it is."""
        os.kill(self.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        """End it: close its input (it finishes), else kill it by PID."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(60)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()


def new_world(server: SandboxServer, browser: Browser, url: str, tmp: Path) -> Iterator[World]:
    """A world on a fresh sandbox and the ledger at ``url`` (closed afterwards)."""
    server.db.reset()
    server.sandbox.booking.reset()
    server.sandbox.faults.reset(seed=7)
    ledger = Ledger.open(url, create=True, signing_keys=KEYS)
    # A dropped confirmation may be sent again at the next pass (the backoff has
    # its own tests, on a frozen clock).
    agent = BookingAgent(
        ledger, browser, server.url, tenant=TENANT, evidence_dir=tmp / "evidence",
        session_options=SESSION, step_options={"notify_backoff": 0.0},
    )  # fmt: skip
    world = World(server, ledger, url, agent, tmp)
    try:
        yield world
    finally:
        world.close()
