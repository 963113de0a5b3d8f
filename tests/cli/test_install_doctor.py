"""``actonce demo`` on a machine without Chromium, and ``actonce doctor``.

"Not found" is simulated with a PATH that holds only fakes and an empty
Playwright browser folder: a fake ``playwright`` fails the way its download
fails here, a fake ``apt-get`` records being called and "installs" Chromium
by linking the real one into the fake PATH. Nothing is really installed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from actonce.browser import BrowserNotFound, ensure_chromium, find_chromium
from actonce.browser import _install as install

REAL_CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LN = shutil.which("ln") or "/bin/ln"


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def fake_bin(tmp_path: Path, *, apt: bool, chromium: str | None = REAL_CHROMIUM) -> Path:
    """A PATH folder with a failing ``playwright`` and, if ``apt``, an ``apt-get``."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "calls.log"
    _script(
        bin_ / "playwright",
        f'echo "playwright $*" >> {calls}\n'
        'echo "Error: Failed to download Chrome for Testing, caused by" >&2\n'
        'echo "Error: Download failure, code=1" >&2\nexit 1\n',
    )
    if apt:
        target = chromium or "/nonexistent"
        _script(
            bin_ / "apt-get",
            f'echo "apt-get $* DEBIAN_FRONTEND=$DEBIAN_FRONTEND" >> {calls}\n'
            f'case "$*" in *install*chromium*) {LN} -sf {target} {bin_}/chromium ;; esac\n',
        )
    return bin_


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@pytest.fixture
def no_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ACTONCE_CHROMIUM", raising=False)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "pw-empty"))
    monkeypatch.setenv("PATH", "")
    with pytest.raises(BrowserNotFound):
        find_chromium()
    return tmp_path


def test_found_chromium_is_used_and_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if REAL_CHROMIUM is None:
        pytest.skip("no Chromium on this machine")
    bin_ = fake_bin(tmp_path, apt=True)
    monkeypatch.setenv("PATH", f"{Path(REAL_CHROMIUM).parent}{os.pathsep}{bin_}")
    monkeypatch.delenv("ACTONCE_CHROMIUM", raising=False)
    lines: list[str] = []
    got = ensure_chromium(lines.append)
    assert got.how == "found" and got.path == REAL_CHROMIUM
    assert got.version and "Chromium" in got.version
    assert lines == [] and calls(tmp_path) == []  # neither playwright nor apt-get ran


def test_playwright_fails_then_apt_get_installs(
    no_chromium: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if REAL_CHROMIUM is None:
        pytest.skip("no Chromium to link as the 'installed' one")
    bin_ = fake_bin(no_chromium, apt=True)
    monkeypatch.setenv("PATH", str(bin_))
    monkeypatch.setattr(install, "_is_root", lambda: True)
    lines: list[str] = []
    got = ensure_chromium(lines.append)
    assert got.how == "apt-get" and got.path == str(bin_ / "chromium")
    assert calls(no_chromium) == [
        "playwright install chromium",
        "apt-get update -qq DEBIAN_FRONTEND=noninteractive",
        "apt-get install -y -qq chromium DEBIAN_FRONTEND=noninteractive",
    ]
    assert len(lines) == 3, lines
    assert "trying Playwright's download" in lines[0]
    assert "Download failure" in lines[1] and "apt-get" in lines[1]
    assert lines[2].startswith("installed Chromium") and "apt-get install -y chromium" in lines[2]
    assert os.environ["ACTONCE_CHROMIUM"] == got.path  # the demo's workers drive the same one


def test_not_root_gets_the_exact_command(
    no_chromium: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(fake_bin(no_chromium, apt=True)))
    monkeypatch.setattr(install, "_is_root", lambda: False)
    with pytest.raises(BrowserNotFound) as err:
        ensure_chromium()
    message = str(err.value)
    assert "\n" not in message and message.endswith("`sudo apt-get install -y chromium`")
    assert calls(no_chromium) == ["playwright install chromium"]  # apt-get never ran


def test_apt_get_that_installs_nothing_is_a_failure(
    no_chromium: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(fake_bin(no_chromium, apt=True, chromium=None)))
    monkeypatch.setattr(install, "_is_root", lambda: True)
    with pytest.raises(BrowserNotFound, match="apt-get failed: no chromium on PATH after it"):
        ensure_chromium()


def test_install_off_runs_nothing(no_chromium: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(fake_bin(no_chromium, apt=True)))
    with pytest.raises(BrowserNotFound, match="installing is off"):
        ensure_chromium(install=False)
    assert calls(no_chromium) == []


def _demo_env(tmp_path: Path, bin_: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ACTONCE_CHROMIUM"}
    env.update(PATH=str(bin_), PLAYWRIGHT_BROWSERS_PATH=str(tmp_path / "pw-empty"))
    return env


def test_demo_without_any_way_to_install_exits_with_one_line(tmp_path: Path) -> None:
    bin_ = fake_bin(tmp_path, apt=False)
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "demo", "--workdir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        env=_demo_env(tmp_path, bin_),
        timeout=120,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr  # the attempt, then the one-line answer
    assert lines[-1].startswith("actonce demo: no Chromium found and none could be installed")
    assert lines[-1].endswith("`ACTONCE_CHROMIUM=/path/to/chromium actonce demo`")
    assert calls(tmp_path) == ["playwright install chromium"]
    assert not (tmp_path / "demo").exists()  # nothing started


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path runs only as root")
@pytest.mark.skipif(REAL_CHROMIUM is None, reason="no Chromium to link as the 'installed' one")
def test_demo_on_a_fresh_machine_installs_then_runs(tmp_path: Path) -> None:
    bin_ = fake_bin(tmp_path, apt=True)
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "demo", "--intents", "2", "--workers", "1",
         "--no-faults", "--no-kills", "--workdir", str(tmp_path / "demo"), "--json"],
        capture_output=True,
        text=True,
        env=_demo_env(tmp_path, bin_),
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c.split()[0] for c in calls(tmp_path)] == ["playwright", "apt-get", "apt-get"]
    err = proc.stderr.splitlines()
    assert err[0].startswith("no Chromium found: trying Playwright's download")
    assert "installing Debian's chromium with apt-get" in err[1]
    assert err[2].startswith("installed Chromium") and str(bin_ / "chromium") in err[2]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["duplicates"] == 0 and report["intents_done"] == report["intents"] >= 1


def test_doctor_reports_every_part(tmp_path: Path) -> None:
    ledger = tmp_path / "doctor.db"
    subprocess.run([sys.executable, "-m", "actonce", "init", "--ledger", str(ledger)], check=True,
                   capture_output=True)  # fmt: skip
    dsn = "postgresql://someone:s3cret-pw@127.0.0.1:9/nowhere"  # nothing listens on port 9
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "doctor", "--ledger", str(ledger), "--postgres", dsn,
         "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    assert report["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert report["ledger"] == {
        "ok": True, "exists": True, "url": str(ledger), "schema_version": report["ledger"]["schema_version"]
    }  # fmt: skip
    assert report["ledger"]["schema_version"] >= 7
    assert report["postgres"]["ok"] is False and "s3cret-pw" not in proc.stdout
    assert report["postgres"]["url"] == "postgresql://someone:***@127.0.0.1:9/nowhere"
    assert proc.returncode == 1  # a check that applies failed
    if REAL_CHROMIUM is not None:
        assert report["chromium"]["ok"] and report["chromium"]["version"].startswith("Chromium")
    human = subprocess.run(
        [sys.executable, "-m", "actonce", "doctor", "--ledger", str(ledger)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ACTONCE_TEST_POSTGRES_DSN": ""},
    )
    assert "schema version" in human.stdout and "postgres" not in human.stdout
    assert human.returncode == (0 if REAL_CHROMIUM else 1)


def test_doctor_sees_a_missing_chromium(tmp_path: Path) -> None:
    env = _demo_env(tmp_path, tmp_path)  # an empty PATH folder
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "doctor", "--ledger", str(tmp_path / "x.db"), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "ACTONCE_TEST_POSTGRES_DSN": ""},
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["chromium"]["ok"] is False
    assert "no Chromium found" in report["chromium"]["error"]
    assert report["ledger"]["exists"] is False and report["ledger"]["ok"] is True
