"""Approvals bound to the exact action: packets, answers, carriers, commits.

Theory of operation. Before a consequential commit the agent shows the user
exactly what will happen (seed 004): provider, item or service, date, total
or maximum, cancellation terms, recipient, expiry — an approval **packet**,
stored in the ledger; what reaches the human is only a pointer to it:

- a **signed link**: a token that names the packet, the intent version, the
  amount and the expiry, signed with HMAC-SHA-256 under a key kept *outside*
  the ledger (``ACTONCE_APPROVAL_KEYS``); the key id in the token lets keys
  be rotated. Changing any signed field breaks the signature.
- a **reply code** for a text-message channel: short, single-use, bound to
  the packet's user, with a limit on wrong attempts. The ledger stores only
  its HMAC, never the code.
- the console and a plain API call.

All resolve to the same packet, and :func:`answer` decides every answer:
the same answer twice is answered with the existing state and changes
nothing; another answer after a decision is refused; answers after expiry,
to a superseded version, by another user, or with a bad signature are
refused. Every answer, accepted or not, is recorded.

A packet is consumed **inside the claim** of the effect it authorizes
(:func:`check_commit`): approved, unexpired, for this exact intent version
and effect, the amount within the ceiling, not already held or consumed. One
approval authorizes one commit: the claim *holds* it; the verdict settles
it (``confirmed``: consumed; proven absent or abandoned: released, the same
approval may authorize the retry; in doubt: held).
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from .errors import UsageError
from .facts import Fact, Freshness, facts_from_json, facts_json, freshness, relied_on
from .intents import IntentRef, money
from .scrub import stored_form

__all__ = [
    "CODE_ALPHABET",
    "CODE_WINDOW",
    "FINAL",
    "MAX_CODE_FAILURES",
    "AnswerResult",
    "Answered",
    "ApprovalStatus",
    "Decision",
    "LinkClaims",
    "Packet",
    "Refusal",
    "SigningKeys",
    "answer",
    "check_commit",
    "code_digest",
    "code_matches",
    "link_matches",
    "new_code",
    "new_packet_id",
    "newest",
    "sign_link",
    "verify_link",
    "with_status",
]

#: Reply codes: no 0/O, 1/I/L (read aloud, typed on a phone).
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 8
#: Wrong codes a user may send within ``CODE_WINDOW`` seconds before codes are refused.
MAX_CODE_FAILURES = 5
CODE_WINDOW = 900.0


class ApprovalStatus(enum.StrEnum):
    """Where one packet stands. The values are the stored strings."""

    PENDING = "pending"  # shown to the user, not answered
    APPROVED = "approved"  # the user said yes; not yet used by a commit
    DENIED = "denied"  # the user said no
    EXPIRED = "expired"  # no answer in time (set when an answer finds it expired)
    VOIDED = "voided"  # the intent got a new version: this packet authorizes nothing
    INVALIDATED = "invalidated"  # a refreshed fact left the approved boundary
    HELD = "held"  # a claim holds it: the commit is on its way
    CONSUMED = "consumed"  # the commit it authorized is verified done


#: Statuses a packet can never leave.
FINAL = frozenset(
    {
        ApprovalStatus.DENIED,
        ApprovalStatus.EXPIRED,
        ApprovalStatus.VOIDED,
        ApprovalStatus.INVALIDATED,
        ApprovalStatus.CONSUMED,
    }
)


class Decision(enum.StrEnum):
    """A user's answer."""

    APPROVE = "approve"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class Packet:
    """What a user is asked to approve, exactly.

    Attributes:
        packet_id: the packet's id (random; carriers point to it).
        intent: the intent version it is bound to.
        action: the effect kind it authorizes (``book``, ``pay``).
        effect_key: the one effect (key) it authorizes.
        user: who may answer.
        destination: provider or destination shown.
        amount: the total shown, if known.
        ceiling: the most the commit may cost (defaults to ``amount``).
        currency: ISO 4217 code of amount and ceiling.
        details: key details shown (date, item, recipient ...).
        terms: cancellation terms shown.
        facts: the volatile facts shown, with their validity windows.
        created_at, expires_at: ledger times.
        status: see :class:`ApprovalStatus`.
        revision: 1, then +1 for each refreshed packet that replaces one.
        replaces: the packet this one replaced (a refreshed packet).
        replaced_by: the refreshed packet that replaced this one.
        decided_by, decided_at, note: the accepted answer.
        held_by: the effect key holding it (``held``/``consumed``).
    """

    packet_id: str
    intent: IntentRef
    action: str
    effect_key: str
    user: str
    destination: str | None = None
    amount: Decimal | None = None
    ceiling: Decimal | None = None
    currency: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    terms: str = ""
    facts: tuple[Fact, ...] = ()
    created_at: float = 0.0
    expires_at: float = 0.0
    status: ApprovalStatus = ApprovalStatus.PENDING
    revision: int = 1
    replaces: str | None = None
    replaced_by: str | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None
    held_by: str | None = None

    def __post_init__(self) -> None:
        for name in ("packet_id", "action", "effect_key", "user"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise UsageError(f"an approval packet needs {name}")
        object.__setattr__(self, "amount", money(self.amount, "amount"))
        object.__setattr__(self, "ceiling", money(self.ceiling, "ceiling"))
        if self.ceiling is None and self.amount is not None:
            object.__setattr__(self, "ceiling", self.amount)
        if (self.amount is not None or self.ceiling is not None) and self.currency is None:
            raise UsageError("an amount or a ceiling needs its currency")
        if self.amount is not None and self.ceiling is not None and self.amount > self.ceiling:
            raise UsageError(f"the amount {self.amount} is above the ceiling {self.ceiling}")
        if not self.expires_at > self.created_at:
            raise UsageError("an approval packet must expire after it was made")
        object.__setattr__(self, "facts", tuple(self.facts))
        object.__setattr__(self, "status", ApprovalStatus(self.status))

    def expired(self, now: float) -> bool:
        """True once the packet's expiry has passed."""
        return now >= self.expires_at

    def summary(self) -> str:
        """The packet in one line of words, as a person would read it."""
        what = f"{self.action} {', '.join(str(v) for v in self.details.values())}".strip()
        where = f" at {self.destination}" if self.destination else ""
        cost = ""
        if self.amount is not None:
            cost = f" for {self.amount} {self.currency}"
        elif self.ceiling is not None:
            cost = f" for at most {self.ceiling} {self.currency}"
        return f"{what}{where}{cost} ({self.intent})"

    def as_json(self) -> dict[str, Any]:
        """The packet as JSON (no carrier secrets: there are none in a packet)."""
        return {
            "packet_id": self.packet_id,
            "intent_id": self.intent.intent_id,
            "version": self.intent.version,
            "action": self.action,
            "effect_key": self.effect_key,
            "user": self.user,
            "destination": self.destination,
            "amount": None if self.amount is None else str(self.amount),
            "ceiling": None if self.ceiling is None else str(self.ceiling),
            "currency": self.currency,
            "details": dict(self.details),
            "terms": self.terms,
            "facts": facts_json(self.facts),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "status": self.status.value,
            "revision": self.revision,
            "replaces": self.replaces,
            "replaced_by": self.replaced_by,
            "decided_by": self.decided_by,
            "decided_at": self.decided_at,
            "note": self.note,
            "held_by": self.held_by,
        }

    def stored(self) -> Packet:
        """This packet as the ledger keeps it: its secrets scrubbed (:mod:`.scrub`)."""
        return Packet.from_json(stored_form(self.as_json()))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Packet:
        """A packet from :meth:`as_json`'s shape."""
        values = dict(data)
        values["intent"] = IntentRef(str(values.pop("intent_id")), int(values.pop("version")))
        values["facts"] = facts_from_json(values.get("facts") or ())
        values["details"] = dict(values.get("details") or {})
        return cls(**values)


def new_packet_id() -> str:
    """A fresh, unguessable packet id."""
    return "apv-" + secrets.token_hex(10)


# --- answers -------------------------------------------------------------------------------


class Answered(enum.StrEnum):
    """What became of one answer."""

    ACCEPTED = "accepted"  # the packet's status changed
    SAME = "same"  # the same answer again: the existing state, nothing new
    REFUSED = "refused"  # refused (and recorded)


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """The verdict on one answer: what it did, the status now, why."""

    answer: Answered
    status: ApprovalStatus
    reason: str = ""


def answer(
    packet: Packet, decision: Decision | str, *, by: str, now: float, intent_current: bool
) -> AnswerResult:
    """Decide one answer to ``packet`` (see the module docstring); no I/O."""
    try:
        choice = Decision(decision)
    except ValueError:
        raise UsageError(f"an answer is 'approve' or 'deny', not {decision!r}") from None
    status = packet.status
    if by != packet.user:
        return AnswerResult(
            Answered.REFUSED, status, f"{by!r} may not answer {packet.user!r}'s packet"
        )
    approved = status in (ApprovalStatus.APPROVED, ApprovalStatus.HELD, ApprovalStatus.CONSUMED)
    if (choice is Decision.APPROVE and approved) or (
        choice is Decision.DENY and status is ApprovalStatus.DENIED
    ):
        return AnswerResult(Answered.SAME, status, "the same answer again: nothing changed")
    if approved or status is ApprovalStatus.DENIED:
        return AnswerResult(
            Answered.REFUSED,
            status,
            f"already {status.value}: a later {choice.value} cannot change it",
        )
    if status is not ApprovalStatus.PENDING:
        return AnswerResult(Answered.REFUSED, status, f"the packet is {status.value}")
    if packet.expired(now):
        return AnswerResult(Answered.REFUSED, ApprovalStatus.EXPIRED, "the packet has expired")
    if not intent_current:
        return AnswerResult(
            Answered.REFUSED, ApprovalStatus.VOIDED, f"{packet.intent} has been superseded"
        )
    to = ApprovalStatus.APPROVED if choice is Decision.APPROVE else ApprovalStatus.DENIED
    return AnswerResult(Answered.ACCEPTED, to)


# --- commits -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a claim did not get what it needed (an approval, a current intent, a budget).

    ``waiting`` is True when a human answer may still make it possible (a
    pending packet): the run ends ``needs_approval`` instead of ``refused``.
    ``kind`` says what refused: ``intent``, ``approval`` or ``budget``.
    """

    reason: str
    waiting: bool = False
    kind: str = "approval"


def check_commit(
    packet: Packet,
    *,
    effect_key: str,
    intent: IntentRef | None,
    intent_current: bool,
    amount: Decimal | None,
    now: float,
    refreshed: Sequence[Fact] = (),
) -> Refusal | None:
    """May this claim commit under ``packet``? ``None`` if so, else why not.

    ``refreshed`` are the facts refreshed right before the claim: every fact
    the approval relies on (the packet's, each replaced by its refreshed
    observation) must still be fresh now.
    """
    if packet.status is ApprovalStatus.PENDING:
        if packet.expired(now):
            return Refusal("the approval expired before it was answered")
        return Refusal(f"waiting for {packet.user} to approve {packet.packet_id}", waiting=True)
    if packet.status is ApprovalStatus.HELD:
        return Refusal(f"the approval is already held by the claim of {packet.held_by}")
    if packet.status is ApprovalStatus.INVALIDATED and packet.replaced_by:
        return Refusal(
            f"the approval was replaced by the refreshed packet {packet.replaced_by}: "
            "the user answers that one, and the commit runs under it"
        )
    if packet.status is not ApprovalStatus.APPROVED:
        return Refusal(f"the approval is {packet.status.value}")
    if packet.expired(now):
        return Refusal("the approval has expired")
    if packet.effect_key != effect_key:
        return Refusal("the approval is for another action")
    if intent is not None and packet.intent != intent:
        return Refusal(f"the approval is for {packet.intent}, not {intent}")
    if not intent_current:
        return Refusal(f"{packet.intent} has been superseded")
    if amount is not None and packet.ceiling is not None and amount > packet.ceiling:
        return Refusal(f"{amount} is above the approved {packet.ceiling} {packet.currency}")
    for name, fact in relied_on(packet.facts, refreshed).items():
        if freshness(fact, now) is not Freshness.FRESH:
            return Refusal(
                f"the fact {name!r} the approval relies on is no longer valid: refresh it "
                "right before the commit (Effect(refresh=...))"
            )
    return None


def request_details(details: object) -> dict[str, Any]:
    """A packet's details as asked for: names to JSON values, numbers finite.

    Raises:
        UsageError: not a mapping, or a value JSON cannot hold (an object, a
            set), or NaN or an infinity (the user must be shown a number).
    """
    if details is None:
        return {}
    if not isinstance(details, Mapping):
        raise UsageError(
            f"an approval's details map names to the values shown, not {type(details).__name__}"
        )
    out = dict(details)
    try:
        json.dumps(out, allow_nan=False)
    except ValueError:
        raise UsageError("an approval's details hold NaN or an infinity: show a number") from None
    except (TypeError, RecursionError) as exc:
        raise UsageError(
            f"an approval's details are JSON values (text, numbers, lists, mappings): {exc}"
        ) from None
    return out


def request_facts(facts: object) -> tuple[Fact, ...]:
    """A packet's facts as asked for: ``Fact`` values (any iterable of them).

    Raises:
        UsageError: not a sequence of ``Fact`` (a name alone, say).
    """
    if isinstance(facts, str | bytes | Fact | Mapping) or not isinstance(facts, Iterable):
        raise UsageError(f"an approval's facts are a list of Fact values, not {facts!r:.60}")
    facts = tuple(facts)
    for fact in facts:
        if not isinstance(fact, Fact):
            raise UsageError(
                f"an approval's facts are Fact values (Fact(name, value, observed_at=...)), "
                f"not {fact!r:.60}"
            )
    return tuple(facts)


def check_request_key(intent: IntentRef, scope: str | None) -> None:
    """A key made for an intent version (``intent_key``) is this version's.

    ``scope`` is the key's scope when known (an ``EffectKey``); a key that
    names no intent version (a provider's key) is the caller's to choose.

    Raises:
        UsageError: the key is another intent's, or another version's.
    """
    if scope is None:
        return
    try:
        fields = json.loads(scope)
    except ValueError:
        return
    if not isinstance(fields, dict) or "intent_version" not in fields:
        return
    theirs = f"{fields.get('object')}@v{fields.get('intent_version')}"
    if theirs != str(intent):
        raise UsageError(
            f"the effect key is one of {theirs}, not of {intent}: make it with "
            "intent_key(intent, ...) for the version the packet is for"
        )


# --- carriers ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SigningKeys:
    """The keys that sign approval links and reply codes (never in the ledger).

    The first key signs; every key verifies (rotation: add the new key
    first, keep the old one until its links have expired).
    """

    keys: tuple[tuple[str, bytes], ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise UsageError("approval signing needs at least one key")
        for kid, secret in self.keys:
            if not re.fullmatch(r"[A-Za-z0-9._-]{1,32}", kid):
                raise UsageError("a signing key id is 1-32 characters of [A-Za-z0-9._-]")
            if len(secret) < 16:
                raise UsageError("a signing key needs at least 16 bytes")
        kids = [kid for kid, _ in self.keys]
        twice = sorted({kid for kid in kids if kids.count(kid) > 1})
        if twice:
            # A carrier names its key by id: two keys under one id would verify
            # with whichever comes first, and a rotation could not retire one.
            raise UsageError(f"two signing keys share the key id {', '.join(map(repr, twice))}")

    def __repr__(self) -> str:
        return f"SigningKeys({', '.join(kid for kid, _ in self.keys)})"

    @classmethod
    def parse(cls, text: str, source: str = "ACTONCE_APPROVAL_KEYS") -> SigningKeys:
        """Keys from ``kid:hex[,kid:hex...]``."""
        keys = []
        for part in (p.strip() for p in text.split(",") if p.strip()):
            kid, sep, hexkey = part.partition(":")
            try:
                if not sep:
                    raise ValueError
                keys.append((kid, bytes.fromhex(hexkey)))
            except ValueError:
                raise UsageError(f"{source} must hold 'kid:hex[,kid:hex...]'") from None
        return cls(tuple(keys))

    def signer(self) -> tuple[str, bytes]:
        return self.keys[0]

    def get(self, kid: str) -> bytes | None:
        return next((secret for k, secret in self.keys if k == kid), None)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _link_fields(packet: Packet) -> list[Any]:
    return [
        packet.packet_id,
        packet.intent.intent_id,
        packet.intent.version,
        None if packet.amount is None else str(packet.amount),
        None if packet.ceiling is None else str(packet.ceiling),
        packet.currency,
        packet.expires_at,
    ]


def sign_link(keys: SigningKeys, packet: Packet) -> str:
    """The token of a signed approval link for ``packet``."""
    kid, secret = keys.signer()
    body = json.dumps([kid, *_link_fields(packet)], separators=(",", ":")).encode()
    mac = hmac.new(secret, body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(mac)}"


@dataclass(frozen=True, slots=True)
class LinkClaims:
    """What a valid link token says."""

    packet_id: str
    intent: IntentRef
    amount: str | None
    ceiling: str | None
    currency: str | None
    expires_at: float


def verify_link(keys: SigningKeys, token: str) -> LinkClaims | str:
    """The claims of a link token, or why it is not valid (a tampered or foreign link)."""
    try:
        body_text, _, mac_text = token.strip().partition(".")
        body, mac = _unb64(body_text), _unb64(mac_text)
        fields_ = json.loads(body)
        kid = str(fields_[0])
    except (ValueError, IndexError, TypeError):
        return "not an approval link"
    secret = keys.get(kid)
    if secret is None:
        return "the link was signed with an unknown key"
    if not hmac.compare_digest(hmac.new(secret, body, hashlib.sha256).digest(), mac):
        return "the link's signature does not match (a changed or foreign link)"
    try:
        _, packet_id, intent_id, version, amount, ceiling, currency, expires = fields_
        return LinkClaims(
            str(packet_id), IntentRef(str(intent_id), int(version)), amount, ceiling, currency,
            float(expires),
        )  # fmt: skip
    except (ValueError, TypeError):
        return "not an approval link"


def link_matches(claims: LinkClaims, packet: Packet) -> str | None:
    """``None`` when a valid link describes ``packet`` as stored, else why not."""
    if _link_fields(packet) != [
        claims.packet_id,
        claims.intent.intent_id,
        claims.intent.version,
        claims.amount,
        claims.ceiling,
        claims.currency,
        claims.expires_at,
    ]:
        return "the link does not describe this packet as it stands"
    return None


def new_code() -> str:
    """A fresh reply code (``K7QF2M9X``)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def code_digest(keys: SigningKeys, user: str, code: str) -> str:
    """What the ledger keeps of a reply code: an HMAC under the signing key, bound to ``user``."""
    kid, secret = keys.signer()
    normal = code.strip().upper().replace("-", "").replace(" ", "")
    text = json.dumps([user, normal]).encode()
    return f"{kid}:{hmac.new(secret, text, hashlib.sha256).hexdigest()}"


def code_matches(keys: SigningKeys, user: str, code: str, digest: str) -> bool:
    """Whether ``code`` from ``user`` is the one whose digest was kept (any known key)."""
    kid, _, hexdigest = digest.partition(":")
    secret = keys.get(kid)
    if secret is None:
        return False
    normal = code.strip().upper().replace("-", "").replace(" ", "")
    text = json.dumps([user, normal]).encode()
    return hmac.compare_digest(hmac.new(secret, text, hashlib.sha256).hexdigest(), hexdigest)


def with_status(packet: Packet, status: ApprovalStatus, **changes: Any) -> Packet:
    """``packet`` with a new status (and other changes)."""
    return replace(packet, status=status, **changes)


def newest(packets: Sequence[Packet]) -> Packet | None:
    """The latest revision among ``packets``."""
    return max(packets, key=lambda p: (p.revision, p.created_at), default=None)
