"""Looking effects up and recording a reviewer's decision, as generators.

Written once for both ledgers, like the effect protocol: ``Ledger`` and
``AsyncLedger`` each run these through their driver in one line.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from .._rules.errors import InvalidTransition, UnknownEffect, UsageError
from .._rules.holds import settlement
from .._rules.keys import is_name
from .._rules.lifecycle import REVIEWABLE, By, check_transition, is_durable
from .._rules.model import EffectRecord, Event, EventType, Resolution, Status, evolve
from .._rules.text import world_text
from .ops import NOW, Get, MatchPrefix, Op, Tick, Transition

__all__ = ["RESOLVES_TO", "REVIEW_RUN_PREFIX", "find", "resolution", "resolve"]

#: Run ids of a reviewer's decisions start with this.
REVIEW_RUN_PREFIX = "review:"

RESOLVES_TO = {
    Resolution.HAPPENED: Status.CONFIRMED,
    Resolution.NOT_HAPPENED: Status.FAILED,
    Resolution.ABANDON: Status.ABANDONED,
}

Found = Generator[Op, Any, EffectRecord]


def find(key_or_prefix: str) -> Found:
    """The record under a full key or a unique key prefix (at least 4 characters).

    Raises:
        UnknownEffect: nothing (or more than one effect) matches.
    """
    if not isinstance(key_or_prefix, str) or not is_name(key_or_prefix):
        # No effect can have it (empty, a NUL, a lone surrogate, too long):
        # the answer needs no backend, and some backends would refuse the text.
        raise UnknownEffect(f"no effect with key {key_or_prefix!r:.80}")
    record: EffectRecord | None = yield Get(key_or_prefix)
    if record is not None:
        return record
    if len(key_or_prefix) < 4:
        raise UnknownEffect(f"no effect with key {key_or_prefix!r}")
    keys: list[str] = yield MatchPrefix(key_or_prefix, 2)
    if len(keys) > 1:
        raise UnknownEffect(f"key prefix {key_or_prefix!r} is ambiguous; give more characters")
    if keys:
        record = yield Get(keys[0])
    if record is None:
        raise UnknownEffect(f"no effect with key {key_or_prefix!r}")
    return record


def resolution(value: Resolution | str) -> Resolution:
    """A decision by value (``happened``, ``not_happened``/``not-happened``, ``abandon``)."""
    try:
        return Resolution(str(value).replace("-", "_"))
    except ValueError:
        choices = ", ".join(r.value for r in Resolution)
        raise UsageError(f"a decision is one of {choices}, not {value!r}") from None


def resolve(
    key: str,
    decision: Resolution | str,
    *,
    reviewer: str,
    reason: str,
    result_ref: str | None = None,
    attempt: int | None = None,
) -> Found:
    """Record a reviewer's decision on an effect in review (or unknown).

    The same decision delivered twice is answered with the existing state;
    another decision on a settled effect is refused. ``attempt`` is the
    attempt (fence) the reviewer decided on: a decision is never applied to
    a later attempt the reviewer did not see (``InvalidTransition``, "look
    again"). "Not happened" is refused while the attempt's lease is live: its
    owner may still be performing, and ``failed`` would let the effect be
    tried again while the first try lands.
    """
    chosen = resolution(decision)
    who = _required(reviewer, "the reviewer's name")
    why = _required(reason, "a reason")
    ref = None if result_ref is None else _required(result_ref, "the result reference")
    seen = _attempt(attempt)
    record = yield from find(key)
    to = RESOLVES_TO[chosen]
    if seen is not None and record.fence != seen:
        raise InvalidTransition(
            f"effect {record.key[:16]} is on attempt {record.fence} now, not the attempt "
            f"{seen} that was decided on; look again"
        )
    if record.status is to:
        return record  # the same decision delivered twice: answer with the state
    if record.status not in REVIEWABLE:
        raise InvalidTransition(f"effect {record.key[:16]} is {record.status}, not awaiting review")
    check_transition(record.status, to)
    tick: Tick = yield NOW
    if to is Status.FAILED and record.lease_live(tick.now):
        raise InvalidTransition(
            f"effect {record.key[:16]}: the owner of attempt {record.fence} holds its lease "
            f"until {record.lease_expires_at:.3f} and may still be performing; 'not happened' "
            "can be decided once the lease has ended (or abandon it now)"
        )
    new = evolve(
        record,
        status=to,
        updated_at=tick.now,
        reason=f"{chosen}: {why} ({who})",
        result_ref=ref or record.result_ref,
    )
    event = Event(
        key=record.key,
        type=EventType(to.value),
        at=tick.now,
        fence=record.fence,
        run_id=f"{REVIEW_RUN_PREFIX}{who}",
        from_status=record.status,
        to_status=to,
        message=why,
        data={"reviewer": who, "decision": str(chosen), "result_ref": new.result_ref},
    )
    got: EffectRecord | None = yield Transition(
        (record.status, record.fence),
        new,
        event,
        durable=is_durable(to, By.HUMAN),
        settle=settlement(to) if record.gated else None,
        fields=("status", "updated_at", "reason", "result_ref"),
    )
    if got is None:
        raise InvalidTransition(f"effect {record.key[:16]} changed meanwhile; look again")
    return got


def _attempt(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"an attempt is a whole number from 1, not {value!r}")
    return value


def _required(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"a resolution needs {what}")
    # A reviewer's words are stored like the world's: storable and scrubbed
    # (a pasted "token=..." stays out of the ledger).
    return world_text(value.strip(), limit=1000)
