"""The demo's batch of intents: what a user delegated to the agents.

Each intent is a structured, versioned request (seed 004): kind, actor,
target and payload. Its effect keys derive from the intent id and version
only, so every retry, worker and round agrees on them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from actonce import EffectKey, effect_key

__all__ = ["Intent", "build_batch", "quality_gate"]

ACTORS = ("alice", "bob", "carol")
TENANT = "sandbox-demo"

_TOPICS = (
    "retries are a business decision, not a network setting",
    "verify the outcome before you click again",
    "an unknown state beats a double charge",
    "claims before clicks, receipts after",
    "absence inside the settle window proves nothing",
    "one intent, at most one accepted effect",
    "reconcile before you replan",
    "a timeout is not a failure",
    "keep secrets in the browser profile, not the ledger",
    "stop rather than guess",
)


@dataclass(frozen=True, slots=True)
class Intent:
    """One delegated task.

    Attributes:
        id: stable identity of the intent (``post-03``).
        kind: ``post``, ``thread``, ``like``, ``follow`` or ``invoice``.
        actor: the account that acts.
        text: a post's text.
        parts: a thread's texts, in order.
        target: a like's post path or a follow's user name.
        reference: an invoice's external reference.
        amount: an invoice's amount in cents.
        version: bumped when the user materially changes the intent.
    """

    id: str
    kind: str
    actor: str
    text: str = ""
    parts: tuple[str, ...] = ()
    target: str = ""
    reference: str = ""
    amount: int = 0
    version: int = 1

    def key(self, part: int | None = None) -> EffectKey:
        """The effect key of this intent (of one thread part)."""
        extra: dict[str, int] = {"intent_version": self.version}
        if part is not None:
            extra["part"] = part
        kind = "post" if self.kind == "thread" else self.kind
        return effect_key(
            tenant=TENANT, actor=self.actor, kind=kind, object=self.id, operation="create", **extra
        )

    @property
    def effects(self) -> int:
        """How many effects the intent needs."""
        return len(self.parts) if self.kind == "thread" else 1


def quality_gate(intent: Intent, batch: list[Intent]) -> str | None:
    """Why an allowed, affordable intent is still not worth doing (or None)."""
    if intent.kind == "post":
        if len(intent.text.split()) < 3:
            return "post too short to be worth publishing"
        for other in batch:
            if other is intent:
                break
            if other.kind == "post" and other.actor == intent.actor and other.text == intent.text:
                return f"same text as {other.id}: a repeat, not new content"
    return None


def build_batch(n: int, *, seed: int, like_targets: list[str]) -> list[Intent]:
    """``n`` intents of every kind, deterministic for a seed.

    ``like_targets`` are paths of existing posts the agents may like.
    """
    if n < 1:
        raise ValueError("the demo needs at least one intent")
    rng = random.Random(seed)
    out: list[Intent] = []
    kinds = ["post", "invoice", "post", "like", "follow", "post", "invoice", "thread"]
    counters: dict[str, int] = {}
    follows: set[tuple[str, str]] = set()
    likes: set[tuple[str, str]] = set()
    for i in range(n):
        kind = kinds[i % len(kinds)]
        actor = ACTORS[rng.randrange(len(ACTORS))]
        counters[kind] = counters.get(kind, 0) + 1
        ident = f"{kind}-{counters[kind]:02d}"
        if kind == "post":
            text = f"{_TOPICS[rng.randrange(len(_TOPICS))]} (#{seed}-{i})"
            out.append(Intent(ident, kind, actor, text=text))
        elif kind == "thread":
            topic = _TOPICS[rng.randrange(len(_TOPICS))]
            parts = tuple(f"{topic}: part {p + 1}/3 (#{seed}-{i})" for p in range(3))
            out.append(Intent(ident, kind, actor, parts=parts))
        elif kind == "invoice":
            out.append(
                Intent(
                    ident,
                    kind,
                    actor,
                    reference=f"ORDER-{seed}-{9200 + i}",
                    amount=1000 + rng.randrange(9000),
                )
            )
        else:  # follow or like: a target this actor has not used yet
            used = follows if kind == "follow" else likes
            pool = [a for a in ACTORS if a != actor] if kind == "follow" else like_targets
            free = [t for t in pool if (actor, t) not in used]
            if not free:  # every target taken for this actor: a post instead
                out.append(
                    Intent(
                        f"{ident}-as-post",
                        "post",
                        actor,
                        text=f"{_TOPICS[i % len(_TOPICS)]} (#{seed}-{i}{kind[0]})",
                    )
                )
                continue
            target = free[rng.randrange(len(free))]
            used.add((actor, target))
            out.append(Intent(ident, kind, actor, target=target))
    # Two candidates the quality gate should turn down: allowed, affordable, not worth it.
    if n >= 8:
        out.append(Intent("post-short", "post", "bob", text="ok"))
        first = next(x for x in out if x.kind == "post")
        out.append(Intent("post-repeat", "post", first.actor, text=first.text))
    return out
