"""Where reconcile finds the verifier of each effect kind.

A verifier for reconcile takes the stored record (its payload and scope say
what to look for) and returns a verdict. Register one per kind::

    from actonce import Absent, Confirmed, registry

    @registry.verifier("invoice", policy=Policy(absence_authoritative=True))
    def invoice_exists(record):
        ...

The CLI loads registrations from the modules named in ``--verifiers`` or in
``ACTONCE_VERIFIERS`` (comma-separated), and from every installed package's
``actonce.verifiers`` entry point, before it reconciles.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata

from ._rules.errors import UsageError
from ._rules.model import EffectRecord, Policy, Verdict

__all__ = ["Registry", "VerifierEntry", "registry"]

RecordVerifier = Callable[[EffectRecord], Verdict | Awaitable[Verdict]]


@dataclass(frozen=True, slots=True)
class VerifierEntry:
    """The verifier and the policy of one effect kind."""

    kind: str
    verify: RecordVerifier
    policy: Policy


class Registry:
    """A mapping from effect kind to verifier."""

    def __init__(self) -> None:
        self._entries: dict[str, VerifierEntry] = {}

    def register(self, kind: str, verify: RecordVerifier, *, policy: Policy | None = None) -> None:
        """Register ``verify`` for ``kind`` (replacing an earlier one)."""
        if not isinstance(kind, str) or not kind.strip():
            raise UsageError("a verifier needs a kind")
        if not callable(verify):
            raise UsageError(f"a verifier must be callable, not {verify!r}")
        if policy is not None and not isinstance(policy, Policy):
            raise UsageError(f"policy must be a Policy, not {type(policy).__name__}")
        self._entries[kind] = VerifierEntry(kind, verify, policy or Policy())

    def verifier(
        self, kind: str, *, policy: Policy | None = None
    ) -> Callable[[RecordVerifier], RecordVerifier]:
        """Decorator form of :meth:`register`."""

        def deco(fn: RecordVerifier) -> RecordVerifier:
            self.register(kind, fn, policy=policy)
            return fn

        return deco

    def get(self, kind: str) -> VerifierEntry | None:
        """The entry for ``kind``, if registered."""
        return self._entries.get(kind)

    def kinds(self) -> list[str]:
        """Registered kinds, sorted."""
        return sorted(self._entries)

    def load(self, modules: str | None = None) -> None:
        """Import verifier modules: ``modules`` (comma-separated), the
        ``ACTONCE_VERIFIERS`` variable and the ``actonce.verifiers`` entry points.

        Raises:
            UsageError: a named module cannot be imported.
        """
        names = [m for m in (modules or os.environ.get("ACTONCE_VERIFIERS", "")).split(",") if m]
        for name in names:
            try:
                importlib.import_module(name.strip())
            except Exception as exc:  # a syntax error or a failing import is the user's
                why = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                raise UsageError(f"cannot import verifier module {name.strip()!r}: {why}") from exc
        for ep in metadata.entry_points(group="actonce.verifiers"):
            try:
                ep.load()
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                raise UsageError(f"cannot load verifier entry point {ep.name!r}: {why}") from exc


#: The default registry used by the CLI and by ``Ledger.reconcile``.
registry = Registry()
