"""A guarded MCP tool carries the protocol's tool annotations, read by a real MCP client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from actonce import Ledger, MemoryStore, UsageError
from actonce.adapters.mcp import DEFAULT_ANNOTATIONS, guarded_tool
from actonce.testing import FakeProvider


def _listed(annotations: Any = None) -> Any:
    """The tool as a client lists it: its annotations, and their JSON on the wire."""
    billing, ledger, server = FakeProvider(), Ledger(MemoryStore()), MCPServer("t")

    async def go() -> Any:
        async with Client(server) as client:
            (tool,) = (await client.list_tools()).tools
            return tool

    try:

        @guarded_tool(server, ledger, kind="invoice", key=lambda reference: reference,
                      verify=lambda reference: billing.lookup(reference),
                      annotations=annotations)  # fmt: skip
        def create(reference: str) -> None:
            billing.submit(reference)

        return asyncio.run(go())
    finally:
        ledger.close()
        billing.close()


def test_a_guarded_tool_says_it_changes_the_world_once_per_arguments() -> None:
    tool = _listed()
    assert isinstance(tool.annotations, ToolAnnotations)
    wire = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    assert wire == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": True,
    }
    assert wire == dict(DEFAULT_ANNOTATIONS)


@pytest.mark.parametrize(
    "given",
    [
        ToolAnnotations(title="Create an invoice", destructive_hint=False),
        {"title": "Create an invoice", "destructiveHint": False},
        {"title": "Create an invoice", "destructive_hint": False},
    ],
    ids=["ToolAnnotations", "protocol-names", "snake-case"],
)
def test_the_caller_overrides_some_and_keeps_the_other_defaults(given: Any) -> None:
    tool = _listed(given)
    wire = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    assert wire == {
        "title": "Create an invoice",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }


def test_idempotent_and_open_world_can_be_turned_off() -> None:
    tool = _listed({"idempotentHint": False, "openWorldHint": False})
    assert tool.annotations.idempotent_hint is False
    assert tool.annotations.open_world_hint is False


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"readOnlyHint": True}, "readOnlyHint=True"),
        (ToolAnnotations(read_only_hint=True), "readOnlyHint=True"),
        ({"destructive": False}, "unknown MCP tool annotations: destructive"),
        ("destructive", "annotations= takes"),
    ],
    ids=["read-only", "read-only-model", "unknown-name", "not-a-mapping"],
)
def test_a_wrong_annotation_is_refused_when_the_tool_is_declared(given: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _listed(given)
