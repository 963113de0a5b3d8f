"""``actonce explore`` as a user runs it: a real subprocess each time."""

from __future__ import annotations

import json
import subprocess
import sys

SMALL = [
    "--workers",
    "1",
    "--crashes",
    "0",
    "--ticks",
    "1",
    "--reviews",
    "0",
    "--failed-writes",
    "0",
]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "actonce", "explore", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_clean_exploration_exits_0_with_its_figures_as_json() -> None:
    done = _run(*SMALL, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ok"] and report["complete"] and report["build"] == "real"
    assert report["states"] > 1000 and report["violations"] == []


def test_a_planted_bug_exits_1_with_its_trace_and_the_trace_replays() -> None:
    done = _run(*SMALL, "--fault", "second_claim")
    assert done.returncode == 1, done.stderr
    assert "VIOLATION: one_perform_per_run" in done.stdout
    assert "perform under fence 1" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.startswith("replay: "))
    trace = line.split("--trace ", 1)[1].strip("'")
    again = _run(*SMALL, "--fault", "second_claim", "--trace", trace)
    assert again.returncode == 1, again.stderr
    assert "VIOLATION: one_perform_per_run" in again.stdout
    clean = _run(*SMALL, "--trace", trace)  # the real protocol: the trace is no longer possible
    assert clean.returncode in (0, 2), clean.stdout


def test_random_walks_report_the_walk_that_found_the_bug() -> None:
    done = _run(*SMALL, "--fault", "stale_mark_time", "--walks", "3000", "--seed", "0", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    walk = report["found_at_walk"]
    assert isinstance(walk, int)
    again = _run(*SMALL, "--fault", "stale_mark_time", "--seed", "0", "--walk", str(walk), "--json")
    assert again.returncode == 1
    assert json.loads(again.stdout)["violations"]


def test_bad_options_give_one_line_errors() -> None:
    for args in (
        ["--workers", "0"],
        ["--crashes", "9"],
        ["--performs", "maybe"],
        ["--max-states", "0"],
        ["--fault", "nope"],
        ["--trace", "w9"],
        ["--workers", "two"],
    ):
        done = _run(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "error" in lines[0], (args, done.stderr)
        assert "Traceback" not in done.stderr
