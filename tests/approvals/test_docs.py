"""docs/approvals.md: its example runs, and prints what the page says it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "approvals.md"
BLOCK = re.compile(r"<!-- (run|output) -->\n```(?:python|text)\n(.*?)```", re.S)


def blocks(kind: str) -> str:
    return "".join(body for k, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if k == kind)


def test_the_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    code = blocks("run")
    assert "ledger.approvals.request(" in code and "refresh=refresh" in code
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "ACTONCE_APPROVAL_KEYS": "k2026:" + "5e" * 32,
    }
    env.pop("ACTONCE_LEDGER", None)
    proc = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == blocks("output")
    assert (tmp_path / "trip.db").exists()


def test_the_readme_and_the_changelog_point_to_the_page() -> None:
    assert "docs/approvals.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/approvals.md" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
