"""``actonce demo``: browser agents under faults and kills, then a report.

Starts the sandbox, runs a batch of intents with several concurrent headless
browser workers (processes) under seeded faults, kills workers at random
moments and at named crash points, and compares the sandbox's own ground
truth with the ledger. Each worker runs an :class:`actonce.Operator` per
actor: one run per actor at a time (the lease), reconcile before new work,
a hard stop on doubt. Between rounds the demo plays the human reviewer: it
decides what stayed in review from the site's own records (what a person
would look at), so the operators can go on.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from actonce import EffectRecord, LeaseStore, Ledger, Registry, RunStatus, Status
from actonce.browser import Browser
from actonce.sandbox import Fault, FaultRule, LostMode, SandboxServer

from ._agent import POLICIES, Agent, settled
from ._intents import ACTORS, Intent, build_batch, quality_gate

__all__ = ["DemoConfig", "DemoReport", "run_demo"]


@dataclass
class DemoConfig:
    """What ``actonce demo`` runs."""

    intents: int = 24
    workers: int = 3
    seed: int = 1
    faults: bool = True
    kills: bool = True
    headed: bool = False
    max_rounds: int = 5
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
    reviewed: list[dict[str, str]] = field(default_factory=list)
    operator_runs: dict[str, int] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    intents_done: int = 0
    kills: list[dict[str, Any]] = field(default_factory=list)
    faults_fired: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    wall_s: float = 0.0
    workdir: str = ""
    ledger: str = ""

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object (the last line of ``--json``): counts, and details."""
        out = asdict(self)
        for name, details in (("duplicates", "duplicate_details"), ("kills", "kill_details"),
                              ("needs_review", "needs_review_details"),
                              ("hard_stops", "hard_stop_details")):  # fmt: skip
            out[details] = out[name]
        for name in ("duplicates", "kills", "needs_review", "hard_stops", "replanned",
                     "quality_skips", "unresolved"):  # fmt: skip
            out[name] = len(out[name])
        out["wall_s"] = round(self.wall_s, 1)
        return out


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


@dataclass
class _Worker:
    name: str
    proc: subprocess.Popen[str]
    kill_after: int | None
    crash_point: str | None
    results: int = 0
    killed: bool = False


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
        world = [server.db.create_post("carol", f"Welcome to the sandbox, post {n}", None, None,
                                       None, None) for n in (1, 2, 3)]  # fmt: skip
        batch = build_batch(cfg.intents, seed=cfg.seed,
                            like_targets=[f"/posts/{pid}" for pid in world])  # fmt: skip
        baseline = _observed(server.db.ground_truth())
        todo = [i for i in batch if not quality_gate(i, batch)]  # the operators skip the rest
        report.intents = len(todo)
        by_id = {i.id: i for i in batch}
        if cfg.faults:
            server.sandbox.faults.configure(fault_rules(todo, cfg.seed), seed=cfg.seed)
        progress(f"sandbox on {server.url}; {len(todo)} intents ({len(batch) - len(todo)} the "
                 f"quality gate will turn down), {cfg.workers} workers, one operator per actor, "
                 f"faults {'on' if cfg.faults else 'off'}")  # fmt: skip

        with Ledger.open(ledger_url, create=True) as ledger, Browser(headed=cfg.headed) as browser:
            # Every post and thread draws on one pool; a verified one consumes it.
            ledger.budgets.define("original", sum(i.kind in ("post", "thread") for i in todo))
            reconciler = Agent(browser, server.url, evidence_dir=evidence)
            ledger.registry = Registry()
            reconciler.register_verifiers(ledger.registry, by_id)
            try:
                for round_no in range(1, cfg.max_rounds + 1):
                    if not [i for i in todo if not settled(ledger, i)]:
                        break
                    _wait_for_the_dead(ledger, progress)
                    report.rounds = round_no
                    progress(f"round {round_no}")
                    _round(cfg, round_no, batch, ledger_url, server.url, evidence, rng, report,
                           progress)  # fmt: skip
                    _review(ledger, server, by_id, report, progress)
                _finish(ledger, progress)
                _review(ledger, server, by_id, report, progress)
            finally:
                reconciler.close()

        _summarize(report, ledger_url, todo, server, baseline)
    report.wall_s = time.monotonic() - started
    return report


def _round(cfg: DemoConfig, round_no: int, batch: list[Intent], ledger_url: str, origin: str,
           evidence: Path, rng: random.Random, report: DemoReport,
           progress: Callable[[str], None]) -> None:  # fmt: skip
    config_dir = evidence.parent / "workers"
    config_dir.mkdir(parents=True, exist_ok=True)
    workers: list[_Worker] = []
    victim: int | None = rng.randrange(cfg.workers) if cfg.kills and round_no <= 2 else None
    crashing = (victim + 1) % cfg.workers if victim is not None and cfg.workers > 1 else None
    for n in range(cfg.workers):
        name = f"r{round_no}w{n}"
        path = config_dir / f"{name}.json"
        path.write_text(json.dumps({"ledger": ledger_url, "origin": origin, "worker": name,
                                    "index": n, "batch": [asdict(i) for i in batch],
                                    "evidence_dir": str(evidence), "headed": cfg.headed}))  # fmt: skip
        env = dict(os.environ)
        crash_point = None
        if n == crashing and round_no == 1:
            crash_point = rng.choice(["after_perform", "after_mark_executing", "after_claim"])
            env.update(ACTONCE_CRASH_AT=f"{crash_point}:{rng.randint(1, 3)}",
                       ACTONCE_CRASH_MODE="kill")  # fmt: skip
        proc = subprocess.Popen([sys.executable, "-m", "actonce.demo._worker", str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)  # fmt: skip
        kill_after = rng.randint(2, 5) if n == victim else None
        workers.append(_Worker(name, proc, kill_after, crash_point))
    try:
        _watch(workers, progress)
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait()
    for w in workers:
        if w.proc.returncode == -signal.SIGKILL:
            how = (("crash point " + w.crash_point) if w.crash_point and not w.killed
                   else f"SIGKILL after {w.results} results")  # fmt: skip
            report.kills.append({"worker": w.name, "how": how})
            progress(f"{w.name} was killed ({how})")


def _watch(workers: list[_Worker], progress: Callable[[str], None]) -> None:
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
            _note(result, progress)
            if "intent" not in result:
                continue
            w.results += 1
            if w.kill_after is not None and w.results >= w.kill_after and not w.killed:
                w.killed = True
                w.proc.send_signal(signal.SIGKILL)


def _note(r: dict[str, Any], progress: Callable[[str], None]) -> None:
    if "intent" in r:
        part = "" if r.get("part") is None else f" part {r['part'] + 1}"
        why = f": {r['reason']}" if r.get("reason") and r["outcome"] != "completed" else ""
        progress(f"  {r['worker']} {r['intent']}{part} -> {r['outcome']}{why}")
    elif "run" in r:
        stops = f": {r['stops'][0]}" if r.get("stops") else ""
        progress(f"  {r['worker']} operator demo-{r['actor']} {r['status']}{stops}")
    else:
        progress(f"  {r.get('worker')} {r.get('actor')}: {r.get('error')}")


def _wait_for_the_dead(ledger: Ledger, progress: Callable[[str], None]) -> None:
    """Every worker of the last round has ended: a lease still held is a dead one's.

    A scheduler would just try again later; the demo waits for those leases
    to run out (and the settle window after an effect's), so that the next
    round's operators can reconcile what the dead left.
    """
    now = ledger.clock.now()
    ends = [r.lease_expires_at + POLICIES[r.kind].settle_seconds
            for r in ledger.store.open_effects()]  # fmt: skip
    store = ledger.store
    if isinstance(store, LeaseStore):
        leases = [store.lease_get(f"demo-{actor}") for actor in ACTORS]
        ends += [lease.expires_at for lease in leases if lease is not None and lease.owner]
    wait = max(ends, default=now) - now
    if wait > 0:
        progress(f"waiting {wait:.0f}s for the leases of killed workers to run out")
        time.sleep(wait + 0.2)


def _review(ledger: Ledger, server: SandboxServer, by_id: dict[str, Intent],
            report: DemoReport, progress: Callable[[str], None]) -> None:  # fmt: skip
    """The demo's reviewer: decide each post in review from the site's own records."""
    truth = server.db.ground_truth()["posts"]
    for record in ledger.list(Status.NEEDS_REVIEW, limit=10_000):
        payload = json.loads(record.payload)
        intent = by_id[payload["intent"]]
        if record.kind != "post" or record.matches > 1:
            continue  # a duplicate or an alarm is a person's to decide
        found = [g for g in truth if g["key"]["author"] == intent.actor
                 and g["key"]["text"] == payload["text"]]  # fmt: skip
        decision = "happened" if found else "not_happened"
        ref = f"{server.url}/posts/{found[0]['ids'][0]}" if found else None
        ledger.resolve(record.key, decision, reviewer="demo-reviewer", result_ref=ref,
                       reason="looked at the site's own records")  # fmt: skip
        what = _intent_of(record)
        report.reviewed.append({"intent": what, "key": record.key[:16], "reason": record.reason
                                or "", "decision": decision})  # fmt: skip
        progress(f"  reviewer: {what} {decision.replace('_', ' ')} ({record.reason})")


def _finish(ledger: Ledger, progress: Callable[[str], None]) -> None:
    """Reconcile until nothing is open: killed workers' leases must run out first."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ledger.reconcile()
        if not ledger.store.open_effects():
            return
        _wait_for_the_dead(ledger, progress)


def _observed(truth: dict[str, Any]) -> dict[str, int]:
    return {str(kind): int(n) for kind, n in truth["totals"].items()}


def _summarize(report: DemoReport, ledger_url: str, todo: list[Intent], server: SandboxServer,
               baseline: dict[str, int]) -> None:  # fmt: skip
    truth = server.db.ground_truth()
    observed = _observed(truth)
    report.observed = {k: observed.get(k, 0) - baseline.get(k, 0) for k in observed}
    report.duplicates = truth.get("duplicates", [])
    report.faults_fired = dict(Counter(_fault_name(f, entry)
                                       for entry in server.sandbox.faults.log()
                                       for f in entry["faults"]))  # fmt: skip
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
                report.needs_review.append({"intent": _intent_of(r), "key": r.key[:16],
                                            "reason": r.reason,
                                            "evidence": proof[-1] if proof else None})  # fmt: skip
        report.intents_done = sum(settled(ledger, i) for i in todo)
        runs = ledger.summaries(limit=100_000)
    report.operator_runs = dict(Counter(s.status.value for s in runs))
    skips: dict[str, str] = {}
    for s in reversed(runs):  # oldest first
        skips.update({i.label: i.reason or "" for i in s.quality_skips})
        if s.status is RunStatus.HARD_STOP:
            report.hard_stops.append({"worker": s.owner, "intent": s.operator,
                                      "reason": s.stops[0].reason})  # fmt: skip
    report.quality_skips = [{"intent": k, "reason": v} for k, v in skips.items()]


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
