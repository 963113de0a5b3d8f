"""An MCP server whose tool creates invoices through the ledger (``pip install 'actonce[mcp]'``).

Run it: ``python examples/mcp_invoice.py``. It connects an MCP client to the
server in-process and calls the tool three ways: once, retried with the same
arguments (answered with the existing invoice, nothing created again), and
for an invoice whose answer the billing system loses (an ambiguous outcome,
returned as a clear tool result).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

from actonce import Ledger, MemoryStore, Policy, effect_key
from actonce.adapters.mcp import guarded_tool
from actonce.testing import FakeProvider, Faults

billing = FakeProvider()  # the outside world: it does not deduplicate
ledger = Ledger(MemoryStore())  # open_ledger("sqlite:///actonce.db") in real life
server = MCPServer("billing")


def invoice_key(reference: str, amount: str) -> Any:
    return effect_key(
        tenant="acme", actor="billing-bot", kind="invoice", object=reference, operation="create"
    )


@guarded_tool(
    server,
    ledger,
    kind="invoice",
    key=invoice_key,
    verify=lambda reference, amount: billing.lookup(reference),
    policy=Policy(settle_seconds=0.2, verify_backoff=0.01, verify_attempts=2),
)
def create_invoice(reference: str, amount: str) -> None:
    """Create an invoice for an external reference (at most once)."""
    billing.submit(reference, {"amount": amount})


async def call(client: Client, reference: str) -> dict[str, Any]:
    answer = await client.call_tool("create_invoice", {"reference": reference, "amount": "120.00"})
    assert not answer.is_error
    result: dict[str, Any] = answer.structured_content or json.loads(answer.content[0].text)  # type: ignore[union-attr]
    return result


async def main() -> dict[str, Any]:
    async with Client(server) as client:
        first = await call(client, "ORDER-9201")
        retried = await call(client, "ORDER-9201")  # the agent retries: same arguments
        billing.faults = Faults(lose_response=1.0, visibility_delay=3600)
        lost = await call(client, "ORDER-9202")  # committed, answer lost, not visible yet
    return {"first": first, "retried": retried, "lost": lost, "truth": billing.accepted()}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
