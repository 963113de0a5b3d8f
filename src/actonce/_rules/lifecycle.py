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

from .errors import InvalidTransition
from .model import Status

__all__ = [
    "DURABLE",
    "REVIEWABLE",
    "TRANSITIONS",
    "By",
    "check_transition",
    "is_durable",
    "render_markdown",
]


class By(enum.StrEnum):
    """Who may take an edge."""

    CLAIM = "claim"  # the atomic claim of a worker (new fencing token)
    OWNER = "owner"  # the worker holding the claim
    VERIFIER = "verifier"  # anyone, on the strength of a verification verdict
    HUMAN = "human"  # a reviewer's decision
    ALARM = "alarm"  # a superseded owner that performed anyway: only ever more cautious


S = Status
#: (from, to) -> (who may take it, why). ``None`` stands for "no record yet"
#: (as a target: a claim released back to no record).
TRANSITIONS: dict[tuple[Status | None, Status | None], tuple[By, str]] = {
    (None, S.CLAIMED): (By.CLAIM, "first claim, before the first look (claim first)"),
    (None, S.EXECUTING): (By.CLAIM, "first claim written as the executing mark"),
    (None, S.CONFIRMED): (By.VERIFIER, "result found before any claim"),
    (None, S.NEEDS_REVIEW): (By.VERIFIER, "more than one result found before any claim"),
    (S.FAILED, S.CLAIMED): (By.CLAIM, "re-claim after proven failure (next attempt)"),
    (S.FAILED, S.EXECUTING): (By.CLAIM, "re-claim written as the executing mark"),
    (S.FAILED, S.CONFIRMED): (By.VERIFIER, "result found after a failed attempt"),
    (S.FAILED, S.NEEDS_REVIEW): (By.ALARM, "an overtaken owner performed after its mark failed"),
    (S.CLAIMED, S.CLAIMED): (By.CLAIM, "re-claim of a claim whose lease expired"),
    (S.CLAIMED, S.EXECUTING): (By.OWNER, "durable mark before perform"),
    (S.CLAIMED, S.CONFIRMED): (By.VERIFIER, "result appeared before perform"),
    (S.CLAIMED, S.FAILED): (
        By.OWNER,
        "released before perform: nothing was performed (back to the failed attempt it "
        "re-claimed; a stale claim; a gated claim, its holds given back)",
    ),
    (S.CLAIMED, None): (
        By.OWNER,
        "released before perform, back to no record: the claim of a new key whose look "
        "was unavailable, or whose precondition failed or stopped",
    ),
    (S.CLAIMED, S.NEEDS_REVIEW): (By.ALARM, "duplicates found, or an overtaken owner performed"),
    (S.EXECUTING, S.CONFIRMED): (By.VERIFIER, "result verified"),
    (S.EXECUTING, S.FAILED): (By.VERIFIER, "authoritative absence after the settle window"),
    (S.EXECUTING, S.UNKNOWN): (By.VERIFIER, "outcome not proven"),
    (S.EXECUTING, S.NEEDS_REVIEW): (By.VERIFIER, "absence that proves nothing, or duplicates"),
    (S.UNKNOWN, S.CONFIRMED): (By.VERIFIER, "reconciled or reviewer: result found"),
    (S.UNKNOWN, S.FAILED): (By.VERIFIER, "reconciled or reviewer: it did not happen"),
    (S.UNKNOWN, S.NEEDS_REVIEW): (By.VERIFIER, "reconciled: absence that proves nothing"),
    (S.UNKNOWN, S.ABANDONED): (By.HUMAN, "reviewer abandons an unresolved effect"),
    (S.NEEDS_REVIEW, S.CONFIRMED): (By.HUMAN, "reviewer: it happened"),
    (S.NEEDS_REVIEW, S.FAILED): (By.HUMAN, "reviewer: it did not happen (re-opens the key)"),
    (S.NEEDS_REVIEW, S.ABANDONED): (By.HUMAN, "reviewer: abandon"),
}

#: Statuses a reviewer may resolve.
REVIEWABLE = frozenset({S.NEEDS_REVIEW, S.UNKNOWN})

#: Writes that must be on stable storage before the call returns. The
#: ``executing`` mark, because a perform starts right after it (invariant 2),
#: and a reviewer's decision, which nobody could redo. Every other write may
#: be lost by a power failure (never by a process crash) without breaking a
#: promise: a lost claim left nothing performed, a lost confirmation or
#: failure leaves the effect ``executing`` for reconcile to verify again. In a
#: write-ahead log every later synced commit also makes the earlier ones
#: durable, so a claim is always durable by the time its mark is.
DURABLE = frozenset({S.EXECUTING})


def is_durable(to_status: Status, by: By) -> bool:
    """Whether a write to ``to_status`` by ``by`` must be fsynced before returning."""
    return to_status in DURABLE or by is By.HUMAN


def check_transition(from_status: Status | None, to_status: Status | None) -> tuple[By, str]:
    """Return who may take the edge, or raise :class:`InvalidTransition`."""
    try:
        return TRANSITIONS[(from_status, to_status)]
    except KeyError:
        raise InvalidTransition(
            f"the lifecycle has no edge {from_status or '(none)'} -> {to_status or '(none)'}"
        ) from None


def render_markdown() -> str:
    """The lifecycle as Markdown (``docs/lifecycle.md`` is this text)."""
    lines = [
        "# The effect lifecycle",
        "",
        "Generated from `actonce._rules.lifecycle.TRANSITIONS`; a test fails when this file is stale.",
        "Every other (from, to) pair raises `InvalidTransition`.",
        "",
        "| from | to | by | why |",
        "|---|---|---|---|",
    ]
    for (src, dst), (who, why) in TRANSITIONS.items():
        to = dst.value if dst else "(none)"
        lines.append(f"| {src.value if src else '(none)'} | {to} | {who.value} | {why} |")
    lines += [
        "",
        "Reviewable by a human: " + ", ".join(sorted(s.value for s in REVIEWABLE)) + ".",
    ]
    return "\n".join(lines) + "\n"
