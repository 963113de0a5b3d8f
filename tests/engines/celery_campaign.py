"""A kill campaign against two Celery workers: the broker redelivers, the target judges.

One :func:`run` is: a Redis of its own, the order service (``target.py``), a
PostgreSQL ledger schema, and two ``celery worker`` processes (prefork, one
pool process each) standing in for two machines, running
``celery_worker.py`` (the recipe of ``examples/celery_orders.py``). The
parent queues one ``place_order`` task per intent, then:

- **crash points**: a seeded plan makes some deliveries ``SIGKILL`` their own
  pool process at a named point (before the mark, after it, after the
  perform, after the record ...). The worker's main process sees the pool
  process die and, with ``task_reject_on_worker_lost``, requeues the task at
  once;
- **random kills**: at seeded counts of the crash-point passes (counted in
  Redis by the workers: observed progress, never sleeps), the worker whose
  pass it is ``SIGKILL``s either its own pool process or its whole worker
  (main process and pool: a machine lost mid-task), at that pass. A lost
  worker's unacked task is redelivered by the other one after the visibility
  timeout; the parent starts the lost slot again. The kill is the worker's
  own, not the parent's: a parent that kills when it has read the pass
  kills late on a loaded machine, and may then strike the worker's main
  process in the instant it takes its next message from Redis, a message
  kombu's Redis transport has popped and not yet recorded unacknowledged,
  which nothing brings back (docs/engines.md, "A message in hand").

It ends when every intent's task has ended for good, then reconciles the
ledger and judges by the target's own table: at most one order per intent
(``duplicates``), every intent confirmed with exactly one order (``lost``),
nothing left ``claimed``/``executing``/``unknown`` (``unsettled``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import runpy
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from celery import Celery

from actonce import Ledger, Policy, Registry, Status

from .services import EXAMPLES, HERE, Target, redis_server, target

#: The points a delivery may be killed at, as the recipe's run passes them.
POINTS = (
    "after_claim",
    "before_mark_executing",
    "after_mark_executing",
    "after_perform",
    "before_record",
    "after_record",
)
_OPEN = {Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN}


@dataclass
class Report:
    """What one campaign did and found (``to_json`` for the log)."""

    intents: int
    point_kills: Counter[str] = field(default_factory=Counter)
    child_kills: int = 0
    worker_kills: int = 0
    deliveries: int = 0
    redeliveries: int = 0
    redelivered_flags: int = 0
    retries: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    duplicates: dict[str, int] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    open_before_reconcile: int = 0
    unsettled: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0
    trace: dict[str, list[str]] = field(default_factory=dict)  # ref -> what happened, in order

    @property
    def kills(self) -> int:
        return sum(self.point_kills.values()) + self.child_kills + self.worker_kills

    @property
    def ok(self) -> bool:
        return not (self.duplicates or self.lost or self.unsettled)

    def to_json(self) -> dict[str, Any]:
        return {
            "intents": self.intents,
            "kills": self.kills,
            "point_kills": dict(self.point_kills),
            "child_kills": self.child_kills,
            "worker_kills": self.worker_kills,
            "deliveries": self.deliveries,
            "redeliveries": self.redeliveries,
            "redelivered_flags": self.redelivered_flags,
            "retries": self.retries,
            "outcomes": dict(self.outcomes),
            "duplicates": len(self.duplicates),
            "lost": len(self.lost),
            "open_before_reconcile": self.open_before_reconcile,
            "unsettled": len(self.unsettled),
            "statuses": dict(self.statuses),
            "wall_s": round(self.wall_s, 1),
        }


@dataclass(frozen=True)
class Settings:
    intents: int = 24
    point_rate: float = 0.35  # the share of intents whose deliveries are planned to die
    random_kills: int = 4
    lease: float = 4.0
    settle: float = 1.0
    visibility: float = 10.0  # above lease + settle (the retry countdown) + a run
    deadline: float = 150.0
    seed: int = 0
    task: str = "celery_orders.place_order"  # or celery_worker.place_order_naive


def plan(settings: Settings) -> tuple[list[str], dict[str, list[str]], dict[int, str]]:
    """The intents, the crash points per ref, the random kills (pass count -> what)."""
    rng = random.Random(settings.seed)
    refs = [f"ORDER-{settings.seed}-{i:04d}" for i in range(settings.intents)]
    points = {
        ref: [rng.choice(POINTS) for _ in range(rng.choice((1, 1, 2)))]
        for ref in refs
        if rng.random() < settings.point_rate
    }
    passes = 7 * settings.intents  # a run passes about seven points
    if settings.task.endswith("_naive"):  # a naive run passes one: after its POST
        points = {ref: ["after_perform"] for ref in points}
        passes = settings.intents
    at = sorted(rng.sample(range(5, max(passes, 6 + settings.random_kills)), settings.random_kills))
    return refs, points, {n: rng.choice(("pool", "worker")) for n in at}


class Workers:
    """The two worker slots; a slot whose worker was killed whole is started again."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.env = folder, env
        self.slots: list[subprocess.Popen[bytes]] = []
        self.started = 0
        for slot in range(2):
            self.slots.append(self._start(slot))

    def _start(self, slot: int) -> subprocess.Popen[bytes]:
        self.started += 1
        log = open(self.folder / f"worker-{self.started}.log", "wb")  # noqa: SIM115
        cmd = [sys.executable, "-m", "celery", "-A", "celery_worker", "worker",
               "--pool=prefork", "--concurrency=1", f"--hostname=w{slot}-{self.started}@127.0.0.1",
               "--without-gossip", "--without-mingle", "--without-heartbeat",
               "--loglevel=WARNING"]  # fmt: skip
        with log:
            return subprocess.Popen(
                cmd, cwd=HERE, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: a machine lost is one killpg
            )  # fmt: skip

    def restart(self, main_pid: int) -> None:
        """Start again the slot whose worker (main process ``main_pid``) killed itself whole."""
        for slot, proc in enumerate(self.slots):
            if proc.pid == main_pid:
                with contextlib.suppress(ProcessLookupError):  # it is dying already
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
                self.slots[slot] = self._start(slot)

    def stop(self) -> None:
        for proc in self.slots:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.slots:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
            with contextlib.suppress(ProcessLookupError):  # a pool process left behind
                os.killpg(proc.pid, signal.SIGKILL)


def _recipe(orders_url: str) -> dict[str, Any]:
    """The recipe's own functions (its key, its lookup) for the judge."""
    saved = os.environ.get("ORDERS_URL")
    os.environ["ORDERS_URL"] = orders_url
    try:
        return runpy.run_path(str(EXAMPLES / "celery_orders.py"), run_name="celery_orders_judge")
    finally:
        if saved is None:
            del os.environ["ORDERS_URL"]
        else:
            os.environ["ORDERS_URL"] = saved


def run(
    folder: Path, ledger_url: str, settings: Settings, *, points: dict[str, list[str]] | None = None
) -> Report:
    """One campaign (see the module); the workers are stopped however it ends.

    ``points`` replaces the plan's crash points (ref -> points of its deliveries).
    """
    refs, planned, kills = plan(settings)
    points = planned if points is None else points
    (folder / "plan.json").write_text(json.dumps({"points": points, "kills": kills}))
    report = Report(intents=len(refs))
    started = time.monotonic()
    with redis_server(folder) as broker, target(folder) as orders:
        env = {
            **os.environ,
            "CELERY_BROKER_URL": broker,
            "ORDERS_URL": orders.url,
            "ACTONCE_LEDGER": ledger_url,
            "ENGINES_PLAN": str(folder / "plan.json"),
            "ENGINES_LEASE": str(settings.lease),
            "ENGINES_SETTLE": str(settings.settle),
            "ENGINES_VISIBILITY": str(settings.visibility),
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        env = {k: v for k, v in env.items() if not k.startswith("ACTONCE_CRASH")}
        events = redis.Redis.from_url(broker, socket_timeout=30)
        workers = Workers(folder, env)
        try:
            client = Celery("orders-client", broker=broker)
            for ref in refs:
                client.send_task(settings.task, args=[ref, "120.00"])
            _watch(events, workers, refs, report, started + settings.deadline)
        finally:
            workers.stop()
        _count_messages(events, refs, report)
        _judge(refs, orders, ledger_url, settings, report)
    report.wall_s = time.monotonic() - started
    return report


def _watch(
    events: redis.Redis, workers: Workers, refs: list[str], report: Report, deadline: float
) -> None:
    """Read the workers' events until every task ended for good; restart lost workers."""
    ended: dict[str, str] = {}
    while len(ended) < len(refs):
        left = deadline - time.monotonic()
        if left <= 0:
            missing = sorted(set(refs) - set(ended))
            traces = {ref: report.trace.get(ref) for ref in missing[:5]}
            raise AssertionError(
                f"campaign deadline: {len(missing)} tasks never ended: {traces}; "
                f"broker: {_broker_state(events, missing)}; so far {report.to_json()}"
            )
        got = events.blpop(["engines:events"], timeout=max(1, min(5, int(left))))
        if got is None:
            continue
        event = json.loads(got[1])
        kind = event["kind"]
        _note(report, event)
        if kind == "pass":
            if event["fatal"]:
                report.point_kills[event["point"]] += 1
            elif event["kill"] == "pool":
                report.child_kills += 1
            elif event["kill"] == "worker":
                report.worker_kills += 1
                workers.restart(int(event["worker"]))
        elif kind == "end" and event["state"] == "SUCCESS":
            ended[event["ref"]] = event["outcome"]
            report.outcomes[str(event["outcome"])] += 1
        elif kind == "end" and event["state"] not in ("RETRY",):
            ended[event["ref"]] = f"task {event['state']}"
            report.outcomes[f"task {event['state']}"] += 1


def _broker_state(events: redis.Redis, refs: list[str]) -> dict[str, Any]:
    """Where the missing refs' messages are: queued, unacknowledged (since when), or nowhere."""
    now = time.time()
    where: dict[str, list[str]] = {ref: [] for ref in refs}

    def place(raw: bytes, at: str) -> None:
        body = raw.decode(errors="replace")
        for ref in refs:
            if ref in body:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    message = json.loads(body)
                    headers = (message[0] if isinstance(message, list) else message)["headers"]
                    at += f" retries={headers.get('retries')} eta={headers.get('eta')}"
                where[ref].append(at)

    for raw in events.lrange("celery", 0, -1):
        place(raw, "queued")
    ages = {
        tag: now - score for tag, score in events.zrange("unacked_index", 0, -1, withscores=True)
    }
    for tag, raw in events.hgetall("unacked").items():
        age = ages.get(tag)
        place(raw, f"unacked {'unindexed' if age is None else f'{age:.0f}s'}")
    return {"where": where, "restore_lock_ttl_ms": events.pttl("unacked_mutex")}


def _note(report: Report, event: dict[str, Any]) -> None:
    ref = event.get("ref")
    if ref is None:
        return
    kind = event["kind"]
    if kind == "start":
        flag = " redelivered" if event["redelivered"] else ""
        report.redelivered_flags += bool(event["redelivered"])
        line = f"start #{event['delivery']} retries={event['retries']}{flag} pid={event['pid']}"
    elif kind == "pass":
        if event["fatal"]:
            line = f"killed at {event['point']}"
        elif event["kill"] is not None:
            line = f"{'pool process' if event['kill'] == 'pool' else 'worker'} killed at {event['point']}"
        else:
            return
    else:
        line = f"end {event['state']} {event['outcome']}"
    report.trace.setdefault(ref, []).append(line)


def _count_messages(events: redis.Redis, refs: list[str], report: Report) -> None:
    for ref in refs:
        report.deliveries += int(events.get(f"engines:deliveries:{ref}") or 0)
        for name in events.scan_iter(f"engines:messages:{ref}:*"):
            n = int(events.get(name) or 0)
            report.redeliveries += n - 1
            if int(str(name.decode()).rsplit(":", 1)[1]) > 0:
                report.retries += 1


def _judge(
    refs: list[str], orders: Target, ledger_url: str, settings: Settings, report: Report
) -> None:
    recipe = _recipe(orders.url)
    policy = Policy(
        lease_seconds=settings.lease, settle_seconds=settings.settle, absence_authoritative=True
    )
    registry = Registry()
    registry.register("order", recipe["order_exists"], policy=policy)
    keys = {ref: str(recipe["order_effect"](ref, "120.00").key) for ref in refs}
    with Ledger.open(ledger_url, registry=registry) as ledger:
        before = [ledger.get(k) for k in keys.values()]
        report.open_before_reconcile = sum(r is not None and r.status in _OPEN for r in before)
        ledger.reconcile()
        records = {ref: ledger.get(key) for ref, key in keys.items()}
    truth = orders.truth()
    for ref, record in records.items():
        status = None if record is None else record.status
        report.statuses[str(status)] += 1
        if truth.get(ref, 0) > 1:
            report.duplicates[ref] = truth[ref]
        if status in _OPEN:
            report.unsettled.append(ref)
        if status is not Status.CONFIRMED or truth.get(ref, 0) != 1:
            report.lost.append(ref)
