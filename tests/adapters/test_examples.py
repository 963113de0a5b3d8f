"""The adapters' runnable examples, run with the real libraries installed."""

from __future__ import annotations

import asyncio
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / name), run_name=f"example_{name[:-3]}")


def test_mcp_retried_call_returns_the_existing_result() -> None:
    pytest.importorskip("mcp")
    ex = load("mcp_invoice.py")
    out = asyncio.run(ex["main"]())
    first, retried, lost = out["first"], out["retried"], out["lost"]
    assert first["outcome"] == "completed" and first["performed"] and first["result_ref"]
    assert retried["outcome"] == "skipped" and not retried["performed"]
    assert retried["result_ref"] == first["result_ref"]
    # Ambiguous: a clear tool result (not an error), saying not to call again.
    assert lost["outcome"] == "needs_review" and lost["status"] == "unknown"
    assert "do not call this tool again" in lost["advice"]
    assert out["truth"] == {"ORDER-9201": 1, "ORDER-9202": 1}

    async def again() -> dict[str, Any]:
        from mcp import Client

        async with Client(ex["server"]) as client:
            answer = await client.call_tool(
                "create_invoice", {"reference": "ORDER-9202", "amount": "120.00"}
            )
            assert not answer.is_error
            return dict(answer.structured_content or {})

    retry_of_lost = asyncio.run(again())
    assert retry_of_lost["outcome"] == "needs_review" and not retry_of_lost["performed"]
    assert ex["billing"].count("ORDER-9202") == 1  # never performed twice


def test_mcp_tool_schema_is_the_functions_parameters() -> None:
    pytest.importorskip("mcp")
    ex = load("mcp_invoice.py")

    async def tools() -> Any:
        from mcp import Client

        async with Client(ex["server"]) as client:
            return (await client.list_tools()).tools

    (tool,) = asyncio.run(tools())
    assert tool.name == "create_invoice"
    assert set(tool.input_schema["properties"]) == {"reference", "amount"}
    assert "at most once" in (tool.description or "")


def test_mcp_same_arguments_other_payload_is_an_error_result() -> None:
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from actonce import Ledger, MemoryStore
    from actonce.adapters.mcp import guarded_tool
    from actonce.testing import FakeProvider

    billing, ledger, server = FakeProvider(), Ledger(MemoryStore()), MCPServer("t")

    @guarded_tool(server, ledger, kind="invoice", key=lambda reference, amount: reference,
                  verify=lambda reference, amount: billing.lookup(reference))  # fmt: skip
    def create(reference: str, amount: str) -> None:
        billing.submit(reference)

    async def go() -> list[dict[str, Any]]:
        async with Client(server) as client:
            out = []
            for amount in ("1", "2"):
                r = await client.call_tool("create", {"reference": "R", "amount": amount})
                out.append(dict(r.structured_content or {}))
            return out

    one, two = asyncio.run(go())
    assert one["outcome"] == "completed"
    assert two["outcome"] == "error" and "PayloadMismatch" in two["reason"]
    assert billing.count("R") == 1


def test_langgraph_resume_does_not_rerun_the_effect() -> None:
    pytest.importorskip("langgraph")
    ex = load("langgraph_approval.py")
    out = ex["main"]()
    assert out["asked"]["action"] == "book" and out["asked"]["amount"] == "250"
    assert out["asked"]["user"] == "ana" and out["asked"]["approval"].startswith("apv-")
    assert out["booking"]["outcome"] == "completed" and out["booking"]["performed"]
    assert out["booking"]["approval"] == out["asked"]["approval"]  # no second packet
    assert out["node_entries"] >= 2  # LangGraph ran the node again from its start ...
    assert out["bookings_made"] == 1  # ... and the booking happened once
    assert out["rerun"]["outcome"] == "skipped"


def test_langgraph_denied_books_nothing() -> None:
    pytest.importorskip("langgraph")
    from langgraph.types import Command

    ex = load("langgraph_approval.py")
    config = {"configurable": {"thread_id": "deny"}}
    graph = ex["graph"]
    assert "__interrupt__" in graph.invoke({}, config)
    done = graph.invoke(Command(resume={"decision": "deny", "by": "ana"}), config)
    assert done["booking"]["outcome"] == "refused" and not done["booking"]["performed"]
    assert ex["hotel"].count("trip-paris") == 0


def test_langgraph_resume_by_someone_else_is_refused() -> None:
    pytest.importorskip("langgraph")
    from langgraph.types import Command

    ex = load("langgraph_approval.py")
    config = {"configurable": {"thread_id": "mallory"}}
    graph = ex["graph"]
    graph.invoke({}, config)
    done = graph.invoke(Command(resume={"decision": "approve", "by": "mallory"}), config)
    assert done["booking"]["outcome"] == "needs_approval" and not done["booking"]["performed"]
    assert done["booking"]["answer_refused"]  # the ledger says why (not ana's approval)
    assert ex["hotel"].count("trip-paris") == 0


def test_pydantic_ai_approve_with_edits_is_a_new_intent_version() -> None:
    pytest.importorskip("pydantic_ai")
    ex = load("pydantic_ai_edit.py")
    out = ex["main"]()
    assert out["asked"]["version"] == 1
    assert out["answer"]["outcome"] == "completed" and out["answer"]["intent_version"] == 2
    assert out["answer"]["revised_from"] == 1
    assert out["answer"]["approval"] != out["asked"]["approval"]
    assert out["old_packet"] == {"version": 1, "status": "voided"}  # never silently changed
    assert out["intent_versions"] == [1, 2]
    assert out["bookings"] == {"Hotel Roma@280": 1}


def test_pydantic_ai_approve_as_is_keeps_the_version() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import DeferredToolResults, ToolApproved

    ex = load("pydantic_ai_edit.py")
    agent, ledger = ex["agent"], ex["ledger"]
    first = agent.run_sync("Book my hotel in Rome")
    call = first.output.approvals[0]
    packet = first.output.metadata[call.tool_call_id]["approval"]
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: ToolApproved()}),
    )
    answer = json.loads(str(second.output))
    assert answer["outcome"] == "completed" and answer["intent_version"] == 1
    assert answer["approval"] == packet and answer["revised_from"] is None
    assert ledger.approvals.get(packet).status.value == "consumed"
    assert ex["hotels"].accepted() == {"Hotel Roma@250": 1}
