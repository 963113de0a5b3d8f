"""Every benchmark runs to its end on tiny sizes and ends with its JSON line.

A benchmark is only run by hand, so nothing else notices when a change of the
API breaks one (``browser.py``'s timed store once lost keyword arguments and
died at the first claim). The figures are not looked at here: only that the
script completes and reports what its docstring promises.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

CASES = [
    pytest.param("overhead.py", ["--rounds", "1", "--per-round", "3"], "ratio_vs_store", id="overhead"),
    pytest.param("reconcile.py", ["--rows", "2000", "--open", "20", "--repeat", "2"], None, id="reconcile"),
    pytest.param("operation.py", ["--rounds", "1", "--per-round", "2"], None, id="operation"),
    pytest.param("console.py", ["--rows", "400", "--open", "20", "--samples", "3"], None, id="console"),
    pytest.param("wire.py", ["--performs", "2", "--clicks", "2"], "guarded", id="wire", marks=pytest.mark.browser),
    pytest.param("browser.py", ["--rounds", "1", "--effects", "2"], None, id="browser", marks=pytest.mark.browser),
    pytest.param("firewall.py", ["--rounds", "1", "--navigations", "4", "--effects", "2"], "ratio", id="firewall", marks=pytest.mark.browser),
]  # fmt: skip


@pytest.mark.parametrize(("script", "args", "key"), CASES)
def test_the_benchmark_runs_and_reports(script: str, args: list[str], key: str | None) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-2000:]
    summary = json.loads(lines[-1])
    assert isinstance(summary, dict) and summary
    if key is not None:
        assert key in summary, sorted(summary)
