"""Mutation testing per area: each area's modules, judged by the tests a developer runs for it.

Usage, from the repository root (docs/testing.md, "Mutation score per area")::

    python tests/mutants/areas.py --list                          # areas, modules, tests
    python tests/mutants/areas.py --area _rules --sample 40 --seed 1
    python tests/mutants/areas.py --area _rules --sample 40 --seed 1 --show   # survivors' diffs
    python tests/mutants/areas.py --area _rules --sample 40 --seed 1 --again  # judge them anew

Needs mutmut 3 (``pip install -e '.[mutation]'``, or in a venv of its own:
``--mutmut /path/to/venv/bin/mutmut`` or ``MUTMUT=...``). Each area gets a
work folder of its own under the system temp folder (keyed by this
checkout's path and the area): the tree is copied there (``src``, ``tests``,
the docs) with ``[tool.mutmut]`` rewritten to mutate the area's modules and
to run the area's tests, so pyproject's own config (the protocol's full run)
stays as it is and areas can run side by side. There, mutmut generates every
mutant of the area and records which tests reach which function (one run of
the area's tests); the sample is the first ``--sample`` mutant names ordered
by SHA-256 of ``seed:name`` (the same every time for one tree), and mutmut
judges only those, each with the area's tests that reach the mutated
function, first failure stops, under mutmut's per-mutant CPU time limit.

The score is killed / sampled: a mutant no test of the area reaches counts
against it (it is a bug those tests would miss), and so does one that
survived; ``--show`` prints each one's diff. A later run with new tests
re-copies the tree (mutmut collects the new tests' coverage) and, with
``--again``, judges the same sample anew. Every run writes its figures to
``FOLDER/score-SEED-N.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("tests", "docs", "examples", "README.md", "CHANGELOG.md")

# mutmut's exit codes (as tests/mutants/score.py reads them): a test failed or
# the mutant hit the time limit (killed); no test of the area reached it.
KILLED = {1, 3, 24, -24, 36, 152, 255}
NO_TESTS = {5, 33}


@dataclass(frozen=True)
class Area:
    name: str
    mutate: tuple[str, ...]  # mutmut only_mutate globs
    tests: tuple[str, ...]  # pytest arguments: the area's fast tests
    skip: tuple[str, ...] = ()  # mutmut do_not_mutate globs
    env: tuple[tuple[str, str], ...] = ()
    tool: str = "mutmut"  # or "ast": tests/mutants/ast_mutants.py


POSTGRES = os.environ.get("ACTONCE_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
# Tests that start Python processes: under mutmut's coverage run such a child
# inherits MUTANT_UNDER_TEST=stats and stops at its trampolines (it finds no
# mutmut config in its folder), and its hits would not count anyway.
PROCESSES = tuple(
    f"--ignore=tests/{t}.py"
    for t in (
        "approvals/test_cli_approvals",
        "approvals/test_docs",
        "approvals/test_processes",
        "approvals/test_secrets",
        "budgets/test_cli_budgets",
        "budgets/test_overspend",
        "operator/test_operator_cli",
        "operator/test_operator_processes",
    )
)
MEMORY_ONLY = ("-k", "not sqlite and not postgres")
# The secret scrubbing: names (secrets), values in free text (detect), the one
# rule set every store write passes (scrub) and the text helpers they share.
SECRETS = (
    "src/actonce/_rules/secrets.py",
    "src/actonce/_rules/text.py",
    "src/actonce/_rules/detect.py",
    "src/actonce/_rules/scrub.py",
)
FACADES = tuple(
    f"src/actonce/_{m}.py"
    for m in (
        "approvals",
        "budgets",
        "effect",
        "firewall",
        "leases",
        "ledger",
        "ledger_base",
        "operations",
        "operator",
        "queue",
        "registry",
    )
)
AREAS = {
    a.name: a
    for a in (
        Area(
            "_rules",
            ("src/actonce/_rules/*.py",),
            (
                "tests/unit",
                "tests/conformance",
                # the rules of approvals, budgets and the operator's summary are stated there
                "tests/approvals",
                "tests/budgets",
                "tests/operator",
                *PROCESSES,
                *MEMORY_ONLY,
            ),
            skip=SECRETS,
        ),
        Area(
            "secrets",
            SECRETS,
            (
                "tests/hardening/test_secrets.py",
                "tests/hardening/test_policy.py",
                "tests/hardening/test_world_text.py",
                "tests/unit",  # every rule's own tests: what a scrubbed value becomes there
                "tests/approvals",  # packets and intents keep no secret
                *PROCESSES,
                *MEMORY_ONLY,
            ),
        ),
        Area(
            "_run",
            ("src/actonce/_run/*.py",),
            (
                "tests/unit",
                "tests/conformance",
                "tests/approvals",
                "tests/budgets",
                "tests/operator",
                *PROCESSES,
                *MEMORY_ONLY,
            ),
        ),
        Area(
            "_store",
            ("src/actonce/_store/*.py",),
            (
                "tests/conformance",  # memory, SQLite and (with the DSN) PostgreSQL
                "tests/budgets",
                "tests/approvals",
                *PROCESSES,
            ),
            env=(("ACTONCE_TEST_POSTGRES_DSN", POSTGRES),),
        ),
        Area(
            "cli",
            ("src/actonce/cli/*.py",),
            (
                "tests/cli",  # tests/hardening/test_bad_input.py too, outside the loop: 105
                # processes, about 9 minutes on a loaded machine, per surviving mutant
                "tests/budgets/test_cli_budgets.py",
                "tests/approvals/test_cli_approvals.py",
                "tests/operator/test_operator_cli.py",
                "tests/explore/test_explore_cli.py",
            ),
            tool="ast",  # the tests run `python -m actonce`: mutmut sees no test reach it
        ),
        Area(
            # The public classes over the protocol and the stores (Ledger, Approvals,
            # Budgets, Operations, Operator, WorkQueue, Lease, Firewall, Effect, the
            # verifier registry): what a user calls, judged as the protocol is.
            "facades",
            FACADES,
            (
                "tests/unit",
                "tests/conformance",
                "tests/approvals",
                "tests/budgets",
                "tests/operator",
                *PROCESSES,
                *MEMORY_ONLY,
            ),
        ),
        Area("console", ("src/actonce/console/*.py",), ("tests/console", "-m", "not browser")),
        Area(
            "browser",
            ("src/actonce/browser/*.py",),
            (
                "tests/unit/test_firewall_rule.py",
                "tests/unit/test_booking_steps.py",
                "tests/browser",
            ),
        ),
    )
}

# mutmut turns a mutated method into a trampoline plus mangled copies; in a
# runtime-checkable Protocol those copies become members the implementations
# lack, and `isinstance(store, EffectStore)` turns False. Protocol classes
# (signatures only) are left alone in the copy.
PROTOCOL = re.compile(r"(?m)^(class \w+\(.*\bProtocol\b.*\):)$")


def folder(area: Area) -> Path:
    """The area's work folder: one per checkout and area."""
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"actonce-mutmut-{key}" / area.name.strip("_")


def config(area: Area) -> str:
    lines = [
        "[tool.mutmut]",
        'source_paths = ["src/"]',
        f"only_mutate = {json.dumps(list(area.mutate))}",
        f"do_not_mutate = {json.dumps(list(area.skip))}",
        f"pytest_add_cli_args_test_selection = {json.dumps(list(area.tests))}",
        'pytest_add_cli_args = ["-q", "-p", "no:cacheprovider"]',
        'also_copy = ["docs/", "README.md", "CHANGELOG.md", "examples/"]',
    ]
    return "\n".join(lines) + "\n"


def _copy_source(target: Path) -> None:
    """Copy src/ with Protocols marked; a file whose copy is unchanged is not touched.

    mutmut regenerates (and forgets the results of) a file whose mtime moved.
    """
    for src in (ROOT / "src").rglob("*"):
        if "__pycache__" in src.parts or src.is_dir():
            continue
        dst = target / src.relative_to(ROOT)
        data = src.read_bytes()
        if src.suffix == ".py":
            data = PROTOCOL.sub(r"\1  # pragma: no mutate block", data.decode()).encode()
        if dst.exists() and dst.read_bytes() == data:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        shutil.copystat(src, dst)


def prepare(area: Area) -> Path:
    """Copy the tree (not mutmut's results) into the area's folder, with its config."""
    target = folder(area)
    target.mkdir(parents=True, exist_ok=True)
    _copy_source(target)
    for name in COPIED:
        src, dst = ROOT / name, target / name
        if src.is_dir():
            shutil.copytree(
                src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(src, dst)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    own = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", pyproject)
    text = own.rstrip() + "\n\n" + config(area)
    dst = target / "pyproject.toml"
    if not dst.exists() or dst.read_text(encoding="utf-8") != text:
        dst.write_text(text, encoding="utf-8")
    return target


def results(area: Area) -> dict[str, int | None]:
    """mutant name -> mutmut's exit code (None: not judged yet)."""
    out: dict[str, int | None] = {}
    for meta in sorted((folder(area) / "mutants" / "src").rglob("*.py.meta")):
        out.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return out


def sample(names: list[str], n: int, seed: str) -> list[str]:
    """The first ``n`` names ordered by SHA-256 of ``seed:name``: the same every time."""

    def rank(name: str) -> str:
        return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()

    return sorted(sorted(names, key=rank)[:n])


def kind(code: int | None) -> str:
    if code is None:
        return "not judged"
    if code in KILLED:
        return "killed"
    if code in NO_TESTS:
        return "no tests"
    return "survived"


def mutmut(area: Area, exe: str, children: int, names: list[str]) -> str:
    """Run mutmut in the area's folder; its output (a spinner, mostly) is returned, not shown."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(area.env)
    command = ["nice", "-n", "15", exe, "run", "--max-children", str(children), *names]
    done = subprocess.run(
        command, cwd=folder(area), env=env, capture_output=True, text=True, check=False
    )
    return done.stdout[-3000:] + done.stderr[-3000:]


def run_ast(area: Area, args: argparse.Namespace) -> int:
    """The area judged by tests/mutants/ast_mutants.py (one mutant at a time, a copy of src/)."""
    import ast_mutants

    by_name = {s.name: s for s in ast_mutants.sites(area.mutate, area.skip)}
    chosen = sample(list(by_name), args.sample, args.seed)
    tests = area.tests
    base = folder(area)
    base.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    baseline = subprocess.run(
        ["nice", "-n", "15", sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
         *tests],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    took = time.monotonic() - start
    if baseline.returncode != 0:
        print(baseline.stdout[-3000:], file=sys.stderr)
        print(f"{area.name}: the tests fail without a mutant", file=sys.stderr)
        return 1
    timeout = args.timeout or max(60.0, 3 * took)
    print(f"{area.name}: baseline {took:.0f}s, timeout {timeout:.0f}s per mutant", flush=True)
    out = base / f"ast-score-{args.seed}-{len(chosen)}.json"
    outcomes: dict[str, str] = {}
    if out.exists() and not args.again:
        # The tests only grew since: a mutant killed then stays killed; judge the others.
        before = json.loads(out.read_text(encoding="utf-8"))
        outcomes = {n: "killed" for n in chosen if n not in before["not killed"]}
        print(f"  {len(outcomes)} killed before (--again judges them anew)", flush=True)
    todo = [by_name[n] for n in chosen if n not in outcomes]
    for verdict in ast_mutants.judge(todo, tests, timeout):
        outcomes[verdict.site.name] = verdict.outcome
        print(f"  {verdict.outcome:<8} {verdict.seconds:5.0f}s {verdict.site.name}", flush=True)
    counts = Counter("killed" if o == "timeout" else o for o in outcomes.values())
    score = counts["killed"] / len(chosen)
    not_killed = [n for n in chosen if outcomes[n] not in ("killed", "timeout")]
    figures = {
        "area": area.name, "tool": "ast", "seed": args.seed, "mutants": len(by_name),
        "sampled": len(chosen), **counts, "timeouts": sum(o == "timeout" for o in outcomes.values()),
        "score": round(100 * score, 1), "not killed": not_killed,
    }  # fmt: skip
    out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    print(
        f"{area.name} (ast): {len(by_name)} mutants, sampled {len(chosen)} (seed {args.seed}): "
        f"killed {counts['killed']} ({figures['timeouts']} by timeout), "
        f"survived {counts['survived']}, no tests {counts['no tests']}; score {100 * score:.1f}%"
    )
    for name in not_killed:
        print(f"  {outcomes[name]}: {name}")
        if args.show:
            print("    " + ast_mutants.diff(by_name[name]).replace("\n", "\n    "))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="the areas, their modules and tests")
    parser.add_argument("--area", choices=sorted(AREAS))
    parser.add_argument("--sample", type=int, default=40, help="how many mutants (default 40)")
    parser.add_argument("--seed", default="1")
    parser.add_argument("--children", type=int, default=1, help="mutmut workers (default 1)")
    parser.add_argument("--mutmut", default=os.environ.get("MUTMUT") or shutil.which("mutmut"))
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    parser.add_argument("--again", action="store_true", help="judge the sample anew")
    parser.add_argument("--tool", choices=("mutmut", "ast"), help="default: the area's")
    parser.add_argument(
        "--timeout", type=float, help="seconds per mutant (ast; default 3x baseline)"
    )
    args = parser.parse_args(argv)
    if args.list or not args.area:
        for a in AREAS.values():
            skip = f" (not {' '.join(a.skip)})" if a.skip else ""
            print(f"{a.name}: mutate {' '.join(a.mutate)}{skip}; tests {' '.join(a.tests)}")
        return 0
    area = AREAS[args.area]
    if (args.tool or area.tool) == "ast":
        return run_ast(area, args)
    if not args.mutmut:
        print("mutmut not found: pip install -e '.[mutation]', or --mutmut PATH", file=sys.stderr)
        return 2
    prepare(area)
    # Generates the mutants and records which tests reach which function; a name
    # that matches no mutant judges none (mutmut then stops with an assertion).
    output = mutmut(area, args.mutmut, args.children, ["NO-MUTANT-IS-NAMED-THIS"])
    codes = results(area)
    if not codes:
        print(output, file=sys.stderr)
        print(f"no mutants in {folder(area)}: mutmut failed there", file=sys.stderr)
        return 1
    chosen = sample(list(codes), args.sample, args.seed)
    todo = chosen if args.again else [n for n in chosen if codes[n] is None]
    if todo:
        output = mutmut(area, args.mutmut, args.children, todo)
        codes = results(area)
        if any(codes[n] is None for n in chosen):  # mutmut stopped: a test fails as it is?
            print(output, file=sys.stderr)
    counts = Counter(kind(codes[n]) for n in chosen)
    score = counts["killed"] / len(chosen)
    figures = {
        "area": area.name,
        "seed": args.seed,
        "mutants": len(codes),
        "sampled": len(chosen),
        **counts,
        "score": round(100 * score, 1),
        "not killed": [n for n in chosen if kind(codes[n]) != "killed"],
    }
    out = folder(area) / f"score-{args.seed}-{len(chosen)}.json"
    out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    print(
        f"{area.name}: {len(codes)} mutants, sampled {len(chosen)} (seed {args.seed}): "
        f"killed {counts['killed']}, survived {counts['survived']}, "
        f"no tests {counts['no tests']}, not judged {counts['not judged']}; "
        f"score {100 * score:.1f}%"
    )
    for name in figures["not killed"]:
        print(f"  {kind(codes[name])}: {name}")
        if args.show:
            shown = subprocess.run(
                [args.mutmut, "show", name],
                cwd=folder(area),
                capture_output=True,
                text=True,
                check=False,
            )
            print("    " + shown.stdout.strip().replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
