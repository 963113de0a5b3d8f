"""Guarded tools for agent frameworks: one small module each, over the public API.

- :mod:`actonce.adapters.mcp` (``actonce[mcp]``): an MCP server tool whose
  side effect runs through the ledger.
- :mod:`actonce.adapters.langgraph` (``actonce[langgraph]``): an approval
  surfaced as a LangGraph ``interrupt``, resumed with ``Command(resume=...)``.
- :mod:`actonce.adapters.pydantic_ai` (``actonce[pydantic-ai]``): Pydantic AI
  deferred tools; "approve with edits" makes a new intent version.

Every adapter answers with :func:`tool_result`: what happened, and what the
agent may do next — an ambiguous outcome is a result, never an exception.
See docs/adapters.md.
"""

from __future__ import annotations

from ._result import ADVICE, tool_result

__all__ = ["ADVICE", "tool_result"]
