"""Plant each known bug in a temporary copy of the tree and run the tests that must catch it.

Usage (from the repository root)::

    python tests/mutants/check_plants.py              # every plant: caught or survived
    python tests/mutants/check_plants.py --cheap      # the pure-protocol plants only (seconds)
    python tests/mutants/check_plants.py --only NAME  # one plant (repeatable)
    python tests/mutants/check_plants.py --baseline   # also check the tests pass unplanted
    python tests/mutants/check_plants.py --against tests/unit tests/conformance
                                                       # run these instead of each plant's tests
    python tests/mutants/check_plants.py --diff       # print every plant as a patch

A plant is *caught* when its tests fail and their output shows its
``expect`` line (the right reason); *not judged* when every test it ran was
skipped (no PostgreSQL, no Chromium); anything else is *survived*. The exit
status is 1 when a plant survived (or a baseline failed). PostgreSQL
plants need ``ACTONCE_TEST_POSTGRES_DSN``, browser plants Chromium.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plants import PLANTS, ROOT, Plant

_COPY = ("src", "tests", "docs", "examples", "pyproject.toml", "README.md", "CHANGELOG.md")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.db", "*.db-*")


def copy_tree(root: Path, dest: Path) -> None:
    for name in _COPY:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=_IGNORE)
        elif src.exists():
            shutil.copy2(src, dest / name)


def run_tests(tree: Path, tests: list[str]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    return done.returncode, done.stdout + done.stderr


def check(plant: Plant, root: Path, tests: list[str] | None, baseline: bool) -> tuple[str, str]:
    selection = tests or list(plant.tests)
    with tempfile.TemporaryDirectory(prefix=f"plant-{plant.name}-") as tmp:
        tree = Path(tmp)
        copy_tree(root, tree)
        if baseline:
            code, out = run_tests(tree, selection)
            if code != 0:
                return "BASELINE FAILS", _tail(out)
        plant.apply(tree)
        code, out = run_tests(tree, selection)
    if code == 0:
        if _nothing_ran(out):
            # A PostgreSQL or browser plant without its backend: skipped tests
            # judge nothing, and "survived" would send someone after a bug.
            return "not judged", f"its tests were skipped: {_tail(out)}"
        return "survived", "tests passed"
    if code == 1 and (tests is not None or plant.expect in out):
        return "caught", _failure(out, plant.expect)
    return "survived", f"failed for another reason (exit {code}): {_tail(out)}"


def _failure(out: str, expect: str) -> str:
    lines = [ln.strip() for ln in out.splitlines()]
    for ln in lines:
        if ln.startswith("FAILED") or ln.startswith("ERROR"):
            return ln[:300]
    hit = [ln for ln in lines if expect in ln]
    return (hit[0] if hit else lines[-1])[:300]


def _nothing_ran(out: str) -> bool:
    """Whether pytest's summary line reports skipped tests and none that ran."""
    summary = next((ln for ln in reversed(out.splitlines()) if " in " in ln and "s" in ln), "")
    return "skipped" in summary and not any(
        word in summary for word in ("passed", "failed", "error", "xfail", "xpass")
    )


def _tail(out: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return " | ".join(lines[-3:])[:400]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--cheap", action="store_true", help="pure-protocol plants only")
    parser.add_argument("--baseline", action="store_true", help="run the tests unplanted first")
    parser.add_argument("--against", nargs="+", metavar="TEST", help="run these tests instead")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to copy")
    parser.add_argument("--diff", action="store_true", help="print the plants as patches")
    args = parser.parse_args(argv)
    chosen = [
        p for p in PLANTS if (not args.only or p.name in args.only) and (not args.cheap or p.cheap)
    ]
    unknown = set(args.only) - {p.name for p in PLANTS}
    if unknown:
        parser.error(f"no such plant: {', '.join(sorted(unknown))}")
    if args.diff:
        for p in chosen:
            print(f"# {p.name}: {p.bug}\n{p.diff(args.root)}")
        return 0
    bad = unjudged = 0
    for p in chosen:
        started = time.monotonic()
        verdict, detail = check(p, args.root.resolve(), args.against, args.baseline)
        bad += verdict != "caught"
        unjudged += verdict == "not judged"
        print(f"{verdict:>10}  {p.name}  ({time.monotonic() - started:.0f}s)  {detail}", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} plants caught", end="")
    print(
        f"; {unjudged} not judged (set ACTONCE_TEST_POSTGRES_DSN, install Chromium)"
        if unjudged
        else ""
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
