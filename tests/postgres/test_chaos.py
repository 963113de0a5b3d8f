"""``actonce chaos`` on PostgreSQL: kills, zombies and terminated connections.

The campaign keeps each schedule's ledger in its own schema and drops it
afterwards, however the schedule ends; the workers' connections are ended
with ``pg_terminate_backend`` at random moments. Skips (saying how to
enable) without ``ACTONCE_TEST_POSTGRES_DSN``; with ``CI`` set, an
unreachable server fails instead.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from actonce.chaos import _campaign as _chaos
from actonce.chaos import main as chaos_main
from actonce.chaos import run_campaign
from pgtest import postgres_dsn

SCHEDULES = 40


@pytest.fixture
def dsn() -> str:
    return postgres_dsn()


def _our_schemas(dsn: str) -> list[str]:
    """Chaos schemas of this process (others may run their own campaigns meanwhile)."""
    import psycopg

    prefix = f"actonce_chaos_{os.getpid()}_".replace("_", r"\_")
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)
        ).fetchall()
    return [str(r[0]) for r in rows]


@pytest.mark.postgres
def test_campaign_with_terminated_connections_is_clean(dsn: str) -> None:
    started = time.monotonic()
    report = run_campaign(
        backend="postgres",
        dsn=dsn,
        schedules=SCHEDULES,
        workers=3,
        intents=5,
        seed=11,
        terminate_connections=True,
    )
    assert report.duplicates == 0, report.findings
    assert report.lost == 0, report.findings
    assert report.unresolved == 0, report.findings
    assert report.inconsistent == 0, report.findings
    assert report.unmarked == 0, report.findings
    assert report.worker_errors == 0, report.findings
    assert report.ok
    assert report.backend == "postgres"
    assert report.connection_kills > 0
    assert report.ledger_errors > 0  # the workers saw their connections die ...
    assert report.kills > 0 and report.random_kills > 0  # ... next to the SIGKILLs
    assert sum(report.statuses.values()) == report.intents == SCHEDULES * 5
    assert _our_schemas(dsn) == []
    assert time.monotonic() - started < 90


@pytest.mark.postgres
def test_schema_is_dropped_when_a_schedule_is_interrupted(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def interrupted(index: int, ledger: object, *args: object) -> None:
        seen.extend(_our_schemas(dsn))  # the schedule's schema exists until now
        raise KeyboardInterrupt

    # Only the parent judges: the workers are done by then.
    monkeypatch.setattr(_chaos, "_judge", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_campaign(backend="postgres", dsn=dsn, schedules=3, workers=2, intents=2, seed=1)
    assert seen == [f"actonce_chaos_{os.getpid()}_0"]
    assert _our_schemas(dsn) == []


@pytest.mark.postgres
def test_cli_json_on_postgres(dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--backend", "postgres", "--dsn", dsn, "--schedules", "3", "--workers", "2"]
    code = chaos_main([*argv, "--terminate-connections", "--seed", "4", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0, out
    data = json.loads(out.strip().splitlines()[-1])
    assert data["backend"] == "postgres" and data["duplicates"] == 0
    assert "connection_kills" in data


def test_cli_without_a_dsn_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ACTONCE_TEST_POSTGRES_DSN", raising=False)
    monkeypatch.setenv("ACTONCE_LEDGER", "sqlite:///tmp/not-postgres.db")
    assert chaos_main(["--backend", "postgres", "--schedules", "1"]) == 2
    err = capsys.readouterr().err
    assert "--dsn" in err and len(err.strip().splitlines()) == 1


def test_cli_with_an_unreachable_server_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Port 1 on loopback: refused at once, nothing listens there.
    argv = ["--backend", "postgres", "--dsn", "postgresql://postgres@127.0.0.1:1/test"]
    assert chaos_main([*argv, "--schedules", "1"]) == 2
    err = capsys.readouterr().err
    assert "unreachable" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
