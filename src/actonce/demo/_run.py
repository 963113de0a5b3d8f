"""``actonce demo``: browser agents under faults and kills, then a report.

Starts the sandbox, runs a batch of intents with several concurrent headless
browser workers (processes) under seeded faults, kills workers at random
moments and at named crash points, reconciles before every new round and at
the end, and compares the sandbox's own ground truth with the ledger.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from actonce import EffectRecord, Ledger, Registry, Status
from actonce.browser import Browser
from actonce.sandbox import Fault, FaultRule, LostMode, SandboxServer

from ._agent import Agent
from ._intents import Intent, build_batch, quality_gate
from ._worker import EXIT_HARD_STOP, intent_json

__all__ = ["DemoConfig", "DemoReport", "run_demo"]

_SETTLED = {Status.CONFIRMED, Status.NEEDS_REVIEW, Status.ABANDONED}


@dataclass
class DemoConfig:
    """What ``actonce demo`` runs."""

    intents: int = 24
    workers: int = 3
    seed: int = 1
    faults: bool = True
    kills: bool = True
    headed: bool = False
    max_rounds: int = 4
    workdir: str | None = None
    ledger: str | None = None


@dataclass
class DemoReport:
    """What happened, from the sandbox's ground truth and from the ledger."""

    intents: int = 0
    effects: int = 0
    observed: dict[str, int] = field(default_factory=dict)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    confirmed: int = 0
    replanned: list[str] = field(default_factory=list)
    needs_review: list[dict[str, Any]] = field(default_factory=list)
    hard_stops: list[dict[str, Any]] = field(default_factory=list)
    quality_skips: list[dict[str, str]] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    intents_done: int = 0
    kills: list[dict[str, Any]] = field(default_factory=list)
    faults_fired: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    wall_s: float = 0.0
    workdir: str = ""
    ledger: str = ""

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object (the last line of ``--json``)."""
        return {
            "intents": self.intents,
            "intents_done": self.intents_done,
            "effects": self.effects,
            "observed": self.observed,
            "duplicates": len(self.duplicates),
            "duplicate_details": self.duplicates,
            "confirmed": self.confirmed,
            "replanned": len(self.replanned),
            "needs_review": len(self.needs_review),
            "needs_review_details": self.needs_review,
            "hard_stops": len(self.hard_stops),
            "hard_stop_details": self.hard_stops,
            "quality_skips": len(self.quality_skips),
            "unresolved": len(self.unresolved),
            "kills": len(self.kills),
            "kill_details": self.kills,
            "faults_fired": self.faults_fired,
            "rounds": self.rounds,
            "wall_s": round(self.wall_s, 1),
            "workdir": self.workdir,
            "ledger": self.ledger,
        }


def fault_rules(batch: list[Intent], seed: int) -> list[FaultRule]:
    """The seeded faults of a demo run: each one aimed at a chosen intent."""
    rng = random.Random(seed)
    posts = [i for i in batch if i.kind == "post"]
    invoices = [i for i in batch if i.kind == "invoice"]
    rng.shuffle(posts)
    rng.shuffle(invoices)
    rules: list[FaultRule] = []

    def on_post(fault: str, **kw: Any) -> None:
        if posts:
            target = posts.pop()
            rules.append(
                FaultRule("post.create", Fault(fault), times=1, match={"text": target.text}, **kw)
            )

    # Committed, then the connection closed without a response byte: a browser
    # resends such a POST by itself; the adapter's network guard sends it once.
    on_post("lost_response", mode=LostMode.CLOSE)
    on_post("lost_response")  # committed, dropped after the headers: verify, never re-click
    on_post("slow_response", seconds=7.0)  # slower than the client's confirmation timeout
    on_post("late_index", seconds=2.0)  # inside the settle window: confirmed
    on_post("late_index", seconds=60.0)  # beyond it: a human decides, never a second post
    on_post("error_after_commit")
    if invoices:
        rules.append(
            FaultRule(
                "invoice.create",
                Fault("error_before_commit"),
                times=1,
                match={"reference": invoices.pop().reference},
            )
        )
    if invoices:
        rules.append(
            FaultRule(
                "invoice.create",
                Fault("lost_response"),
                times=1,
                match={"reference": invoices.pop().reference},
                mode=LostMode.RESET,  # committed, then a TCP reset: no response byte
            )
        )
    rules += [
        # A toggle resent by the browser would undo itself; the guard sends it once.
        FaultRule("like.toggle", Fault("lost_response"), times=1, mode=LostMode.CLOSE),
        FaultRule(
            "view.compose", Fault("editor_append"), times=1
        ),  # read-back refuses: nothing sent
        FaultRule("view.compose", Fault("captcha"), times=1),  # hard stop
        FaultRule("view.invoice_new", Fault("session_expired"), times=1),  # login wall: hard stop
        FaultRule("view.search", Fault("rate_limit"), times=1),  # verification unavailable: retried
    ]
    return rules


class _Worker:
    def __init__(
        self,
        name: str,
        proc: subprocess.Popen[str],
        kill_after: int | None,
        crash_point: str | None,
    ) -> None:
        self.name = name
        self.proc = proc
        self.kill_after = kill_after
        self.crash_point = crash_point
        self.results = 0
        self.killed = False


def run_demo(cfg: DemoConfig, progress: Callable[[str], None] = lambda _m: None) -> DemoReport:
    """Run the demo and return its report."""
    started = time.monotonic()
    workdir = Path(cfg.workdir or tempfile.mkdtemp(prefix="actonce-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    evidence = workdir / "evidence"
    ledger_url = cfg.ledger or f"sqlite:///{workdir / 'ledger.db'}"
    rng = random.Random(cfg.seed)
    report = DemoReport(workdir=str(workdir), ledger=ledger_url)

    with SandboxServer(workdir / "sandbox.db", seed=cfg.seed) as server:
        world = [
            server.db.create_post(
                "carol", f"Welcome to the sandbox, post {n}", None, None, None, None
            )
            for n in (1, 2, 3)
        ]
        batch = build_batch(
            cfg.intents, seed=cfg.seed, like_targets=[f"/posts/{pid}" for pid in world]
        )
        baseline = _observed(server.db.ground_truth())
        todo: list[Intent] = []
        for intent in batch:
            why = quality_gate(intent, batch)
            if why:
                report.quality_skips.append({"intent": intent.id, "reason": why})
            else:
                todo.append(intent)
        report.intents = len(todo)
        by_id = {i.id: i for i in batch}
        if cfg.faults:
            server.sandbox.faults.configure(fault_rules(todo, cfg.seed), seed=cfg.seed)
        progress(
            f"sandbox on {server.url}; {len(todo)} intents "
            f"({len(report.quality_skips)} turned down by the quality gate), "
            f"{cfg.workers} workers, faults {'on' if cfg.faults else 'off'}"
        )

        with Ledger.open(ledger_url, create=True) as ledger, Browser(headed=cfg.headed) as browser:
            registry = Registry()
            reconciler = Agent(
                ledger, browser, server.url, evidence_dir=evidence, run_id="demo-reconcile"
            )
            reconciler.register_verifiers(registry, by_id)
            ledger.registry = registry
            try:
                for round_no in range(1, cfg.max_rounds + 1):
                    _reconcile(ledger, progress)
                    pending = [i for i in todo if not _settled(ledger, i)]
                    if not pending:
                        break
                    report.rounds = round_no
                    progress(f"round {round_no}: {len(pending)} intents to do")
                    _round(
                        cfg,
                        round_no,
                        pending,
                        ledger_url,
                        server.url,
                        evidence,
                        rng,
                        report,
                        progress,
                    )
                _finish(ledger, todo, progress)
            finally:
                reconciler.close()

        _summarize(report, ledger_url, todo, by_id, server, baseline)
    report.wall_s = time.monotonic() - started
    return report


def _round(
    cfg: DemoConfig,
    round_no: int,
    pending: list[Intent],
    ledger_url: str,
    origin: str,
    evidence: Path,
    rng: random.Random,
    report: DemoReport,
    progress: Callable[[str], None],
) -> None:
    config_dir = evidence.parent / "workers"
    config_dir.mkdir(parents=True, exist_ok=True)
    workers: list[_Worker] = []
    victim: int | None = rng.randrange(cfg.workers) if cfg.kills and round_no <= 2 else None
    crashing = (victim + 1) % cfg.workers if victim is not None and cfg.workers > 1 else None
    for n in range(cfg.workers):
        name = f"r{round_no}w{n}"
        path = config_dir / f"{name}.json"
        path.write_text(
            json.dumps(
                {
                    "ledger": ledger_url,
                    "origin": origin,
                    "intents": [intent_json(i) for i in pending],
                    "seed": cfg.seed * 1000 + round_no * 10 + n,
                    "worker": name,
                    "run_id": name,
                    "evidence_dir": str(evidence),
                    "headed": cfg.headed,
                }
            )
        )
        env = dict(os.environ)
        crash_point = None
        if n == crashing and round_no == 1:
            crash_point = rng.choice(["after_perform", "after_mark_executing", "after_claim"])
            env.update(
                ACTONCE_CRASH_AT=f"{crash_point}:{rng.randint(1, 3)}", ACTONCE_CRASH_MODE="kill"
            )
        proc = subprocess.Popen(
            [sys.executable, "-m", "actonce.demo._worker", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        kill_after = rng.randint(2, 5) if n == victim else None
        workers.append(_Worker(name, proc, kill_after, crash_point))
    try:
        _watch(workers, report, progress)
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait()
    for w in workers:
        if w.proc.returncode == -signal.SIGKILL:
            how = (
                ("crash point " + w.crash_point)
                if w.crash_point and not w.killed
                else (f"SIGKILL after {w.results} results")
            )
            report.kills.append({"worker": w.name, "how": how})
            progress(f"{w.name} was killed ({how})")
        elif w.proc.returncode == EXIT_HARD_STOP:
            progress(f"{w.name} ended its run on a hard stop")


def _watch(workers: list[_Worker], report: DemoReport, progress: Callable[[str], None]) -> None:
    sel = selectors.DefaultSelector()
    for w in workers:
        assert w.proc.stdout is not None
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
    open_streams = len(workers)
    while open_streams:
        for key, _ in sel.select(timeout=300):
            w = key.data
            stream: IO[str] = key.fileobj  # type: ignore[assignment]
            line = stream.readline()
            if not line:
                sel.unregister(stream)
                open_streams -= 1
                continue
            try:
                result = json.loads(line)
            except ValueError:
                continue
            w.results += 1
            _note(result, report, progress)
            if w.kill_after is not None and w.results >= w.kill_after and not w.killed:
                w.killed = True
                w.proc.send_signal(signal.SIGKILL)


def _note(result: dict[str, Any], report: DemoReport, progress: Callable[[str], None]) -> None:
    outcome = result.get("outcome")
    part = "" if result.get("part") is None else f" part {result['part'] + 1}"
    if outcome == "hard_stop":
        report.hard_stops.append(
            {
                "worker": result.get("worker"),
                "intent": result.get("intent"),
                "reason": result.get("reason"),
            }
        )
    reason = f": {result['reason']}" if result.get("reason") and outcome != "completed" else ""
    progress(f"  {result.get('worker')} {result.get('intent')}{part} -> {outcome}{reason}")


def _reconcile(ledger: Ledger, progress: Callable[[str], None]) -> None:
    report = ledger.reconcile()
    for r in report.results:
        progress(
            f"  reconcile {r.key[:12]} -> {r.status.value if r.status else '-'}"
            + (f" ({r.reason})" if r.reason else "")
        )


def _finish(ledger: Ledger, todo: list[Intent], progress: Callable[[str], None]) -> None:
    """Reconcile until nothing is open: killed workers' leases must run out first."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        _reconcile(ledger, progress)
        open_ = ledger.store.open_effects()
        if not open_:
            return
        wait = max(0.5, min(r.lease_expires_at for r in open_) - ledger.clock.now() + 0.2)
        progress(
            f"waiting for {len(open_)} open effect(s) of killed workers "
            f"(lease ends in {wait:.0f}s, then the settle window)"
        )
        time.sleep(min(wait, 5.0))


def _settled(ledger: Ledger, intent: Intent) -> bool:
    for part in range(intent.effects):
        record = ledger.get(intent.key(part if intent.kind == "thread" else None).value)
        if record is None or record.status not in _SETTLED:
            return False
        if record.status is not Status.CONFIRMED:
            return True  # a part in review stops the thread: settled for now
    return True


def _observed(truth: dict[str, Any]) -> dict[str, int]:
    return {str(kind): int(n) for kind, n in truth["totals"].items()}


def _summarize(
    report: DemoReport,
    ledger_url: str,
    todo: list[Intent],
    by_id: dict[str, Intent],
    server: SandboxServer,
    baseline: dict[str, int],
) -> None:
    truth = server.db.ground_truth()
    observed = _observed(truth)
    report.observed = {k: observed.get(k, 0) - baseline.get(k, 0) for k in observed}
    report.duplicates = truth.get("duplicates", [])
    report.faults_fired = dict(
        Counter(
            _fault_name(f, entry) for entry in server.sandbox.faults.log() for f in entry["faults"]
        )
    )
    with Ledger.open(ledger_url) as ledger:
        records = ledger.list(limit=100_000)
        report.effects = len(records)
        report.confirmed = sum(r.status is Status.CONFIRMED for r in records)
        report.unresolved = [r.key for r in records if r.status.is_open]
        for r in records:
            events = ledger.events(r.key)
            if r.status is Status.CONFIRMED and any(e.to_status is Status.FAILED for e in events):
                report.replanned.append(_intent_of(r))
            if r.status is Status.NEEDS_REVIEW:
                proof = [e.data["evidence"] for e in events if "evidence" in e.data]
                report.needs_review.append(
                    {
                        "intent": _intent_of(r),
                        "key": r.key[:16],
                        "reason": r.reason,
                        "evidence": proof[-1] if proof else None,
                    }
                )
        report.intents_done = sum(_settled(ledger, i) for i in todo)


def _fault_name(fault: str, entry: dict[str, Any]) -> str:
    """``lost_response:close`` / ``lost_response:reset`` tell the no-byte losses apart."""
    mode = entry.get("lost_mode")
    return (
        f"{fault}:{mode}" if fault == "lost_response" and mode not in (None, "headers") else fault
    )


def _intent_of(record: EffectRecord) -> str:
    payload = json.loads(record.payload)
    part = payload.get("part")
    return str(payload.get("intent")) + ("" if part is None else f" part {part + 1}")
