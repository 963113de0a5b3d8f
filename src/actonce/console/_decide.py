"""What a reviewer may decide, what each decision does, and "verify again".

A decision is a *reason class* (what the reviewer found), a required text
and, when the effect happened, the result reference. Each class is one
:class:`~actonce.Resolution` of the public API; its consequence is spelled
out before the click, with this effect's own holds and next attempt.

"Verify again" runs the verifier registered for the effect's kind once
(read-only, like every verification) and shows its verdict. It writes
nothing: no transition and no event. The verdict is remembered by this
console for the page, and when the same reviewer then decides, it rides in
the decision's own reason ("verified again at 12:03:11: confirmed INV-77"),
so the one event the decision writes says what the reviewer saw.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from actonce import (
    Absent,
    Confirmed,
    EffectRecord,
    Hold,
    HoldKind,
    HoldStatus,
    Registry,
    Resolution,
    Unavailable,
    Verdict,
)

from ._words import at, clean

__all__ = ["CLASSES", "Choice", "Seen", "consequences", "reason_text", "verify_once"]


@dataclass(frozen=True, slots=True)
class Choice:
    """One reason class a reviewer may give."""

    value: str
    label: str
    resolution: Resolution
    needs_ref: bool
    hint: str


CLASSES: dict[str, Choice] = {
    c.value: c
    for c in (
        Choice(
            "seen",
            "Seen at the provider",
            Resolution.HAPPENED,
            True,
            "You found the result at the provider; name it (an id or a URL).",
        ),
        Choice(
            "not_found",
            "Not found at the provider",
            Resolution.NOT_HAPPENED,
            False,
            "You looked at the provider and the result is not there.",
        ),
        Choice(
            "duplicate",
            "Duplicate of",
            Resolution.HAPPENED,
            True,
            "It happened more than once, or repeats a result already made: "
            "name the one result that counts.",
        ),
        Choice(
            "abandon",
            "Abandon",
            Resolution.ABANDON,
            False,
            "It must not happen (any more), whatever the provider shows.",
        ),
    )
}


def _held(holds: list[Hold], fence: int) -> list[Hold]:
    return [h for h in holds if h.fence == fence and h.status is HoldStatus.HELD]


def _names(holds: list[Hold]) -> str:
    parts = []
    for h in holds:
        if h.kind is HoldKind.APPROVAL:
            parts.append(f"the approval {h.ref}")
        elif h.kind is HoldKind.BUDGET:
            parts.append(f"{h.amount} of the budget {h.ref}")
        else:
            parts.append(f"the intent version {h.ref}")
    return ", ".join(parts)


def consequences(record: EffectRecord, holds: list[Hold]) -> dict[str, str]:
    """What each reason class does to this effect, in words, before the click."""
    held = _held(holds, record.fence)
    spent = f" Consumes what its claim holds: {_names(held)}." if held else ""
    freed = f" Releases what its claim holds: {_names(held)}." if held else ""
    if held and any(h.kind is HoldKind.APPROVAL for h in held):
        freed += " The approval may then authorize the retry."
    return {
        "seen": (
            "happened → confirmed with the result you name. The key is done: no worker will "
            f"ever perform it again.{spent}"
        ),
        "not_found": (
            "not happened → failed. Releases the reservation: the effect may be tried again "
            f"with the same key (attempt {record.fence + 1}) by the next run.{freed}"
        ),
        "duplicate": (
            "happened → confirmed with the result you name as the one that counts. The other "
            "results stay at the provider: cancel them there. The key is done"
            + (
                f"; the ledger keeps the duplicate count ({record.matches} results seen)."
                if record.matches > 1
                else "."
            )
            + spent
        ),
        "abandon": (
            "abandon → abandoned. The effect must not happen: no run performs it any more. "
            f"If it did happen at the provider, undo it there.{freed}"
        ),
    }


@dataclass(frozen=True, slots=True)
class Seen:
    """A verdict of "verify again", as the console remembers it."""

    key: str
    fence: int
    reviewer: str
    at: float
    verdict: str
    words: str
    result_ref: str | None

    def note(self) -> str:
        """The verdict as the decision's reason quotes it."""
        return f"[verified again by {self.reviewer} at {at(self.at)}: {self.words}]"


def words_of(verdict: Verdict) -> tuple[str, str, str | None]:
    """``(state, words, result_ref)`` of a verdict, scrubbed."""
    if isinstance(verdict, Confirmed):
        ref = clean(verdict.result_ref, 300) if verdict.result_ref else None
        if verdict.count > 1:
            refs = ", ".join(clean(r, 120) for r in verdict.refs[:10])
            return "duplicate", f"duplicate detected: {verdict.count} results ({refs})", ref
        return "confirmed", f"confirmed{': ' + ref if ref else ''} (1 match)", ref
    if isinstance(verdict, Absent):
        return "absent", "absent: the verifier found nothing (absence may prove nothing)", None
    if isinstance(verdict, Unavailable):
        return "unavailable", f"unavailable: {clean(verdict.reason, 300)}", None
    return "unavailable", f"unavailable: the verifier returned {type(verdict).__name__}", None


def _call(verify: Any, record: EffectRecord) -> Verdict:
    value = verify(record)
    if inspect.isawaitable(value):

        async def wait(v: Awaitable[Verdict]) -> Verdict:
            return await v

        value = asyncio.run(wait(value))
    return value  # type: ignore[no-any-return]


async def verify_once(
    registry: Registry, record: EffectRecord, reviewer: str, timeout: float, now: float
) -> Seen | None:
    """Run the kind's verifier once, off the event loop; ``None`` when none is registered."""
    entry = registry.get(record.kind)
    if entry is None:
        return None
    started = time.monotonic()
    try:
        verdict = await asyncio.wait_for(asyncio.to_thread(_call, entry.verify, record), timeout)
    except TimeoutError:
        verdict = Unavailable(f"no answer within {timeout:g} s")
    except Exception as exc:  # the verifier is the user's code: its failure is a verdict
        verdict = Unavailable(f"{type(exc).__name__}: {exc}")
    state, text, ref = words_of(verdict)
    took = time.monotonic() - started
    return Seen(record.key, record.fence, reviewer, now, state, f"{text}; took {took:.1f} s", ref)


def reason_text(choice: Choice, text: str, result_ref: str | None, seen: Seen | None) -> str:
    """The reason the decision records: class, the reviewer's words, what they saw."""
    parts = [f"{choice.label.lower()}: {text.strip()}"]
    if choice.value == "duplicate" and result_ref:
        parts.append(f"(the result that counts: {result_ref.strip()})")
    if seen is not None:
        parts.append(seen.note())
    return " ".join(parts)
