"""Every benchmark runs to its end on tiny sizes and ends with its JSON line.

A benchmark is only run by hand, so nothing else notices when a change of the
API breaks one (``browser.py``'s timed store once lost keyword arguments and
died at the first claim). The figures are not looked at here: only that the
script completes and reports what its docstring promises.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.pgtest import postgres_dsn

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

CASES = [
    pytest.param("overhead.py", ["--rounds", "1", "--per-round", "3"], "ratio_vs_store", id="overhead"),
    pytest.param("reconcile.py", ["--rows", "2000", "--open", "20", "--repeat", "2"], None, id="reconcile"),
    pytest.param("operation.py", ["--rounds", "1", "--per-round", "2"], None, id="operation"),
    pytest.param("scrub.py", ["--rounds", "1", "--per-round", "2"], "ratio_on_vs_off", id="scrub"),
    pytest.param("console.py", ["--rows", "400", "--open", "20", "--samples", "3"], None, id="console"),
    pytest.param("wire.py", ["--performs", "2", "--clicks", "2"], "guarded", id="wire", marks=pytest.mark.browser),
    pytest.param("browser.py", ["--rounds", "1", "--effects", "2"], None, id="browser", marks=pytest.mark.browser),
    pytest.param("firewall.py", ["--rounds", "1", "--navigations", "4", "--effects", "2"], "ratio", id="firewall", marks=pytest.mark.browser),
    # PostgreSQL-only benchmarks: the DSN is appended by the test (see below).
    pytest.param("contention.py", ["--processes", "4"], "performs", id="contention-postgres", marks=pytest.mark.postgres),
    pytest.param("throughput.py", ["--workers", "1,2", "--seconds", "0.3", "--rounds", "1"], "ratio_vs_raw", id="throughput-postgres", marks=pytest.mark.postgres),
    # valgrind runs eight interpreters under callgrind (about two minutes on two
    # cores, the whole budget of this file): run with ACTONCE_BENCH_SLOW=1.
    pytest.param("instructions.py", ["--effects", "2"], "ratio_vs_raw", id="instructions", marks=pytest.mark.slow),
]  # fmt: skip

POSTGRES_ONLY = {"contention.py", "throughput.py"}


def test_every_benchmark_is_smoke_run() -> None:
    """A new benchmark script must be added to CASES (so a broken one fails CI)."""
    listed = {case.values[0] for case in CASES}
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == listed, sorted(scripts ^ listed)


@pytest.mark.parametrize(("script", "args", "key"), CASES)
def test_the_benchmark_runs_and_reports(script: str, args: list[str], key: str | None) -> None:
    if script in POSTGRES_ONLY:
        args = [*args, "--dsn", postgres_dsn()]
    if script == "instructions.py":
        if os.environ.get("ACTONCE_BENCH_SLOW") != "1":
            pytest.skip("about two minutes under valgrind: set ACTONCE_BENCH_SLOW=1")
        if shutil.which("valgrind") is None:
            pytest.skip("valgrind is not installed")
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
