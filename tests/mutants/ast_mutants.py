"""A small AST mutator: one mutation at a time, in a copy of ``src/``, judged by pytest.

For areas whose tests run ``actonce`` as a real process (the CLI), where
mutmut cannot see which test reaches which function (its trampolines record
hits in the test process only) and so calls every mutant "no tests".
``tests/mutants/areas.py --tool ast`` uses it; every area can.

Operators, applied inside function bodies only (as mutmut does): a comparison
flipped (``==``/``!=``, ``<``/``>=``, ``>``/``<=``, ``in``/``not in``,
``is``/``is not``), ``and``/``or`` swapped, an integer constant +1, a ``not``
removed, ``return X`` made ``return None``, a statement (a call, an
assignment) dropped. A mutant is named ``MODULE:LINE:COL:OPERATOR``; the
sample is the first ``n`` names ordered by SHA-256 of ``seed:name``.

Each mutant is written into a copy of the tree (``src/``, ``tests/``, the
docs, taken when the run starts), and the area's tests run there with
``PYTHONPATH`` naming the copy's ``src``, so a subprocess the tests start
(``python -m actonce``) imports the mutant too; first failure stops, a run
past the time limit counts as killed (the mutant hung the tests).
"""

from __future__ import annotations

import ast
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Site:
    path: Path  # relative to the repository root
    line: int
    col: int
    operator: str

    @property
    def name(self) -> str:
        module = ".".join(self.path.with_suffix("").parts[1:])
        return f"{module}:{self.line}:{self.col}:{self.operator}"


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _sites_in(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(node, operator) for every mutation inside a function body."""
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    continue  # a nested function's own walk reaches its nodes
                yield from _node_sites(node)


def _node_sites(node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    if isinstance(node, ast.Compare) and type(node.ops[0]) in FLIP:
        yield node, "flip"
    elif isinstance(node, ast.BoolOp):
        yield node, "andor"
    elif (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and not isinstance(node.value, bool)
    ):
        yield node, "plus1"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node, "notnot"
    elif (
        isinstance(node, ast.Return)
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):
        yield node, "none"
    if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign)) and not _is_docstring(node):
        yield node, "drop"


def sites(globs: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[Site]:
    skipped = {Path(p) for g in skip for p in glob.glob(g, root_dir=ROOT)}
    out: dict[str, Site] = {}
    for pattern in globs:
        for rel in sorted(glob.glob(pattern, root_dir=ROOT)):
            path = Path(rel)
            if path in skipped:
                continue
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            for node, op in _sites_in(tree):
                site = Site(path, node.lineno, node.col_offset, op)  # type: ignore[attr-defined]
                out.setdefault(site.name, site)
    return list(out.values())


class _Apply(ast.NodeTransformer):
    def __init__(self, site: Site) -> None:
        self.site = site
        self.done = False

    def _hit(self, node: ast.AST, op: str) -> bool:
        return (
            not self.done
            and op == self.site.operator
            and getattr(node, "lineno", None) == self.site.line
            and getattr(node, "col_offset", None) == self.site.col
        )

    def visit(self, node: ast.AST) -> ast.AST:
        for candidate, op in _node_sites(node):
            if candidate is node and self._hit(node, op):
                self.done = True
                return ast.copy_location(self._mutate(node, op), node)
        return self.generic_visit(node)

    @staticmethod
    def _mutate(node: ast.AST, op: str) -> ast.AST:
        if op == "flip":
            assert isinstance(node, ast.Compare)
            ops = [FLIP[type(node.ops[0])](), *node.ops[1:]]
            return ast.Compare(node.left, ops, node.comparators)
        if op == "andor":
            assert isinstance(node, ast.BoolOp)
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            return ast.BoolOp(other, node.values)
        if op == "plus1":
            assert isinstance(node, ast.Constant)
            return ast.Constant(node.value + 1)
        if op == "notnot":
            assert isinstance(node, ast.UnaryOp)
            return node.operand
        if op == "none":
            return ast.Return(ast.Constant(None))
        return ast.Pass()


def mutated_source(site: Site) -> str:
    tree = ast.parse((ROOT / site.path).read_text(encoding="utf-8"))
    apply = _Apply(site)
    tree = ast.fix_missing_locations(apply.visit(tree))
    if not apply.done:
        raise LookupError(f"{site.name}: no such site (the source changed?)")
    return ast.unparse(tree) + "\n"


def diff(site: Site) -> str:
    import difflib

    before = ast.unparse(ast.parse((ROOT / site.path).read_text(encoding="utf-8"))).splitlines()
    after = mutated_source(site).splitlines()
    return "\n".join(
        difflib.unified_diff(before, after, str(site.path), str(site.path), n=1, lineterm="")
    )


@dataclass
class Verdict:
    site: Site
    outcome: str  # killed (a test failed), timeout (counts as killed), survived, no tests
    seconds: float


def judge(sites_: list[Site], tests: tuple[str, ...], timeout: float) -> Iterator[Verdict]:
    """Each site planted alone in a copy of src/, the tests run against it."""
    work = Path(tempfile.mkdtemp(prefix="actonce-ast-mutants-"))
    try:
        # The tree as it is now (src, tests, docs): a run judges every mutant with the same tests.
        for name in (
            "src",
            "tests",
            "docs",
            "examples",
            "README.md",
            "CHANGELOG.md",
            "pyproject.toml",
        ):
            if (ROOT / name).is_dir():
                shutil.copytree(
                    ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__")
                )
            elif (ROOT / name).exists():
                shutil.copy2(ROOT / name, work / name)
        env = {**os.environ, "PYTHONPATH": str(work / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
        command = ["nice", "-n", "15", sys.executable, "-m", "pytest", "-x", "-q"]
        command += ["-p", "no:cacheprovider", *tests]
        for site in sites_:
            target = work / site.path
            original = target.read_text(encoding="utf-8")
            target.write_text(mutated_source(site), encoding="utf-8")
            start = time.monotonic()
            child = subprocess.Popen(
                command,
                cwd=work,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                code = child.wait(timeout=timeout)
                outcome = {0: "survived", 5: "no tests"}.get(code, "killed")
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)  # the tests' own processes too
                child.wait()
                outcome = "timeout"
            finally:
                target.write_text(original, encoding="utf-8")
            yield Verdict(site, outcome, time.monotonic() - start)
    finally:
        shutil.rmtree(work, ignore_errors=True)
