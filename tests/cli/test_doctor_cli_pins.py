"""``actonce doctor``'s lines and JSON, in process: the ledger and PostgreSQL checks
stated whole (the Python, Playwright and Chromium lines depend on the machine:
their shape is stated)."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

from actonce import Ledger, __version__
from actonce.cli import main


@pytest.fixture(autouse=True)
def _no_dsn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTONCE_TEST_POSTGRES_DSN", raising=False)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert err == ""
    return code, out.splitlines()


def _by_name(lines: list[str]) -> dict[str, str]:
    return {line[:11].rstrip(): line[11:] for line in lines}


def test_doctor_says_each_check_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    none = str(tmp_path / "none.db")
    code, lines = _run(["doctor", "--ledger", none], capsys)
    checks = _by_name(lines)
    assert list(checks) == ["python", "actonce", "playwright", "chromium", "ledger"]
    assert checks["python"] == f"ok    {platform.python_version()} ({sys.executable})"
    assert checks["actonce"] == f"ok    {__version__}"
    assert checks["ledger"] == (
        f"ok    none yet: no ledger at {none}: create it with `actonce init --ledger {none}` "
        "or open_ledger(url, create=True)"
    )
    assert all(v[:6] in ("ok    ", "FAIL  ") for v in checks.values())
    assert code == (0 if all(v.startswith("ok") for v in checks.values()) else 1)


def test_doctor_names_the_schema_and_masks_a_postgres_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger.open(path, create=True).close()
    dsn = "postgresql://u:pw-secret@127.0.0.1:1/x"
    code, lines = _run(["doctor", "--ledger", path, "--postgres", dsn], capsys)
    assert code == 1
    checks = _by_name(lines)
    assert list(checks)[-2:] == ["ledger", "postgres"]
    assert checks["ledger"].startswith(f"ok    {path} (schema version ")
    assert checks["ledger"].endswith(")")
    assert checks["postgres"].startswith(
        "FAIL  postgresql://u:***@127.0.0.1:1/x OperationalError: "
    )
    assert "pw-secret" not in "\n".join(lines)


def test_doctor_json_fails_on_an_unreadable_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("not a db")
    code, lines = _run(["doctor", "--ledger", str(bad), "--json"], capsys)
    assert code == 1
    (line,) = lines
    report = json.loads(line)
    assert report["ledger"] == {
        "ok": False,
        "error": f"LedgerUnavailable: cannot open ledger {bad}: file is not a database",
    }
    assert report["ok"] is False
    assert report["actonce"] == {"ok": True, "version": __version__}
    assert report["python"] == {
        "ok": True,
        "version": platform.python_version(),
        "executable": sys.executable,
    }
    assert "postgres" not in report
    ok = str(tmp_path / "ok.db")
    Ledger.open(ok, create=True).close()
    code, (line,) = _run(["doctor", "--ledger", ok, "--json"], capsys)
    report = json.loads(line)
    assert report["ledger"]["ok"] is True and report["ledger"]["exists"] is True
    assert report["ledger"]["url"] == ok
    assert isinstance(report["ledger"]["schema_version"], int)
    assert code == (0 if report["ok"] else 1)
    assert report["ok"] is all(
        report[c]["ok"] for c in ("python", "actonce", "playwright", "chromium", "ledger")
    )
