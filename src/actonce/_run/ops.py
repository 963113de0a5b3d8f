"""The operations a protocol generator yields, and what each is answered with.

A protocol (``effect.run_effect``, ``effect.reconcile_effect``, ``review``)
never does I/O: it yields one of these frozen values and receives the
answer. The drivers in :mod:`actonce._run.drive` execute them; a test, an
explorer or a simulator may answer them any other way.

| operation       | answer                                         |
|-----------------|------------------------------------------------|
| ``Get``         | ``EffectRecord | None``                        |
| ``Claim``       | ``ClaimResult`` (a lost race is a value)       |
| ``Transition``  | ``EffectRecord | None`` (``None``: CAS lost)   |
| ``AppendEvent`` | ``None``                                       |
| ``Now``         | ``Tick`` (ledger time, monotonic, trusted)     |
| ``Verify``      | ``Verified`` (the verdict, the clocks, a stop) |
| ``Precondition``| ``bool`` (``HardStop`` is thrown back in)      |
| ``Perform``     | ``Performed``                                  |
| ``Evidence``    | ``str | None``                                 |
| ``Sleep``       | ``None``                                       |
| ``Point``       | ``None`` (a crash point; may never return)     |
| ``GetPacket``   | ``Packet | None``                              |
| ``Refresh``     | ``Refreshed`` (facts, or why there are none)   |
| ``Hook``        | ``Hooked`` (what a hook returned or raised)    |
| ``ReplacePacket``| ``Packet | None`` (``None``: it moved meanwhile)|
| ``Release``     | ``bool`` (``False``: the claim moved meanwhile) |
| ``MatchPrefix``, ``Events``, ``Select``, ``OpenEffects``, ``Counts``,   |
| ``Duplicates``, ``HoldsOf`` | the store's answer (read-only queries) |

Store writes raise ``LedgerError`` into the generator (``throw``) when they
fail; everything else a user callable raises is folded into its answer.

Crash points ride on the operations they surround (``before``/``after`` of a
write, ``after`` of a perform) instead of being operations of their own: the
driver passes ``before`` right before the write and every ``after`` point
once the write has *won* (a claim acquired, a compare-and-set that matched),
so a point means exactly what it says, in fewer steps per effect. The two
points before a write whose time matters (``before_claim``,
``before_mark_executing``: they stamp a lease and an ``executing`` mark) stay
operations of their own, with the ``Now`` read after them: a process stopped
at such a point must not stamp its write with the time before its pause.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from .._rules.approvals import Packet
from .._rules.facts import Fact
from .._rules.holds import Gate, Settle
from .._rules.model import EffectRecord, Event, Status, Verdict
from .points import CrashPoint

__all__ = [
    "NOW",
    "PRECONDITION",
    "REFRESH",
    "VERIFY",
    "AppendEvent",
    "Claim",
    "Counts",
    "Duplicates",
    "Events",
    "Evidence",
    "Get",
    "GetPacket",
    "HoldsOf",
    "Hook",
    "Hooked",
    "MatchPrefix",
    "Now",
    "Op",
    "OpenEffects",
    "Perform",
    "Performed",
    "Point",
    "Precondition",
    "Refresh",
    "Refreshed",
    "Release",
    "ReplacePacket",
    "RunEffect",
    "Select",
    "Sleep",
    "Steps",
    "StoreOp",
    "Tick",
    "Transition",
    "Verified",
    "Verify",
]


class Tick(NamedTuple):
    """One reading of the clocks.

    ``now`` is ledger time (seconds since the epoch, one clock per ledger):
    what records and leases are stamped with and compared against. ``mono``
    is this process's monotonic clock: durations inside one run are measured
    on it. ``trusted`` is False for a while after the ledger clock was seen to
    step: windows between processes then count as not passed.
    """

    now: float
    mono: float
    trusted: bool = True


@dataclass(frozen=True, slots=True)
class Get:
    """Read the current record of ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class Claim:
    """Insert ``new`` if no row exists (``expect is None``), else CAS on ``expect``."""

    new: EffectRecord
    expect: tuple[Status, int] | None
    event: Event
    durable: bool = False
    before: CrashPoint | None = None
    after: tuple[CrashPoint, ...] = ()
    gate: Gate | None = None


@dataclass(frozen=True, slots=True)
class Transition:
    """Compare-and-set the row from ``expect`` (status, fence) to ``new``, with ``event``."""

    expect: tuple[Status, int]
    new: EffectRecord
    event: Event
    durable: bool = False
    before: CrashPoint | None = None
    after: tuple[CrashPoint, ...] = ()
    settle: Settle | None = None
    fields: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class AppendEvent:
    """Append an observation to the history (no state change)."""

    event: Event


@dataclass(frozen=True, slots=True)
class Now:
    """Read the clocks."""


@dataclass(frozen=True, slots=True)
class Verify:
    """Ask the verifier once (read-only)."""


class Verified(NamedTuple):
    """A verdict, and the clocks right after it was given.

    ``stop``: the verifier raised ``HardStop`` (a login wall, a CAPTCHA, the
    wrong account: the check cannot be trusted and retrying will not help);
    its reason, and ``verdict`` is ``Unavailable``.
    """

    verdict: Verdict
    tick: Tick
    stop: str | None = None


@dataclass(frozen=True, slots=True)
class Precondition:
    """Ask the business precondition once."""


@dataclass(frozen=True, slots=True)
class Perform:
    """Cross the boundary: call ``perform`` once.

    While it runs the driver extends the owner's lease on ``key`` under
    ``fence`` every ``heartbeat`` seconds by ``lease_seconds`` (a fenced
    compare-and-set on the ``executing`` row), so that others count their
    settle window from the owner's last sign of life.
    """

    key: str
    fence: int
    lease_seconds: float
    heartbeat: float
    after: CrashPoint | None = CrashPoint.AFTER_PERFORM


class Performed(NamedTuple):
    """What one perform did, as far as this process can tell.

    ``error``: what ``perform`` raised (``None``: it returned). ``details``:
    secret-free facts it reported (its return value when a mapping, or the
    ``details`` attribute of its exception: the wire requests, say).
    ``ended``: the clocks when it ended. ``seconds``: its monotonic duration.
    ``overtaken``: a lease extension found the row no longer this owner's.
    """

    error: Exception | None
    details: dict[str, Any] | None
    ended: Tick
    seconds: float
    overtaken: bool = False


@dataclass(frozen=True, slots=True)
class RunEffect:
    """Run one whole effect under the effect protocol (a step of an operation).

    Answer: its ``RunResult``. The driver runs ``run_effect(plan)`` with the
    step's own callables, nested in the operation it belongs to.
    """

    plan: Any  # actonce._run.plan.Plan (that module imports this one)
    fns: Any  # actonce._run.callables.Callables


@dataclass(frozen=True, slots=True)
class Evidence:
    """Capture evidence under ``label``."""

    label: str


@dataclass(frozen=True, slots=True)
class Sleep:
    """Pause between two read-only verification attempts."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Point:
    """Pass a named crash point."""

    point: CrashPoint


class StoreOp:
    """A read or write of the store that the protocols need no special handling for.

    Each subclass is a frozen dataclass naming one store primitive
    (``primitive``) and its arguments (its fields, in order); a driver answers
    it with ``getattr(store, op.primitive)(*op.args())`` (awaited by the async
    driver). Typed where it is built, one line to add.
    """

    __slots__ = ()
    primitive: ClassVar[str]

    def args(self) -> tuple[Any, ...]:
        names: tuple[str, ...] = type(self).__slots__  # the dataclass's fields, in order
        return tuple(getattr(self, name) for name in names)


@dataclass(frozen=True, slots=True)
class Release(StoreOp):
    """Give back an unperformed claim: the row as it was before it (``restore``; none: no row).

    Compare-and-set on ``expect`` (the claim's status and fence), with ``event``.
    """

    primitive: ClassVar[str] = "release"
    key: str
    expect: tuple[Status, int]
    restore: EffectRecord | None
    event: Event


@dataclass(frozen=True, slots=True)
class GetPacket(StoreOp):
    """Read one approval packet; answer: ``(packet, code digest, code used)`` or ``None``."""

    primitive: ClassVar[str] = "approval_get"
    packet_id: str


@dataclass(frozen=True, slots=True)
class Refresh:
    """Ask the refresher for the volatile facts once (read-only)."""


class Refreshed(NamedTuple):
    """Refreshed facts (``None`` when the refresh failed: ``error`` says why)."""

    facts: tuple[Fact, ...] | None
    error: str | None
    tick: Tick


@dataclass(frozen=True, slots=True)
class Hook:
    """Call the hook ``name`` of the run's host once with ``args``.

    A host is what a facade hands the driver for a loop of its own (the
    operator's: its user's stages, and the ledger work they lead to). The
    driver awaits what the hook returns when it is awaitable (async driver)
    or refuses it (sync driver).
    """

    name: str
    args: tuple[Any, ...] = ()


class Hooked(NamedTuple):
    """What one hook did: its value, or what it raised (anything, even a crash).

    A ``BaseException`` (a simulated crash, an interrupt) is handed back too,
    so that the loop can run its ``finally`` work (give its lease back)
    before it re-raises it.
    """

    value: Any
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class ReplacePacket(StoreOp):
    """Invalidate ``old`` (``reason``) and issue ``new``, its refreshed revision."""

    primitive: ClassVar[str] = "approval_replace"
    old: Packet
    reason: str
    new: Packet
    code_digest: str | None
    run_id: str


@dataclass(frozen=True, slots=True)
class MatchPrefix(StoreOp):
    """Up to ``limit`` keys that start with ``prefix``, sorted."""

    primitive: ClassVar[str] = "match_prefix"
    prefix: str
    limit: int = 2


@dataclass(frozen=True, slots=True)
class Events(StoreOp):
    """The history of ``key``, oldest first."""

    primitive: ClassVar[str] = "events"
    key: str


@dataclass(frozen=True, slots=True)
class Select(StoreOp):
    """Effects of some statuses (all when ``None``) and kind, oldest change first.

    ``after``: the ``(updated_at, key)`` of the last row of the previous page.
    """

    primitive: ClassVar[str] = "select"
    statuses: tuple[Status, ...] | None
    limit: int
    kind: str | None = None
    after: tuple[float, str] | None = None

    def args(self) -> tuple[Any, ...]:
        # A store written before keyset pages is asked for them only when used.
        base = (self.statuses, self.limit, self.kind)
        return base if self.after is None else (*base, self.after)


@dataclass(frozen=True, slots=True)
class HoldsOf(StoreOp):
    """The holds every claim of ``key`` took: ``(fence, kind, ref, amount, status)`` rows."""

    primitive: ClassVar[str] = "holds_of"
    key: str


@dataclass(frozen=True, slots=True)
class OpenEffects(StoreOp):
    """Claimed, executing and unknown effects, oldest lease first."""

    primitive: ClassVar[str] = "open_effects"
    limit: int


@dataclass(frozen=True, slots=True)
class Counts(StoreOp):
    """How many effects are in each status (only ``statuses``, when given)."""

    primitive: ClassVar[str] = "counts"
    statuses: tuple[Status, ...] | None = None

    def args(self) -> tuple[Any, ...]:
        return () if self.statuses is None else (self.statuses,)


@dataclass(frozen=True, slots=True)
class Duplicates(StoreOp):
    """How many effects were settled on a verdict that saw more than one result."""

    primitive: ClassVar[str] = "duplicates"


NOW = Now()
VERIFY = Verify()
PRECONDITION = Precondition()
REFRESH = Refresh()

Op = (
    Get
    | Claim
    | Transition
    | AppendEvent
    | Now
    | Verify
    | Precondition
    | Perform
    | Evidence
    | Sleep
    | Point
    | Refresh
    | RunEffect
    | Hook
    | StoreOp
)
Steps = Generator[Op, Any, Any]
