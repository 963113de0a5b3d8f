"""Mutation testing per area: each area's modules, judged by the tests a developer runs for it.

Usage, from the repository root (docs/testing.md, "Mutation testing")::

    python tests/mutants/areas.py list                  # the areas, their modules and tests
    python tests/mutants/areas.py prepare AREA          # a work folder with the area's config
    python tests/mutants/areas.py sample AREA -n 150    # a seeded sample of its mutant names

``prepare`` copies the tree into a folder of its own under the system temp
folder (keyed by this checkout's path and the area), with ``[tool.mutmut]``
rewritten to mutate the area's modules and run the area's tests, and prints
the folder. In it, ``mutmut run --max-children 1 NOMATCH`` generates the
mutants and collects which tests reach which function (``NOMATCH`` matches
no mutant); ``sample`` then names a deterministic sample (the first ``-n``
names ordered by a SHA-256 of seed and name) to pass to ``mutmut run``, and
``python tests/mutants/score.py --from FOLDER/mutants`` scores it. Running
mutmut there, not here, keeps pyproject's config (the protocol's run) as it
is and lets areas run side by side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("src", "tests", "docs", "examples", "README.md", "CHANGELOG.md", "pyproject.toml")


@dataclass(frozen=True)
class Area:
    name: str
    mutate: tuple[str, ...]  # mutmut only_mutate globs
    tests: tuple[str, ...]  # pytest arguments: the area's fast tests


MEMORY_ONLY = ("-k", "not sqlite and not postgres")
RULES = tuple(
    f"src/actonce/_rules/{m}.py"
    for m in [
        "approvals",
        "budgets",
        "errors",
        "facts",
        "firewall",
        "holds",
        "intents",
        "model",
        "operation_review",
        "operations",
        "operator",
        "receipts",
        "text",
    ]
)
AREAS = {
    a.name: a
    for a in (
        Area("store", ("src/actonce/_store/*.py",), ("tests/conformance",)),
        Area(
            "secrets",
            ("src/actonce/_rules/secrets.py", "src/actonce/browser/_wire.py"),
            (
                "tests/unit",
                "tests/hardening/test_secrets.py",
                "tests/approvals/test_secrets.py",
                "tests/browser/test_wire.py::test_scrub_url_drops_userinfo_query_and_fragment",
            ),
        ),
        Area("cli", ("src/actonce/cli/*.py",), ("tests/cli",)),
        Area("console", ("src/actonce/console/*.py",), ("tests/console",)),
        Area("browser", ("src/actonce/browser/*.py",), ("tests/browser",)),
        Area("rules", RULES, ("tests/unit", "tests/conformance", *MEMORY_ONLY)),
        Area("run", ("src/actonce/_run/*.py",), ("tests/unit", "tests/conformance", *MEMORY_ONLY)),
    )
}


def folder(area: Area) -> Path:
    """The area's work folder: one per checkout and area."""
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"actonce-mutmut-{key}" / area.name


def config(area: Area) -> str:
    lines = [
        "[tool.mutmut]",
        'source_paths = ["src/"]',
        f"only_mutate = {json.dumps(list(area.mutate))}",
        f"pytest_add_cli_args_test_selection = {json.dumps(list(area.tests))}",
        'pytest_add_cli_args = ["-q", "-p", "no:cacheprovider"]',
        'also_copy = ["docs/", "README.md", "CHANGELOG.md", "examples/"]',
    ]
    return "\n".join(lines) + "\n"


def prepare(area: Area) -> Path:
    """Copy the tree (not mutmut's results) into the area's folder, with its config."""
    target = folder(area)
    target.mkdir(parents=True, exist_ok=True)
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
    (target / "pyproject.toml").write_text(own.rstrip() + "\n\n" + config(area), encoding="utf-8")
    return target


def names(area: Area) -> list[str]:
    out: list[str] = []
    for meta in sorted((folder(area) / "mutants" / "src").rglob("*.py.meta")):
        out.extend(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return out


def sample(area: Area, n: int, seed: str) -> list[str]:
    """The first ``n`` mutant names ordered by SHA-256 of ``seed:name``: the same every time."""

    def rank(name: str) -> str:
        return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()

    return sorted(sorted(names(area), key=rank)[:n])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    for command in ("prepare", "sample", "folder"):
        p = sub.add_parser(command)
        p.add_argument("area", choices=sorted(AREAS))
        if command == "sample":
            p.add_argument("-n", type=int, default=150)
            p.add_argument("--seed", default="issue-23")
    args = parser.parse_args(argv)
    if args.command == "list":
        for a in AREAS.values():
            print(f"{a.name}: mutate {' '.join(a.mutate)}; tests {' '.join(a.tests)}")
        return 0
    area = AREAS[args.area]
    if args.command == "prepare":
        print(prepare(area))
    elif args.command == "folder":
        print(folder(area))
    else:
        found = sample(area, args.n, args.seed)
        if not found:
            print(f"no mutants in {folder(area)}: run mutmut there first", file=sys.stderr)
            return 1
        print("\n".join(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
