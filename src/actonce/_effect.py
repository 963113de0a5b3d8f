"""``Effect``: one consequential mutation, checked whole before anything is written.

An effect is validated when it is made (every field, before any claim: a
missing ``perform`` used to be noticed only after the ``executing`` mark was
written) and planned once per run: its key, its payload as canonical JSON
with secret fields redacted, and the hash that ties the key to that payload.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._rules.errors import InvalidKey, UsageError
from ._rules.holds import Gate
from ._rules.keys import (
    EffectKey,
    check_name,
    payload_hash,
    stored_payload,
)
from ._rules.model import EffectRecord, Policy, Verdict
from ._rules.scrub import scrub_stored
from ._rules.secrets import FingerprintKey, check_secret_fields
from ._run.plan import Plan

__all__ = [
    "Effect",
    "fingerprint_key_from_env",
    "new_run_id",
    "once_effect",
    "plan_of",
    "reconcile_plan",
]

_ids: list[Any] = [0, "", itertools.count()]


def new_run_id() -> str:
    """A run id unique across processes: a random prefix per process, then a counter.

    (``uuid4`` reads the system's random source on every call, which costs
    more than the rest of a run's planning.)
    """
    pid = os.getpid()
    if _ids[0] != pid:  # first call, or a forked child: a prefix of its own
        _ids[:] = [pid, os.urandom(6).hex(), itertools.count()]
    return f"{_ids[1]}{next(_ids[2]):06x}"


@dataclass(frozen=True, slots=True)
class Effect:
    """One consequential external mutation, ready to run.

    Attributes:
        key: the stable effect key (see :func:`actonce.effect_key`).
        kind: the effect kind; reconcile finds its verifier by this name.
        payload: the intended payload (JSON-able). Stored as canonical JSON
            with secret fields redacted; a key reused with another payload is
            refused.
        perform: does the mutation. Called at most once, never retried. It
            may return a mapping of secret-free facts (the requests it sent,
            say), recorded in the history; an exception it raises may carry
            the same as ``details``.
        verify: read-only check, returns ``Confirmed``/``Absent``/
            ``Unavailable``. May be called many times; exceptions count as
            ``Unavailable``. ``Confirmed(count=n)`` with ``n > 1`` is a
            duplicate: the effect goes to review.
        precondition: optional business check before the claim; ``False``
            ends the run as ``failed`` without claiming. May raise
            ``HardStop``.
        evidence: optional ``label -> reference`` hook, called when a
            performed effect raised or is not confirmed (screenshot, HTML ...).
        policy: settle window, authoritative absence, backoff, lease.
        secret_fields: payload fields stored only redacted, on top of the
            names actonce always treats as secret (password, token, api key
            ..., in any spelling).
        gate: what the claim must hold, checked in its transaction: the
            intent version (must be current), the approval packet that
            authorizes it, budget draws. Refused claims write nothing.
        refresh: read-only refresher of the volatile facts the approval
            depends on (``Fact`` values, or a mapping name -> value), asked
            right before the claim; a price above the approved ceiling
            invalidates the approval and issues a refreshed packet.

    Raises:
        UsageError: a field is missing or of the wrong type.
    """

    key: EffectKey | str
    kind: str
    payload: Any
    perform: Callable[[], Any]
    verify: Callable[[], Verdict | Awaitable[Verdict]]
    precondition: Callable[[], bool | Awaitable[bool]] | None = None
    evidence: Callable[[str], str | Awaitable[str | None] | None] | None = None
    policy: Policy = field(default_factory=Policy)
    secret_fields: tuple[str, ...] = ()
    gate: Gate | None = None
    refresh: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        key = self.key.value if isinstance(self.key, EffectKey) else self.key
        if not isinstance(key, str) or not key.strip():
            raise UsageError("an effect needs a key (a non-empty string or an EffectKey)")
        check_name(key, "the effect key")
        stored = scrub_stored(key)
        if stored != key:
            # Kept as the ledger would keep it, the key would lose that part: keys
            # that differ only there would be one effect (a second one skipped as
            # done), and the scrubbed key may outgrow the length limit. The error
            # shows the stored form, never the part that looked secret.
            raise InvalidKey(
                "the effect key holds what looks like a secret (a token, a password=..., "
                "credentials in a URL, digits that pass a card number's check); the ledger "
                f"would keep it as {stored[:120]!r}, so keys that differ only there would "
                "be one effect: build it with effect_key(...), which hashes its fields"
            )
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise UsageError("an effect needs a kind (a non-empty string)")
        check_name(self.kind, "the kind")
        for name in ("perform", "verify"):
            if not callable(getattr(self, name)):
                raise UsageError(f"an effect needs a callable {name}, not {getattr(self, name)!r}")
        if self.gate is not None and not isinstance(self.gate, Gate):
            raise UsageError(f"gate must be an actonce.Gate, not {type(self.gate).__name__}")
        if self.refresh is not None and (self.gate is None or self.gate.approval is None):
            raise UsageError("refresh needs a gate with the approval whose facts it refreshes")
        for name in ("precondition", "evidence", "refresh"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise UsageError(f"{name} must be callable or None, not {value!r}")
        if not isinstance(self.policy, Policy):
            raise UsageError(f"policy must be a Policy, not {type(self.policy).__name__}")
        object.__setattr__(self, "secret_fields", check_secret_fields(self.secret_fields))


def plan_of(effect: Effect, key: FingerprintKey | None, run_id: str | None) -> Plan:
    """The protocol's plan for one run of ``effect``."""
    raw = effect.key
    scope = raw.scope if isinstance(raw, EffectKey) else "{}"
    text = raw.value if isinstance(raw, EffectKey) else raw
    if run_id is not None:
        check_name(run_id, "run_id")
    stored, redaction = stored_payload(effect.payload, key=key, secret_fields=effect.secret_fields)
    return Plan(
        key=text,
        kind=effect.kind,
        payload=stored,
        payload_hash=payload_hash(stored),
        scope=scope,
        policy=effect.policy,
        run_id=run_id or new_run_id(),
        has_precondition=effect.precondition is not None,
        has_evidence=effect.evidence is not None,
        secrets=redaction.values,
        gate=effect.gate,
        has_refresh=effect.refresh is not None,
    )


def reconcile_plan(record: EffectRecord, policy: Policy) -> Plan:
    """The plan reconcile follows for one stored record."""
    return Plan(
        key=record.key,
        kind=record.kind,
        payload=record.payload,
        payload_hash=record.payload_hash,
        scope=record.scope,
        policy=policy,
        run_id=f"reconcile-{new_run_id()}",
    )


def fingerprint_key_from_env() -> FingerprintKey | None:
    """The fingerprint key named by the environment, if any.

    ``ACTONCE_FINGERPRINT_KEY=<key id>:<hex>`` or
    ``ACTONCE_FINGERPRINT_KEY_FILE=<path>`` (a file holding ``<key id>:<hex>``).
    Without either, secret values are redacted without a fingerprint.

    Raises:
        UsageError: the variable or the file does not hold a valid key.
    """
    text = os.environ.get("ACTONCE_FINGERPRINT_KEY")
    source = "ACTONCE_FINGERPRINT_KEY"
    path = os.environ.get("ACTONCE_FINGERPRINT_KEY_FILE")
    if not text and path:
        source = f"the key file {path}"
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read().strip()
        except OSError as exc:
            raise UsageError(f"cannot read {source}: {exc.strerror}") from None
    if not text:
        return None
    key_id, sep, hexkey = text.strip().partition(":")
    try:
        if not sep:
            raise ValueError
        return FingerprintKey(key_id, bytes.fromhex(hexkey))
    except ValueError:
        raise UsageError(
            f"{source} must hold '<key id>:<hex key>' (at least 16 bytes of hex)"
        ) from None


def once_effect(
    kind: str,
    key: Callable[..., EffectKey | str],
    verify: Callable[..., Any],
    payload: Callable[..., Any] | None,
    policy: Policy | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Effect:
    body = payload(*args, **kwargs) if payload else {"args": list(args), "kwargs": kwargs}
    return Effect(
        key=key(*args, **kwargs),
        kind=kind,
        payload=body,
        perform=lambda: fn(*args, **kwargs),
        verify=lambda: verify(*args, **kwargs),
        policy=policy or Policy(),
    )
