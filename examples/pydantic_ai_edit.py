"""A Pydantic AI agent books a hotel; the user approves it with an edit (``pip install 'actonce[pydantic-ai]'``).

Run it: ``python examples/pydantic_ai_edit.py``. A scripted model (no LLM
needed) calls ``book_hotel``; the run ends with ``DeferredToolRequests``
carrying the approval packet. The user approves **with an edit** (a higher
price ceiling): the intent gets version 2, the approved packet of version 1
is voided (never changed), and the booking for version 2 runs once.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actonce import Intent, Ledger, MemoryStore, Policy, SigningKeys, effect_key
from actonce.adapters.pydantic_ai import approved_tool
from actonce.testing import FakeProvider

hotels = FakeProvider()
ledger = Ledger(MemoryStore(), signing_keys=SigningKeys.parse("demo:" + "7c" * 32, "example"))
ledger.intents.put(
    Intent("trip-rome", "booking", user="ana", provider="Hotel Roma",
           price_ceiling=Decimal("250"), currency="EUR")
)  # fmt: skip


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Book once; once the tool answered, say what it said."""
    last = messages[-1].parts if messages else []
    returned = [p for p in last if isinstance(p, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart(json.dumps(returned[0].content, default=str))])
    args = {"hotel": "Hotel Roma", "max_price": "250"}
    return ModelResponse(parts=[ToolCallPart("book_hotel", args, tool_call_id="call-1")])


agent = Agent(FunctionModel(scripted_model), output_type=[str, DeferredToolRequests])


@approved_tool(
    agent,
    ledger,
    intent_id="trip-rome",
    action="booking",
    key=lambda intent: effect_key(tenant="acme", actor="travel-bot", kind="booking",
                                  object=intent.intent_id, operation="book",
                                  intent_version=intent.version),
    fields=lambda hotel, max_price: {"provider": hotel, "price_ceiling": Decimal(max_price)},
    approval=lambda hotel, max_price: {"amount": max_price, "currency": "EUR",
                                       "destination": hotel},
    verify=lambda hotel, max_price: hotels.lookup(f"{hotel}@{max_price}"),
    policy=Policy(verify_backoff=0.01),
)  # fmt: skip
def book_hotel(hotel: str, max_price: str) -> None:
    """Book the hotel for the trip, paying at most max_price euros."""
    hotels.submit(f"{hotel}@{max_price}")


def main() -> dict[str, Any]:
    first = agent.run_sync("Book my hotel in Rome")
    deferred = first.output
    assert isinstance(deferred, DeferredToolRequests)
    call = deferred.approvals[0]
    asked = deferred.metadata[call.tool_call_id]  # the packet the user is asked about
    edited = {"hotel": "Hotel Roma", "max_price": "280"}  # the user: "yes, but up to 280"
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: ToolApproved(override_args=edited)},
            metadata={call.tool_call_id: {"by": "ana"}},
        ),
    )
    old = ledger.approvals.get(asked["approval"])
    return {
        "asked": asked,
        "answer": json.loads(str(second.output)),
        "old_packet": {"version": old.intent.version, "status": old.status.value},
        "intent_versions": [row.intent.version for row in ledger.intents.chain("trip-rome")],
        "bookings": hotels.accepted(),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2, default=str))
