"""The retry decision table: what to do next, given what is known.

Theory of operation. Every step of a run and of reconcile asks one question:
given the effect's current record (whose claim it is, whether its lease is
live, whether it crossed the ``executing`` mark) and the latest verification
verdict, what is the next step? The answer is a pure function of two facts:

- the *situation*, derived from the record, the caller's fencing token and
  the time (:func:`situation_of`);
- the *observation*, derived from the verifier's three-state verdict, the
  settle window and whether absence is authoritative for this kind
  (:func:`observe`).

``TABLE`` maps every (situation, observation) pair that can arise to one
:class:`Action`; any other pair raises :class:`ProtocolError`. A new key is
claimed first (``new`` + ``not_checked`` -> ``claim``): a claim is
reversible until the ``executing`` mark, so the one look before the boundary
runs under it (``owned``: absent -> the precondition, the mark, the perform;
confirmed -> recorded; unavailable -> released). ``LOOK_FIRST`` overrides
that one cell for a run that must look before it claims: a direct claim
(``Policy(verify_after_claim=False)``: the claim is the mark itself) and a
gated claim (its claim takes holds, a budget reservation and the approval's
use, that a look finding the result would have to give back). ``RETRYABLE``
lists the pairs after which a *verification* (never a perform) may be
repeated with backoff before deciding. No I/O, no clock: time is passed in.

The 14 rows of the "Retry Decision Table" of the Playwright seed map onto
cells as noted in ``SEED_ROWS``; the settle-window rule lives in
:func:`observe`; reconcile (seed 000, section 7) uses the STALE_CLAIM,
ORPHANED and UNKNOWN rows.
"""

from __future__ import annotations

import enum

from .errors import ProtocolError
from .model import Absent, Confirmed, EffectRecord, Outcome, Policy, Status, Unavailable, Verdict

__all__ = [
    "LOOK_FIRST",
    "MOVES",
    "OUTCOMES",
    "REFUSAL_OUTCOMES",
    "RETRYABLE",
    "SEED_ROWS",
    "TABLE",
    "Action",
    "Observation",
    "Situation",
    "decide",
    "observation",
    "observe",
    "outcome_of",
    "render_markdown",
    "situation",
    "situation_of",
]


class Situation(enum.StrEnum):
    """Where the effect stands, as seen by the one who asks."""

    NEW = "new"  # no record, or a proven failure: may be claimed
    OWNED = "owned"  # my claim, boundary not crossed
    PERFORMED = "performed"  # my executing mark: the effect may have happened
    DECLINED = "declined"  # my executing mark, but perform proved it stopped before the boundary
    OVERTAKEN = "overtaken"  # I performed, but my claim was superseded meanwhile
    BUSY = "busy"  # another worker's claim or executing mark, lease live
    STALE_CLAIM = "stale_claim"  # another's claim, lease expired, never executing
    ORPHANED = "orphaned"  # another's executing mark, lease expired
    UNKNOWN = "unknown"  # outcome unknown, awaiting reconcile
    REVIEW = "review"  # waiting for a human
    DONE = "done"  # confirmed
    ABANDONED = "abandoned"  # a human said never
    PRECONDITION_FALSE = "precondition_false"  # the business precondition no longer holds
    LEDGER_FAILED = "ledger_failed"  # a ledger write failed or its outcome is unknown


class Observation(enum.StrEnum):
    """What verification said, in the light of the settle window."""

    NOT_CHECKED = "not_checked"  # no verification yet
    CONFIRMED = "confirmed"  # the expected result exists, exactly once
    DUPLICATE = "duplicate"  # the expected result exists more than once
    ABSENT = "absent"  # proven absent (never executed, or authoritative and settled)
    ABSENT_UNSETTLED = "absent_unsettled"  # absent, inside the settle window
    ABSENT_UNPROVEN = "absent_unproven"  # absent after the window; verifier not authoritative
    UNAVAILABLE = "unavailable"  # could not be checked


class Action(enum.StrEnum):
    """The next step."""

    VERIFY = "verify"  # ask the verifier (read-only)
    RECORD_CONFIRMED = "record_confirmed"  # compare-and-set to confirmed; skip
    RECORD_DUPLICATE = "record_duplicate"  # -> needs_review: more than one result exists
    CLAIM = "claim"  # check the precondition, then claim atomically
    EXECUTE = "execute"  # write the executing mark, then perform once
    RELEASE = "release"  # own/stale claim -> failed: nothing was performed
    MARK_FAILED = "mark_failed"  # executing/unknown -> failed: proven not to have happened
    MARK_UNKNOWN = "mark_unknown"  # executing -> unknown: reconcile later
    NEEDS_REVIEW = "needs_review"  # -> needs_review: a human must decide
    DEFER = "defer"  # do nothing now; someone else owns it or nothing is known
    HOLD = "hold"  # leave the unresolved effect as it is; never perform
    FINISHED = "finished"  # terminal: report it
    ALARM = "alarm"  # performed after being overtaken: make the status more cautious
    STOP = "stop"  # end this effect's run without claiming (failed, replannable)
    ABORT = "abort"  # raise the ledger error; never perform


Sit, Obs, Act = Situation, Observation, Action

_ALL_OBS = tuple(Observation)
_PRE_EXECUTION_OBS = (Obs.NOT_CHECKED, Obs.CONFIRMED, Obs.ABSENT, Obs.UNAVAILABLE)

TABLE: dict[tuple[Situation, Observation], Action] = {
    # No claim yet (or a proven failure that may be re-claimed): claim first.
    (Sit.NEW, Obs.NOT_CHECKED): Act.CLAIM,
    (Sit.NEW, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.NEW, Obs.ABSENT): Act.CLAIM,
    (Sit.NEW, Obs.UNAVAILABLE): Act.DEFER,
    # My claim, boundary not crossed: look (once), then the precondition and the mark.
    (Sit.OWNED, Obs.NOT_CHECKED): Act.VERIFY,
    (Sit.OWNED, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.OWNED, Obs.ABSENT): Act.EXECUTE,
    (Sit.OWNED, Obs.UNAVAILABLE): Act.RELEASE,
    # After my perform: only verification moves it on.
    (Sit.PERFORMED, Obs.NOT_CHECKED): Act.VERIFY,
    (Sit.PERFORMED, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.PERFORMED, Obs.ABSENT): Act.MARK_FAILED,
    (Sit.PERFORMED, Obs.ABSENT_UNSETTLED): Act.MARK_UNKNOWN,
    (Sit.PERFORMED, Obs.ABSENT_UNPROVEN): Act.NEEDS_REVIEW,
    (Sit.PERFORMED, Obs.UNAVAILABLE): Act.MARK_UNKNOWN,
    # My perform raised NotPerformed: nothing crossed the boundary.
    (Sit.DECLINED, Obs.NOT_CHECKED): Act.MARK_FAILED,
    # Someone else's live claim: never execute; record a confirmed result.
    (Sit.BUSY, Obs.NOT_CHECKED): Act.VERIFY,
    (Sit.BUSY, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.BUSY, Obs.ABSENT): Act.DEFER,
    (Sit.BUSY, Obs.ABSENT_UNSETTLED): Act.DEFER,
    (Sit.BUSY, Obs.ABSENT_UNPROVEN): Act.DEFER,
    (Sit.BUSY, Obs.UNAVAILABLE): Act.DEFER,
    # A stale claim that never reached executing: absent proves it harmless.
    (Sit.STALE_CLAIM, Obs.NOT_CHECKED): Act.VERIFY,
    (Sit.STALE_CLAIM, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.STALE_CLAIM, Obs.ABSENT): Act.RELEASE,
    (Sit.STALE_CLAIM, Obs.UNAVAILABLE): Act.DEFER,
    # A dead worker's executing mark: it may have happened.
    (Sit.ORPHANED, Obs.NOT_CHECKED): Act.VERIFY,
    (Sit.ORPHANED, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.ORPHANED, Obs.ABSENT): Act.MARK_FAILED,
    (Sit.ORPHANED, Obs.ABSENT_UNSETTLED): Act.MARK_UNKNOWN,
    (Sit.ORPHANED, Obs.ABSENT_UNPROVEN): Act.NEEDS_REVIEW,
    (Sit.ORPHANED, Obs.UNAVAILABLE): Act.MARK_UNKNOWN,
    # Unknown outcome: reconcile by verification, else keep holding.
    (Sit.UNKNOWN, Obs.NOT_CHECKED): Act.VERIFY,
    (Sit.UNKNOWN, Obs.CONFIRMED): Act.RECORD_CONFIRMED,
    (Sit.UNKNOWN, Obs.ABSENT): Act.MARK_FAILED,
    (Sit.UNKNOWN, Obs.ABSENT_UNSETTLED): Act.HOLD,
    (Sit.UNKNOWN, Obs.ABSENT_UNPROVEN): Act.NEEDS_REVIEW,
    (Sit.UNKNOWN, Obs.UNAVAILABLE): Act.HOLD,
    # The business precondition failed after verified absence.
    (Sit.PRECONDITION_FALSE, Obs.ABSENT): Act.STOP,
    # A ledger write failed or its outcome is unknown.
    (Sit.LEDGER_FAILED, Obs.NOT_CHECKED): Act.ABORT,
    (Sit.LEDGER_FAILED, Obs.ABSENT): Act.ABORT,
}
# More than one result: never a silent success. A human decides which one
# stands (the refs are recorded); nothing is performed.
for _sit in (
    Sit.NEW,
    Sit.OWNED,
    Sit.PERFORMED,
    Sit.BUSY,
    Sit.STALE_CLAIM,
    Sit.ORPHANED,
    Sit.UNKNOWN,
):
    TABLE[(_sit, Obs.DUPLICATE)] = Act.RECORD_DUPLICATE
for _obs in _ALL_OBS:
    TABLE[(Sit.DONE, _obs)] = Act.FINISHED
    TABLE[(Sit.ABANDONED, _obs)] = Act.FINISHED
    TABLE[(Sit.REVIEW, _obs)] = Act.HOLD
    # A perform ran under a superseded claim: whatever verification says,
    # the one write left is the alarm (invariant 4).
    TABLE[(Sit.OVERTAKEN, _obs)] = Act.ALARM

#: The cells a run that looks before it claims (a direct or a gated claim) decides
#: otherwise: it verifies a new key first, then claims on absence.
LOOK_FIRST: dict[tuple[Situation, Observation], Action] = {
    (Sit.NEW, Obs.NOT_CHECKED): Act.VERIFY,
}

#: Pairs after which verification (read-only) may be asked again with backoff.
RETRYABLE: frozenset[tuple[Situation, Observation]] = frozenset(
    {
        (Sit.NEW, Obs.UNAVAILABLE),
        (Sit.OWNED, Obs.UNAVAILABLE),
        (Sit.PERFORMED, Obs.UNAVAILABLE),
        (Sit.PERFORMED, Obs.ABSENT_UNSETTLED),
        (Sit.BUSY, Obs.UNAVAILABLE),
        (Sit.STALE_CLAIM, Obs.UNAVAILABLE),
        (Sit.ORPHANED, Obs.UNAVAILABLE),
        (Sit.UNKNOWN, Obs.UNAVAILABLE),
    }
)

#: The seed's "Retry Decision Table" rows and the cells that implement them.
SEED_ROWS: tuple[tuple[str, str, str, tuple[tuple[Situation, Observation], ...]], ...] = (
    (
        "No effect has been claimed",
        "Confirmed",
        "Record confirmed and skip",
        ((Sit.NEW, Obs.CONFIRMED),),
    ),
    (
        "No effect has been claimed",
        "Absent",
        "Validate, claim, and execute",
        ((Sit.NEW, Obs.ABSENT), (Sit.OWNED, Obs.ABSENT)),
    ),
    ("No effect has been claimed", "Unavailable", "Do not execute", ((Sit.NEW, Obs.UNAVAILABLE),)),
    ("Effect already confirmed", "Confirmed", "Skip", ((Sit.DONE, Obs.CONFIRMED),)),
    (
        "Effect requested",
        "Confirmed",
        "Record confirmed and skip",
        ((Sit.OWNED, Obs.CONFIRMED), (Sit.PERFORMED, Obs.CONFIRMED)),
    ),
    (
        "Effect requested",
        "Temporarily absent",
        "Retry verification only",
        ((Sit.PERFORMED, Obs.ABSENT_UNSETTLED), (Sit.UNKNOWN, Obs.ABSENT_UNSETTLED)),
    ),
    (
        "Effect requested",
        "Unavailable",
        "Mark unknown or review",
        ((Sit.PERFORMED, Obs.UNAVAILABLE), (Sit.ORPHANED, Obs.UNAVAILABLE)),
    ),
    (
        "Effect requested",
        "Still absent after execution",
        "Mark unknown and review",
        ((Sit.PERFORMED, Obs.ABSENT_UNPROVEN), (Sit.UNKNOWN, Obs.ABSENT_UNPROVEN)),
    ),
    (
        "Another worker owns the claim",
        "Confirmed",
        "Record confirmed and skip",
        ((Sit.BUSY, Obs.CONFIRMED),),
    ),
    (
        "Another worker owns the claim",
        "Absent",
        "Do not execute",
        ((Sit.BUSY, Obs.ABSENT), (Sit.BUSY, Obs.ABSENT_UNSETTLED)),
    ),
    (
        "Another worker owns the claim",
        "Unavailable",
        "Do not execute",
        ((Sit.BUSY, Obs.UNAVAILABLE),),
    ),
    ("Precondition no longer holds", "Absent", "Stop", ((Sit.PRECONDITION_FALSE, Obs.ABSENT),)),
    (
        "Checkpoint write fails",
        "Not applicable",
        "Do not perform the action",
        ((Sit.LEDGER_FAILED, Obs.NOT_CHECKED),),
    ),
    (
        "Claim appears stale",
        "Unavailable or uncertain",
        "Do not reclaim automatically",
        ((Sit.STALE_CLAIM, Obs.UNAVAILABLE), (Sit.ORPHANED, Obs.ABSENT_UNSETTLED)),
    ),
)


def decide(situation: Situation, observation: Observation, look_first: bool = False) -> Action:
    """Return the next step for a (situation, observation) pair.

    ``look_first``: the run looks before it claims (a direct or a gated
    claim), so the cells of ``LOOK_FIRST`` answer first.

    Raises:
        ProtocolError: the pair cannot arise; asking it is a bug.
    """
    pair = (situation, observation)
    if look_first:
        act = LOOK_FIRST.get(pair)
        if act is not None:
            return act
    try:
        return TABLE[pair]
    except KeyError:
        raise ProtocolError(f"no decision for ({situation}, {observation})") from None


def situation_of(
    record: EffectRecord | None,
    *,
    now: float,
    my_fence: int | None,
    declined: bool = False,
    performed: bool = False,
    trusted: bool = True,
) -> Situation:
    """Classify a record from the point of view of the worker holding ``my_fence``.

    ``my_fence`` is the fencing token of the caller's own claim, ``None`` when
    the caller holds none (a fresh run, reconcile). ``declined`` says that the
    caller's perform raised ``NotPerformed`` (stopped before the boundary);
    ``performed`` that the caller's perform ran under ``my_fence``. A caller
    that performed and finds its claim superseded (another fence, or its own
    mark failed by someone else) is ``OVERTAKEN``. With an untrusted clock
    (``trusted=False``: ledger time stepped) another owner's lease counts as
    live.
    """
    return situation(record, now, my_fence, declined, performed, trusted)


# The enum members the two functions below compare against, as module globals:
# an enum class answers ``Status.FAILED`` through its metaclass's attribute hook,
# several times slower than a global, and the protocol's loop asks these often.
_S_NEW, _S_OVERTAKEN, _S_DONE, _S_ABANDONED = Sit.NEW, Sit.OVERTAKEN, Sit.DONE, Sit.ABANDONED
_S_REVIEW, _S_UNKNOWN, _S_OWNED, _S_BUSY = Sit.REVIEW, Sit.UNKNOWN, Sit.OWNED, Sit.BUSY
_S_STALE, _S_DECLINED, _S_PERFORMED = Sit.STALE_CLAIM, Sit.DECLINED, Sit.PERFORMED
_S_ORPHANED = Sit.ORPHANED
_FAILED, _CLAIMED = Status.FAILED, Status.CLAIMED
#: Statuses that settle the situation by themselves (once OVERTAKEN is ruled out).
_SETTLED = {
    Status.FAILED: Sit.NEW,
    Status.CONFIRMED: Sit.DONE,
    Status.ABANDONED: Sit.ABANDONED,
    Status.NEEDS_REVIEW: Sit.REVIEW,
    Status.UNKNOWN: Sit.UNKNOWN,
}
_O_NOT_CHECKED, _O_DUPLICATE, _O_CONFIRMED = Obs.NOT_CHECKED, Obs.DUPLICATE, Obs.CONFIRMED
_O_UNAVAILABLE, _O_ABSENT, _O_UNSETTLED = Obs.UNAVAILABLE, Obs.ABSENT, Obs.ABSENT_UNSETTLED
_O_UNPROVEN = Obs.ABSENT_UNPROVEN
_BEFORE_MARK = (Status.CLAIMED, Status.FAILED)


def situation(
    record: EffectRecord | None,
    now: float,
    my_fence: int | None,
    declined: bool,
    performed: bool,
    trusted: bool,
) -> Situation:
    """:func:`situation_of` with positional arguments (the protocol's loop calls it often)."""
    if record is None:
        return _S_NEW
    status = record.status
    mine = my_fence is not None and record.fence == my_fence
    if performed and not declined and (not mine or status is _FAILED):
        return _S_OVERTAKEN
    settled = _SETTLED.get(status)  # failed, confirmed, abandoned, in review, unknown
    if settled is not None:
        return settled
    live = not trusted or record.lease_live(now)
    if status is _CLAIMED:
        if mine:
            return _S_OWNED
        return _S_BUSY if live else _S_STALE
    # EXECUTING
    if mine:
        return _S_DECLINED if declined else _S_PERFORMED
    return _S_BUSY if live else _S_ORPHANED


def observe(
    verdict: Verdict | None,
    record: EffectRecord | None,
    *,
    policy: Policy,
    now: float,
    my_fence: int | None = None,
    since_perform: float | None = None,
    trusted: bool = True,
) -> Observation:
    """Classify a verdict; this is where the settle-window rule lives.

    Absence before the ``executing`` mark is plain absence. Absence after it
    proves non-occurrence only when the settle window has passed *and* the
    verifier is authoritative for this kind. A ``Confirmed`` verdict that saw
    more than one match is a duplicate, never a confirmation.

    The window runs from the latest moment the request may have left. The
    owner (``my_fence`` matches) knows it: the end of its own perform,
    ``since_perform`` seconds ago on its monotonic clock (a wall-clock step
    cannot shorten it). Anyone else must allow for an owner that is still
    performing or paused: an owner extends its lease while it performs and
    never starts a perform once its lease has expired, so for them the window
    runs from ``max(executing_at, lease_expires_at)`` in ledger time, and not
    at all while their clock is untrusted (``trusted=False``). Owners shorten
    their lease to "now" once they have recorded a verdict, so reconcile need
    not wait.
    """
    return observation(verdict, record, policy, now, my_fence, since_perform, trusted)


def observation(
    verdict: Verdict | None,
    record: EffectRecord | None,
    policy: Policy,
    now: float,
    my_fence: int | None,
    since_perform: float | None,
    trusted: bool,
) -> Observation:
    """:func:`observe` with positional arguments (the protocol's loop calls it often)."""
    if verdict is None:
        return _O_NOT_CHECKED
    if isinstance(verdict, Confirmed):
        return _O_DUPLICATE if verdict.count > 1 else _O_CONFIRMED
    if isinstance(verdict, Unavailable):
        return _O_UNAVAILABLE
    if not isinstance(verdict, Absent):  # pragma: no cover - typing guards this
        raise ProtocolError(f"not a verdict: {verdict!r}")
    if record is None or record.executing_at is None:
        return _O_ABSENT
    if record.status in _BEFORE_MARK:
        return _O_ABSENT
    if my_fence is not None and record.fence == my_fence and since_perform is not None:
        settled = since_perform >= policy.settle_seconds
    else:
        settled = trusted and now - max(record.executing_at, record.lease_expires_at) >= (
            policy.settle_seconds
        )
    if not settled:
        return _O_UNSETTLED
    return _O_ABSENT if policy.absence_authoritative else _O_UNPROVEN


#: The moves: actions that compare-and-set the record to a status.
MOVES: dict[Action, Status] = {
    Act.RELEASE: Status.FAILED,
    Act.MARK_FAILED: Status.FAILED,
    Act.MARK_UNKNOWN: Status.UNKNOWN,
    Act.NEEDS_REVIEW: Status.NEEDS_REVIEW,
    Act.RECORD_DUPLICATE: Status.NEEDS_REVIEW,
    Act.ALARM: Status.NEEDS_REVIEW,
}

#: What a run reports once an action has been taken (see :func:`outcome_of`).
OUTCOMES: dict[Action, Outcome] = {
    Act.FINISHED: Outcome.SKIPPED,
    Act.RECORD_CONFIRMED: Outcome.SKIPPED,
    Act.RECORD_DUPLICATE: Outcome.NEEDS_REVIEW,
    Act.HOLD: Outcome.NEEDS_REVIEW,
    Act.DEFER: Outcome.DEFERRED,
    Act.RELEASE: Outcome.DEFERRED,
    Act.MARK_FAILED: Outcome.FAILED,
    Act.MARK_UNKNOWN: Outcome.NEEDS_REVIEW,
    Act.NEEDS_REVIEW: Outcome.NEEDS_REVIEW,
    Act.ALARM: Outcome.NEEDS_REVIEW,
    Act.STOP: Outcome.FAILED,
    Act.CLAIM: Outcome.FAILED,
}


#: What a run reports when a gate refused its claim, by what refused.
REFUSAL_OUTCOMES: dict[str, Outcome] = {
    "intent": Outcome.REFUSED,
    "approval": Outcome.REFUSED,
    "budget": Outcome.OVER_BUDGET,
}


def outcome_of(
    action: Action,
    situation: Situation,
    *,
    reconcile: bool,
    performed: bool,
    hard_stop: bool,
    status: Status | None = None,
) -> Outcome | None:
    """The outcome a run reports after ``action``; ``None``: the run goes on.

    The rules, in order: a released stale claim is claimed next in a run
    (``None``) and is the end of a reconcile (``failed``: nothing was
    performed); a ``claim`` ends a reconcile (it never claims: the key is
    free), a run after a hard stop (no further mutation) and a run after its
    own perform (never a second perform in one run);
    ``finished`` on an abandoned effect reports ``abandoned``; a run that
    performed reports ``completed`` instead of ``skipped``; a hard stop turns
    every move that ends the run into ``hard_stop``.

    Raises:
        ProtocolError: the action does not end a run (verify, execute).
    """
    if action is Act.RELEASE:
        if reconcile:
            return Outcome.FAILED
        if situation is Sit.STALE_CLAIM:
            return None
    if action is Act.CLAIM:
        if hard_stop:
            return Outcome.HARD_STOP
        if not (reconcile or performed):
            raise ProtocolError("a claim ends only a reconcile or a run that performed")
        return Outcome.FAILED
    if action is Act.FINISHED and status is Status.ABANDONED:
        return Outcome.ABANDONED
    try:
        out = OUTCOMES[action]
    except KeyError:
        raise ProtocolError(f"{action} does not end a run") from None
    if out is Outcome.SKIPPED and performed:
        return Outcome.COMPLETED
    if hard_stop and action in MOVES and action is not Act.RELEASE:
        return Outcome.HARD_STOP
    return out


def render_markdown() -> str:
    """The decision table as Markdown (``docs/decision-table.md`` is this text)."""
    lines = [
        "# The retry decision table",
        "",
        "Generated from `actonce._rules.decision.TABLE`; a test fails when this file is stale.",
        "",
        "| situation | " + " | ".join(o.value for o in Observation) + " |",
        "|---|" + "---|" * len(Observation),
    ]
    for sit in Situation:
        cells = []
        for obs in Observation:
            act = TABLE.get((sit, obs))
            mark = "" if act is None else act.value
            if act is not None and (sit, obs) in RETRYABLE:
                mark += " (retry verify)"
            cells.append(mark or "—")
        lines.append(f"| {sit.value} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "— : the pair cannot arise; asking it raises `ProtocolError`.",
        "(retry verify): verification may be repeated with backoff before deciding.",
        "",
        "**Claim first.** A new key is claimed before the first look at the world: a claim",
        "is reversible until the `executing` mark, so the one verification before the",
        "boundary runs under it (owned + absent: the precondition, then the mark and the",
        "perform; owned + confirmed: recorded, nothing performed; owned + unavailable:",
        "released, nothing performed). A run that looks before it claims decides these",
        "cells otherwise (`LOOK_FIRST`): a direct claim (`Policy(verify_after_claim=False)`,",
        "the claim is the mark itself) and a gated claim (approval or budget: its claim",
        "takes holds that a look finding the result would have to give back).",
        "",
        "| situation | observation | look first |",
        "|---|---|---|",
        *(f"| {s.value} | {o.value} | {a.value} |" for (s, o), a in LOOK_FIRST.items()),
        "",
        "## The seed's rows",
        "",
        "| observed state | verification | decision | cells |",
        "|---|---|---|---|",
    ]
    for state, verification, decision, cells_ in SEED_ROWS:
        where = ", ".join(f"{s.value} + {o.value} → {TABLE[(s, o)].value}" for s, o in cells_)
        lines.append(f"| {state} | {verification} | {decision} | {where} |")
    return "\n".join(lines) + "\n"
