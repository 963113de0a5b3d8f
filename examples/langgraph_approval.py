"""A LangGraph agent books a hotel only after the user approved it (``pip install 'actonce[langgraph]'``).

Run it: ``python examples/langgraph_approval.py``. The graph stops at an
``interrupt`` that carries the approval packet (what, where, how much);
``Command(resume={"decision": "approve", "by": "ana"})`` resumes it. LangGraph
runs the node again from its start on resume; the booking still happens
once.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from actonce import Effect, Gate, Intent, Ledger, MemoryStore, Policy, SigningKeys, effect_key
from actonce.adapters.langgraph import approve_then_run
from actonce.testing import FakeProvider

hotel = FakeProvider()  # the booking system (its ground truth: accepted bookings)
# The approval signing key lives outside the ledger (ACTONCE_APPROVAL_KEYS in real life).
ledger = Ledger(MemoryStore(), signing_keys=SigningKeys.parse("demo:" + "5a" * 32, "example"))
intent = ledger.intents.put(
    Intent("trip-paris", "booking", user="ana", provider="Hotel du Nord",
           price_ceiling=Decimal("300"), currency="EUR")
)  # fmt: skip
key = effect_key(tenant="acme", actor="travel-bot", kind="booking", object="trip-paris",
                 operation="book", intent_version=intent.version)  # fmt: skip
node_entries: list[int] = []


class State(TypedDict, total=False):
    booking: dict[str, Any]


def booking(gate: Gate | None) -> Effect:
    return Effect(
        key=key,
        kind="booking",
        payload={"trip": "trip-paris", "hotel": "Hotel du Nord", "amount": "250"},
        perform=lambda: hotel.submit("trip-paris"),
        verify=lambda: hotel.lookup("trip-paris"),
        gate=gate,
        policy=Policy(verify_backoff=0.01),
    )


def book(state: State) -> State:
    node_entries.append(1)  # LangGraph enters this node twice: before and after the resume
    answer = approve_then_run(
        ledger, intent=intent, action="book", key=key, effect=booking,
        amount="250", currency="EUR", destination="Hotel du Nord",
    )  # fmt: skip
    return {"booking": answer}


builder = StateGraph(State)
builder.add_node("book", book)
builder.add_edge(START, "book")
builder.add_edge("book", END)
graph = builder.compile(checkpointer=InMemorySaver())


def main() -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": "trip-paris"}}
    paused = graph.invoke({}, config)
    question = paused["__interrupt__"][0].value  # what the user is asked to approve
    done = graph.invoke(Command(resume={"decision": "approve", "by": "ana"}), config)
    again = graph.invoke({}, {"configurable": {"thread_id": "trip-paris-again"}})  # a rerun
    return {
        "asked": question,
        "booking": done["booking"],
        "rerun": again["booking"],
        "node_entries": len(node_entries),
        "bookings_made": hotel.count("trip-paris"),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2, default=str))
