"""The effect lifecycle: which status may follow which, and why.

Theory of operation. An effect is born by a *claim*: an atomic insert that
makes one worker its owner, under a fencing token. The claim is either a
plain ``claimed`` (the boundary is not crossed; a crash here is harmless) or,
when nothing has to happen between claim and perform, directly the durable
``executing`` mark. From ``executing`` on, the effect may have happened and
is never performed again automatically: only verification (``confirmed``,
``failed`` after authoritative absence, ``unknown``, ``needs_review``) or a
human (``confirmed``, ``failed``, ``abandoned``) moves it on. ``failed``
re-opens the key for a new claim with the next fencing token.

The table below is the only place these rules live. Stores enforce it by
compare-and-set on (status, fence); :func:`check_transition` rejects any
pair that is not an edge.
"""

from __future__ import annotations

import enum

from ._errors import InvalidTransition
from ._model import Status

__all__ = ["TRANSITIONS", "By", "check_transition", "render_markdown"]


class By(enum.StrEnum):
    """Who may take an edge."""

    CLAIM = "claim"  # the atomic claim of a worker (new fencing token)
    OWNER = "owner"  # the worker holding the claim
    VERIFIER = "verifier"  # anyone, on the strength of a verification verdict
    HUMAN = "human"  # a reviewer's decision


S = Status
#: (from, to) -> (who may take it, why). ``None`` stands for "no record yet".
TRANSITIONS: dict[tuple[Status | None, Status], tuple[By, str]] = {
    (None, S.CLAIMED): (By.CLAIM, "first claim; verified absent beforehand"),
    (None, S.EXECUTING): (By.CLAIM, "first claim written as the executing mark"),
    (None, S.CONFIRMED): (By.VERIFIER, "result found before any claim"),
    (S.FAILED, S.CLAIMED): (By.CLAIM, "re-claim after proven failure (next attempt)"),
    (S.FAILED, S.EXECUTING): (By.CLAIM, "re-claim written as the executing mark"),
    (S.FAILED, S.CONFIRMED): (By.VERIFIER, "result found after a failed attempt"),
    (S.CLAIMED, S.CLAIMED): (By.CLAIM, "re-claim of a claim whose lease expired"),
    (S.CLAIMED, S.EXECUTING): (By.OWNER, "durable mark before perform"),
    (S.CLAIMED, S.CONFIRMED): (By.VERIFIER, "result appeared before perform"),
    (S.CLAIMED, S.FAILED): (By.OWNER, "released before perform: nothing was performed"),
    (S.EXECUTING, S.CONFIRMED): (By.VERIFIER, "result verified"),
    (S.EXECUTING, S.FAILED): (By.VERIFIER, "authoritative absence after the settle window"),
    (S.EXECUTING, S.UNKNOWN): (By.VERIFIER, "outcome not proven"),
    (S.EXECUTING, S.NEEDS_REVIEW): (By.VERIFIER, "absence that proves nothing"),
    (S.UNKNOWN, S.CONFIRMED): (By.VERIFIER, "reconciled: result found"),
    (S.UNKNOWN, S.FAILED): (By.VERIFIER, "reconciled: authoritative absence"),
    (S.UNKNOWN, S.NEEDS_REVIEW): (By.VERIFIER, "reconciled: absence that proves nothing"),
    (S.UNKNOWN, S.ABANDONED): (By.HUMAN, "reviewer abandons an unresolved effect"),
    (S.NEEDS_REVIEW, S.CONFIRMED): (By.HUMAN, "reviewer: it happened"),
    (S.NEEDS_REVIEW, S.FAILED): (By.HUMAN, "reviewer: it did not happen (re-opens the key)"),
    (S.NEEDS_REVIEW, S.ABANDONED): (By.HUMAN, "reviewer: abandon"),
}
# A human may also settle an unknown effect either way.
TRANSITIONS[(S.UNKNOWN, S.CONFIRMED)] = (By.VERIFIER, "reconciled or reviewer: result found")
TRANSITIONS[(S.UNKNOWN, S.FAILED)] = (By.VERIFIER, "reconciled or reviewer: it did not happen")

#: Statuses a reviewer may resolve.
REVIEWABLE = frozenset({S.NEEDS_REVIEW, S.UNKNOWN})


def check_transition(from_status: Status | None, to_status: Status) -> tuple[By, str]:
    """Return who may take the edge, or raise :class:`InvalidTransition`."""
    try:
        return TRANSITIONS[(from_status, to_status)]
    except KeyError:
        raise InvalidTransition(
            f"the lifecycle has no edge {from_status or '(none)'} -> {to_status}"
        ) from None


def render_markdown() -> str:
    """The lifecycle as Markdown (``docs/lifecycle.md`` is this text)."""
    lines = [
        "# The effect lifecycle",
        "",
        "Generated from `actonce._lifecycle.TRANSITIONS`; a test fails when this file is stale.",
        "Every other (from, to) pair raises `InvalidTransition`.",
        "",
        "| from | to | by | why |",
        "|---|---|---|---|",
    ]
    for (src, dst), (who, why) in TRANSITIONS.items():
        lines.append(f"| {src.value if src else '(none)'} | {dst.value} | {who.value} | {why} |")
    lines += [
        "",
        "Reviewable by a human: " + ", ".join(sorted(s.value for s in REVIEWABLE)) + ".",
    ]
    return "\n".join(lines) + "\n"
