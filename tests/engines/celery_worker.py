"""The Celery app the campaign's workers run: the recipe, at test scale, and a recorder.

``celery -A celery_worker worker`` (from this folder) loads
``examples/celery_orders.py`` unchanged and only

- shortens its windows (``ENGINES_LEASE``, ``ENGINES_SETTLE`` seconds; the
  broker's visibility timeout ``ENGINES_VISIBILITY``, swept every second,
  the sweep's lock held 5 s at most), so that a dead worker's task comes
  back within seconds, not an hour;
- arms the crash points of the plan (``ENGINES_PLAN``, a JSON file
  ``{"points": {ref: [point, ...]}, "kills": {n: "pool" | "worker"}}``): the
  n-th delivery of a ref's task ``SIGKILL``s its pool process at the n-th
  point of its list (``actonce.testing.arm``); the n-th crash-point pass of
  the campaign (counted in Redis, all workers together) ``SIGKILL``s the pool
  process that passes it, or its whole worker (``killpg``: a machine lost
  mid-task), there and then;
- offers ``place_order_naive``: the same order placed without the ledger, so
  that a campaign can show what the kills do without actonce;
- records, in the test's own Redis: every delivery of a message
  (``engines:messages:<ref>:<retries>``: more than one is a redelivery), and
  an event stream (``engines:events``, JSON lines) of task starts, crash-point
  passes (the parent times its random ``SIGKILL``s on them) and task ends.

Everything it calls of actonce is public.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import redis
from celery.signals import task_postrun, task_prerun, worker_ready

from actonce import Policy
from actonce.testing import arm, disarm, observe_points

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import celery_orders as recipe

app = recipe.app
_LEASE = float(os.environ["ENGINES_LEASE"])
_SETTLE = float(os.environ["ENGINES_SETTLE"])
recipe.POLICY = Policy(lease_seconds=_LEASE, settle_seconds=_SETTLE, absence_authoritative=True)
recipe.RETRY_AFTER = _LEASE + _SETTLE
app.conf.broker_transport_options = {
    "visibility_timeout": float(os.environ["ENGINES_VISIBILITY"]),
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
    # The sweep holds a Redis lock; a worker killed inside a sweep keeps it
    # until it expires (kombu's default: 300 s), and nothing is restored
    # meanwhile. The campaign kills whole workers: keep that short.
    "unacked_mutex_expire": 5,
}
with open(os.environ["ENGINES_PLAN"], encoding="utf-8") as fh:
    _plan = json.load(fh)
_PLAN: dict[str, list[str]] = _plan["points"]
_KILLS: dict[int, str] = {int(n): kind for n, kind in _plan["kills"].items()}

EVENTS = "engines:events"
_clients: dict[int, redis.Redis] = {}
_now: dict[str, Any] = {"ref": None, "armed": None}


def _redis() -> redis.Redis:
    pid = os.getpid()  # one client per process: never a socket shared across the fork
    if pid not in _clients:
        _clients[pid] = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    return _clients[pid]


def _event(kind: str, **facts: Any) -> None:
    _redis().rpush(EVENTS, json.dumps({"kind": kind, "pid": os.getpid(), **facts}))


@worker_ready.connect
def _ready(**_: Any) -> None:
    _event("ready")


@task_prerun.connect
def _start(task: Any, args: Any, **_: Any) -> None:
    ref, retries = str(args[0]), int(task.request.retries or 0)
    delivery = int(_redis().incr(f"engines:deliveries:{ref}"))
    _redis().incr(f"engines:messages:{ref}:{retries}")
    plan = _PLAN.get(ref, [])
    point = plan[delivery - 1] if delivery <= len(plan) else None
    if point is None:
        disarm()
    else:
        arm(point, nth=1, mode="kill")
    _now.update(ref=ref, armed=point)
    info = task.request.delivery_info or {}
    _event("start", ref=ref, delivery=delivery, retries=retries, armed=point,
           redelivered=bool(info.get("redelivered")))  # fmt: skip


def _pass(point: str) -> None:
    fatal = point == _now["armed"]
    n = int(_redis().incr("engines:passes"))
    kill = None if fatal else _KILLS.get(n)
    # The worker's main process is our parent (prefork): the campaign's slot.
    _event("pass", ref=_now["ref"], point=point, fatal=fatal, kill=kill, worker=os.getppid())
    if kill == "pool":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kill == "worker":
        # The whole worker, main process and pool, while this task runs: never in
        # the instant its main process takes a message from Redis (docs/engines.md).
        os.killpg(os.getpgid(0), signal.SIGKILL)


@task_postrun.connect
def _end(args: Any, state: str | None, retval: Any, **_: Any) -> None:
    disarm()
    outcome = retval.get("outcome") if isinstance(retval, dict) else None
    _event("end", ref=str(args[0]), state=state, outcome=outcome)
    _now.update(ref=None, armed=None)


observe_points(_pass)


@app.task(acks_late=True, reject_on_worker_lost=True, name="celery_worker.place_order_naive")
def place_order_naive(ref: str, amount: str) -> dict[str, Any]:
    """The same task without the ledger: what the same kills do then.

    It reports an ``after_perform`` pass (the parent's random kills land on
    it) and dies there when the plan says so, as the recipe's run would.
    """
    order = recipe.create_order(ref, amount)
    _pass("after_perform")
    if _now["armed"] == "after_perform":
        os.kill(os.getpid(), signal.SIGKILL)
    return {"outcome": "completed", "order": order}
