"""The bounds of one exploration, and the fake world the effect lands in.

The world is a list of accepted effects (the ground truth), each with the
virtual time it was accepted at. A verifier sees an effect only once its
visibility delay has passed; before that it may or may not see it. So each
verification may be answered in every way that is consistent with the truth:

- nothing accepted: ``Absent`` or ``Unavailable``;
- ``n`` accepted, ``v`` of them visible: ``Confirmed`` with any count from
  ``max(v, 1)`` to ``n`` (or ``Absent`` when ``v`` is 0), or ``Unavailable``.

A verifier is never wrong in any other way: it does not invent results and
it does not miss visible ones. That is the promise a user makes by declaring
absence authoritative with a settle window longer than the delay.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._rules.errors import UsageError
from .._rules.model import Absent, Confirmed, Policy, Unavailable, Verdict

__all__ = ["PERFORMS", "Bounds", "verdicts"]

#: What one perform may do: land and return, land and lose its response
#: (a timeout after the provider committed), or fail before landing.
PERFORMS = ("ok", "lost", "refused")


@dataclass(frozen=True, slots=True)
class Bounds:
    """How far an exploration goes.

    ``workers`` runs of the same effect race (each may run ``runs`` times:
    a crashed or finished worker starts again while it has runs left),
    ``reconciles`` reconcile passes and ``reviews`` human decisions. At most
    ``crashes`` actors are dropped (SIGKILL), ``failed_writes`` ledger writes
    fail (before or after their commit) and the clock jumps ``ticks`` times.
    ``depth`` bounds the length of a schedule (``None``: no bound but the
    others). The policy: lease ``lease`` seconds, settle window ``settle``,
    visibility delay ``visibility`` (kept below the window), absence
    authoritative, ``verify_attempts`` per round, ``verify_after_claim``.
    ``review_binds_attempt``: a reviewer's decision carries the attempt it
    was made on (as a careful console would); ``False``: it applies to
    whatever attempt is current when ``resolve`` runs, as ``resolve`` and the
    console do today (the explorer finds a false ``failed`` that way, see
    docs/explore.md). ``performs``: the perform outcomes tried (``PERFORMS``);
    ``verdicts``: every verdict the world allows (``False``: only the truth,
    as seen once everything is visible).
    """

    workers: int = 2
    runs: int = 1
    reconciles: int = 1
    reviews: int = 1
    crashes: int = 2
    failed_writes: int = 1
    ticks: int = 2
    depth: int | None = None
    performs: tuple[str, ...] = PERFORMS
    verdicts: bool = True
    lease: float = 60.0
    settle: float = 30.0
    visibility: float = 10.0
    verify_attempts: int = 1
    verify_after_claim: bool = True
    authoritative: bool = True
    review_binds_attempt: bool = True

    def __post_init__(self) -> None:
        counts = {
            "workers": (self.workers, 1, 4),
            "runs": (self.runs, 1, 4),
            "reconciles": (self.reconciles, 0, 4),
            "reviews": (self.reviews, 0, 2),
            "crashes": (self.crashes, 0, 6),
            "failed_writes": (self.failed_writes, 0, 4),
            "ticks": (self.ticks, 0, 6),
            "verify_attempts": (self.verify_attempts, 1, 4),
        }
        for name, (value, low, high) in counts.items():
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise UsageError(
                    f"{name} must be a whole number from {low} to {high}, not {value!r}"
                )
        if self.depth is not None and (
            not isinstance(self.depth, int) or isinstance(self.depth, bool) or self.depth < 1
        ):
            raise UsageError(f"depth must be a whole number >= 1, not {self.depth!r}")
        bad = [p for p in self.performs if p not in PERFORMS]
        if bad or not self.performs:
            raise UsageError(f"performs are some of {', '.join(PERFORMS)}, not {self.performs!r}")
        if not 0 <= self.visibility < self.settle < self.lease:
            raise UsageError(
                "the explorer needs 0 <= visibility < settle < lease "
                f"(got {self.visibility}, {self.settle}, {self.lease})"
            )

    def policy(self) -> Policy:
        return Policy(
            settle_seconds=self.settle,
            absence_authoritative=self.authoritative,
            verify_attempts=self.verify_attempts,
            lease_seconds=self.lease,
            verify_after_claim=self.verify_after_claim,
        )

    def jumps(self) -> tuple[tuple[str, float], ...]:
        """The clock's jumps: past every settle window, and past every lease too."""
        return (("settle", self.settle + 1.0), ("expire", self.lease + self.settle + 1.0))


def verdicts(
    world: tuple[tuple[float, bool], ...], now: float, visibility: float
) -> list[tuple[str, Verdict]]:
    """Every verdict consistent with the world at ``now`` (see the module docstring)."""
    total = len(world)
    seen = sum(1 for at, _ in world if at + visibility <= now)
    out: list[tuple[str, Verdict]] = []
    for count in range(seen, total + 1):
        if count == 0:
            out.append(("absent", Absent()))
        else:
            refs = tuple(f"ref-{i + 1}" for i in range(count))
            out.append((f"confirmed{count}", Confirmed("ref-1", count, refs if count > 1 else ())))
    out.append(("unavailable", Unavailable("explorer: verifier unavailable")))
    return out
