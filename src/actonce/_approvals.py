"""``Intents`` and ``Approvals``: versioned intents and approvals, sync and async.

Thin facades over the generators of :mod:`actonce._run.approvals`, run by the
ledger's own driver (``ledger.intents``, ``ledger.approvals``; the async
ledger's are awaitable, with the same names). The approval signing keys are
configuration, never data: ``signing_keys=`` or ``ACTONCE_APPROVAL_KEYS``
(``kid:hex[,kid:hex]``, the first signs, all verify) or
``ACTONCE_APPROVAL_KEYS_FILE``.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ._effect import new_run_id
from ._rules.approvals import AnswerResult, ApprovalStatus, Decision, Packet, SigningKeys
from ._rules.errors import UsageError
from ._rules.facts import Fact
from ._rules.holds import Gate
from ._rules.intents import Intent, IntentStatus
from ._rules.keys import EffectKey
from ._rules.model import Event
from ._run import approvals as gen
from ._run.drive import AsyncDrives, Drives
from ._run.operation_review import withdraw_intent
from ._run.reads import limit_of
from ._store.records import IntentRow, RevisionResult

__all__ = ["Approvals", "AsyncApprovals", "AsyncIntents", "Intents", "signing_keys_from_env"]


def signing_keys_from_env() -> SigningKeys | None:
    """The approval signing keys the environment names, if any."""
    text = os.environ.get("ACTONCE_APPROVAL_KEYS")
    source = "ACTONCE_APPROVAL_KEYS"
    path = os.environ.get("ACTONCE_APPROVAL_KEYS_FILE")
    if not text and path:
        source = f"the key file {path}"
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read().strip()
        except OSError as exc:
            raise UsageError(f"cannot read {source}: {exc.strerror}") from None
    return SigningKeys.parse(text, source) if text else None


def _intent_status(status: IntentStatus | str | None) -> IntentStatus | None:
    if status is None:
        return None
    try:
        return IntentStatus(status)
    except ValueError:
        choices = ", ".join(s.value for s in IntentStatus)
        raise UsageError(f"an intent status is one of {choices}, not {status!r}") from None


def _key(key: EffectKey | str | None) -> str | None:
    return key.value if isinstance(key, EffectKey) else key


def _statuses(status: ApprovalStatus | str | None) -> tuple[ApprovalStatus, ...] | None:
    if status is None:
        return None
    try:
        return (ApprovalStatus(status),)
    except ValueError:
        choices = ", ".join(s.value for s in ApprovalStatus)
        raise UsageError(f"an approval status is one of {choices}, not {status!r}") from None


class _KeysBase:
    def __init__(self, keys: SigningKeys | None) -> None:
        self._keys = keys

    @property
    def keys(self) -> SigningKeys:
        if self._keys is None:
            self._keys = signing_keys_from_env()
        if self._keys is None:
            raise UsageError(
                "approvals need a signing key kept outside the ledger: set "
                "ACTONCE_APPROVAL_KEYS=<key id>:<hex> (or ACTONCE_APPROVAL_KEYS_FILE), "
                "or pass signing_keys= to the ledger"
            )
        return self._keys


class Intents:
    """Versioned intents of a :class:`~actonce.Ledger` (``ledger.intents``)."""

    def __init__(self, ledger: Drives) -> None:
        self._ledger = ledger

    def put(self, intent: Intent) -> Intent:
        """Record a new intent (version 1); the same intent again answers the recorded one."""
        return self._ledger._drive(gen.put_intent(intent, new_run_id()))

    def get(self, intent_id: str, version: int | None = None) -> Intent:
        """The current version of an intent (or the given one)."""
        return self._ledger._drive(gen.get_intent(intent_id, version))

    def revise(self, intent_id: str, **changes: Any) -> gen.IntentRevision:
        """Change an intent; a material change makes version n+1 supersede n."""
        return self._ledger._drive(gen.revise_intent(intent_id, changes, new_run_id()))

    def chain(self, intent_id: str) -> builtins.list[IntentRow]:
        """Every version of an intent, oldest first (the supersession chain)."""
        return self._ledger._drive(gen.chain(intent_id))

    def withdraw(
        self, intent_id: str, version: int | None = None, *, by: str, reason: str
    ) -> RevisionResult:
        """Close a version (the current one by default): it commits nothing any more.

        In one transaction: its open approvals are voided, its effects that
        had not crossed the boundary are closed, its operations withdrawn
        (their next pass undoes what they did; each receipt says so at once).
        Effects in flight are left to reconcile. A revision does the same to
        the version it supersedes.
        """
        steps = withdraw_intent(intent_id, version, by=by, reason=reason, run_id=new_run_id())
        return self._ledger._drive(steps)

    def list(
        self,
        status: IntentStatus | str | None = IntentStatus.CURRENT,
        *,
        user: str | None = None,
        limit: int = 100,
    ) -> builtins.list[IntentRow]:
        """Intent versions, oldest first: the current ones by default (``None``: every version)."""
        return self._ledger._drive(gen.list_intents(_intent_status(status), user, limit_of(limit)))

    def history(self, intent_id: str) -> builtins.list[Event]:
        """Everything that happened to an intent, oldest first (creation, revisions)."""
        return self._ledger._drive(gen.intent_history(intent_id))


class AsyncIntents:
    """Versioned intents of an :class:`~actonce.AsyncLedger`; same names as :class:`Intents`."""

    def __init__(self, ledger: AsyncDrives) -> None:
        self._ledger = ledger

    async def put(self, intent: Intent) -> Intent:
        """See :meth:`Intents.put`."""
        return await self._ledger._drive(gen.put_intent(intent, new_run_id()))

    async def get(self, intent_id: str, version: int | None = None) -> Intent:
        """See :meth:`Intents.get`."""
        return await self._ledger._drive(gen.get_intent(intent_id, version))

    async def revise(self, intent_id: str, **changes: Any) -> gen.IntentRevision:
        """See :meth:`Intents.revise`."""
        return await self._ledger._drive(gen.revise_intent(intent_id, changes, new_run_id()))

    async def chain(self, intent_id: str) -> builtins.list[IntentRow]:
        """See :meth:`Intents.chain`."""
        return await self._ledger._drive(gen.chain(intent_id))

    async def withdraw(
        self, intent_id: str, version: int | None = None, *, by: str, reason: str
    ) -> RevisionResult:
        """See :meth:`Intents.withdraw`."""
        steps = withdraw_intent(intent_id, version, by=by, reason=reason, run_id=new_run_id())
        return await self._ledger._drive(steps)

    async def list(
        self,
        status: IntentStatus | str | None = IntentStatus.CURRENT,
        *,
        user: str | None = None,
        limit: int = 100,
    ) -> builtins.list[IntentRow]:
        """See :meth:`Intents.list`."""
        steps = gen.list_intents(_intent_status(status), user, limit_of(limit))
        return await self._ledger._drive(steps)

    async def history(self, intent_id: str) -> builtins.list[Event]:
        """See :meth:`Intents.history`."""
        return await self._ledger._drive(gen.intent_history(intent_id))


class Approvals(_KeysBase):
    """Approval packets of a :class:`~actonce.Ledger` (``ledger.approvals``)."""

    def __init__(self, ledger: Drives, keys: SigningKeys | None) -> None:
        super().__init__(keys)
        self._ledger = ledger

    def request(
        self,
        intent: Intent,
        action: str,
        key: EffectKey | str,
        *,
        destination: str | None = None,
        amount: Decimal | int | str | None = None,
        ceiling: Decimal | int | str | None = None,
        currency: str | None = None,
        details: Mapping[str, Any] | None = None,
        terms: str = "",
        facts: Sequence[Fact] = (),
        ttl: float = 3600.0,
        user: str | None = None,
    ) -> gen.ApprovalRequest:
        """Ask the intent's user to approve ``action`` (the effect ``key``) exactly.

        Returns the packet and its carriers: a signed link token and a reply
        code (the code is returned once and never stored).
        """
        steps = gen.request(
            self.keys, intent, action, key, run_id=new_run_id(), destination=destination,
            amount=amount, ceiling=ceiling, currency=currency, details=details, terms=terms,
            facts=facts, ttl=ttl, user=user,
        )  # fmt: skip
        return self._ledger._drive(steps)

    def answer(
        self,
        packet_id: str,
        decision: Decision | str,
        *,
        by: str,
        note: str | None = None,
        via: str = "api",
    ) -> AnswerResult:
        """Answer a packet as ``by`` (idempotent: the same answer twice changes nothing).

        ``via`` names the channel in the packet's history (``api``, ``cli``,
        ``console``). Every answer is recorded, refused ones too.
        """
        steps = gen.answer(packet_id, decision, by=by, run_id=new_run_id(), note=note, via=via)
        return self._ledger._drive(steps)

    def answer_link(
        self, token: str, decision: Decision | str, *, by: str, packet_id: str | None = None
    ) -> AnswerResult:
        """Answer through a signed link token (tampered or foreign links are refused).

        ``packet_id``: the packet the answer is meant for; a link to another
        packet is refused.
        """
        steps = gen.answer_link(
            self.keys, token, decision, by=by, run_id=new_run_id(), packet_id=packet_id
        )
        return self._ledger._drive(steps)

    def answer_code(
        self, code: str, decision: Decision | str, *, by: str, packet_id: str | None = None
    ) -> AnswerResult:
        """Answer with a reply code (single use, bound to ``by``, attempts limited).

        ``packet_id``: compare the code with that packet's only.
        """
        steps = gen.answer_code(
            self.keys, code, decision, by=by, run_id=new_run_id(), packet_id=packet_id
        )
        return self._ledger._drive(steps)

    def new_code(self, packet_id: str) -> str:
        """A fresh reply code for a pending packet (e.g. a refreshed packet)."""
        return self._ledger._drive(gen.new_code(self.keys, packet_id, new_run_id()))

    def resend(self, packet_id: str) -> gen.ApprovalRequest:
        """A pending packet with fresh carriers: a new reply code and its signed link.

        A refreshed packet (issued when a fact left the approved boundary) has
        no code yet: ``resend`` makes the message to send for it.
        """
        return self._ledger._drive(gen.resend(self.keys, packet_id, new_run_id()))

    def link(self, packet_id: str) -> str:
        """The signed link token of a packet."""
        from ._rules.approvals import sign_link

        return sign_link(self.keys, self.get(packet_id))

    def get(self, packet_id: str) -> Packet:
        """One packet as it stands."""
        return self._ledger._drive(gen.get_packet(packet_id))

    def latest(self, packet_id: str) -> Packet:
        """The newest packet of ``packet_id``'s chain: the one a commit now runs under.

        A price refreshed above the ceiling replaces the packet by a new
        revision (``replaced_by``); once approved, its ``ceiling`` is what the
        commit may reach. Gate the commit with ``latest(first).packet_id``
        and check amounts against ``latest(first).ceiling``, never the
        intent's ceiling nor the first packet's. Itself when never replaced.
        """
        return self._ledger._drive(gen.latest_packet(packet_id))

    def list(
        self,
        status: ApprovalStatus | str | None = None,
        *,
        user: str | None = None,
        key: EffectKey | str | None = None,
        limit: int = 100,
    ) -> builtins.list[Packet]:
        """Packets, oldest first (optionally of one status, one user, one effect key)."""
        steps = gen.list_packets(_statuses(status), user, limit_of(limit), _key(key))
        return self._ledger._drive(steps)

    def history(self, packet_id: str) -> builtins.list[Event]:
        """Everything that happened to a packet, oldest first (answers included)."""
        return self._ledger._drive(gen.history(packet_id))

    @staticmethod
    def gate(packet: Packet, *, amount: Decimal | int | str | None = None) -> Gate:
        """The gate of the effect a packet authorizes (its intent version and the packet)."""
        from ._rules.intents import money

        return Gate(
            packet.intent, packet.packet_id, money(amount) if amount is not None else packet.amount
        )


class AsyncApprovals(_KeysBase):
    """Approval packets of an :class:`~actonce.AsyncLedger`; same names as :class:`Approvals`."""

    def __init__(self, ledger: AsyncDrives, keys: SigningKeys | None) -> None:
        super().__init__(keys)
        self._ledger = ledger

    async def request(
        self,
        intent: Intent,
        action: str,
        key: EffectKey | str,
        *,
        destination: str | None = None,
        amount: Decimal | int | str | None = None,
        ceiling: Decimal | int | str | None = None,
        currency: str | None = None,
        details: Mapping[str, Any] | None = None,
        terms: str = "",
        facts: Sequence[Fact] = (),
        ttl: float = 3600.0,
        user: str | None = None,
    ) -> gen.ApprovalRequest:
        """See :meth:`Approvals.request`."""
        steps = gen.request(
            self.keys, intent, action, key, run_id=new_run_id(), destination=destination,
            amount=amount, ceiling=ceiling, currency=currency, details=details, terms=terms,
            facts=facts, ttl=ttl, user=user,
        )  # fmt: skip
        return await self._ledger._drive(steps)

    async def answer(
        self,
        packet_id: str,
        decision: Decision | str,
        *,
        by: str,
        note: str | None = None,
        via: str = "api",
    ) -> AnswerResult:
        """See :meth:`Approvals.answer`."""
        steps = gen.answer(packet_id, decision, by=by, run_id=new_run_id(), note=note, via=via)
        return await self._ledger._drive(steps)

    async def answer_link(
        self, token: str, decision: Decision | str, *, by: str, packet_id: str | None = None
    ) -> AnswerResult:
        """See :meth:`Approvals.answer_link`."""
        steps = gen.answer_link(
            self.keys, token, decision, by=by, run_id=new_run_id(), packet_id=packet_id
        )
        return await self._ledger._drive(steps)

    async def answer_code(
        self, code: str, decision: Decision | str, *, by: str, packet_id: str | None = None
    ) -> AnswerResult:
        """See :meth:`Approvals.answer_code`."""
        steps = gen.answer_code(
            self.keys, code, decision, by=by, run_id=new_run_id(), packet_id=packet_id
        )
        return await self._ledger._drive(steps)

    async def new_code(self, packet_id: str) -> str:
        """See :meth:`Approvals.new_code`."""
        return await self._ledger._drive(gen.new_code(self.keys, packet_id, new_run_id()))

    async def resend(self, packet_id: str) -> gen.ApprovalRequest:
        """See :meth:`Approvals.resend`."""
        return await self._ledger._drive(gen.resend(self.keys, packet_id, new_run_id()))

    async def link(self, packet_id: str) -> str:
        """See :meth:`Approvals.link`."""
        from ._rules.approvals import sign_link

        return sign_link(self.keys, await self.get(packet_id))

    async def get(self, packet_id: str) -> Packet:
        """See :meth:`Approvals.get`."""
        return await self._ledger._drive(gen.get_packet(packet_id))

    async def latest(self, packet_id: str) -> Packet:
        """See :meth:`Approvals.latest`."""
        return await self._ledger._drive(gen.latest_packet(packet_id))

    async def list(
        self,
        status: ApprovalStatus | str | None = None,
        *,
        user: str | None = None,
        key: EffectKey | str | None = None,
        limit: int = 100,
    ) -> builtins.list[Packet]:
        """See :meth:`Approvals.list`."""
        steps = gen.list_packets(_statuses(status), user, limit_of(limit), _key(key))
        return await self._ledger._drive(steps)

    async def history(self, packet_id: str) -> builtins.list[Event]:
        """See :meth:`Approvals.history`."""
        return await self._ledger._drive(gen.history(packet_id))

    gate = staticmethod(Approvals.gate)
