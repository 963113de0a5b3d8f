"""Evidence beside the ledger, and ``actonce evidence prune`` (never outside the root)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from actonce import Ledger, Policy, UsageError
from actonce.evidence import evidence_root, new_session_folder, parse_age, prune
from actonce.testing import FakeProvider, Faults, FrozenClock

DAY = 86400.0


@pytest.fixture(autouse=True)
def _default_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests are about the default root (beside the ledger); the suite
    # points every other test's evidence at a temporary folder.
    monkeypatch.delenv("ACTONCE_EVIDENCE_DIR", raising=False)


def test_the_root_is_beside_the_ledger(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ACTONCE_EVIDENCE_DIR", raising=False)
    monkeypatch.delenv("ACTONCE_LEDGER", raising=False)
    assert evidence_root() == Path("actonce-evidence")
    assert evidence_root("sqlite:////srv/agents/ledger.db") == Path("/srv/agents/actonce-evidence")
    assert evidence_root("sqlite:///rel/l.db?sync=all") == Path("rel/actonce-evidence")
    assert evidence_root(str(tmp_path / "l.db")) == tmp_path / "actonce-evidence"
    assert evidence_root("postgresql://u:p@db/x") == Path("actonce-evidence")
    monkeypatch.setenv("ACTONCE_LEDGER", "/var/lib/a/ledger.db")
    assert evidence_root() == Path("/var/lib/a/actonce-evidence")
    monkeypatch.setenv("ACTONCE_EVIDENCE_DIR", str(tmp_path / "ev"))
    assert evidence_root("sqlite:////x/y.db") == tmp_path / "ev"
    one, two = new_session_folder(tmp_path / "ev", "alice"), new_session_folder(tmp_path / "ev")
    assert one != two and one.parent == two.parent == tmp_path / "ev" and "-alice-" in one.name


def test_ages_parse() -> None:
    assert parse_age("30d") == 30 * DAY and parse_age("12h") == 12 * 3600
    assert parse_age("2w") == 14 * DAY and parse_age("90") == 90
    for bad in ("", "soon", "-1d", "nand", "infd"):
        with pytest.raises(UsageError):
            parse_age(bad)


def _ledger_with_evidence(
    path: Path, clock: FrozenClock, folders: list[Path]
) -> tuple[Ledger, FakeProvider]:
    """One unresolved effect per folder, each naming its folder as evidence."""
    ledger = Ledger.open(str(path), clock=clock, create=True)
    provider = FakeProvider(clock=clock, faults=Faults(lose_response=1.0, visibility_delay=1e12))
    for n, folder in enumerate(folders):

        def evidence(label: str, folder: Path = folder) -> str:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "page.html").write_text("<html>" + "x" * 1000, encoding="utf-8")
            return str(folder)

        effect = provider.effect(f"ref-{n}", policy=Policy(verify_attempts=1, settle_seconds=0))
        result = ledger.run(replace(effect, evidence=evidence))
        assert result.performed
        clock.advance(10 * DAY)
    return ledger, provider


def test_prune_deletes_only_old_folders_inside_the_root(tmp_path: Path) -> None:
    clock = FrozenClock()
    root = tmp_path / "actonce-evidence"
    session = root / "20260101T000000Z-alice-abc123"
    old, young = session / "001-post-needs_review", root / "s2" / "001-post-needs_review"
    outside = tmp_path / "elsewhere" / "001-keep-me"
    gone = session / "002-gone"
    # Named 10 days apart, now is 10 days after the last: old 40 d, outside 30 d,
    # gone 20 d, young 10 d.
    ledger, _ = _ledger_with_evidence(tmp_path / "ledger.db", clock, [old, outside, gone, young])
    shutil.rmtree(gone)
    link = root / "link-out"
    link.symlink_to(outside)
    dry = prune(ledger, 15 * DAY, dry_run=True)
    assert dry.deleted == [str(old)] and old.exists()
    report = prune(ledger, 15 * DAY)
    assert report.root == str(root)
    assert report.deleted == [str(old)] and not old.exists()
    assert report.kept == [str(young)] and young.exists()
    assert report.missing == [str(gone)]
    assert report.outside == [str(outside)] and (outside / "page.html").exists()
    assert report.freed_bytes > 1000
    assert not session.exists()  # emptied session folder removed, the root kept
    assert root.exists() and link.is_symlink()
    ledger.close()


def test_cli_prune(tmp_path: Path) -> None:
    clock = FrozenClock()  # 2023: every event is older than 30 days by the real clock
    root = tmp_path / "actonce-evidence"
    inside, outside = root / "s" / "001-a", tmp_path / "other" / "001-b"
    ledger, _ = _ledger_with_evidence(tmp_path / "ledger.db", clock, [inside, outside])
    ledger.close()
    cmd = [sys.executable, "-m", "actonce", "evidence", "prune", "--ledger",
           str(tmp_path / "ledger.db"), "--older-than", "30d"]  # fmt: skip
    proc = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["deleted"] == [str(inside)] and data["outside_root"] == [str(outside)]
    assert not inside.exists() and outside.exists()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "deleted 0 evidence folder(s)" in again.stdout and "1 already gone" in again.stdout
    bad = subprocess.run([*cmd[:-1], "soon"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "not an age" in bad.stderr
