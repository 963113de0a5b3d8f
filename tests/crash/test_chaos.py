"""The chaos engine: a short campaign must be clean and must cover every point.

Also checks that the engine can see what it claims to look for: a worker
that bypasses the ledger makes duplicates, and the campaign reports them;
slow performs past lease + settle stay clean while the owner's heartbeat
extends its lease, and are overtaken without it.
"""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from actonce import SystemClock
from actonce.chaos import _campaign as _chaos
from actonce.chaos import _worker as _chaos_worker
from actonce.chaos import main as chaos_main
from actonce.chaos import run_campaign
from actonce.testing import POINTS, FakeProvider

SCHEDULES = 200


def test_short_campaign_is_clean_and_hits_every_point() -> None:
    seen: list[tuple[int, int]] = []
    report = run_campaign(
        schedules=SCHEDULES, workers=3, intents=5, seed=7, progress=lambda d, t: seen.append((d, t))
    )
    assert report.duplicates == 0, report.findings
    assert report.lost == 0, report.findings
    assert report.unresolved == 0, report.findings
    assert report.inconsistent == 0, report.findings
    assert report.worker_errors == 0, report.findings
    assert report.ok
    missing = [p for p in POINTS if not report.crash_points_hit.get(p)]
    assert not missing, f"crash points never hit: {missing}"
    assert report.random_kills > 0
    assert report.zombies > 0 and report.pauses > 0
    assert report.intents == SCHEDULES * 5
    assert sum(report.statuses.values()) == report.intents
    assert seen[-1] == (SCHEDULES, SCHEDULES) and len(seen) == SCHEDULES
    data = report.to_json()
    for key in (
        "backend",
        "schedules",
        "intents",
        "duplicates",
        "lost",
        "unresolved",
        "crash_points_hit",
    ):
        assert key in data
    assert json.loads(json.dumps(data)) == data


def _naive_work(spec: _chaos_worker.WorkerSpec, clock: SystemClock) -> None:
    """A worker that submits without asking the ledger: the bug chaos must catch."""
    provider = FakeProvider(spec.provider_path, faults=spec.faults, clock=clock, seed=spec.seed)
    for ref in spec.refs:
        try:
            provider.submit(ref)
        except Exception:
            continue


def test_campaign_reports_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    # The forked workers inherit the patched module.
    monkeypatch.setattr(_chaos_worker, "_work", _naive_work)
    report = run_campaign(schedules=3, workers=3, intents=3, seed=1)
    assert report.duplicates > 0
    assert report.lost > 0  # nothing in the ledger accounts for the intents
    assert not report.ok
    assert any("accepted" in f for f in report.findings)


def test_campaign_reports_worker_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(spec: _chaos_worker.WorkerSpec, clock: SystemClock) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_chaos_worker, "_work", broken)
    report = run_campaign(schedules=1, workers=2, intents=2, seed=1)
    assert report.worker_errors >= 2
    assert any("RuntimeError: boom" in f for f in report.findings)


#: A short campaign with slow performs: 5 schedules of 3 workers and 4 intents,
#: 40% of the chaotic rounds' performs slow (2.5-3.75 s; lease + settle <= 1.625 s).
SLOW = {
    "schedules": 5,
    "workers": 3,
    "intents": 4,
    "seed": 8,
    "slow_rate": 0.4,
    "slow_seconds": 2.5,
}


def test_slow_performs_cross_lease_and_settle_and_stay_clean() -> None:
    report = run_campaign(**SLOW)  # type: ignore[arg-type]
    assert report.slow_performs > 0 and report.slow_crossed > 0, report.summary()
    assert report.slow_min_ratio is not None and report.slow_min_ratio > 1.0
    assert 0 < report.slow_max_window <= 0.65 * 2.5 + 1e-9
    assert sum(report.slow_outcomes.values()) == report.slow_performs
    # The owners kept their leases alive: nobody overtook a slow perform.
    assert report.slow_overtaken == 0, report.slow_outcomes
    assert report.duplicates == 0, report.findings
    assert report.lost == 0 and report.unresolved == 0 and report.inconsistent == 0
    assert report.ok, report.summary()
    data = report.to_json()
    assert data["slow_performs"] == report.slow_performs
    assert data["slow_outcomes"] == report.slow_outcomes
    assert json.loads(json.dumps(data)) == data
    assert "slow performs" in report.summary()


def test_without_the_heartbeat_slow_performs_are_overtaken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same campaign with the owner's lease no longer extended while it performs."""
    from actonce._run import heartbeat

    def no_heartbeat(
        self: heartbeat.Heartbeats, op: object, store: object, clock: object
    ) -> object:
        beat = heartbeat.Beat(op, store, clock)  # type: ignore[arg-type]
        beat.cancelled = True  # never scheduled: the lease runs out during the perform
        return beat

    # The forked workers inherit the patched driver.
    monkeypatch.setattr(heartbeat.Heartbeats, "start", no_heartbeat)
    report = run_campaign(**SLOW)  # type: ignore[arg-type]
    assert report.slow_performs > 0
    # Peers saw the mark orphaned and took the effect over during the page
    # load: the owners performed after being overtaken (then review, and a
    # duplicate where absence was authoritative).
    assert report.slow_overtaken > 0, report.summary()
    assert any(k.startswith("overtaken") for k in report.slow_outcomes)


def test_slow_plan_changes_only_lease_settle_and_delay() -> None:
    plain = _chaos._plan(random.Random("actonce-chaos:3:17"), 3, 5)
    slow = _chaos._plan(
        random.Random("actonce-chaos:3:17"), 3, 5, slow=(random.Random("slow:3:17"), 4.0)
    )
    assert slow.policy.lease_seconds + slow.policy.settle_seconds <= 0.65 * 4.0
    assert slow.policy.settle_seconds < slow.policy.lease_seconds
    same = {"lease_seconds", "settle_seconds"}
    for f in dataclasses.fields(plain.policy):
        if f.name not in same:
            assert getattr(plain.policy, f.name) == getattr(slow.policy, f.name), f.name
    assert dataclasses.replace(slow.faults, visibility_delay=0) == dataclasses.replace(
        plain.faults, visibility_delay=0
    )
    if slow.policy.absence_authoritative:
        assert slow.faults.visibility_delay <= slow.policy.settle_seconds / 4
    assert (slow.arms, slow.kill, slow.zombie, slow.chaos_rounds) == (
        plain.arms,
        plain.kill,
        plain.zombie,
        plain.chaos_rounds,
    )


def test_a_worker_that_never_reports_is_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    from actonce.chaos import _round

    def hang(spec: _chaos_worker.WorkerSpec, clock: SystemClock) -> None:
        signal.pause()  # never ends by itself (the parent kills it)

    monkeypatch.setattr(_chaos_worker, "_work", hang)
    stats = _round.Stats()
    spec = _chaos_worker.WorkerSpec(
        ledger_path="/nonexistent/ledger.db",
        provider_path="/nonexistent/provider.db",
        error_path="/dev/null",
        offset=0.0,
        refs=("a",),
        policy=_chaos._plan(random.Random(1), 1, 1).policy,
        faults=_chaos.Faults(),
        seed=1,
    )
    killed, stopped = _round.run_round([], [(0, spec, None)], None, 0.0, stats, stall=0.5)
    assert stats.stuck == 1 and killed == [0] and not stopped
    assert stats.kills == 0  # a stuck worker is not counted as a chaos kill
    assert any("stuck" in f for f in stats.findings)


def test_plans_are_reproducible() -> None:
    a = _chaos._plan(random.Random("actonce-chaos:3:17"), 3, 5)
    b = _chaos._plan(random.Random("actonce-chaos:3:17"), 3, 5)
    assert a == b


def test_main_json_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = chaos_main(["--schedules", "3", "--workers", "2", "--seed", "5", "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    data = json.loads(out.strip().splitlines()[-1])
    assert data["schedules"] == 3 and data["backend"] == "sqlite" and data["duplicates"] == 0
    assert "3/3" in err  # progress goes to stderr


def test_main_exit_1_on_duplicates(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_chaos_worker, "_work", _naive_work)
    assert chaos_main(["--schedules", "2", "--workers", "2"]) == 1
    assert "FAILED" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--schedules", "0"],
        ["--workers", "x"],
        ["--intents", "-1"],
        ["--backend", "oracle"],
        ["--backend", "postgres", "--dsn", "mysql://x@localhost/db", "--schedules", "1"],
        ["--backend", "sqlite", "--terminate-connections", "--schedules", "1"],
        ["--slow-rate", "1.5"],
        ["--slow-rate", "nan"],
        ["--slow-rate", "x"],
        ["--slow-seconds", "1"],
        ["--slow-seconds", "inf"],
        ["--restart-server", "--schedules", "1"],
        ["--backend", "postgres", "--restart-server", "--dsn", "postgresql://x@127.0.0.1/d"],
        ["--backend", "postgres", "--restart-server", "--restart-every", "0:1"],
        ["--backend", "postgres", "--restart-server", "--restart-every", "9:3"],
        ["--backend", "postgres", "--restart-server", "--restart-every", "a:b"],
        ["--min-restarts", "2", "--schedules", "1"],
    ],
)
def test_main_exit_2_on_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert chaos_main(argv) == 2
    assert capsys.readouterr().err
