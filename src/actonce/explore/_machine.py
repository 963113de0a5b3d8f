"""The explorer's state machine: actors, their choices, and the invariants.

One global state (:class:`State`, hashable) is the store state (interned, see
``_store``), the world (the effects it accepted, with the virtual time of each),
the virtual clock, every actor's position (a node of the trie, see ``_trie``)
and what the bounds have used up. :meth:`Machine.successors` lists every step
the explorer may take from a state: an actor's next operation with each of
its possible answers (a write that succeeds, or fails before or after its
commit; each verdict the world allows; each way a perform can go), an actor
dropped (SIGKILL), an actor starting a run, or the clock jumping. Each step
comes with the invariants it broke.

Residual windows. A process may be frozen between reading the clock and the
operation that uses what it read (the lease check before a perform, the time
a mark is stamped with). No crash point lies there, so no lease can fence it:
it is the documented residual. The explorer tracks it: an actor's operation
that directly follows its clock read, with a clock jump in between, is
*frozen*; a violation that needs such a frozen operation is reported as the
known, accepted residual, not as a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._rules.errors import InvalidTransition, LedgerError, UnknownEffect
from .._rules.lifecycle import REVIEWABLE
from .._rules.model import OPEN_STATUSES, Absent, Confirmed, EffectRecord, Status
from .._run.effect import Plan
from .._run.ops import (
    AppendEvent,
    Claim,
    Evidence,
    Get,
    Now,
    OpenEffects,
    Perform,
    Performed,
    Point,
    Precondition,
    Release,
    Sleep,
    StoreOp,
    Tick,
    Transition,
    Verified,
    Verify,
)
from ._store import FAIL_AFTER, FAIL_BEFORE, OK, Ledger
from ._trie import Answer, Program, Trie
from ._world import Bounds, verdicts

__all__ = ["IDLE", "Actor", "Build", "Machine", "State", "Step", "Violation"]

IDLE = -1
KEY = "explore-effect"
T0 = 1000.0
S = Status
_WRITES = (Claim, Transition, Release, AppendEvent)
_CHANGES = (Claim, Transition, Release, Perform, Sleep)
_SETTLED = frozenset({S.CONFIRMED, S.FAILED, S.NEEDS_REVIEW, S.ABANDONED})
_HUMAN_ONLY = frozenset({S.CONFIRMED, S.ABANDONED, S.NEEDS_REVIEW})


@dataclass(frozen=True, slots=True)
class Build:
    """The protocol under test: the real one, or a test build with a fault."""

    name: str
    run_effect: Callable[[Plan], Generator[Any, Any, Any]]
    reconcile_effect: Callable[[Plan, EffectRecord], Generator[Any, Any, Any]]
    resolve: Callable[..., Generator[Any, Any, Any]]


class Actor(NamedTuple):
    node: int  # trie position (IDLE: no run under way)
    runs: int  # runs started
    fence: int  # the fence this run holds a claim of (0: none)
    performs: int  # performs in this run
    win: int  # 1: its last operation read the clock; 2 added: the clock moved since


class State(NamedTuple):
    store: int
    world: tuple[tuple[float, bool], ...]  # (accepted at, by a frozen perform)
    clock: float
    actors: tuple[Actor, ...]
    crashes: int
    ticks: int
    fails: int
    reopened: int  # a human said "not happened": the key is open again
    writes: int  # committed state changes
    frozen: bool  # a perform ran from a frozen lease check (the residual window)


class Violation(NamedTuple):
    invariant: str
    message: str
    residual: bool = False


class Step(NamedTuple):
    label: str
    state: State
    violations: tuple[Violation, ...] = ()


@dataclass
class _Shared:
    errors: dict[str, BaseException] = field(default_factory=dict)


class Machine:
    """Steps of the protocol under ``bounds``; see the module docstring."""

    def __init__(self, bounds: Bounds, build: Build, *, symmetric: bool = True) -> None:
        self.bounds = bounds
        self.symmetric = symmetric
        self.build = build
        self.policy = bounds.policy()
        self.trie = Trie()
        self.ledger = Ledger(KEY)
        self.n = bounds.workers
        self.names = [f"w{i + 1}" for i in range(self.n)] + ["reconcile", "reviewer"]
        self._errors = {
            "lost": TimeoutError("explorer: the response was lost after the provider committed"),
            "refused": RuntimeError("explorer: HTTP 500, nothing landed"),
        }
        self._final: dict[tuple[Any, ...], Violation | None] = {}

    # --- programs ------------------------------------------------------------------

    def plan(self, run_id: str) -> Plan:
        return Plan(KEY, "explore", "{}", "payload-hash", "{}", self.policy, run_id)

    def program(self, i: int, run: int, decision: str = "", seen: int = 0) -> Program:
        name = f"{self.names[i]}.{run}{':' + decision if decision else ''}"
        build = self.build
        if i < self.n:
            # Workers run the same program under the same run id (the protocol
            # decides on fences, never on run ids): workers are interchangeable.
            name = f"worker.{run}"
            plan = self.plan(name)
            return Program(name, lambda: build.run_effect(plan))
        if i == self.n:
            plan = self.plan(name)

            def reconcile() -> Generator[Any, Any, Any]:
                found: tuple[EffectRecord, ...] = yield OpenEffects(10)
                mine = [r for r in found if r.key == KEY]
                if not mine:
                    return None
                return (yield from build.reconcile_effect(plan, mine[0]))

            return Program(name, reconcile)
        binds = self.bounds.review_binds_attempt
        name = f"{name}@{seen}" if binds else name

        def review() -> Generator[Any, Any, Any]:
            return (
                yield from build.resolve(
                    KEY, decision, reviewer="human", reason="checked the world",
                    attempt=seen if binds else None,
                )
            )  # fmt: skip

        return Program(name, review)

    def initial(self) -> State:
        actors = [Actor(self.trie.root(self.program(i, 1)), 1, 0, 0, 0) for i in range(self.n)]
        actors += [Actor(IDLE, 0, 0, 0, 0), Actor(IDLE, 0, 0, 0, 0)]
        return State(self.ledger.empty, (), T0, self._canon(actors), 0, 0, 0, 0, 0, False)

    def _canon(self, actors: list[Actor]) -> tuple[Actor, ...]:
        """Symmetry reduction: workers are interchangeable, so their order is sorted."""
        n = self.n
        if self.symmetric and n > 1:
            actors[:n] = sorted(actors[:n])
        return tuple(actors)

    def order(self, s: State) -> list[int]:
        """Which worker of ``s`` stands at each place of its canonical (sorted) order."""
        return sorted(range(self.n), key=lambda j: s.actors[j])

    # --- successors ------------------------------------------------------------------

    def successors(self, s: State) -> list[Step]:
        trie, b = self.trie, self.bounds
        still = s.ticks >= b.ticks and b.verify_attempts == 1
        # (The reductions are the search's: a machine without symmetry, for
        # walks and replays, offers every step, so any trace of either replays.)
        for i in range(len(s.actors)) if self.symmetric else ():
            a = s.actors[i]
            # Partial-order reduction: passing a crash point changes nothing and
            # commutes with every other step (a crash there equals one after it);
            # so does appending an observation to the history (nothing reads the
            # history; its failures are the same actor's choices), and reading
            # the clock once nothing can move it any more (no jump left, no
            # verification backoff).
            if a.node != IDLE:
                op = trie.op(a.node)
                if isinstance(op, (Point, AppendEvent)) or (isinstance(op, Now) and still):
                    return self._answer(s, i, a, op)
        out: list[Step] = []
        record = self.ledger.record(s.store)
        status = None if record is None else record.status
        for i, a in enumerate(s.actors):
            if a.node != IDLE:
                op = trie.op(a.node)
                out += self._answer(s, i, a, op)
                # A crash before a read equals one right after it (the read
                # changed nothing shared): crashes are tried before the
                # operations that change something.
                if s.crashes < b.crashes and isinstance(op, _CHANGES):
                    out.append(
                        Step(
                            f"{self.names[i]}!crash",
                            self._set(s, i, a._replace(node=IDLE))._replace(crashes=s.crashes + 1),
                        )
                    )
            else:
                out += self._starts(s, i, a, status)
        if s.ticks < b.ticks:
            for name, seconds in b.jumps():
                moved = self._moved(s.actors, -1)
                out.append(
                    Step(
                        f"clock+{name}",
                        s._replace(clock=s.clock + seconds, ticks=s.ticks + 1, actors=moved),
                    )
                )
        return out

    def quiescent(self, s: State) -> bool:
        if any(a.node != IDLE for a in s.actors):
            return False
        record = self.ledger.record(s.store)
        status = None if record is None else record.status
        return not any(self._starts(s, i, a, status) for i, a in enumerate(s.actors))

    def _starts(self, s: State, i: int, a: Actor, status: Status | None) -> list[Step]:
        b = self.bounds
        record = self.ledger.record(s.store)
        name = self.names[i]
        if i < self.n:
            if a.runs >= b.runs:
                return []
            return [Step(f"{name}+start", self._begin(s, i, a, self.program(i, a.runs + 1)))]
        if i == self.n:
            if a.runs >= b.reconciles or status not in OPEN_STATUSES:
                return []
            return [Step(f"{name}+start", self._begin(s, i, a, self.program(i, a.runs + 1)))]
        if a.runs >= b.reviews or status not in REVIEWABLE:
            return []
        truth = "happened" if s.world else "not_happened"
        seen = 0 if record is None else record.fence
        return [
            Step(f"{name}+{d}", self._begin(s, i, a, self.program(i, a.runs + 1, d, seen)))
            for d in (truth, "abandon")
        ]

    def _begin(self, s: State, i: int, a: Actor, program: Program) -> State:
        return self._set(s, i, Actor(self.trie.root(program), a.runs + 1, 0, 0, 0))

    def _set(self, s: State, i: int, a: Actor) -> State:
        actors = list(s.actors)
        actors[i] = a
        return State(s[0], s[1], s[2], self._canon(actors), s[4], s[5], s[6], s[7], s[8], s[9])

    def _moved(self, actors: tuple[Actor, ...], skip: int) -> tuple[Actor, ...]:
        """The clock moved: every actor right after a clock read is now frozen there.

        (Not sorted when an actor ``skip`` is about to be set by its index.)
        """
        moved = [a._replace(win=3) if a.win == 1 and j != skip else a for j, a in enumerate(actors)]
        return tuple(moved) if skip >= 0 else self._canon(moved)

    def _answer(self, s: State, i: int, a: Actor, op: Any) -> list[Step]:
        name = self.names[i]
        if isinstance(op, (_WRITES, Get, StoreOp)):
            return self._store_op(s, i, a, op)
        tick = Tick(s.clock, s.clock, True)
        if isinstance(op, Now):
            return [self._after(s, i, a, op, Answer(("now", s.clock), tick), name, win=1)]
        if isinstance(op, (Point, Evidence)):
            return [self._after(s, i, a, op, Answer(("none",)), name)]
        if isinstance(op, Precondition):
            return [self._after(s, i, a, op, Answer(("pre", True), True), name)]
        if isinstance(op, Sleep):
            moved = s._replace(clock=s.clock + op.seconds, actors=self._moved(s.actors, i))
            return [self._after(moved, i, a, op, Answer(("none",)), name)]
        if isinstance(op, Verify):
            choices = verdicts(s.world, s.clock, self.bounds.visibility)
            if not self.bounds.verdicts:
                choices = [c for c in choices if c[0] != "unavailable"][-1:]
            return [
                self._after(
                    s,
                    i,
                    a,
                    op,
                    Answer(("verify", label, s.clock), Verified(v, tick)),
                    f"{name}={label}",
                )
                for label, v in choices
            ]
        if isinstance(op, Perform):
            return self._perform(s, i, a, op, tick)
        raise TypeError(f"the explorer cannot answer {op!r}")  # pragma: no cover

    def _after(
        self,
        s: State,
        i: int,
        a: Actor,
        op: Any,
        answer: Answer,
        label: str,
        *,
        win: int = 0,
        violations: tuple[Violation, ...] = (),
        fence: int | None = None,
        performs: int | None = None,
    ) -> Step:
        nid = self.trie.step(a.node, answer)
        ended = self.trie.ended(nid)
        new = Actor(
            IDLE if ended is not None else nid,
            a.runs,
            a.fence if fence is None else fence,
            a.performs if performs is None else performs,
            win,
        )
        found = violations
        if ended is not None and ended.error is not None and not self._allowed(i, ended.error):
            err = ended.error
            found += (
                Violation(
                    "protocol_raises_only_ledger_errors",
                    f"{self.names[i]} raised {type(err).__name__}: {err}",
                ),
            )
        return Step(label, self._set(s, i, new), found)

    def _allowed(self, i: int, error: BaseException) -> bool:
        if isinstance(error, LedgerError):
            return True
        return i == self.n + 1 and isinstance(error, (InvalidTransition, UnknownEffect))

    def _perform(self, s: State, i: int, a: Actor, op: Perform, tick: Tick) -> list[Step]:
        name = self.names[i]
        snap = self.ledger.snapshot(s.store)
        record = snap.record
        frozen = a.win == 3
        base: list[Violation] = []
        marked = any(k[1] == op.fence and k[4] is S.EXECUTING for k in snap.changes)
        if not marked:
            base.append(
                Violation(
                    "mark_before_perform",
                    f"{name} performed under fence {op.fence} without its executing mark",
                )
            )
        if a.performs:
            base.append(
                Violation("one_perform_per_run", f"{name} performed a second time in one run")
            )
        changed = record is None or (record.status, record.fence) != (S.EXECUTING, op.fence)
        out: list[Step] = []
        for outcome in self.bounds.performs:
            lands = outcome != "refused"
            world = (*s.world, (s.clock, frozen)) if lands else s.world
            found = list(base)
            if lands and len(world) > 1 + s.reopened:
                residual = s.frozen or frozen
                found.append(
                    Violation(
                        "at_most_one_accepted",
                        f"the world holds {len(world)} accepted effects for one key",
                        residual,
                    )
                )
            error = self._errors.get(outcome)
            for overtaken in (False, True) if changed else (False,):
                done = Performed(error, None, tick, 0.0, overtaken)
                label = f"{name}={outcome}" + ("+overtaken" if overtaken else "")
                answer = Answer(("perform", outcome, overtaken, s.clock), done)
                out.append(
                    self._after(
                        State(
                            s[0], world, s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9] or frozen
                        ),
                        i,
                        a,
                        op,
                        answer,
                        label,
                        violations=tuple(found),
                        performs=a.performs + 1,
                    )
                )
        return out

    def _store_op(self, s: State, i: int, a: Actor, op: Any) -> list[Step]:
        name = self.names[i]
        modes = [OK]
        if isinstance(op, _WRITES) and s.fails < self.bounds.failed_writes:
            modes += [FAIL_BEFORE, FAIL_AFTER]
        out = []
        for mode in modes:
            result = self.ledger.run(s.store, a.node, op, mode)
            fence = None
            found: tuple[Violation, ...] = ()
            fails = s.fails + (mode != OK)
            if result.committed and not isinstance(op, AppendEvent):
                if isinstance(op, Claim):
                    fence = op.new.fence
                reopen = (
                    isinstance(op, Transition) and i == self.n + 1 and op.new.status is S.FAILED
                )
                child = State(
                    result.store, s[1], s[2], s[3], s[4], s[5], fails, s[7] + reopen, s[8] + 1, s[9]
                )
                found = self._check_write(s, child, i, a, op)
            else:
                child = State(result.store, s[1], s[2], s[3], s[4], s[5], fails, s[7], s[8], s[9])
            label = name if mode == OK else f"{name}={mode}"
            out.append(
                self._after(child, i, a, op, result.answer, label, violations=found, fence=fence)
            )
        return out

    # --- invariants --------------------------------------------------------------------

    def _check_write(
        self, s: State, child: State, i: int, a: Actor, op: Any
    ) -> tuple[Violation, ...]:
        name = self.names[i]
        ledger = self.ledger
        before = ledger.record(s.store)
        snap = ledger.snapshot(child.store)
        after = snap.record
        now = None if after is None else after.status  # None: a claim released to no record
        frozen = a.win == 3
        found: list[Violation] = []
        changes = snap.changes
        if len(changes) != child.writes or changes[-1][4] is not now:
            found.append(
                Violation(
                    "one_event_per_change", f"{child.writes} changes, {len(changes)} change events"
                )
            )
        human = i == self.n + 1
        old = None if before is None else before.status
        if isinstance(op, Claim):
            if old is not None and old not in (S.FAILED, S.CLAIMED):
                found.append(
                    Violation(
                        "never_reclaim_executing_or_unknown", f"{name} claimed a {old} effect"
                    )
                )
            if old is S.CLAIMED and before is not None and before.lease_live(s.clock):
                found.append(
                    Violation(
                        "never_reclaim_executing_or_unknown", f"{name} claimed over a live lease"
                    )
                )
        if old in _HUMAN_ONLY and not human:
            found.append(
                Violation("terminal_changes_only_by_human", f"{name} moved {old} -> {now}")
            )
        if isinstance(op, Transition) and i < self.n and a.fence and a.performs:
            # Superseded: another fence holds the key, or its own mark was failed
            # (the key re-opened). The one write left is more caution (or a
            # confirmation that verification proved).
            superseded = op.expect[1] != a.fence or op.expect[0] is S.FAILED
            if superseded and now not in (S.NEEDS_REVIEW, S.CONFIRMED):
                found.append(
                    Violation(
                        "no_superseded_fence_write",
                        f"{name} (fence {a.fence}) wrote {op.expect[0]} -> {now} on fence {op.expect[1]}",
                    )
                )
        if now is S.FAILED and not human and s.world:
            found.append(
                Violation(
                    "failed_means_absent",
                    f"{name} recorded failed while the world holds {len(s.world)} accepted effect(s)",
                    s.frozen,
                )
            )
        if (
            after is not None
            and now in (S.CLAIMED, S.EXECUTING)
            and after.lease_expires_at <= s.clock
        ):
            found.append(
                Violation(
                    "mark_carries_write_time",
                    f"{name} wrote {after.status} with a lease that had expired "
                    f"({after.lease_expires_at - T0:g} <= {s.clock - T0:g})",
                    frozen,
                )
            )
        return tuple(found)

    def final(self, s: State) -> Violation | None:
        """Liveness at a quiescent state: once nothing crashes, the effect settles truthfully.

        The clock jumps past every lease and window and one reconcile runs to
        its end with truthful verdicts; the effect must then be confirmed (and
        in the world), failed (and not in it), in review or abandoned.
        """
        key = (s.store, s.world, s.clock, s.frozen)
        if key in self._final:
            return self._final[key]
        found = self._settle(s)
        self._final[key] = found
        return found

    def _settle(self, s: State) -> Violation | None:
        clock = s.clock + self.bounds.lease + self.bounds.settle + 1.0
        tick = Tick(clock, clock, True)
        sid = s.store
        record = self.ledger.record(sid)
        residual = s.frozen
        if record is not None and record.status in OPEN_STATUSES:
            nid = self.trie.root(self.program(self.n, 99))
            while self.trie.ended(nid) is None:
                op = self.trie.op(nid)
                if isinstance(op, Now):
                    answer = Answer(("now", clock), tick)
                elif isinstance(op, Verify):
                    verdict = Confirmed("ref-1", len(s.world)) if s.world else Absent()
                    answer = Answer(("verify", str(verdict), clock), Verified(verdict, tick))
                elif isinstance(op, Sleep | Point | Evidence):
                    answer = Answer(("none",))
                else:
                    result = self.ledger.run(sid, nid, op, OK)
                    sid, answer = result.store, result.answer
                nid = self.trie.step(nid, answer)
            record = self.ledger.record(sid)
        status = None if record is None else record.status
        if status is None:
            if s.world:
                return Violation(
                    "settles_truthfully", "the world holds the effect, the ledger nothing", residual
                )
            return None
        if status not in _SETTLED:
            return Violation("no_effect_left_open", f"still {status} after a calm reconcile")
        if status is S.CONFIRMED and not s.world:
            return Violation("settles_truthfully", "confirmed, but nothing was accepted", residual)
        if status is S.FAILED and s.world:
            return Violation(
                "settles_truthfully", "failed, but the world holds the effect", residual
            )
        return None
