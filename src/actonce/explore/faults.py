"""Test builds of the protocol: the real source with one historical bug put back.

Each fault is a textual patch of the protocol's own source (found in whichever
module of ``actonce._run`` holds it), compiled into a fresh module beside the
real one: production code is never changed, and a fault that no longer
applies (the code it patches moved or changed) says so instead of silently
testing the fixed code. The bugs are the ones ``actonce chaos`` found (see
docs/chaos.md) and the paused-owner duplicate the lease check closed.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import types
from dataclasses import dataclass
from functools import cache

from .._rules.errors import UsageError
from .._run import effect as _effect
from .._run import review as _review
from ._machine import Build

__all__ = ["FAULTS", "Fault", "build"]


@dataclass(frozen=True, slots=True)
class Fault:
    """One bug, as (old text, new text) patches of the protocol source."""

    name: str
    found_by: str
    patches: tuple[tuple[str, str], ...]


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "stale_mark_time",
            "a mark stamped with a time read before a pause (chaos --seed 3, schedule 217)",
            (
                (
                    "yield Point(P.BEFORE_MARK_EXECUTING)\n    st.tick = yield NOW",
                    "st.tick = yield NOW\n    yield Point(P.BEFORE_MARK_EXECUTING)",
                ),
                (
                    "yield Point(P.BEFORE_CLAIM)\n    st.tick = yield NOW",
                    "st.tick = yield NOW\n    yield Point(P.BEFORE_CLAIM)",
                ),
            ),
        ),
        Fault(
            "stale_declined",
            "a stale 'declined' flag carried into a later perform (chaos --seed 1, 926 and 2295)",
            (("    st.declined = False\n    st.perform_error = None\n", ""),),
        ),
        Fault(
            "second_claim",
            "a second claim after the run's own perform (found reading the 926 path)",
            (
                (
                    "if reconcile or st.hard_stop is not None or st.performed:",
                    "if reconcile or st.hard_stop is not None:",
                ),
                (
                    # Later a performed run that finds its own mark failed became
                    # "overtaken" (issue 7); before, it saw a new key.
                    "if performed and not declined and (not mine or status is",
                    "if performed and not declined and (not mine or False and status is",
                ),
            ),
        ),
        Fault(
            "paused_owner",
            "the paused-owner duplicate the lease check closed (chaos --seed 3, schedule 109)",
            (
                (
                    "    if st.tick.now >= record.lease_expires_at:\n",
                    "    if False:  # fault: no lease check\n",
                ),
            ),
        ),
    )
}

REAL = Build("real", _effect.run_effect, _effect.reconcile_effect, _review.resolve)


def build(fault: str | None) -> Build:
    """The real protocol (``None``) or the test build with ``fault`` put back.

    Raises:
        UsageError: no such fault, or its patch no longer applies.
    """
    if fault is None or fault == "none":
        return REAL
    if fault not in FAULTS:
        raise UsageError(f"no fault {fault!r}; known: {', '.join(FAULTS)}")
    return _build(fault)


@cache
def _build(fault: str) -> Build:
    spec = FAULTS[fault]
    package = importlib.import_module("actonce._run")
    names = [f"actonce._run.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    names.append("actonce._rules.decision")
    sources = {}
    for name in names:
        module = importlib.import_module(name)
        loader = getattr(module, "__loader__", None)
        get = getattr(loader, "get_source", None)
        text = get(name) if get is not None else None
        if text:
            sources[name] = text
    patched: dict[str, str] = {}
    for old, new in spec.patches:
        holders = [n for n in sources if (patched.get(n, sources[n])).count(old) == 1]
        if len(holders) != 1:
            raise UsageError(
                f"fault {fault}: its patch no longer applies (the code moved): {old.strip()[:60]!r}"
            )
        name = holders[0]
        patched[name] = patched.get(name, sources[name]).replace(old, new)
    # Compile the patched modules, then fresh copies of every module that
    # imports one of them (transitively, dependencies first), so that every
    # call reaches the fault: after the core split the protocol is several
    # modules (effect, claim, perform, verify ...).
    deps = {name: _imports(name, text) for name, text in sources.items()}
    rebuild = set(patched)
    while True:
        more = {n for n, d in deps.items() if n not in rebuild and d & rebuild}
        if not more:
            break
        rebuild |= more
    built: dict[str, types.ModuleType] = {}
    while len(built) < len(rebuild):
        ready = sorted(n for n in rebuild - set(built) if not (deps[n] & rebuild) - set(built))
        if not ready:  # pragma: no cover - the protocol's modules import no circle
            raise UsageError(f"fault {fault}: the modules it patches import each other in a circle")
        for name in ready:
            built[name] = _compile(name, patched.get(name, sources[name]), built, fault)
    effect = built.get(_effect.__name__, _effect)
    return Build(fault, effect.run_effect, effect.reconcile_effect, _review.resolve)


_IMPORT = re.compile(r"^from (\.+)(\w*)(?:\.(\w+))? import ([\w, ]+)", re.M)


def _imports(name: str, source: str) -> set[str]:
    """The modules of the protocol that ``source`` (module ``name``) imports from."""
    package = name.rpartition(".")[0]
    out = set()
    for dots, first, second, names in _IMPORT.findall(source):
        base = package.split(".")
        base = base[: len(base) - (len(dots) - 1)]
        target = ".".join(base + [p for p in (first, second) if p])
        out.add(target)
        out.update(f"{target}.{n.strip()}" for n in names.split(",") if n.strip())
    return out


def _compile(
    name: str, source: str, built: dict[str, types.ModuleType], fault: str
) -> types.ModuleType:
    module = types.ModuleType(f"{name}__{fault}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    module.__package__ = name.rpartition(".")[0]
    module.__file__ = f"<fault build of {name}>"
    saved = {n: sys.modules[n] for n in built}
    try:
        # Imports of a patched module get the patched one ("from .. import x"
        # reads the package's attribute, "from ..x import y" sys.modules).
        for n, patched in built.items():
            sys.modules[n] = patched
            parent, _, child = n.rpartition(".")
            setattr(sys.modules[parent], child, patched)
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    finally:
        for n, real in saved.items():
            sys.modules[n] = real
            parent, _, child = n.rpartition(".")
            setattr(sys.modules[parent], child, real)
    return module
