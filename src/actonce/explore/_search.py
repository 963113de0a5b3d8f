"""Searching the machine: breadth-first and exhaustive, or random walks; replay.

Breadth first, so the first trace found to a violation is a shortest one.
Every state is kept once (a dictionary from the state to the step that first
reached it: the trace is read back from there). A step that breaks an
invariant is reported with its trace; the explorer does not go on from it
(an accepted residual is counted and explored on). A quiescent state (every
run over, nothing left to start) is checked for liveness (``Machine.final``).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._rules.errors import UsageError
from .._rules.model import EffectRecord
from .._run.ops import (
    AppendEvent,
    Claim,
    Get,
    Now,
    OpenEffects,
    Perform,
    Point,
    Release,
    Sleep,
    Transition,
    Verify,
)
from ._machine import Build, Machine, State, Step, Violation
from ._store import FAIL_AFTER, FAIL_BEFORE, OK
from ._world import Bounds

__all__ = ["Finding", "Report", "explore", "random_walks", "replay"]

Progress = Callable[[int, int, float], None]


@dataclass(frozen=True)
class Finding:
    """A broken invariant and a shortest trace that breaks it."""

    invariant: str
    message: str
    residual: bool
    trace: tuple[str, ...]
    steps: tuple[str, ...] = ()
    flags: str = ""

    @property
    def trace_text(self) -> str:
        return " ".join(self.trace)

    def text(self) -> str:
        kind = "known residual" if self.residual else "VIOLATION"
        lines = [f"{kind}: {self.invariant}: {self.message}", f"trace ({len(self.trace)} steps):"]
        lines += [f"  {n:>3}. {line}" for n, line in enumerate(self.steps, 1)]
        lines.append(f"replay: actonce explore {self.flags}--trace '{self.trace_text}'")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "message": self.message,
            "residual": self.residual,
            "trace": self.trace_text,
            "steps": list(self.steps),
        }


@dataclass
class Report:
    """What one exploration (or one set of random walks) saw."""

    build: str
    bounds: Bounds
    mode: str
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = False
    quiescent: int = 0
    violations: list[Finding] = field(default_factory=list)
    residuals: dict[str, Finding] = field(default_factory=dict)
    residual_steps: int = 0
    walks: int = 0
    found_at_walk: int | None = None
    positions: int = 0
    store_states: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        what = f"{self.states} states, {self.transitions} transitions, depth {self.depth}"
        if self.mode == "walk":
            what = f"{self.walks} walks, {self.states} steps"
        head = (
            f"explore [{self.build}] {what}, {self.seconds:.1f}s"
            f"{'' if self.complete or self.mode == 'walk' else ' (incomplete)'}"
        )
        lines = [head]
        for finding in self.residuals.values():
            lines.append(
                f"known residual ({self.residual_steps} steps): {finding.invariant}: {finding.message}"
            )
        if not self.violations:
            lines.append("no violation")
        for finding in self.violations:
            lines.append(finding.text())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        b = self.bounds
        return {
            "build": self.build,
            "mode": self.mode,
            "ok": self.ok,
            "complete": self.complete,
            "states": self.states,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "quiescent": self.quiescent,
            "walks": self.walks,
            "found_at_walk": self.found_at_walk,
            "positions": self.positions,
            "store_states": self.store_states,
            "bounds": {
                "workers": b.workers,
                "runs": b.runs,
                "reconciles": b.reconciles,
                "reviews": b.reviews,
                "crashes": b.crashes,
                "failed_writes": b.failed_writes,
                "ticks": b.ticks,
                "depth": b.depth,
                "performs": list(b.performs),
                "verify_after_claim": b.verify_after_claim,
                "review_binds_attempt": b.review_binds_attempt,
            },
            "violations": [f.to_json() for f in self.violations],
            "residuals": [f.to_json() for f in self.residuals.values()],
            "residual_steps": self.residual_steps,
        }


def _trace(parents: dict[State, tuple[State, str] | None], s: State) -> list[str]:
    out: list[str] = []
    link = parents[s]
    while link is not None:
        s, label = link
        out.append(label)
        link = parents[s]
    out.reverse()
    return out


def explore(
    bounds: Bounds,
    build: Build,
    *,
    stop_at_first: bool = True,
    max_states: int | None = None,
    progress: Progress | None = None,
) -> Report:
    """Breadth-first search of every state within ``bounds``."""
    m = Machine(bounds, build)
    report = Report(build.name, bounds, "exhaustive")
    started = time.perf_counter()
    s0 = m.initial()
    parents: dict[State, tuple[State, str] | None] = {s0: None}
    frontier = [s0]
    depth = 0
    stopped = False
    while frontier and not stopped:
        if bounds.depth is not None and depth >= bounds.depth:
            break
        nxt: list[State] = []
        for s in frontier:
            if m.quiescent(s):
                report.quiescent += 1
                v = m.final(s)
                if v is not None and _note(report, m, parents, s, None, v, bounds, build):
                    stopped = stop_at_first
                    if stopped:
                        break
            for step in m.successors(s):
                report.transitions += 1
                bad = False
                for v in step.violations:
                    bad |= _note(report, m, parents, s, step, v, bounds, build)
                if bad:
                    if stop_at_first:
                        stopped = True
                        break
                    continue
                if step.state not in parents:
                    parents[step.state] = (s, step.label)
                    nxt.append(step.state)
            if stopped:
                break
        if progress is not None:
            progress(len(parents), depth, time.perf_counter() - started)
        if max_states is not None and len(parents) >= max_states:
            frontier = nxt
            break
        frontier = nxt
        depth += 1
    report.complete = not frontier and not stopped
    report.states = len(parents)
    report.depth = depth
    report.seconds = time.perf_counter() - started
    report.positions = len(m.trie)
    report.store_states = len(m.ledger)
    return report


def _note(
    report: Report,
    m: Machine,
    parents: dict[State, tuple[State, str] | None],
    s: State,
    step: Step | None,
    v: Violation,
    bounds: Bounds,
    build: Build,
) -> bool:
    """Record ``v``; True when it is a real violation (not the accepted residual)."""
    if v.residual:
        report.residual_steps += 1
        if v.invariant not in report.residuals:
            trace = tuple(_trace(parents, s) + ([] if step is None else [step.label]))
            report.residuals[v.invariant] = _finding(v, trace, bounds, build, m)
        return False
    trace = tuple(_trace(parents, s) + ([] if step is None else [step.label]))
    report.violations.append(_finding(v, trace, bounds, build, m))
    return True


def physical(m: Machine, trace: tuple[str, ...]) -> tuple[str, ...]:
    """A trace of the symmetric search, with each worker named as the same worker throughout.

    The search keeps workers sorted (they are interchangeable), so its ``w1``
    is "the first worker in sorted order" at each step; this follows each
    worker through the sorts and names it by the place it started at. ``m``
    is the search's own machine: the sorted order depends on its positions.
    """
    n = m.n
    s = m.initial()
    perm = list(range(n))  # canonical place -> worker
    out: list[str] = []
    for label in trace:
        who, sep, rest = _split(m, label)
        child = {step.label: step for step in m.successors(s)}[label].state
        old = list(s.actors[:n])
        if child.clock != s.clock:  # a jump or a sleep: who was right after a clock read is frozen
            old = [a._replace(win=3) if a.win == 1 else a for a in old]
        unsorted = old
        if who in m.names[:n]:
            k = m.names.index(who)
            out.append(f"w{perm[k] + 1}{sep}{rest}")
            moved = Counter(child.actors[:n])
            moved.subtract(Counter(old[:k] + old[k + 1 :]))
            unsorted = [*old[:k], next(a for a, c in moved.items() if c > 0), *old[k + 1 :]]
        else:
            out.append(label)
        order = sorted(range(n), key=lambda j: unsorted[j])
        perm = [perm[order[p]] for p in range(n)]
        s = child
    return tuple(out)


def _split(m: Machine, label: str) -> tuple[str, str, str]:
    for sep in "=!+":
        who, found, rest = label.partition(sep)
        if found and (who in m.names or who == "clock"):
            return who, sep, rest
    return label, "", ""


def _finding(
    v: Violation, trace: tuple[str, ...], bounds: Bounds, build: Build, m: Machine | None = None
) -> Finding:
    if m is not None:
        trace = physical(m, trace)
    steps = tuple(text for text, _ in replay(trace, bounds, build))
    return Finding(v.invariant, v.message, v.residual, trace, steps, flags(bounds, build.name))


def flags(bounds: Bounds, build: str) -> str:
    """The command-line options that give ``bounds`` and the build (for a replay line)."""
    b, d = bounds, Bounds()
    out = []
    for name in ("workers", "runs", "reconciles", "reviews", "crashes", "failed_writes", "ticks"):
        if getattr(b, name) != getattr(d, name):
            out.append(f"--{name.replace('_', '-')} {getattr(b, name)}")
    if b.performs != d.performs:
        out.append(f"--performs {','.join(b.performs)}")
    if not b.verify_after_claim:
        out.append("--direct-claim")
    if not b.review_binds_attempt:
        out.append("--stale-review")
    if build != "real":
        out.append(f"--fault {build}")
    return "".join(f"{o} " for o in out)


def random_walks(
    bounds: Bounds,
    build: Build,
    *,
    walks: int,
    seed: int = 0,
    first: int = 0,
    progress: Progress | None = None,
) -> Report:
    """``walks`` random schedules (walk ``k`` depends only on ``(seed, k)``)."""
    m = Machine(bounds, build, symmetric=False)
    report = Report(build.name, bounds, "walk")
    started = time.perf_counter()
    for k in range(first, first + walks):
        rng = random.Random(f"{seed}:{k}")
        s = m.initial()
        labels: list[str] = []
        found: Violation | None = None
        while found is None:
            if m.quiescent(s):
                v = m.final(s)
                if v is not None and not v.residual:
                    found = v
                break
            steps = m.successors(s)
            if not steps or (bounds.depth is not None and len(labels) >= bounds.depth):
                break
            step = rng.choice(steps)
            labels.append(step.label)
            report.states += 1
            real = [v for v in step.violations if not v.residual]
            if real:
                found = real[0]
            elif step.violations:
                report.residual_steps += 1
            s = step.state
        report.walks += 1
        report.depth = max(report.depth, len(labels))
        if found is not None:
            report.found_at_walk = k
            report.violations.append(_finding(found, tuple(labels), bounds, build))
            break
        if progress is not None and report.walks % 200 == 0:
            progress(report.walks, 0, time.perf_counter() - started)
    report.seconds = time.perf_counter() - started
    report.complete = True
    report.positions = len(m.trie)
    return report


def walk_trace(bounds: Bounds, build: Build, *, seed: int, walk: int) -> tuple[str, ...]:
    """The trace of random walk ``walk`` under ``seed`` (as ``random_walks`` takes it)."""
    report = random_walks(bounds, build, walks=1, seed=seed, first=walk)
    if report.violations:
        return report.violations[0].trace
    # A clean walk: take it again, keeping its labels.
    m = Machine(bounds, build, symmetric=False)
    rng = random.Random(f"{seed}:{walk}")
    s = m.initial()
    labels: list[str] = []
    while not m.quiescent(s):
        steps = m.successors(s)
        if not steps or (bounds.depth is not None and len(labels) >= bounds.depth):
            break
        step = rng.choice(steps)
        labels.append(step.label)
        if any(not v.residual for v in step.violations):
            break
        s = step.state
    return tuple(labels)


def replay(
    trace: tuple[str, ...] | list[str] | str, bounds: Bounds, build: Build
) -> list[tuple[str, tuple[Violation, ...]]]:
    """Take the steps of ``trace`` again; each as readable text, with what it broke.

    Raises:
        UsageError: a step of the trace is not possible where it stands.
    """
    labels = trace.split() if isinstance(trace, str) else list(trace)
    m = Machine(bounds, build, symmetric=False)
    s = m.initial()
    out: list[tuple[str, tuple[Violation, ...]]] = []
    for n, label in enumerate(labels, 1):
        steps = {step.label: step for step in m.successors(s)}
        step = steps.get(label)
        if step is None:
            choices = ", ".join(sorted(steps)) or "none"
            raise UsageError(
                f"step {n} of the trace, {label!r}, is not possible there (possible: {choices})"
            )
        out.append((_describe(m, s, step), step.violations))
        s = step.state
    if m.quiescent(s):
        v = m.final(s)
        if v is not None:
            out.append(("(all runs over) a calm reconcile settles the effect", (v,)))
    return out


def _describe(m: Machine, s: State, step: Step) -> str:
    label = step.label
    t = f"t={s.clock - 1000.0:g}"
    if label.startswith("clock+"):
        return f"{t} clock: jump past every {label[6:]} window -> t={step.state.clock - 1000.0:g}"
    for sep in "=!+":
        who, found, rest = label.partition(sep)
        if found and who in m.names:
            break
    else:
        who, sep, rest = label, "", ""
    i = m.names.index(who)
    a = s.actors[i]
    if sep == "+":
        decides = f" (decides {rest})" if rest != "start" else ""
        return f"{t} {who}: start a run{decides} -> run {a.runs + 1}"
    op = m.trie.op(a.node)
    if sep == "!":
        return f"{t} {who}: SIGKILL before {_op_text(op)} -> dropped"
    mode = rest if rest in (FAIL_BEFORE, FAIL_AFTER) else OK
    if isinstance(op, (Claim, Transition, AppendEvent, Get, OpenEffects)):
        result = m.ledger.run(s.store, a.node, op, mode)
        value = result.answer.value if result.answer.throw is None else result.answer.throw.__name__
        answer = _value_text(value)
        if mode != OK:
            answer = f"{mode.replace('_', ' ')} -> {answer}"
    elif isinstance(op, Now):
        answer = t
    elif rest:
        answer = rest
    else:
        answer = "ok"
    return f"{t} {who}: {_op_text(op)} -> {answer}"


def _op_text(op: Any) -> str:
    if isinstance(op, Claim):
        base = "insert" if op.expect is None else f"from {op.expect[0]}/{op.expect[1]}"
        return f"claim {op.new.status} fence {op.new.fence} ({base}, lease to t={op.new.lease_expires_at - 1000.0:g})"
    if isinstance(op, Transition):
        extra = ""
        if op.new.status in ("claimed", "executing"):
            extra = f", lease to t={op.new.lease_expires_at - 1000.0:g}"
        return f"transition {op.expect[0]}/{op.expect[1]} -> {op.new.status}{extra}"
    if isinstance(op, Release):
        to = "no record" if op.restore is None else f"{op.restore.status}/{op.restore.fence}"
        return f"release {op.expect[0]}/{op.expect[1]} -> {to}"
    if isinstance(op, AppendEvent):
        return f"append event {op.event.type}"
    if isinstance(op, Get):
        return "get record"
    if isinstance(op, Perform):
        return f"perform under fence {op.fence}"
    if isinstance(op, Point):
        return f"pass point {op.point}"
    if isinstance(op, Sleep):
        return f"sleep {op.seconds:g}s"
    if isinstance(op, Verify):
        return "verify"
    if isinstance(op, Now):
        return "read the clock"
    return type(op).__name__.lower()


def _value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, EffectRecord):
        return f"{value.status}/{value.fence}"
    if isinstance(value, tuple):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    acquired = getattr(value, "acquired", None)
    if acquired is not None:
        return ("won " if acquired else "lost, held: ") + _value_text(value.record)
    return str(value)
