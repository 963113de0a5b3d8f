"""One booking trip as the steps of an ``actonce.Operation``: hold → pay → book → notify.

Each step is an ``actonce.Effect`` of its own (its key from the intent version,
``actonce.intent_key``; its verifier; the booking policy) with its role:

=========  ==============  =====================  ========================================
step       role            undo                   gate
=========  ==============  =====================  ========================================
hold       compensatable   release the hold       the intent version is current
pay        compensatable   void the authorization the intent version + the approval packet
book       pivot           —                      the intent version is current
notify     retriable       —                      the intent version is current
=========  ==============  =====================  ========================================

The pay step refreshes the hold's total right before its claim (a fact with a
validity window): within the approved ceiling the claim goes on with the
refreshed amount; above it, the core invalidates the packet and issues a
refreshed one; a session that signed out pauses the commit, nothing lost.

Hold, pay and book pass their step's effect key as the provider's
idempotency key, so the one retry a perform may make is safe: a submit the
provider answered with a server error is sent again, same key, with backoff
(``actonce.provider_retry``); the provider answers a repeat with the object it
made. No other failure is retried: an unanswered submit is verified.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from actonce import (
    Effect,
    EffectKey,
    Gate,
    Intent,
    IntentRef,
    Operation,
    Policy,
    Step,
    intent_key,
    provider_retry,
)
from actonce import NotPerformed as CoreNotPerformed

from ._booking import (
    BookEffect,
    HoldEffect,
    NotifyEffect,
    PayEffect,
    ProviderBusy,
    ReleaseHoldEffect,
    SignedOut,
    Trip,
    VoidPaymentEffect,
)
from ._errors import OutcomeUnknown
from ._site import SiteEffect

if TYPE_CHECKING:
    from actonce import Ledger

    from ._session import AsyncBrowserSession
    from ._sync import BrowserSession
    from ._sync import Effect as BoundEffect

__all__ = ["BOOKING_POLICY", "booking_operation", "booking_steps", "money_of"]

BOOKING_POLICY = Policy(
    settle_seconds=0.5,
    absence_authoritative=True,
    verify_attempts=4,
    verify_backoff=0.2,
    verify_backoff_max=1.0,
    lease_seconds=60.0,
    verify_after_claim=False,
)
"""The booking world's lookups are its authoritative, current state (no late
index): an absence after a short settle window proves the step did not happen."""


def money_of(cents: int) -> Decimal:
    """Cents as a money amount (``24000`` -> ``Decimal("240.00")``)."""
    return (Decimal(cents) / 100).quantize(Decimal("0.01"))


class _Busy(Exception):
    """A perform whose submit got a server error: the provider retry's signal."""

    def __init__(self, error: OutcomeUnknown) -> None:
        super().__init__(str(error))
        self.error = error


class _Wire:
    """The wire records of every submit of one perform (one per provider attempt)."""

    def __init__(self) -> None:
        self.details: dict[str, Any] = {"wire": [], "sent": 0, "refused": 0, "submits": 0}

    def add(self, found: Any) -> None:
        if isinstance(found, dict):
            self.details["wire"].extend(found.get("wire") or [])
            self.details["sent"] += int(found.get("sent") or 0)
            self.details["refused"] += int(found.get("refused") or 0)
        self.details["submits"] += 1


def _effect(
    session: BrowserSession,
    make: Callable[[], SiteEffect],
    key: EffectKey,
    *,
    policy: Policy,
    gate: Gate | None,
    retries: int = 1,
    backoff: float = 0.25,
    refresh: Callable[[], Any] | None = None,
) -> Effect:
    """The ledger's effect for one site effect; ``retries`` > 1 resends on a 5xx, same key."""
    site = make()
    last: list[BoundEffect] = []

    def bound() -> BoundEffect:
        effect = session.effect(make())
        last[:] = [effect]
        return effect

    def perform() -> dict[str, Any]:
        wire = _Wire()

        def once() -> Any:
            effect = bound()
            try:
                done = effect.perform()
            except OutcomeUnknown as exc:
                wire.add(getattr(exc, "details", None))
                if retries > 1 and isinstance(exc.__cause__, ProviderBusy):
                    raise _Busy(exc) from exc
                exc.details = wire.details  # type: ignore[attr-defined]
                raise
            except Exception as exc:
                wire.add(getattr(exc, "details", None))
                if wire.details["sent"] and isinstance(exc, CoreNotPerformed):
                    # An earlier submit of this perform left (and got a 5xx):
                    # this attempt stopping before its click proves nothing.
                    unknown = OutcomeUnknown(
                        f"{site.kind}: a resend stopped before its click after an earlier "
                        f"submit got a server error: {exc}"
                    )
                    unknown.details = wire.details  # type: ignore[attr-defined]
                    raise unknown from exc
                exc.details = wire.details  # type: ignore[attr-defined]
                raise
            wire.add(done)
            return done

        try:
            provider_retry(once, attempts=retries, backoff=backoff, retry_on=(_Busy,))
        except _Busy as busy:
            busy.error.details = wire.details  # type: ignore[attr-defined]
            raise busy.error from None
        return wire.details

    def verify() -> Any:
        return session.effect(make()).verify()

    def evidence(label: str) -> str | None:
        return (last[0] if last else session.effect(make())).evidence(label)

    return Effect(
        key=key,
        kind=site.kind,
        payload=site.payload(),
        perform=perform,
        verify=verify,
        evidence=evidence,
        policy=policy,
        gate=gate,
        refresh=refresh,
    )


def _total_of(session: BrowserSession, pay: PayEffect) -> Callable[[], dict[str, Any]]:
    """The pay step's refresher: the hold's total now, or a signed-out session."""

    async def read(s: AsyncBrowserSession) -> dict[str, Any]:
        try:
            hold = await pay.live_hold(s)
        except SignedOut:
            return {"session": False}
        if hold is None:
            # Nothing to price: the perform will find no live hold and stop
            # before its click (a proven failure, compensated like one).
            return {"hold": "none live"}
        return {"total": str(money_of(int(hold["amount"])))}

    return lambda: session.run(read)


def booking_steps(
    session: BrowserSession,
    trip: Trip,
    intent: Intent | IntentRef,
    *,
    tenant: str,
    approval: str | None = None,
    amount: Decimal | None = None,
    policy: Policy = BOOKING_POLICY,
    provider_retries: int = 3,
    retry_backoff: float = 0.25,
    pay_attempts: int = 2,
    notify_attempts: int = 3,
    notify_backoff: float = 30.0,
) -> list[Step]:
    """The four steps of one trip for one intent version, bound to ``session``.

    Args:
        session: the signed-in session of the trip's user (its username is
            the actor of every key).
        trip: what to book; ``trip.ceiling`` is the approved ceiling in cents.
        intent: the intent version the steps serve (their keys include it).
        tenant: the keys' tenant.
        approval: the packet that authorizes the payment (its gate); without
            one the payment is gated by the intent version only.
        amount: what the payment is expected to cost (the packet's amount).
        policy: the policy of every step.
        provider_retries: submits per perform of a keyed step when the
            provider answers 5xx (1: never resend).
        retry_backoff: seconds before the first resend (doubling).
        pay_attempts: proven failures of the payment retried before the
            operation compensates (a session that expired before the click).
        notify_attempts: sends of the confirmation before it is given up.
        notify_backoff: seconds before a confirmation that was not delivered
            is sent again (doubling with each attempt).
    """
    ref = intent.ref if isinstance(intent, Intent) else intent
    user = session.username
    keys = {
        a: intent_key(ref, a, tenant=tenant, actor=user)
        for a in ("hold", "pay", "book", "notify", "release", "void")
    }
    current = Gate(intent=ref)
    kw: dict[str, Any] = {"policy": policy, "retries": provider_retries, "backoff": retry_backoff}
    pay_site = PayEffect(user, trip, keys["pay"].value)
    pay_gate = Gate(ref, approval, amount) if approval is not None else current
    refresh = _total_of(session, pay_site) if approval is not None else None
    hold = _effect(session, lambda: HoldEffect(user, trip, keys["hold"].value), keys["hold"],
                   gate=current, **kw)  # fmt: skip
    pay = _effect(session, lambda: PayEffect(user, trip, keys["pay"].value), keys["pay"],
                  gate=pay_gate, refresh=refresh, **kw)  # fmt: skip
    book = _effect(session, lambda: BookEffect(user, trip, keys["book"].value), keys["book"],
                   gate=current, **kw)  # fmt: skip
    notify = _effect(session, lambda: NotifyEffect(user, trip), keys["notify"], policy=policy,
                     gate=current)  # fmt: skip
    release = _effect(session, lambda: ReleaseHoldEffect(user, trip), keys["release"],
                      policy=policy, gate=None)  # fmt: skip
    void = _effect(session, lambda: VoidPaymentEffect(user, trip), keys["void"], policy=policy,
                   gate=None)  # fmt: skip
    return [
        Step("hold", hold, "compensatable", undo=release, attempts=2),
        Step("pay", pay, "compensatable", undo=void, attempts=pay_attempts),
        Step("book", book, "pivot"),
        Step("notify", notify, "retriable", attempts=notify_attempts, backoff=notify_backoff),
    ]


def booking_operation(
    ledger: Ledger,
    session: BrowserSession,
    trip: Trip,
    intent: Intent | IntentRef,
    *,
    tenant: str,
    approval: str | None = None,
    amount: Decimal | None = None,
    **options: Any,
) -> Operation:
    """``Operation(ledger, "booking:<intent>@v<n>", booking_steps(...))``.

    ``options`` go to :func:`booking_steps`. The operation's receipt names
    the intent version and the approval.
    """
    ref = intent.ref if isinstance(intent, Intent) else intent
    steps = booking_steps(
        session, trip, ref, tenant=tenant, approval=approval, amount=amount, **options
    )
    return Operation(ledger, f"booking:{ref}", steps, intent=ref, approval=approval)
