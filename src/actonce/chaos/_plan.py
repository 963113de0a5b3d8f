"""The seeded plan of one ``actonce chaos`` schedule (see ``_chaos``).

Per schedule: the policy (settle window, authoritative absence,
verify-after-claim, verification attempts, lease), the provider's faults,
armed crash points, a random-moment kill, a zombie, and how many rounds are
chaotic. It depends only on the random generator's seed, ``(seed, i)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from actonce import Policy
from actonce.testing import POINTS, Faults

from . import _slow
from ._round import Zombie

__all__ = ["FOREVER", "Plan", "plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What happens to one schedule: policy, faults, kills, a zombie, how long the chaos lasts."""

    policy: Policy
    faults: Faults
    arms: dict[int, tuple[str, int]]
    kill: tuple[int, int] | None  # (after this many point passes, victim worker)
    zombie: Zombie | None
    chaos_rounds: int


FOREVER = 1 << 60


def plan(
    rng: random.Random,
    workers: int,
    intents: int,
    *,
    slow: tuple[random.Random, float] | None = None,
) -> Plan:
    """The plan of one schedule; it depends only on ``rng``'s seed.

    With ``slow`` (a random stream of its own, and ``slow_seconds``), the
    lease and the settle window become short and real, and the visibility
    delay fits them (``_slow.policy``); every other draw is the same.
    """
    authoritative = rng.random() < 0.5
    settle = rng.choice([0.0, 0.001, 0.05, 5.0, 30.0])
    if authoritative:
        # Authoritative absence is the user's promise that a result shows up
        # within the settle window; keep the fake world honest to it, with a
        # margin far larger than the time between the mark and the perform.
        delay = rng.choice([0.0, settle / 2]) if settle >= 5 else 0.0
    else:
        delay = rng.choice([0.0, 0.0, 0.01, 1.0, 60.0])
    policy = Policy(
        settle_seconds=settle,
        absence_authoritative=authoritative,
        verify_attempts=rng.randint(1, 4),
        verify_backoff=0.0005,
        verify_backoff_max=0.002,
        lease_seconds=rng.choice([30.0, 60.0, 600.0]),
        verify_after_claim=rng.random() < 0.5,
    )
    faults = Faults(
        lose_response=rng.choice([0.0, 0.0, 0.2, 0.5]),
        fail_before_commit=rng.choice([0.0, 0.0, 0.2, 0.5]),
        unavailable=rng.choice([0.0, 0.0, 0.1, 0.3]),
        visibility_delay=delay,
    )
    if slow is not None:
        policy, delay = _slow.policy(slow[0], policy, slow[1], faults.visibility_delay)
        faults = replace(faults, visibility_delay=delay)
    arms = {}
    for w in rng.sample(range(workers), k=min(workers, rng.choice([0, 1, 1, 1, 2]))):
        arms[w] = (rng.choice(POINTS), rng.randint(1, max(1, min(3, intents))))
    kill = None
    if rng.random() < 0.5:
        kill = (rng.randint(1, 6 * intents), rng.randrange(workers))
    zombie = None
    if rng.random() < 0.5:
        zombie = _zombie(rng, workers, policy)
    return Plan(policy, faults, arms, kill, zombie, chaos_rounds=rng.randint(1, 3))


def _zombie(rng: random.Random, workers: int, policy: Policy) -> Zombie:
    """Where a worker pauses: long (past its lease, into the next round) or short.

    Every point is fair game: a pause past the lease before the mark must be
    fenced by the claim's token, and one after the mark by the owner's lease
    check right before its perform. (Only a pause between that check and the
    perform's first byte is out of reach: no point lies there, and only
    provider-side idempotency could fence it.)
    """
    # A direct claim is the executing mark itself: the perform comes next.
    mark = "after_mark_executing" if policy.verify_after_claim else "after_claim"
    stops: list[tuple[str, int, bool]] = []
    if rng.random() < 0.7:
        # Half of the long pauses fall before the mark.
        split = POINTS.index(mark)
        before, after = POINTS[:split], POINTS[split:]
        point = rng.choice(before if rng.random() < 0.5 else after)
        stops.append((point, rng.choice([1, 1, 1, 2]), True))
        if point in before and rng.random() < 0.8:
            # Resumed past its lease, it writes its mark, then pauses briefly
            # before the perform: a mark stamped with a stale time would look
            # orphaned to the others during that short pause.
            stops.append((mark, 1, False))
    else:
        # A pause shorter than the lease is safe anywhere.
        stops.append((rng.choice(POINTS), rng.randint(1, 2), False))
    # A short pause ends after a few more passes, or once the others are done.
    short_after = rng.choice([rng.randint(0, 12), FOREVER])
    return Zombie(rng.randrange(workers), tuple(stops), rng.random() < 0.5, short_after)
