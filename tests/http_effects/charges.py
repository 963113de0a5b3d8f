"""The effect under test: create one charge for a reference, verified by counting.

Shared by the tests and by ``_caller.py`` (the process the kill test SIGKILLs).
"""

from __future__ import annotations

from typing import Any

from actonce import Effect, EffectKey, Policy, Registry, effect_key
from actonce.http import Provider

KIND = "charge"


def policy(authoritative: bool = True) -> Policy:
    """Settle fast, wait the window out: every run ends decided (or in review).

    The lease is long (a perform on a loaded machine must not find it
    expired); the cells that test a bound give one of their own.
    """
    return Policy(
        settle_seconds=0.2,
        absence_authoritative=authoritative,
        wait_for_settle=True,
        verify_backoff=0.05,
        lease_seconds=30.0,
    )


def key_of(reference: str) -> EffectKey:
    return effect_key(
        tenant="acme", actor="billing", kind=KIND, object=reference, operation="create"
    )


def charge(
    provider: Provider,
    reference: str,
    *,
    lookups: Provider | None = None,
    authoritative: bool = True,
    **kw: Any,
) -> Effect:
    """The effect under test: create one charge for ``reference``, verified by counting.

    ``lookups``: the provider verification reads (default: ``provider``).
    """
    reader = lookups or provider
    return provider.effect(
        key_of(reference),
        KIND,
        "POST",
        "/v1/charges",
        json={"reference": reference, "amount": 1200},
        verify=lambda: reader.lookup("/v1/charges", params={"reference": reference}, items="data"),
        policy=policy(authoritative),
        **kw,
    )


def registry_for(provider: Provider, *, authoritative: bool = True) -> Registry:
    registry = Registry()

    def charge_exists(record: Any) -> Any:
        reference = record.data["json"]["reference"]
        return provider.lookup("/v1/charges", params={"reference": reference}, items="data")

    registry.register(KIND, charge_exists, policy=policy(authoritative))
    return registry
