"""The chaos engine: a short campaign must be clean and must cover every point.

Also checks that the engine can see what it claims to look for: a worker
that bypasses the ledger makes duplicates, and the campaign reports them.
"""

from __future__ import annotations

import json

import pytest

from actonce import SystemClock
from actonce.chaos import _campaign as _chaos
from actonce.chaos import _worker as _chaos_worker
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


def test_plans_are_reproducible() -> None:
    import random

    a = _chaos._plan(random.Random("actonce-chaos:3:17"), 3, 5)
    b = _chaos._plan(random.Random("actonce-chaos:3:17"), 3, 5)
    assert a == b


def test_main_json_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = _chaos.main(["--schedules", "3", "--workers", "2", "--seed", "5", "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    data = json.loads(out.strip().splitlines()[-1])
    assert data["schedules"] == 3 and data["backend"] == "sqlite" and data["duplicates"] == 0
    assert "3/3" in err  # progress goes to stderr


def test_main_exit_1_on_duplicates(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_chaos_worker, "_work", _naive_work)
    assert _chaos.main(["--schedules", "2", "--workers", "2"]) == 1
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
    ],
)
def test_main_exit_2_on_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert _chaos.main(argv) == 2
    assert capsys.readouterr().err
