"""The tooling gates run as tests, so the README's one test command covers them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(
    shutil.which("ruff") is None, reason="ruff not installed (pip install -e '.[test]')"
)
def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        ["ruff", "check", "src", "tests", "benchmarks", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(
    shutil.which("ruff") is None, reason="ruff not installed (pip install -e '.[test]')"
)
def test_ruff_format_is_applied() -> None:
    """One handwriting: every file as ``ruff format`` writes it."""
    proc = subprocess.run(
        ["ruff", "format", "--check", "src", "tests", "benchmarks", "examples"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
