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

import functools
import importlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata

from ._rules.errors import UsageError
from ._rules.keys import check_name
from ._rules.model import EffectRecord, Policy, Verdict
from ._rules.secrets import scrub_text

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
        check_name(kind, "a verifier's kind")
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
            UsageError: a named module cannot be imported (it raised, it has a
                syntax error, it called ``sys.exit``).
        """
        if modules is not None and not isinstance(modules, str):
            raise UsageError(
                f"modules is a comma-separated string of module names, not {modules!r:.60}"
            )
        # An empty entry ("a,,b", "a, ,b", a trailing comma) names no module; a list of
        # nothing but such entries (" ", " , ") is a mistake, refused.
        raw = modules or os.environ.get("ACTONCE_VERIFIERS", "")
        names = [m.strip() for m in raw.split(",") if m.strip()]
        if raw and not names:
            raise UsageError(f"the verifier modules {raw!r:.60} name no module")
        for module in names:
            _load(f"verifier module {module!r}", functools.partial(importlib.import_module, module))
        for ep in metadata.entry_points(group="actonce.verifiers"):
            _load(f"verifier entry point {ep.name!r}", ep.load)


def _load(what: str, load: Callable[[], object]) -> None:
    try:
        load()
    except (Exception, SystemExit) as exc:  # a failing import is the user's; Ctrl-C is not
        why = scrub_text(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        raise UsageError(f"cannot import {what}: {why}") from exc


#: The default registry used by the CLI and by ``Ledger.reconcile``.
registry = Registry()
