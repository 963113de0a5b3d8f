"""The mutation score per module (and per function with ``--functions``) after ``mutmut run``.

Usage, from the repository root: ``python tests/mutants/score.py [--functions] [--survivors]``.
Reads mutmut's results in ``mutants/``; *killed* counts mutants a test
failed on (or a timeout: the mutant made the suite hang); the score is
killed / (all but the ones no test reaches). A function whose mutants no
fast test reaches is listed, not hidden.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

KILLED = {1, 3, 24, -24, 36, 152, 255}  # a failing test, or a timeout (-SIGXCPU)
NO_TESTS = {5, 33}


def results(*dirs: Path) -> dict[str, dict[str, int | None]]:
    """mutant name -> exit code, grouped by module, merged over ``dirs``.

    A kill in any folder stands (the folders are runs of one tree whose tests
    only grew, so a mutant killed once stays killed); otherwise a later
    folder's verdict wins.
    """
    out: dict[str, dict[str, int | None]] = {}
    for folder in dirs:
        for meta in sorted((folder / "src").rglob("*.py.meta")):
            rel = meta.relative_to(folder / "src").with_suffix("").with_suffix("")
            codes = out.setdefault(".".join(rel.parts), {})
            for name, code in json.loads(meta.read_text(encoding="utf-8"))[
                "exit_code_by_key"
            ].items():
                if codes.get(name) in KILLED:
                    continue
                if code is not None or name not in codes:
                    codes[name] = code
    return out


def _function(mutant: str) -> str:
    return mutant.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[-1].removeprefix("x_")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", action="store_true", help="a line per function too")
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    parser.add_argument(
        "--from",
        dest="dirs",
        action="append",
        type=Path,
        metavar="DIR",
        help="mutmut work folders to merge (default: mutants/); later ones win",
    )
    args = parser.parse_args(argv)
    by_module = results(*(args.dirs or [ROOT / "mutants"]))
    if not by_module:
        print("no results: run `mutmut run` first")
        return 1
    print(f"{'module':<28} {'mutants':>7} {'killed':>6} {'survived':>8} {'no tests':>8} "
          f"{'unchecked':>9} {'score':>6}")  # fmt: skip
    for module, codes in by_module.items():
        rows: dict[str, Counter[str]] = defaultdict(Counter)
        for name, code in codes.items():
            kind = (
                "unchecked" if code is None
                else "killed" if code in KILLED
                else "no tests" if code in NO_TESTS
                else "survived"
            )  # fmt: skip
            rows[""][kind] += 1
            rows[_function(name)][kind] += 1
            if args.survivors and kind == "survived":
                print(f"  survived: {name}")
        for fn, c in sorted(rows.items()):
            if fn and not args.functions:
                continue
            judged = c["killed"] + c["survived"]
            score = f"{100 * c['killed'] / judged:.1f}%" if judged else "-"
            label = module.removeprefix("actonce.") if not fn else f"  {fn}"
            print(f"{label:<28} {sum(c.values()):>7} {c['killed']:>6} {c['survived']:>8} "
                  f"{c['no tests']:>8} {c['unchecked']:>9} {score:>6}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
