"""Intents: what a user delegated, as structured fields, in versions.

Theory of operation. An intent names what the user asked for (seed 004):
operation kind, provider, items or service, quantity, date and time,
destination, price ceiling and currency, recipient, text, constraints. Its
``intent_id`` is stable for the whole delegation; its ``version`` grows with
every *material* change. Which fields are material is declared per kind
(:data:`MATERIAL`): a change to one of them makes version n+1, which
supersedes n (n's open approvals are voided, its effects that have not
crossed the boundary are closed, its effects in flight are left to
reconcile); a change to any other field (a note, a display name) is
cosmetic: same version, every approval still good. :func:`revise` decides,
purely; the store applies the decision in one transaction.

Effects made for an intent carry its id and version (their keys include
both, see :func:`intent_key`), and a claim of such an effect is refused once
the version is no longer current.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import UsageError
from .keys import MAX_KEY_LENGTH, EffectKey, canonical_json, check_text, effect_key
from .scrub import stored_form

__all__ = [
    "MATERIAL",
    "Intent",
    "IntentRef",
    "IntentStatus",
    "Revision",
    "intent_key",
    "money",
    "revise",
]

#: The material fields per intent kind (seed 004: "a new identity only when
#: the user materially changes the date, merchant, quantity, recipient,
#: destination, or price ceiling"; text for publishing). Other kinds use
#: ``"*"``.
MATERIAL: dict[str, tuple[str, ...]] = {
    "*": ("provider", "items", "quantity", "when", "destination", "price_ceiling", "currency",
          "recipient", "text"),
    "booking": ("provider", "items", "quantity", "when", "destination", "price_ceiling",
                "currency", "recipient"),
    "purchase": ("provider", "items", "quantity", "when", "destination", "price_ceiling",
                 "currency", "recipient"),
    "message": ("recipient", "text", "when"),
    "post": ("text", "provider", "destination"),
}  # fmt: skip


class IntentStatus(enum.StrEnum):
    """Whether a version is the one that counts. The values are the stored strings."""

    CURRENT = "current"
    SUPERSEDED = "superseded"


def money(value: Any, what: str = "an amount") -> Decimal | None:
    """A money value as a ``Decimal`` (from a Decimal, an int or a decimal string)."""
    if value is None:
        return None
    if isinstance(value, bool | float):
        raise UsageError(f"{what} must be a Decimal, an int or a decimal string, not {value!r}")
    try:
        amount = Decimal(value) if isinstance(value, int | str | Decimal) else None
    except (InvalidOperation, ValueError):
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        raise UsageError(f"{what} must be a finite, non-negative decimal, not {value!r}")
    if amount > MAX_MONEY:
        raise UsageError(f"{what} must be at most {MAX_MONEY:,}, not {value!r}")
    return amount


#: The largest amount (or count) a money field takes: beyond it is a mistake, not money.
MAX_MONEY = Decimal(10) ** 15


def currency_code(value: Any, what: str = "currency") -> str:
    """``value`` if it is an ISO 4217 code (three capital letters A-Z), else ``UsageError``."""
    if not (
        isinstance(value, str)
        and len(value) == 3
        and value.isascii()
        and value.isalpha()
        and value.isupper()
    ):
        raise UsageError(f"{what} is a 3-letter ISO 4217 code such as 'EUR', not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Intent:
    """One delegated task, structured.

    Attributes:
        intent_id: stable for the user's delegation (``"trip-2026-12-paris"``).
        kind: the operation type (``booking``, ``purchase``, ``message`` ...).
        user: who delegated it; approvals are bound to this identity.
        provider: merchant or service provider.
        items: items or services, in order.
        quantity: how many.
        when: date and time, ISO 8601 text.
        destination: where to (an address, a venue, an account).
        price_ceiling: the most the user allows (``Decimal``).
        currency: ISO 4217 code of the ceiling.
        recipient: who receives it.
        text: a message's or a post's text.
        constraints: further user constraints (JSON-able).
        notes: cosmetic fields (never material unless declared).
        version: grows with every material change.
        material: the material field names; default: :data:`MATERIAL` for the kind.
    """

    intent_id: str
    kind: str
    user: str = ""
    provider: str | None = None
    items: tuple[str, ...] = ()
    quantity: int | None = None
    when: str | None = None
    destination: str | None = None
    price_ceiling: Decimal | None = None
    currency: str | None = None
    recipient: str | None = None
    text: str | None = None
    constraints: Mapping[str, Any] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    version: int = 1
    material: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("intent_id", "kind"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise UsageError(f"an intent needs {name} (a non-empty string)")
            check_text(value, name)
            if len(value) > MAX_KEY_LENGTH // 2:
                raise UsageError(f"{name} is longer than {MAX_KEY_LENGTH // 2} characters")
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise UsageError(f"an intent's version is a whole number >= 1, not {self.version!r}")
        if self.quantity is not None and (
            not isinstance(self.quantity, int)
            or isinstance(self.quantity, bool)
            or self.quantity < 1
        ):
            raise UsageError(f"quantity must be a whole number >= 1, not {self.quantity!r}")
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "price_ceiling", money(self.price_ceiling, "price_ceiling"))
        if self.currency is not None:
            currency_code(self.currency)
        if self.price_ceiling is not None and self.currency is None:
            raise UsageError("a price ceiling needs its currency")
        material = tuple(self.material) or MATERIAL.get(self.kind, MATERIAL["*"])
        known = {f.name for f in fields(self)} - {"intent_id", "kind", "version", "material"}
        unknown = set(material) - known
        if unknown:
            raise UsageError(f"unknown material field(s): {', '.join(sorted(unknown))}")
        object.__setattr__(self, "material", material)
        canonical_json(self.as_json())  # refuses what has no canonical JSON form

    @property
    def ref(self) -> IntentRef:
        """This version's reference (what effects and approvals carry)."""
        return IntentRef(self.intent_id, self.version)

    def as_json(self) -> dict[str, Any]:
        """The fields as JSON (money as decimal strings)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Decimal):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    def stored(self) -> Intent:
        """This intent as the ledger keeps it: its secrets scrubbed (:mod:`.scrub`)."""
        return Intent.from_json(stored_form(self.as_json()))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Intent:
        """An intent from :meth:`as_json`'s shape."""
        values = dict(data)
        values["items"] = tuple(values.get("items") or ())
        values["material"] = tuple(values.get("material") or ())
        return cls(**values)


@dataclass(frozen=True, slots=True)
class IntentRef:
    """One version of one intent."""

    intent_id: str
    version: int

    def __str__(self) -> str:
        return f"{self.intent_id}@v{self.version}"


@dataclass(frozen=True, slots=True)
class Revision:
    """What a change to an intent means.

    ``material`` is True when a material field changed (``new`` is then
    version n+1); ``changed`` names every field whose value changed.
    """

    new: Intent
    material: bool
    changed: tuple[str, ...]


def revise(intent: Intent, **changes: Any) -> Revision:
    """Apply ``changes`` to ``intent`` and say whether they are material.

    Raises:
        UsageError: an unknown field, the id/kind/version changed, or a value
            an intent cannot hold.
    """
    fixed = {"intent_id", "kind", "version", "material"}
    if fixed & set(changes):
        raise UsageError(f"{', '.join(sorted(fixed & set(changes)))} cannot be revised")
    known = {f.name for f in fields(intent)}
    unknown = set(changes) - known
    if unknown:
        raise UsageError(f"an intent has no field(s) {', '.join(sorted(unknown))}")
    candidate = replace(intent, **changes)
    # Compared as stored: a secret given again is the same [redacted] (see .scrub).
    before, after = stored_form(intent.as_json()), stored_form(candidate.as_json())
    changed = tuple(sorted(name for name in changes if before[name] != after[name]))
    material = any(name in intent.material for name in changed)
    if material:
        candidate = replace(candidate, version=intent.version + 1)
    return Revision(candidate, material, changed)


def intent_key(intent: Intent | IntentRef, action: str, *, tenant: str, actor: str) -> EffectKey:
    """The effect key of ``action`` (its kind) for this intent version.

    The intent's id is the key's object and its version a key field: a new
    version has new keys, so nothing done under version n vouches for n+1.
    """
    ref = intent.ref if isinstance(intent, Intent) else intent
    return effect_key(
        tenant=tenant,
        actor=actor,
        kind=action,
        object=ref.intent_id,
        operation="commit",
        intent_version=ref.version,
    )
