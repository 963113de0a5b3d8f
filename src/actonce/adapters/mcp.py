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

The tool carries the protocol's annotations (:data:`DEFAULT_ANNOTATIONS`),
the hints a client uses to decide what to confirm with its user:
``readOnlyHint`` false (it changes the world), ``destructiveHint`` true (a
payment or a message cannot be taken back: say ``False`` for a purely
additive tool), ``idempotentHint`` true (the same arguments make the same
effect key: a repeated call is answered with the first one's result, which
is what the hint promises) and ``openWorldHint`` true (it acts on a system
outside the server). ``annotations=`` overrides any of them (an
``mcp.types.ToolAnnotations`` or a mapping, by the protocol's names or
their snake_case), plus ``title``; ``readOnlyHint=True`` is refused: a
client would call a guarded side effect without asking.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread

from actonce import ActOnceError, AsyncLedger, Effect, EffectKey, Ledger, Policy, UsageError

from ._result import error_result, tool_result

__all__ = ["DEFAULT_ANNOTATIONS", "guarded_tool"]

DEFAULT_ANNOTATIONS: Mapping[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": True,
    "openWorldHint": True,
}
"""The MCP tool annotations of a guarded tool unless ``annotations=`` says otherwise."""


def _annotations(overrides: Any) -> Any:
    """``ToolAnnotations``: the defaults, then what the caller set."""
    from mcp.types import ToolAnnotations

    if overrides is None:
        given: dict[str, Any] = {}
    elif isinstance(overrides, ToolAnnotations):
        given = overrides.model_dump(by_alias=True, exclude_unset=True)
    elif isinstance(overrides, Mapping):
        fields = ToolAnnotations.model_fields
        known = set(fields) | {f.alias for f in fields.values() if f.alias}
        unknown = sorted(str(k) for k in overrides if k not in known)
        if unknown:
            raise UsageError(f"unknown MCP tool annotations: {', '.join(unknown)}")
        given = ToolAnnotations.model_validate(dict(overrides)).model_dump(
            by_alias=True, exclude_unset=True
        )
    else:
        raise UsageError("annotations= takes an mcp.types.ToolAnnotations or a mapping")
    merged = {**DEFAULT_ANNOTATIONS, **given}
    if merged["readOnlyHint"]:
        raise UsageError(
            "a guarded tool changes the world: readOnlyHint=True would let a client call it "
            "without asking (leave it false)"
        )
    return ToolAnnotations.model_validate(merged)


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
    annotations: Any = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` (the perform) as the MCP tool ``name`` of ``server``.

    ``key``, ``verify`` and ``payload`` get the tool's arguments, as ``fn``
    does; the payload defaults to the arguments themselves. ``annotations``
    (an ``mcp.types.ToolAnnotations`` or a mapping) overrides
    :data:`DEFAULT_ANNOTATIONS`.

    Raises:
        UsageError: ``readOnlyHint=True``, or an annotation the protocol does not name.
    """
    tool_annotations = _annotations(annotations)

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
        server.tool(
            name=name or fn.__name__,
            description=description or fn.__doc__,
            annotations=tool_annotations,
        )(tool)
        return fn

    return deco
