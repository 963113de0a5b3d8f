"""MCP (``pip install 'actonce[mcp]'``): a server tool whose side effect runs through the ledger.

::

    from mcp.server.mcpserver import MCPServer
    from actonce.adapters.mcp import guarded_tool

    server = MCPServer("billing")

    @guarded_tool(server, ledger, kind="invoice",
                  key=lambda reference, amount: effect_key(tenant="acme", actor="billing-bot",
                                                          kind="invoice", object=reference,
                                                          operation="create"),
                  verify=lambda reference, amount: invoice_exists(reference))
    def create_invoice(reference: str, amount: str) -> None:
        '''Create an invoice for an external reference.'''
        billing.create(reference, amount)          # the side effect: at most once

The tool's arguments are the function's parameters (its schema is made from
them). Each call runs ``ledger.run(Effect(...))``: a retried call with the
same arguments is answered with the existing result (``skipped``, the
same ``result_ref``) instead of acting again. Every outcome comes back as
a tool result (:func:`actonce.adapters.tool_result`: ``outcome``, ``done``,
``result_ref``, ``reason``, ``advice``), never as an exception; an ambiguous
one (``needs_review``) says "it may have happened: do not call again".
The same arguments with another payload, or a ledger that cannot be used,
is an ``error`` result.

``ledger`` may be a ``Ledger`` (run in a worker thread) or an
``AsyncLedger`` (``perform``/``verify`` may then be ``async``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from actonce import ActOnceError, AsyncLedger, Effect, EffectKey, Ledger, Policy

from ._result import error_result, tool_result

__all__ = ["guarded_tool"]


def guarded_tool(
    server: Any,
    ledger: Ledger | AsyncLedger,
    *,
    kind: str,
    key: Callable[..., EffectKey | str],
    verify: Callable[..., Any],
    payload: Callable[..., Any] | None = None,
    policy: Policy | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` (the perform) as the MCP tool ``name`` of ``server``.

    ``key``, ``verify`` and ``payload`` get the tool's arguments, as ``fn``
    does; the payload defaults to the arguments themselves.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn, eval_str=True)  # annotations resolved in fn's module

        def effect(arguments: dict[str, Any]) -> Effect:
            return Effect(
                key=key(**arguments),
                kind=kind,
                payload=payload(**arguments) if payload else arguments,
                perform=functools.partial(fn, **arguments),
                verify=functools.partial(verify, **arguments),
                policy=policy or Policy(),
            )

        async def tool(*args: Any, **kwargs: Any) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            try:
                if isinstance(ledger, AsyncLedger):
                    result = await ledger.run(effect(arguments))
                else:
                    result = await anyio.to_thread.run_sync(ledger.run, effect(arguments))
            except ActOnceError as exc:
                return error_result(exc)
            return tool_result(result)

        functools.update_wrapper(tool, fn)
        vars(tool).pop("__wrapped__", None)  # the schema is the signature below
        tool.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=dict[str, Any]
        )
        tool.__annotations__ = {
            **{n: p.annotation for n, p in signature.parameters.items()},
            "return": dict[str, Any],
        }
        server.tool(name=name or fn.__name__, description=description or fn.__doc__)(tool)
        return fn

    return deco
