"""How much does actonce cost per effect, next to the durable writes it needs?

Measured side by side in one run, interleaved effect by effect (A B C D,
then B C D A ...) so that machine noise hits every variant alike; the
ratios are taken round by round and the median is reported:

- ``actonce``: ``Ledger.run`` on the happy path, no-op perform, a verify that
  answers ``Absent`` before the perform and ``Confirmed`` after it (default
  policy: claim first, the one look before the perform under the claim,
  3 commits);
- ``actonce_no_reverify``: the same with ``Policy(verify_after_claim=False)``
  (2 commits);
- ``raw``: hand-written SQL writing the same rows with the same durability:
  effect row + event, CAS to executing + event, CAS to confirmed + event,
  three ``BEGIN IMMEDIATE`` ... ``COMMIT`` transactions, only the executing
  mark fsynced (``synchronous=FULL``; the others ``NORMAL``), as actonce does;
- ``store``: the same load and the same three writes through the public store
  API (``SQLiteStore.get``, ``claim``, ``transition``; records and events
  built by hand), without the protocol: the floor of what any protocol on
  this store costs. ``ratio_store_vs_raw`` is the store's own cost,
  ``ratio_vs_store`` (``actonce`` / ``store``) the protocol's;
- ``raw_all_full``: the same three transactions, every one fsynced (what the
  protocol would cost if every write were synced; reported, not a goal);
- ``actonce_otel``: ``actonce`` with OpenTelemetry on (``actonce.otel``; the
  SDK's tracer provider with a batch processor to an exporter that drops
  the spans, and a meter provider with an in-memory reader), when the SDK is
  importable. ``actonce`` itself runs with telemetry off, the default;
- ``dbos``: a DBOS workflow with one step on a SQLite file in WAL mode, when
  ``dbos`` is importable.

Every variant uses its own fresh SQLite file in one temporary folder, WAL
journal. Commits are counted with SQLite's trace
callback, not assumed. The last line of ``--json`` output is one JSON object.

    python benchmarks/overhead.py [--json] [--rounds 12] [--per-round 40]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EffectRecord,
    Event,
    EventType,
    Ledger,
    Policy,
    SQLiteStore,
    Status,
    Verdict,
)

Runner = Callable[[int, int], None]


# --- actonce --------------------------------------------------------------------------


class ActOnceBench:
    def __init__(self, path: str, policy: Policy, *, otel: bool = False) -> None:
        self.store = SQLiteStore(path, create=True)
        self.ledger = Ledger(self.store)
        self.providers: tuple[Any, ...] = ()
        if otel:
            self.providers = _otel(self.ledger)
        self.policy = policy
        self.commits = 0
        self.effects = 0
        self.store._conn.set_trace_callback(self._trace)  # counting only; same connection

    def _trace(self, statement: str) -> None:
        if statement.strip().upper() == "COMMIT":
            self.commits += 1

    def run(self, round_: int, n: int) -> None:
        for i in range(n):
            self.one(round_, i)

    def one(self, round_: int, i: int) -> None:
        done = [False]

        def verify(done: list[bool] = done) -> Verdict:
            return Confirmed("ref") if done[0] else Absent()

        def perform(done: list[bool] = done) -> None:
            done[0] = True

        effect = Effect(
            key=f"bench-{round_}-{i}",
            kind="bench",
            payload={"round": round_, "i": i},
            perform=perform,
            verify=verify,
            policy=self.policy,
        )
        result = self.ledger.run(effect)
        assert result.performed and result.done, result
        self.effects += 1

    def close(self) -> None:
        self.ledger.close()
        for provider in self.providers:
            provider.shutdown()


def otel_available() -> bool:
    try:
        import opentelemetry.sdk  # noqa: F401

        import actonce.otel  # noqa: F401
    except Exception:
        return False
    return True


def _otel(ledger: Ledger) -> tuple[Any, ...]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from actonce.otel import instrument

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Drop()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    instrument(ledger, tracer_provider=tracer_provider, meter_provider=meter_provider)
    return tracer_provider, meter_provider


# --- raw SQL --------------------------------------------------------------------------


RAW_INSERT = (
    "INSERT INTO effects (key, kind, status, fence, owner, lease_expires_at, payload, "
    "payload_hash, scope, result_ref, reason, created_at, updated_at, executing_at) "
    "VALUES (?, ?, 'claimed', 1, ?, ?, ?, ?, '{}', NULL, NULL, ?, ?, NULL) "
    "ON CONFLICT (key) DO NOTHING"
)
RAW_EXECUTING = (
    "UPDATE effects SET status = 'executing', updated_at = ?, executing_at = ?, "
    "lease_expires_at = ? WHERE key = ? AND status = 'claimed' AND fence = 1"
)
RAW_CONFIRMED = (
    "UPDATE effects SET status = 'confirmed', updated_at = ?, result_ref = ? "
    "WHERE key = ? AND status = 'executing' AND fence = 1"
)
RAW_EVENT = (
    "INSERT INTO events (key, type, at, fence, run_id, from_status, to_status, message, data) "
    "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)"
)


class RawBench:
    def __init__(self, path: str, *, all_full: bool = False) -> None:
        self.all_full = all_full
        self.sync = "FULL"
        SQLiteStore(path, create=True).close()  # the same schema, migrated once
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.commits = 0
        self.effects = 0
        self.run_id = os.urandom(8).hex()
        self.conn.set_trace_callback(self._trace)

    def _trace(self, statement: str) -> None:
        if statement.strip().upper() == "COMMIT":
            self.commits += 1

    def _tx(self, *steps: tuple[str, tuple[Any, ...]], durable: bool = False) -> None:
        c = self.conn
        wanted = "FULL" if durable or self.all_full else "NORMAL"
        if wanted != self.sync:
            c.execute(f"PRAGMA synchronous = {wanted}")
            self.sync = wanted
        c.execute("BEGIN IMMEDIATE")
        for sql, params in steps:
            if c.execute(sql, params).rowcount != 1:
                c.execute("ROLLBACK")
                raise AssertionError(sql)
        c.execute("COMMIT")

    def run(self, round_: int, n: int) -> None:
        for i in range(n):
            self.one(round_, i)

    def one(self, round_: int, i: int) -> None:
        run_id = self.run_id
        key = f"raw-{round_}-{i}"
        payload = json.dumps({"i": i, "round": round_}, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(payload.encode()).hexdigest()
        now = time.time()
        self._tx(
            (RAW_INSERT, (key, "bench", run_id, now + 60, payload, digest, now, now)),
            (RAW_EVENT, (key, "claimed", now, run_id, None, "claimed", "attempt 1", None)),
        )
        now = time.time()
        self._tx(
            (RAW_EXECUTING, (now, now, now + 60, key)),
            (RAW_EVENT, (key, "executing", now, run_id, "claimed", "executing", None, None)),
            durable=True,
        )
        now = time.time()
        self._tx(
            (RAW_CONFIRMED, (now, "ref", key)),
            (
                RAW_EVENT,
                (key, "confirmed", now, run_id, "executing", "confirmed", None, '{"r":"ref"}'),
            ),
        )
        self.effects += 1

    def close(self) -> None:
        self.conn.close()


# --- the store API, no protocol ---------------------------------------------------------


class StoreBench:
    """actonce's SQL for one effect through the public store API, nothing else."""

    def __init__(self, path: str) -> None:
        self.store = SQLiteStore(path, create=True)
        self.run_id = os.urandom(8).hex()
        self.effects = 0

    def run(self, round_: int, n: int) -> None:
        for i in range(n):
            self.one(round_, i)

    def one(self, round_: int, i: int) -> None:
        store, run_id, key = self.store, self.run_id, f"store-{round_}-{i}"
        payload = json.dumps({"i": i, "round": round_}, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(payload.encode()).hexdigest()
        assert store.get(key) is None
        now = time.time()
        claimed = EffectRecord(
            key=key, kind="bench", status=Status.CLAIMED, fence=1, owner=run_id,
            lease_expires_at=now + 60, payload=payload, payload_hash=digest, scope="{}",
            created_at=now, updated_at=now,
        )  # fmt: skip
        event = Event(key, EventType.CLAIMED, now, 1, run_id, None, Status.CLAIMED, "attempt 1")
        assert store.claim(claimed, None, event).acquired
        now = time.time()
        changes: dict[str, Any] = {
            "status": Status.EXECUTING, "updated_at": now, "executing_at": now,
            "lease_expires_at": now + 60,
        }  # fmt: skip
        executing = dataclasses.replace(claimed, **changes)
        event = Event(key, EventType.EXECUTING, now, 1, run_id, Status.CLAIMED, Status.EXECUTING)
        expect = (Status.CLAIMED, 1)
        assert store.transition(expect, executing, event, durable=True, fields=tuple(changes))
        now = time.time()
        changes = {"status": Status.CONFIRMED, "updated_at": now, "result_ref": "ref"}
        confirmed = dataclasses.replace(executing, **changes)
        event = Event(
            key, EventType.CONFIRMED, now, 1, run_id, Status.EXECUTING, Status.CONFIRMED,
            data={"r": "ref"},
        )  # fmt: skip
        expect = (Status.EXECUTING, 1)
        assert store.transition(expect, confirmed, event, fields=tuple(changes))
        self.effects += 1

    def close(self) -> None:
        self.store.close()


# --- DBOS -------------------------------------------------------------------------------


class DBOSBench:
    """One workflow with one step per effect, DBOS's system database on SQLite (WAL)."""

    def __init__(self, path: str) -> None:
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode = WAL")  # persistent in the file
        conn.close()
        logging.getLogger("dbos").setLevel(logging.ERROR)
        from dbos import DBOS

        self.DBOS = DBOS
        DBOS(
            config={
                "name": "actonce-bench",
                "system_database_url": f"sqlite:///{path}",
                "run_admin_server": False,
                "log_level": "ERROR",
            }
        )

        @DBOS.step()
        def noop_step() -> str:
            return "ref"

        @DBOS.workflow()
        def one_effect(i: int) -> str:
            return noop_step()

        self.workflow = one_effect
        DBOS.launch()
        self.effects = 0

    def run(self, round_: int, n: int) -> None:
        for i in range(n):
            self.one(round_, i)

    def one(self, round_: int, i: int) -> None:
        assert self.workflow(round_ * 1_000_000 + i) == "ref"
        self.effects += 1

    def close(self) -> None:
        self.DBOS.destroy()


def dbos_available() -> bool:
    try:
        import dbos  # noqa: F401
    except Exception:
        return False
    return True


# --- the measurement --------------------------------------------------------------------


def measure(rounds: int, per_round: int, folder: str) -> dict[str, Any]:
    benches: dict[str, Any] = {
        "actonce": ActOnceBench(os.path.join(folder, "actonce.db"), Policy()),
        "actonce_no_reverify": ActOnceBench(
            os.path.join(folder, "actonce_nr.db"), Policy(verify_after_claim=False)
        ),
        "raw": RawBench(os.path.join(folder, "raw.db")),
        "store": StoreBench(os.path.join(folder, "store.db")),
        "raw_all_full": RawBench(os.path.join(folder, "raw_full.db"), all_full=True),
    }
    if otel_available():
        benches["actonce_otel"] = ActOnceBench(
            os.path.join(folder, "actonce_otel.db"), Policy(), otel=True
        )
    dbos_error = None
    if dbos_available():
        try:
            benches["dbos"] = DBOSBench(os.path.join(folder, "dbos.sqlite"))
        except Exception as exc:  # report, do not hide
            dbos_error = f"{type(exc).__name__}: {exc}"
    else:
        dbos_error = "dbos is not importable"
    names = list(benches)
    for name in names:  # warm up: caches, first pages, imports
        benches[name].run(-1, 5)
    for bench in benches.values():
        if hasattr(bench, "commits"):
            bench.commits, bench.effects = 0, 0
        else:
            bench.effects = 0
    per_round_ms: dict[str, list[float]] = {n: [] for n in names}
    clock = time.perf_counter
    for r in range(rounds):
        spent = dict.fromkeys(names, 0.0)
        for i in range(per_round):
            # One effect of each variant in turn, the order rotating: A B C D, B C D A ...
            k = (r * per_round + i) % len(names)
            for name in names[k:] + names[:k]:
                t0 = clock()
                benches[name].one(r, i)
                spent[name] += clock() - t0
        for name in names:
            per_round_ms[name].append(spent[name] * 1000 / per_round)
    out: dict[str, Any] = {
        name: {
            "ms_median": statistics.median(v),
            "ms_min": min(v),
            "ms_max": max(v),
        }
        for name, v in per_round_ms.items()
    }

    # Paired ratios, round by round: the noise of one round hits both variants.
    def paired(a: str, b: str) -> list[float]:
        return [x / y for x, y in zip(per_round_ms[a], per_round_ms[b], strict=True)]

    ratios = paired("actonce", "raw")
    commits = benches["actonce"].commits / benches["actonce"].effects
    commits_nr = benches["actonce_no_reverify"].commits / benches["actonce_no_reverify"].effects
    raw_commits = benches["raw"].commits / benches["raw"].effects
    summary: dict[str, Any] = {
        "rounds": rounds,
        "per_round": per_round,
        "ms_per_effect": round(out["actonce"]["ms_median"], 4),
        "ms_per_effect_no_reverify": round(out["actonce_no_reverify"]["ms_median"], 4),
        "ms_per_effect_otel": (
            round(out["actonce_otel"]["ms_median"], 4) if "actonce_otel" in out else None
        ),
        "raw_ms_per_effect": round(out["raw"]["ms_median"], 4),
        "raw_all_full_ms_per_effect": round(out["raw_all_full"]["ms_median"], 4),
        "ratio_vs_raw": round(statistics.median(ratios), 4),
        "ratio_vs_raw_min": round(min(ratios), 4),
        "ratio_vs_raw_max": round(max(ratios), 4),
        "ratio_no_reverify_vs_raw": round(
            statistics.median(paired("actonce_no_reverify", "raw")), 4
        ),
        "store_ms_per_effect": round(out["store"]["ms_median"], 4),
        "ratio_store_vs_raw": round(statistics.median(paired("store", "raw")), 4),
        "ratio_vs_store": round(statistics.median(paired("actonce", "store")), 4),
        "commits_per_effect": commits,
        "commits_per_effect_no_reverify": commits_nr,
        "raw_commits_per_effect": raw_commits,
        "dbos_ms_per_effect": None,
        "ratio_vs_dbos": None,
        "dbos_note": dbos_error,
        "sqlite": {
            "journal_mode": "wal",
            "synchronous": "FULL for the executing mark, NORMAL otherwise",
            "version": sqlite3.sqlite_version,
        },
    }
    if "actonce_otel" in benches:
        o_ratios = [
            a / b
            for a, b in zip(per_round_ms["actonce_otel"], per_round_ms["actonce"], strict=True)
        ]
        summary["otel_ratio_vs_off"] = round(statistics.median(o_ratios), 4)
    if "dbos" in benches:
        d_ratios = [
            a / b for a, b in zip(per_round_ms["actonce"], per_round_ms["dbos"], strict=True)
        ]
        summary["dbos_ms_per_effect"] = round(out["dbos"]["ms_median"], 4)
        summary["ratio_vs_dbos"] = round(statistics.median(d_ratios), 4)
        summary["dbos_note"] = "DBOS system database on SQLite, WAL set on the file beforehand"
    for bench in benches.values():
        with contextlib.suppress(Exception):
            bench.close()
    summary["detail"] = out
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--per-round", type=int, default=40)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="actonce-bench-") as folder:
        summary = measure(args.rounds, args.per_round, folder)
    for name, d in summary["detail"].items():
        print(
            f"{name:>20}: {d['ms_median']:.3f} ms/effect "
            f"(min {d['ms_min']:.3f}, max {d['ms_max']:.3f})",
            file=sys.stderr if args.json else sys.stdout,
        )
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        for k, v in summary.items():
            if k != "detail":
                print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
