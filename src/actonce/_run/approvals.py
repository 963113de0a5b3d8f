"""Intents and approvals as generators of typed operations (both ledgers drive them).

The rules are in ``_rules.intents``/``_rules.approvals``; the rows and their
transactions in ``_store.intent_ops``, ``_store.approval_ops`` and
``_store.gated_ops``. These generators put the two together: read what is
needed, ask the rule, write the one change (with its event), and record every
answer that changed nothing (a duplicate delivery, a refusal) in the packet's
history.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, TypeVar

from .._rules import approvals as ap
from .._rules.errors import UsageError
from .._rules.facts import Fact
from .._rules.holds import Hold
from .._rules.intents import Intent, IntentRef, IntentStatus, Revision, currency_code, money, revise
from .._rules.keys import EffectKey
from .._rules.model import Event, EventType
from .._rules.text import storable
from .._store.history import approval_event_key, intent_event_key
from .._store.records import IntentRow, RevisionResult
from .ops import NOW, AppendEvent, Events, Op, StoreOp, Tick

__all__ = [
    "ApprovalRequest",
    "IntentRevision",
    "answer",
    "answer_code",
    "answer_link",
    "chain",
    "get_intent",
    "get_packet",
    "history",
    "holds",
    "intent_history",
    "latest_packet",
    "list_intents",
    "list_packets",
    "new_code",
    "put_intent",
    "request",
    "resend",
    "revise_intent",
]

T = TypeVar("T")
Gen = Generator[Op, Any, T]


# --- the store operations ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IntentGet(StoreOp):
    primitive: ClassVar[str] = "intent_get"
    intent_id: str
    version: int | None = None


@dataclass(frozen=True, slots=True)
class IntentChain(StoreOp):
    primitive: ClassVar[str] = "intent_chain"
    intent_id: str


@dataclass(frozen=True, slots=True)
class IntentList(StoreOp):
    primitive: ClassVar[str] = "intent_list"
    status: IntentStatus | None
    user: str | None
    limit: int


@dataclass(frozen=True, slots=True)
class IntentCreate(StoreOp):
    primitive: ClassVar[str] = "intent_create"
    intent: Intent
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class IntentRevise(StoreOp):
    primitive: ClassVar[str] = "intent_revise"
    old: IntentRef
    new: Intent
    changed: tuple[str, ...]
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class IntentTouch(StoreOp):
    primitive: ClassVar[str] = "intent_touch"
    intent: Intent
    changed: tuple[str, ...]
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class PacketGet(StoreOp):
    primitive: ClassVar[str] = "approval_get"
    packet_id: str


@dataclass(frozen=True, slots=True)
class PacketList(StoreOp):
    primitive: ClassVar[str] = "approval_list"
    statuses: tuple[ap.ApprovalStatus, ...] | None
    user: str | None
    limit: int
    effect_key: str | None = None


@dataclass(frozen=True, slots=True)
class PacketPut(StoreOp):
    primitive: ClassVar[str] = "approval_put"
    packet: ap.Packet
    code_digest: str | None
    run_id: str


@dataclass(frozen=True, slots=True)
class PacketUpdate(StoreOp):
    """Compare-and-set a packet's status (the store's ``approval_update``)."""

    primitive: ClassVar[str] = "approval_update"
    packet: ap.Packet
    to: ap.ApprovalStatus
    now: float
    run_id: str
    message: str

    def args(self) -> tuple[Any, ...]:
        return (self.packet, self.to, self.now, self.run_id, self.message)


@dataclass(frozen=True, slots=True)
class AnswerUpdate(StoreOp):
    """An accepted answer: the status, who, when, through which channel (and a used reply code)."""

    primitive: ClassVar[str] = "approval_answer"
    packet: ap.Packet
    to: ap.ApprovalStatus
    by: str
    now: float
    run_id: str
    note: str | None
    use_code: bool
    via: str


@dataclass(frozen=True, slots=True)
class CodeFailures(StoreOp):
    primitive: ClassVar[str] = "code_failures"
    user: str
    now: float
    window: float
    add: int


@dataclass(frozen=True, slots=True)
class CodePackets(StoreOp):
    primitive: ClassVar[str] = "code_packets"
    user: str


@dataclass(frozen=True, slots=True)
class CodeSet(StoreOp):
    primitive: ClassVar[str] = "approval_set_code"
    packet_id: str
    code_digest: str
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class HoldsOf(StoreOp):
    primitive: ClassVar[str] = "holds_of"
    key: str


# --- intents -------------------------------------------------------------------------------


def get_intent(intent_id: str, version: int | None = None) -> Gen[Intent]:
    """The current (or a given) version of an intent."""
    row: IntentRow | None = yield IntentGet(intent_id, version)
    if row is None:
        which = "" if version is None else f" version {version}"
        raise UsageError(f"no intent {intent_id!r}{which}")
    return row.intent


def chain(intent_id: str) -> Gen[list[IntentRow]]:
    """Every version of an intent, oldest first (the supersession chain)."""
    rows: list[IntentRow] = yield IntentChain(intent_id)
    if not rows:
        raise UsageError(f"no intent {intent_id!r}")
    return rows


def list_intents(status: IntentStatus | None, user: str | None, limit: int) -> Gen[list[IntentRow]]:
    """Intent versions (by default the current ones), oldest first."""
    rows: list[IntentRow] = yield IntentList(status, user, limit)
    return rows


def intent_history(intent_id: str) -> Gen[list[Event]]:
    """An intent's history: its creation and every revision."""
    yield from chain(intent_id)
    events: list[Event] = yield Events(intent_event_key(intent_id))
    return events


def put_intent(intent: Intent, run_id: str) -> Gen[Intent]:
    """Record a new intent (version 1), or answer the one already recorded.

    Raises:
        UsageError: an intent with this id exists with other fields (revise it).
    """
    if intent.version != 1:
        raise UsageError("a new intent starts at version 1; change one with revise()")
    tick: Tick = yield NOW
    row: IntentRow = yield IntentCreate(intent, tick.now, run_id)
    # Compared as stored: the ledger keeps the intent scrubbed (see _rules/scrub).
    given = intent.stored().as_json()
    if row.intent.version == 1 and row.intent.as_json() == given:
        return row.intent
    if row.intent.as_json() == {**given, "version": row.intent.version}:
        return row.intent
    raise UsageError(
        f"intent {intent.intent_id!r} exists (now {row.intent.ref}) with other fields: "
        "change it with revise()"
    )


@dataclass(frozen=True, slots=True)
class IntentRevision:
    """What one revision did.

    Attributes:
        intent: the current intent afterwards (version n+1 when ``material``).
        material: whether a material field changed (a new version).
        changed: the fields whose values changed.
        closed: effects of version n that had not crossed the boundary, now failed.
        voided: approval packets of version n that authorize nothing any more.
        in_flight: effects of version n left to reconcile.
        operations: operations of version n, withdrawn (their next pass undoes
            what they did; each has a receipt that says so).
    """

    intent: Intent
    material: bool
    changed: tuple[str, ...]
    closed: tuple[str, ...] = ()
    voided: tuple[str, ...] = ()
    in_flight: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()


def revise_intent(intent_id: str, changes: Mapping[str, Any], run_id: str) -> Gen[IntentRevision]:
    """Apply ``changes``: material → version n+1 supersedes n in one transaction."""
    current: Intent = yield from get_intent(intent_id)
    rev: Revision = revise(current, **changes)
    if not rev.material:
        # A cosmetic change: same version, every approval of it stands.
        if rev.changed:
            tick: Tick = yield NOW
            touched: bool = yield IntentTouch(rev.new, rev.changed, tick.now, run_id)
            if not touched:
                raise UsageError(f"{current.ref} was revised meanwhile; look again")
        return IntentRevision(rev.new.stored(), False, rev.changed)
    tick = yield NOW
    done: RevisionResult = yield IntentRevise(current.ref, rev.new, rev.changed, tick.now, run_id)
    if not done.applied:
        now_current = "?" if done.current is None else str(done.current.intent.ref)
        raise UsageError(f"{current.ref} was revised meanwhile (now {now_current}); look again")
    assert done.current is not None and done.current.status is IntentStatus.CURRENT
    from .operation_review import withdrawn_receipts

    yield from withdrawn_receipts(done.operations, run_id)
    return IntentRevision(
        done.current.intent, True, rev.changed, done.closed, done.voided, done.in_flight,
        done.operations,
    )  # fmt: skip


# --- approval packets ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A packet and its carriers, returned once: the code is not kept anywhere.

    ``link`` is the signed token (put it in a URL); ``code`` the reply code
    for a text-message channel.
    """

    packet: ap.Packet
    link: str
    code: str


def request(
    keys: ap.SigningKeys,
    intent: Intent,
    action: str,
    key: EffectKey | str,
    *,
    run_id: str,
    destination: str | None,
    amount: Decimal | int | str | None,
    ceiling: Decimal | int | str | None,
    currency: str | None,
    details: Mapping[str, Any] | None,
    terms: str,
    facts: Sequence[Fact],
    ttl: float,
    user: str | None,
) -> Gen[ApprovalRequest]:
    """Make a pending packet for ``action`` of this intent version, with its carriers."""
    if not isinstance(ttl, int | float) or not 0 < ttl <= 30 * 86400:
        raise UsageError(f"an approval's ttl is 0 to 30 days in seconds, not {ttl!r}")
    row: IntentRow | None = yield IntentGet(intent.intent_id, intent.version)
    if row is None or row.status is not IntentStatus.CURRENT:
        raise UsageError(f"{intent.ref} is not the current version of its intent")
    ap.check_request_key(intent.ref, key.scope if isinstance(key, EffectKey) else None)
    packet_details, packet_facts = ap.request_details(details), ap.request_facts(facts)
    who = user if user is not None else row.intent.user
    if not who:
        raise UsageError("an approval needs the user who answers it (the intent's user)")
    tick: Tick = yield NOW
    packet = ap.Packet(
        packet_id=ap.new_packet_id(),
        intent=intent.ref,
        action=action,
        effect_key=key.value if isinstance(key, EffectKey) else key,
        user=who,
        destination=destination if destination is not None else row.intent.provider,
        amount=money(amount, "amount"),
        ceiling=money(ceiling, "ceiling") if ceiling is not None else row.intent.price_ceiling,
        currency=currency_code(currency) if currency is not None else row.intent.currency,
        details=packet_details,
        terms=terms,
        facts=packet_facts,
        created_at=tick.now,
        expires_at=tick.now + ttl,
    )
    # The packet as the ledger keeps it (scrubbed): the same one returned and shown.
    packet = packet.stored()
    code = ap.new_code()
    yield PacketPut(packet, ap.code_digest(keys, packet.user, code), run_id)
    return ApprovalRequest(packet, ap.sign_link(keys, packet), code)


def get_packet(packet_id: str) -> Gen[ap.Packet]:
    """One packet, as it stands."""
    found: tuple[ap.Packet, str | None, bool] | None = yield PacketGet(packet_id)
    if found is None:
        raise UsageError(f"no approval packet {packet_id!r}")
    return found[0]


#: The longest replacement chain followed (each refresh of a price replaces one packet).
MAX_REPLACEMENTS = 20


def latest_packet(packet_id: str) -> Gen[ap.Packet]:
    """The newest packet of ``packet_id``'s replacement chain (itself, if never replaced).

    A refresh whose facts left the approved boundary replaces a packet by a
    new revision; once the user approves that one, its ceiling is the one a
    commit may reach. Raises ``UsageError`` for an unknown packet.
    """
    packet = yield from get_packet(packet_id)
    for _ in range(MAX_REPLACEMENTS):
        if packet.replaced_by is None:
            break
        found: tuple[ap.Packet, str | None, bool] | None = yield PacketGet(packet.replaced_by)
        if found is None:
            break
        packet = found[0]
    return packet


def list_packets(
    statuses: tuple[ap.ApprovalStatus, ...] | None,
    user: str | None,
    limit: int,
    effect_key: str | None = None,
) -> Gen[list[ap.Packet]]:
    """Packets, oldest first."""
    packets: list[ap.Packet] = yield PacketList(statuses, user, limit, effect_key)
    return packets


def holds(key: str) -> Gen[list[Hold]]:
    """The holds every attempt of the effect ``key`` took (key or unique prefix)."""
    from .review import find

    record = yield from find(key)
    rows: list[Hold] = yield HoldsOf(record.key)
    return rows


def history(packet_id: str) -> Gen[list[Event]]:
    """A packet's history: every request, answer, refusal and settlement."""
    yield from get_packet(packet_id)
    events: list[Event] = yield Events(approval_event_key(packet_id))
    return events


def _note(
    packet_id: str, type_: EventType, tick: Tick, run_id: str, message: str, **data: Any
) -> AppendEvent:
    return AppendEvent(
        Event(
            key=approval_event_key(packet_id),
            type=type_,
            at=tick.now,
            run_id=run_id,
            message=storable(message, limit=500),
            data=data,
        )
    )


def answer(
    packet_id: str,
    decision: ap.Decision | str,
    *,
    by: str,
    run_id: str,
    via: str = "api",
    note: str | None = None,
    use_code: bool = False,
) -> Gen[ap.AnswerResult]:
    """Record one answer (see ``_rules.approvals.answer``); every answer is recorded."""
    if not isinstance(by, str) or not by.strip():
        raise UsageError("an answer needs the identity of who answers (by=...)")
    if not isinstance(via, str) or not via.strip() or len(via) > 32:
        raise UsageError("via names the channel of an answer (1 to 32 characters)")
    packet: ap.Packet = yield from get_packet(packet_id)
    row: IntentRow | None = yield IntentGet(packet.intent.intent_id, packet.intent.version)
    current = row is not None and row.status is IntentStatus.CURRENT
    tick: Tick = yield NOW
    verdict = ap.answer(packet, decision, by=by, now=tick.now, intent_current=current)
    what = {"decision": str(decision), "by": by, "via": via}
    if verdict.answer is ap.Answered.SAME:
        yield _note(packet_id, EventType.APPROVAL_DUPLICATE, tick, run_id, verdict.reason, **what)
        return verdict
    if verdict.answer is ap.Answered.REFUSED:
        yield _note(packet_id, EventType.APPROVAL_REFUSED, tick, run_id, verdict.reason, **what)
        if verdict.status is not packet.status and packet.status is ap.ApprovalStatus.PENDING:
            # The answer found the packet expired, or its intent superseded: say so in its status.
            yield PacketUpdate(packet, verdict.status, tick.now, run_id, verdict.reason)
        return verdict
    moved = yield AnswerUpdate(
        packet,
        verdict.status,
        by,
        tick.now,
        run_id,
        None if note is None else storable(note),
        use_code,
        via,
    )
    if moved is None:  # answered meanwhile: answer again against what it is now
        return (yield from answer(packet_id, decision, by=by, run_id=run_id, via=via, note=note))
    return verdict


def answer_link(
    keys: ap.SigningKeys,
    token: str,
    decision: ap.Decision | str,
    *,
    by: str,
    run_id: str,
    packet_id: str | None = None,
) -> Gen[ap.AnswerResult]:
    """Answered through a signed link; a tampered or foreign link is refused and recorded.

    ``packet_id``: the packet the answer is meant for (a link to another is refused).
    """
    if not isinstance(token, str):
        raise UsageError("a link token is a string")
    claims = ap.verify_link(keys, token)
    if isinstance(claims, str):
        # No trustworthy packet id to file it under: the refusal goes to a shared history.
        tick: Tick = yield NOW
        yield _note("links", EventType.APPROVAL_REFUSED, tick, run_id, claims, by=by, via="link")
        return ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.PENDING, claims)
    if packet_id is not None and claims.packet_id != packet_id:
        why = f"the link is for another packet than {packet_id}"
        tick = yield NOW
        yield _note(packet_id, EventType.APPROVAL_REFUSED, tick, run_id, why, by=by, via="link")
        current: ap.Packet = yield from get_packet(packet_id)
        return ap.AnswerResult(ap.Answered.REFUSED, current.status, why)
    packet: ap.Packet = yield from get_packet(claims.packet_id)
    mismatch = ap.link_matches(claims, packet)
    if mismatch is not None:
        tick = yield NOW
        yield _note(
            packet.packet_id, EventType.APPROVAL_REFUSED, tick, run_id, mismatch, by=by, via="link"
        )
        return ap.AnswerResult(ap.Answered.REFUSED, packet.status, mismatch)
    return (yield from answer(packet.packet_id, decision, by=by, run_id=run_id, via="link"))


def answer_code(
    keys: ap.SigningKeys,
    code: str,
    decision: ap.Decision | str,
    *,
    by: str,
    run_id: str,
    packet_id: str | None = None,
) -> Gen[ap.AnswerResult]:
    """Answered with a reply code: single use, bound to ``by``, wrong attempts limited.

    Every attempt is counted *before* the code is compared and given back
    when the code proves right, so that attempts sent at the same time cannot
    all slip under the limit. A used code that brings the same answer again
    (a duplicated message) is answered with the existing state (``same``);
    any other answer with it is refused. ``packet_id``: compare the code with
    that packet's only.
    """
    if not isinstance(code, str) or not code.strip():
        raise UsageError("a reply code is a non-empty string")
    if not isinstance(by, str) or not by.strip():
        raise UsageError("an answer needs the identity of who answers (by=...)")
    tick: Tick = yield NOW
    attempts: int = yield CodeFailures(by, tick.now, ap.CODE_WINDOW, 1)
    if attempts > ap.MAX_CODE_FAILURES:
        why = "too many wrong codes: reply codes are refused for now"
        yield _note("codes", EventType.APPROVAL_REFUSED, tick, run_id, why, by=by, via="code")
        return ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.PENDING, why)
    rows: list[tuple[ap.Packet, str, bool]] = yield CodePackets(by)
    for packet, digest, used in rows:
        if packet_id is not None and packet.packet_id != packet_id:
            continue
        if not ap.code_matches(keys, by, code, digest):
            continue
        yield CodeFailures(by, tick.now, ap.CODE_WINDOW, -1)  # a right code is no failure
        if used and ap.answer(packet, decision, by=by, now=tick.now,
                              intent_current=True).answer is ap.Answered.SAME:  # fmt: skip
            # The same code with the same answer again (a duplicated SMS): the
            # existing state, recorded as a duplicate; it can change nothing.
            return (yield from answer(packet.packet_id, decision, by=by, run_id=run_id, via="code"))
        if used:
            why = "this reply code was already used"
            yield _note(
                packet.packet_id, EventType.APPROVAL_REFUSED, tick, run_id, why, by=by, via="code"
            )
            return ap.AnswerResult(ap.Answered.REFUSED, packet.status, why)
        return (
            yield from answer(
                packet.packet_id, decision, by=by, run_id=run_id, via="code", use_code=True
            )
        )
    why = "no packet of yours has this reply code"
    if packet_id is not None:
        why = f"this is not {by}'s reply code for {packet_id}"  # no secret word right before an id
    yield _note("codes", EventType.APPROVAL_REFUSED, tick, run_id, why, by=by, via="code")
    return ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.PENDING, why)


def new_code(keys: ap.SigningKeys, packet_id: str, run_id: str) -> Gen[str]:
    """A fresh reply code for a pending packet (the old one stops working)."""
    packet: ap.Packet = yield from get_packet(packet_id)
    if packet.status is not ap.ApprovalStatus.PENDING:
        raise UsageError(f"packet {packet_id} is {packet.status.value}: no code to send")
    code = ap.new_code()
    tick: Tick = yield NOW
    yield CodeSet(packet_id, ap.code_digest(keys, packet.user, code), tick.now, run_id)
    return code


def resend(keys: ap.SigningKeys, packet_id: str, run_id: str) -> Gen[ApprovalRequest]:
    """A pending packet with fresh carriers: a new reply code (the old one stops) and its link.

    For a refreshed packet (it is issued without a code) or a lost message.
    """
    code: str = yield from new_code(keys, packet_id, run_id)
    packet: ap.Packet = yield from get_packet(packet_id)
    return ApprovalRequest(packet, ap.sign_link(keys, packet), code)
