"""Hand a bound browser effect to the ledger.

The adapter knows nothing about the ledger; this is the one line of glue
between them: an :class:`actonce.Effect` (a plain spec) whose callables are
the bound site effect's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from actonce import Effect, EffectKey, Gate, Policy, UsageError

from ._effect import AsyncEffect
from ._sync import Effect as BoundEffect

__all__ = ["as_effect"]


def as_effect(
    bound: BoundEffect | AsyncEffect,
    key: EffectKey | str,
    *,
    policy: Policy | None = None,
    extra: dict[str, Any] | None = None,
    gate: Gate | None = None,
    refresh: Callable[[], Any] | None = None,
) -> Effect:
    """An :class:`actonce.Effect` that runs ``bound`` under the protocol.

    Args:
        bound: a site effect bound to a session (``session.post_effect(...)``,
            ``session.effect(MyEffect(...))``); async ones go to ``AsyncLedger``.
        key: the stable effect key (``actonce.effect_key(...)``).
        policy: settle window, authoritative absence, backoff, lease.
        extra: more payload fields to record (an intent id, a thread part).
        gate: what the claim must hold in its transaction: the intent
            version, an approval packet (``ledger.approvals.gate(packet)``),
            budget draws. A pay step keeps its approval gate *and* the site
            effect's evidence hook.
        refresh: read-only refresher of the volatile facts the approval
            depends on (a price, the session), called right before the
            claim; it needs ``gate`` with an approval, else ``UsageError``.

    The ledger's verifier is ``bound.verify(stops=True)``: a login wall, a
    CAPTCHA, a restriction or the wrong identity seen before the claim ends
    the run as ``hard_stop`` (no claim, nothing performed); a rate-limit
    screen is ``Unavailable`` (``deferred``: try again later).

    Raises:
        UsageError: ``refresh`` without a ``gate`` that names an approval.
    """
    if refresh is not None and (gate is None or gate.approval is None):
        raise UsageError(
            "as_effect(refresh=...) needs gate= with an approval packet "
            "(gate=ledger.approvals.gate(packet)): the refreshed facts are checked against "
            "the approved ceiling, and without an approval there is none"
        )
    inner = bound._inner if isinstance(bound, BoundEffect) else bound
    inner.effect_key = key.value if isinstance(key, EffectKey) else key
    return Effect(
        key=key,
        kind=bound.kind,
        payload={**(extra or {}), **bound.payload},
        perform=bound.perform,
        verify=functools.partial(bound.verify, stops=True),
        precondition=bound.precondition,
        evidence=bound.evidence,
        policy=policy or Policy(),
        gate=gate,
        refresh=refresh,
    )
