"""``actonce demo --scenario booking``: booking agents, approvals by signed link, faults, a kill.

Three users delegate nine trips (hold → pay → book → notify). Their
approvals arrive through signed links — some twice, one late, one after a
price change, one before the user changes the date — while the sandbox loses
a payment's answer, answers 500s, fails a booking after its payment, drops a
confirmation and refuses a void, and one worker is killed (``SIGKILL``, by
PID) right after submitting a payment. Worker processes (each its own
headless Chromium, ``_booking_agent``) make one pass of their trips per
round; between rounds the users answer and the world changes. The report
counts operations complete / compensated / in review, approvals consumed /
refused, receipts — and, **from the sandbox's own ground truth**, duplicate
payments, duplicate bookings and commits over an approved ceiling.

Public API only: ``actonce``, ``actonce.browser``, ``actonce.sandbox``.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from actonce import (
    ApprovalStatus,
    EventType,
    Fact,
    Intent,
    Ledger,
    SigningKeys,
    SystemClock,
    intent_key,
)
from actonce.browser import Trip, money_of
from actonce.sandbox import Fault, FaultRule, LostMode, SandboxServer

from ._booking_agent import TripSpec, newest_packet

__all__ = ["STORIES", "run_booking"]

TENANT = "demo-booking"
CEILING = {"harbor-double": Decimal("250.00"), "alpine-single": Decimal("170.00")}
LATE = 7200.0
"""How late the late user answers (seconds of ledger time after the packet's ttl)."""


@dataclass(frozen=True, slots=True)
class Story:
    """One trip of the demo and what happens to it."""

    name: str
    user: str
    sku: str
    date: str
    what: str


STORIES = (
    Story("trip-a1", "alice", "harbor-double", "2030-05-01", "payment answer lost (no byte)"),
    Story("trip-b1", "bob", "harbor-double", "2030-05-04",
          "approved twice, run by two workers at once, hold answered 500 twice, message dropped"),
    Story("trip-c1", "carol", "alpine-single", "2030-05-07",
          "price rises after the approval: refreshed packet, approved again"),
    Story("trip-a2", "alice", "harbor-double", "2030-05-10", "booking fails after the payment"),
    Story("trip-b2", "bob", "harbor-double", "2030-05-13", "approval answered too late"),
    Story("trip-c2", "carol", "harbor-double", "2030-05-16",
          "worker SIGKILLed after submitting the payment"),
    Story("trip-a3", "alice", "harbor-double", "2030-05-19",
          "date changed after the approval: v2 with a new approval"),
    Story("trip-b3", "bob", "harbor-double", "2030-05-22",
          "booking fails and the void is refused: a human decides"),
)  # fmt: skip
NEW_DATE = "2030-05-25"


def _faults() -> list[FaultRule]:
    """The seeded faults, each aimed at its trip by its client reference."""
    return [
        FaultRule("booking.pay", Fault.LOST_RESPONSE, mode=LostMode.CLOSE, times=1,
                  match={"client_ref": "trip-a1@v1"}),
        FaultRule("booking.hold", Fault.ERROR_AFTER_COMMIT, times=2,
                  match={"client_ref": "trip-b1@v1"}),
        FaultRule("booking.message", Fault.MESSAGE_DROPPED, times=1, match={"recipient": "bob@"}),
        FaultRule("booking.book", Fault.BOOKING_FAILED, times=1, match={"client_ref": "trip-a2@v1"}),
        FaultRule("booking.book", Fault.BOOKING_FAILED, times=1, match={"client_ref": "trip-b3@v1"}),
    ]  # fmt: skip


class _Process:
    """One worker process (``_booking_agent``), spoken to in JSON lines."""

    def __init__(self, name: str, config: dict[str, Any]) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "actonce.demo._booking_agent", json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def until(self, key: str, timeout: float = 600.0) -> tuple[dict[str, Any], list[Any]]:
        seen: list[Any] = []
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError(f"worker {self.name} said nothing for {timeout:g} s") from None
            if line is None:
                raise RuntimeError(f"worker {self.name} exited ({self.proc.wait(30)})")
            data = json.loads(line)
            if key in data:
                return data, seen
            seen.append(data)

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(120)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class _Demo:
    def __init__(self, workdir: Path, seed: int, progress: Callable[[str], None]) -> None:
        self.workdir, self.progress = workdir, progress
        self.keys = SigningKeys((("demo", os.urandom(32)),))
        # One set of rules for the whole run: their ``times`` count across rounds.
        self.rules = _faults()
        self.server = SandboxServer(workdir / "sandbox.db", seed=seed, faults=self.rules).start()
        self.ledger_path = str(workdir / "ledger.db")
        self.ledger = Ledger.open(self.ledger_path, create=True, signing_keys=self.keys)
        self.specs: dict[str, TripSpec] = {}
        self.links: dict[str, str] = {}
        self.kills: list[dict[str, Any]] = []
        self.workers: list[_Process] = []

    # -- the users' side ------------------------------------------------------------

    def delegate(self, story: Story, version: int = 1, when: str | None = None) -> TripSpec:
        """The user's intent (or its new version), its trip and an approval request."""
        if version == 1:
            intent = self.ledger.intents.put(
                Intent(story.name, "booking", user=story.user, provider="Sandbox booking world",
                       items=(story.sku,), quantity=1, when=story.date,
                       price_ceiling=CEILING[story.sku], currency="EUR",
                       recipient=f"{story.user}@example.com", constraints={"nights": 2})
            )  # fmt: skip
        else:
            intent = self.ledger.intents.get(story.name, version)
        product = self.server.sandbox.booking.db.product(story.sku)
        assert product is not None
        total = money_of(product.price * 2)
        ttl = 600.0 if story.name == "trip-b2" else 3600.0
        request = self.ledger.approvals.request(
            intent, "pay", intent_key(intent, "pay", tenant=TENANT, actor=story.user),
            amount=total, details={"room": story.sku, "check-in": intent.when, "nights": 2},
            terms="free cancellation until 48 h before check-in", ttl=ttl,
            facts=[Fact("total", str(total), observed_at=self.ledger.clock.now())],
        )  # fmt: skip
        trip = Trip(str(intent.ref), story.sku, intent.when or "", 2, 1,
                    int(CEILING[story.sku] * 100), f"{story.user}@example.com")  # fmt: skip
        spec = TripSpec(story.name, intent.version, story.user, trip, request.packet.packet_id)
        self.specs[spec.op_id] = spec
        self.links[spec.op_id] = request.link
        return spec

    def answer(self, spec: TripSpec, *, newest: bool = False, late: bool = False) -> str:
        """The user follows a link (the first packet's, or the newest one's)."""
        link = self.links[spec.op_id]
        if newest:
            packet = newest_packet(self.ledger, spec.packet)
            assert packet is not None
            link = self.ledger.approvals.link(packet.packet_id)
        ledger = self.ledger
        if late:  # the same ledger, read by a user who answers two hours later
            ledger = Ledger.open(self.ledger_path, clock=SystemClock(LATE), signing_keys=self.keys)
        try:
            result = ledger.approvals.answer_link(link, "approve", by=spec.user)
        finally:
            if late:
                ledger.close()
        self.progress(f"  {spec.user} answers {spec.op_id}: {result.answer.value} "
                      f"({result.status.value}{', ' + result.reason if result.reason else ''})")  # fmt: skip
        return result.answer.value

    # -- the workers ----------------------------------------------------------------

    def worker(self, name: str, specs: list[TripSpec], **extra: Any) -> _Process:
        config = {
            "ledger": self.ledger_path, "origin": self.server.url, "tenant": TENANT,
            "trips": [s.to_json() for s in specs], "evidence_dir": str(self.workdir / name),
            # A dropped confirmation is sent again after a second (30 s by default).
            "step_options": {"notify_backoff": 1.0},
            **extra,
        }  # fmt: skip
        w = _Process(name, config)
        self.workers.append(w)
        w.until("ready")
        return w

    def rounds(self, todo: list[tuple[_Process, dict[str, Any]]], *, sent: bool = False) -> None:
        """One round: every worker gets its command at once, then each one's passes."""
        if not sent:
            for w, command in todo:
                w.send(command)
        for w, _ in todo:
            _, lines = w.until("round")
            for line in lines:
                self.progress(f"  {w.name} {line['trip']}: {line['state']} ({line['reason']})")

    # -- the story --------------------------------------------------------------------

    def play(self) -> None:
        s = {story.name: self.delegate(story) for story in STORIES if story.name != "trip-b3"}
        by = {story.name: story for story in STORIES}
        a1, b1, c1, a2, b2, c2, a3 = (s[n] for n in ("trip-a1", "trip-b1", "trip-c1",
                                                     "trip-a2", "trip-b2", "trip-c2", "trip-a3"))  # fmt: skip
        self.progress("before round 1: the users answer")
        for spec in (a1, c1, a2, c2):
            self.answer(spec)
        self.server.sandbox.booking.db.change_price("alpine-single", 700)  # after carol's yes
        self.progress("  the price of alpine-single rises by 7.00 a night")

        self.progress("round 1: two workers (each its own Chromium)")
        w1 = self.worker("w1", [b1, a1, c1, a2, b2, a3])
        w2 = self.worker("w2", [c2], stop_after_perform=2)  # c2: its hold, then its payment
        for w in (w1, w2):
            w.send({})
        stopped, _ = w2.until("stopped")
        w2.kill()
        self.kills.append({"worker": "w2", "pid": stopped["pid"], "at": "after the payment "
                           "submit of booking:trip-c2@v1, before the ledger heard of it"})  # fmt: skip
        self.progress(f"  w2 (pid {stopped['pid']}) SIGKILLed after submitting c2's payment")
        self.rounds([(w1, {})], sent=True)
        w3 = self.worker("w3", [b1, c2])  # the replacement, which also races w1 for b1

        self.progress("before round 2: answers twice, late, refreshed, and a change of date")
        self.answer(b1)
        self.answer(b1)  # the same approval, delivered twice
        self.answer(c1, newest=True)  # carol approves the refreshed packet
        self.answer(b2, late=True)  # bob answers after the packet expired: refused
        self.answer(a3)
        revision = self.ledger.intents.revise("trip-a3", when=NEW_DATE)
        self.progress(f"  alice changes trip-a3's date: {revision.intent.ref}, "
                      f"voided {len(revision.voided)} approval(s)")  # fmt: skip
        self.answer(a3)  # the old link again: voided
        a3v2 = self.delegate(by["trip-a3"], version=revision.intent.version)
        self.answer(a3v2)
        self.progress("round 2: w1 and w3 start trip-b1's commit at the same time")
        self.rounds([(w1, {"add": [a3v2.to_json()]}), (w3, {})])
        self.answer(b1)  # and once more after the commit

        self.progress("round 3: trip-b3, whose void the provider refuses")
        b3 = self.delegate(by["trip-b3"])
        self.answer(b3)
        refuse_voids = FaultRule("booking.void", Fault.ERROR_BEFORE_COMMIT)
        self.server.sandbox.faults.configure([*self.rules, refuse_voids])
        self.rounds([(w3, {"add": [b3.to_json()], "trips": [b3.op_id]})])
        self.server.sandbox.faults.configure(self.rules)

        self.progress("round 4: every worker looks once more")
        self.rounds([(w1, {}), (w3, {})])
        for w in self.workers:
            w.stop()

    # -- the report ---------------------------------------------------------------------

    def report(self, wall: float) -> dict[str, Any]:
        states: Counter[str] = Counter()
        details = []
        for op_id, spec in self.specs.items():
            receipt = self.ledger.receipt(op_id)
            state = "in_progress" if receipt is None else receipt.state.value
            states[state] += 1
            details.append({"operation": op_id, "user": spec.user, "state": state,
                            "receipt": None if receipt is None else receipt.text.splitlines()[0]})  # fmt: skip
        packets = self.ledger.approvals.list(limit=1000)
        answers: Counter[str] = Counter()
        for p in packets:
            for e in self.ledger.approvals.history(p.packet_id):
                answers[e.type.value] += 1
        gt = self.server.sandbox.booking.db.ground_truth()
        dup = Counter(d["kind"] for d in gt["duplicates"])
        ceilings = {}
        for spec in self.specs.values():
            packet = newest_packet(self.ledger, spec.packet)
            if packet is not None and packet.ceiling is not None:
                ceilings[spec.trip.ref] = int(packet.ceiling * 100)
        db = self.server.sandbox.booking.db
        over = [
            {"what": kind, "id": r.id, "client_ref": r.client_ref, "amount": r.amount}
            for kind, rows in (("payment", db.payments()), ("booking", db.bookings()))
            for r in rows
            if r.amount > ceilings.get(r.client_ref, -1)
        ]
        fired = Counter(f for r in self.server.sandbox.faults.log() for f in r["faults"])
        return {
            "scenario": "booking",
            "operations": len(self.specs),
            "complete": states["complete"],
            "compensated": states["compensated"],
            "in_review": states["needs_review"],
            "in_progress": states["in_progress"],
            "receipts": sum(1 for d in details if d["receipt"] is not None),
            "approvals": len(packets),
            "approvals_consumed": sum(1 for p in packets if p.status is ApprovalStatus.CONSUMED),
            "approvals_refused": answers[EventType.APPROVAL_REFUSED.value],
            "approvals_answered_twice": answers[EventType.APPROVAL_DUPLICATE.value],
            "duplicate_payments": dup["authorizations"],
            "duplicate_bookings": dup["bookings"],
            "duplicate_messages": dup["messages"],
            "commits_over_ceiling": len(over),
            "over_ceiling_details": over,
            "open_authorizations": len(gt["open_authorizations"]),
            "provider": {k: v for k, v in gt["totals"].items() if v},
            "kills": len(self.kills),
            "kill_details": self.kills,
            "faults_fired": dict(sorted(fired.items())),
            "operations_detail": details,
            "wall_s": round(wall, 1),
            "workdir": str(self.workdir),
            "ledger": self.ledger_path,
        }

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.ledger.close()
        self.server.stop()


def run_booking(
    *,
    workdir: str | Path | None = None,
    seed: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Play the booking scenario; the report (JSON-able), from ground truth and ledger."""
    say = progress or (lambda _m: None)
    where = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="actonce-demo-booking-"))
    where.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    demo = _Demo(where, seed, say)
    try:
        demo.play()
        return demo.report(time.monotonic() - started)
    finally:
        demo.close()


def print_report(r: dict[str, Any]) -> None:
    """The report for people."""
    print()
    print("actonce demo report: booking")
    print("============================")
    print(f"operations         {r['operations']}: complete {r['complete']}, compensated "
          f"{r['compensated']}, in review {r['in_review']}, in progress {r['in_progress']} "
          f"({r['wall_s']:.0f} s)")  # fmt: skip
    for d in r["operations_detail"]:
        print(f"    {d['operation']:<24} {d['state']:<12} {d['receipt'] or ''}")
    print(f"receipts written   {r['receipts']}")
    print(f"approvals          {r['approvals']} packets: consumed {r['approvals_consumed']}, "
          f"answers refused {r['approvals_refused']}, "
          f"answered twice {r['approvals_answered_twice']}")  # fmt: skip
    print("from the sandbox's ground truth:")
    print(f"  duplicate payments     {r['duplicate_payments']}")
    print(f"  duplicate bookings     {r['duplicate_bookings']}")
    print(f"  duplicate messages     {r['duplicate_messages']}")
    print(f"  over approved ceiling  {r['commits_over_ceiling']}")
    print(f"  open authorizations    {r['open_authorizations']} (money held without a booking: "
          "in review)")  # fmt: skip
    print(f"  provider totals        {', '.join(f'{k} {v}' for k, v in r['provider'].items())}")
    print(f"workers killed     {r['kills']}"
          + "".join(f"\n    {k['worker']} (pid {k['pid']}) {k['at']}" for k in r["kill_details"]))  # fmt: skip
    print(f"faults fired       {', '.join(f'{k} {v}' for k, v in r['faults_fired'].items())}")
    print(f"ledger             {r['ledger']}")
    print(f"inspect            actonce receipt booking:trip-a1@v1 --ledger {r['ledger']}")


def clean(r: dict[str, Any]) -> bool:
    """No duplicate, nothing over a ceiling, nothing left half-done."""
    return not (r["duplicate_payments"] or r["duplicate_bookings"] or r["duplicate_messages"]
                or r["commits_over_ceiling"] or r["in_progress"])  # fmt: skip
