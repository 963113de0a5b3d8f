"""The ``actonce`` command, run as a real process against a real SQLite ledger."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from actonce import Ledger, Policy, Status
from actonce.testing import FakeProvider, Faults, FrozenClock


def actonce(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "actonce", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture
def ledger_path(tmp_path: Path) -> str:
    path = str(tmp_path / "ledger.db")
    clock = FrozenClock()
    provider = FakeProvider(clock=clock)
    with Ledger.open(path, clock=clock, create=True) as ledger:
        for ref in ("inv-1", "inv-2"):
            assert ledger.run(provider.effect(ref, kind="invoice")).done
        provider.faults = Faults(script=["lose_response"], visibility_delay=1e9)
        result = ledger.run(
            provider.effect(
                "inv-3", kind="invoice", policy=Policy(verify_backoff=0, verify_attempts=1)
            )
        )
        assert result.status is Status.UNKNOWN
    return path


def test_status_counts_every_status(ledger_path: str) -> None:
    proc = actonce("status", "--ledger", ledger_path, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["counts"]["confirmed"] == 2
    assert data["counts"]["unknown"] == 1
    assert data["open"] == 1
    human = actonce("status", "--ledger", ledger_path)
    assert "confirmed" in human.stdout and human.returncode == 0


def test_list_filters_by_status(ledger_path: str) -> None:
    proc = actonce("list", "--ledger", f"sqlite:///{ledger_path}", "--status", "unknown", "--json")
    rows = json.loads(proc.stdout)
    assert [r["status"] for r in rows] == ["unknown"]
    assert rows[0]["payload"] == {"ref": "inv-3"}


def test_show_then_resolve_by_prefix(ledger_path: str) -> None:
    key = json.loads(
        actonce("list", "--ledger", ledger_path, "--status", "unknown", "--json").stdout
    )[0]["key"]
    shown = json.loads(actonce("show", key[:10], "--ledger", ledger_path, "--json").stdout)
    assert [e["type"] for e in shown["events"]] == ["claimed", "executing", "unknown"]
    proc = actonce(
        "resolve",
        key[:10],
        "happened",
        "--reason",
        "seen in the provider UI",
        "--reviewer",
        "ana",
        "--result-ref",
        "obj-3",
        "--ledger",
        ledger_path,
    )
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(actonce("show", key, "--ledger", ledger_path, "--json").stdout)
    assert shown["effect"]["status"] == "confirmed"
    assert shown["effect"]["result_ref"] == "obj-3"
    assert shown["events"][-1]["data"]["reviewer"] == "ana"
    # The same decision again answers with the existing state.
    again = actonce(
        "resolve",
        key,
        "happened",
        "--reason",
        "twice",
        "--reviewer",
        "ana",
        "--ledger",
        ledger_path,
    )
    assert again.returncode == 0
    # A different decision on a settled effect is refused.
    other = actonce(
        "resolve", key, "abandon", "--reason", "x", "--reviewer", "ana", "--ledger", ledger_path
    )
    assert other.returncode == 1
    assert "not awaiting review" in other.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "ffffffff"], "no effect with key"),
        (["status", "--ledger", "sqlite:/broken"], "malformed ledger URL"),
        (["status", "--ledger", "mysql://x/y"], "unknown ledger scheme"),
        (["status", "--ledger", "/nonexistent/dir/ledger.db"], "no ledger at"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(
    ledger_path: str, args: list[str], message: str
) -> None:
    if "--ledger" not in args:
        args = [*args, "--ledger", ledger_path]
    proc = actonce(*args)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unreadable_ledger(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-ledger.db"
    bad.write_text("hello, I am a text file\n" * 100)
    proc = actonce("status", "--ledger", str(bad))
    assert proc.returncode == 1
    assert "not a database" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_newer_schema_is_a_clear_error(ledger_path: str) -> None:
    import sqlite3

    conn = sqlite3.connect(ledger_path)
    conn.execute("UPDATE actonce_meta SET value = '999' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    proc = actonce("status", "--ledger", ledger_path)
    assert proc.returncode == 1
    assert "schema version 999" in proc.stderr and "upgrade actonce" in proc.stderr


def test_reconcile_exits_3_when_a_verifier_raised(ledger_path: str, tmp_path: Path) -> None:
    (tmp_path / "raising_verifiers.py").write_text(
        "from actonce import Policy, registry\n"
        "@registry.verifier('invoice', policy=Policy(lease_seconds=1))\n"
        "def exists(record):\n"
        "    raise RuntimeError('the provider lookup crashed')\n"
    )
    os = __import__("os")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    proc = actonce(
        "reconcile", "--ledger", ledger_path, "--verifiers", "raising_verifiers", "--json", env=env
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["checked"] == 1 and summary["results"]["confirmed"] == 0
    assert proc.returncode == 3, (
        f"reconcile exited {proc.returncode} after a verifier raised: {summary}"
    )
    assert "Traceback" not in proc.stderr


def test_reconcile_uses_registered_verifiers(ledger_path: str, tmp_path: Path) -> None:
    # A verifier module that says every invoice exists.
    (tmp_path / "my_verifiers.py").write_text(
        "from actonce import Confirmed, Policy, registry\n"
        "@registry.verifier('invoice', policy=Policy(lease_seconds=1))\n"
        "def exists(record):\n"
        "    return Confirmed('found-by-reconcile')\n"
    )
    os = __import__("os")
    # The verifiers' folder, then the code under test (not whatever actonce is installed).
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    missing = actonce("reconcile", "--ledger", ledger_path, "--json")
    assert missing.returncode == 3  # open or unverifiable effects left: not an error
    assert json.loads(missing.stdout.strip().splitlines()[-1])["no_verifier"] == 1
    proc = actonce(
        "reconcile", "--ledger", ledger_path, "--verifiers", "my_verifiers", "--json", env=env
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr
    assert summary["results"]["confirmed"] == 1
    assert summary["unresolved"] == 0
    bad = actonce("reconcile", "--ledger", ledger_path, "--verifiers", "no_such_module_xyz")
    assert bad.returncode == 1 and "cannot import verifier module" in bad.stderr
