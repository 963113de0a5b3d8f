"""Pydantic AI (``pip install 'actonce[pydantic-ai]'``): a deferred tool under approval.

::

    agent = Agent(model, output_type=[str, DeferredToolRequests])

    @approved_tool(agent, ledger, intent_id="trip-paris", action="book",
                   key=lambda intent: effect_key(..., intent_version=intent.version),
                   fields=lambda hotel, max_price: {"provider": hotel,
                                                    "price_ceiling": Decimal(max_price)},
                   approval=lambda hotel, max_price: {"amount": max_price, "currency": "EUR",
                                                      "destination": hotel},
                   verify=lambda hotel, max_price: booking_exists(hotel))
    def book_hotel(hotel: str, max_price: str) -> None:
        '''Book the hotel for the trip, at most max_price.'''
        hotels.book(hotel, max_price)               # the side effect: at most once

The model's call first ends the run with ``DeferredToolRequests``: the tool
asked the ledger for an approval packet (``ledger.approvals.request``) for
the intent's current version and raised ``ApprovalRequired`` with the
packet in its metadata (``approval``, ``intent``, ``version``). The user
answers through ``DeferredToolResults``:

- ``ToolApproved()``: the packet is answered "approve" (by the
  ``by`` in ``DeferredToolResults.metadata[call_id]``, else the intent's
  user) and the gated effect runs once;
- ``ToolApproved(override_args={...})`` — **approve with edits**: when the
  edited arguments change a field of the intent (``fields``), the intent is
  revised (``ledger.intents.revise``): a new version, whose effect has a new
  key; the approved packet of the old version is voided by the revision,
  never changed; a packet for the new version is requested and answered by
  the same user, and that effect runs once. An edit that changes nothing
  material is the approval of the packet as it was;
- ``ToolDenied()``: Pydantic AI never calls the tool; the packet stays
  pending until it expires (answer it "deny" yourself to close it at once).

The tool returns :func:`actonce.adapters.tool_result` with ``intent_version``,
``approval`` and ``revised_from``; ambiguous outcomes are results, not
exceptions.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired

from actonce import (
    ActOnceError,
    Answered,
    Approvals,
    ApprovalStatus,
    Effect,
    EffectKey,
    Intent,
    IntentRef,
    Ledger,
    Packet,
    Policy,
)

from ._result import error_result, tool_result

__all__ = ["approved_tool"]


def _packet(ledger: Ledger, intent: Intent, key: str) -> Packet | None:
    ref = IntentRef(intent.intent_id, intent.version)
    found = None
    for packet in ledger.approvals.list(user=intent.user, limit=100_000):
        live = packet.status in (ApprovalStatus.PENDING, ApprovalStatus.APPROVED)
        if packet.effect_key == key and packet.intent == ref and live:
            found = packet
    return found


def approved_tool(
    agent: Any,
    ledger: Ledger,
    *,
    intent_id: str,
    action: str,
    key: Callable[[Intent], EffectKey | str],
    fields: Callable[..., Mapping[str, Any]],
    verify: Callable[..., Any],
    approval: Callable[..., Mapping[str, Any]] | None = None,
    payload: Callable[..., Any] | None = None,
    policy: Policy | None = None,
    name: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` (the perform) as an approval-gated tool of ``agent``.

    ``fields(**args)`` says which intent fields the arguments stand for;
    ``approval(**args)`` the packet's ``amount``/``currency``/``destination``/
    ``details``; ``key(intent)`` the effect key of an intent version.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn, eval_str=True)

        def request(intent: Intent, effect_key: str, args: dict[str, Any]) -> Packet:
            extra = dict(approval(**args)) if approval else {}
            return ledger.approvals.request(intent, action, effect_key, **extra).packet

        def run(
            intent: Intent, effect_key: str, packet: Packet, args: dict[str, Any]
        ) -> dict[str, Any]:
            effect = Effect(
                key=effect_key,
                kind=action,
                payload=payload(**args) if payload else {"intent": intent.intent_id, **args},
                perform=functools.partial(fn, **args),
                verify=functools.partial(verify, **args),
                gate=Approvals.gate(packet),
                policy=policy or Policy(),
            )
            return tool_result(ledger.run(effect))

        def tool(ctx: RunContext[Any], **args: Any) -> dict[str, Any]:
            try:
                intent = ledger.intents.get(intent_id)
                effect_key = _key(key(intent))
                if not ctx.tool_call_approved:
                    packet = _packet(ledger, intent, effect_key) or request(
                        intent, effect_key, args
                    )
                    raise ApprovalRequired(
                        metadata={"approval": packet.packet_id, "intent": intent.intent_id,
                                  "version": intent.version, "user": intent.user}
                    )  # fmt: skip
                meta = ctx.tool_call_metadata if isinstance(ctx.tool_call_metadata, dict) else {}
                by = str(meta.get("by") or intent.user)
                wanted = dict(fields(**args))
                changes = {k: v for k, v in wanted.items() if getattr(intent, k) != v}
                revised_from = None
                if changes:
                    revision = ledger.intents.revise(intent_id, **changes)
                    if revision.material:
                        revised_from = intent.version
                    intent = revision.intent
                    effect_key = _key(key(intent))
                packet = _packet(ledger, intent, effect_key) or request(intent, effect_key, args)
                answered = ledger.approvals.answer(packet.packet_id, "approve", by=by)
                answer = run(intent, effect_key, packet, args)
                if answered.answer is Answered.REFUSED:
                    answer["answer_refused"] = answered.reason
            except ActOnceError as exc:
                return error_result(exc)
            return {**answer, "intent_version": intent.version, "approval": packet.packet_id,
                    "revised_from": revised_from}  # fmt: skip

        functools.update_wrapper(tool, fn)
        vars(tool).pop("__wrapped__", None)
        context = inspect.Parameter(
            "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=RunContext[Any]
        )
        params = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values()
        ]
        tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [context, *params], return_annotation=dict[str, Any]
        )
        tool.__annotations__ = {"ctx": RunContext[Any],
                                **{n: p.annotation for n, p in signature.parameters.items()},
                                "return": dict[str, Any]}  # fmt: skip
        # Not requires_approval=True: the tool itself asks the ledger for the packet first,
        # then defers the call (ApprovalRequired) with the packet in its metadata.
        agent.tool(tool, name=name or fn.__name__)
        return fn

    return deco


def _key(key: EffectKey | str) -> str:
    return key.value if isinstance(key, EffectKey) else key
