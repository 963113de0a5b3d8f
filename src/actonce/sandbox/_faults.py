"""Deterministic, seedable fault injection for the sandbox.

A fault plan is a list of rules. Every request the app handles has an
*action* name (``post.create``, ``view.search`` …, see ``ACTIONS``) and a
dict of fields (form fields for a POST, query parameters for a GET). For each
request the plan returns the rules that fire, in rule order:

- a rule applies when its ``action`` pattern (``fnmatch``: ``view.*``, ``*``)
  matches and every ``match`` field is a substring of the request's field;
- an applicable rule with ``rate`` fires when a draw from the plan's seeded
  ``random.Random`` is below the rate (one draw per applicable request, so a
  given request sequence always fires the same way);
- ``times`` caps how often a rule fires (``None``: no cap). A rule with
  neither ``times`` nor ``rate`` fires on every applicable request.

Every request is logged with the faults that fired and the connection it
came on (``/admin/requests``): that log is the server-side ground truth of how
many requests each action received — a POST a browser resent below the page
(invisible to Playwright's ``page.on("request")``) shows up there twice.
"""

from __future__ import annotations

import enum
import fnmatch
import random
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ._conns import LostMode

__all__ = ["ACTIONS", "Fault", "FaultPlan", "FaultRule", "FiredFault", "LostMode"]

ACTIONS: tuple[str, ...] = (
    "login",
    "view.home",
    "view.compose",
    "view.post",
    "view.profile",
    "view.search",
    "view.invoices",
    "view.invoice",
    "view.invoice_new",
    "view.shop",
    "view.book",
    "view.bookings",
    "post.create",
    "like.toggle",
    "follow.toggle",
    "invoice.create",
    "api.invoice.create",
    "booking.create",
    # The booking world (``_booking_app``): HTML pages and JSON API alike.
    "view.booking.offers",
    "view.booking.hold",
    "view.booking.pay",
    "view.booking.payment",
    "view.booking.confirmation",
    "view.booking.mine",
    "view.booking.outbox",
    "view.booking.lookup",
    "booking.hold",
    "booking.release",
    "booking.pay",
    "booking.void",
    "booking.book",
    "booking.message",
    "view.notes",
    "view.note",
    "note.create",
    "note.publish",
    "analytics",
)
"""Every action name the app reports to the fault plan."""

MAX_DELAY = 60.0
"""Upper bound of any injected delay, in seconds."""


class Fault(enum.StrEnum):
    """What can go wrong. Values are the names used in the JSON config."""

    LOST_RESPONSE = "lost_response"
    """Commit, then lose the confirmation as ``mode`` says (``LostMode``):
    ``headers`` (headers, then the drop), ``close`` (FIN, no response byte) or
    ``reset`` (RST, no response byte). Browsers resend a POST after the last two."""
    SLOW_RESPONSE = "slow_response"
    """Commit, then hold the confirmation for ``seconds``."""
    LATE_INDEX = "late_index"
    """Commit, but keep the new item out of lists and search for ``seconds``."""
    ERROR_BEFORE_COMMIT = "error_before_commit"
    """HTTP 500, nothing committed."""
    ERROR_AFTER_COMMIT = "error_after_commit"
    """Commit, then HTTP 500."""
    SESSION_EXPIRED = "session_expired"
    """End the session and show the login wall (nothing committed)."""
    CAPTCHA = "captcha"
    """Show a CAPTCHA screen (nothing committed)."""
    RATE_LIMIT = "rate_limit"
    """Show a rate-limit screen, HTTP 429 (nothing committed)."""
    PRICE_CHANGE = "price_change"
    """Raise the item's price by ``amount`` cents just before booking."""
    EDITOR_APPEND = "editor_append"
    """The editor keeps ``draft`` and appends whatever is typed to it."""
    DOUBLE_SUBMIT = "double_submit"
    """(``view.compose``) The page submits the form by script, then sends the
    same POST once more (a double-submit bug), then opens the first answer."""
    BOOKING_FAILED = "booking_failed"
    """(``booking.book``) Partial success: the provider refuses to confirm the
    booking after the payment was authorized. The authorization stands, the
    hold is rejected (its inventory freed), no booking is made."""
    MESSAGE_DROPPED = "message_dropped"
    """(``booking.message``) The message is accepted (the answer looks like
    any other) but never delivered: the outbox shows it undelivered; the next
    send with the same message key delivers it, once."""
    TRUNCATED_LIST = "truncated_list"
    """(``view.search``, ``view.invoices``) The list shows one row fewer than
    it has; its ``data-total`` still counts them all (a page cut short)."""


_COMMITTING = {
    Fault.LOST_RESPONSE,
    Fault.SLOW_RESPONSE,
    Fault.LATE_INDEX,
    Fault.ERROR_AFTER_COMMIT,
    Fault.MESSAGE_DROPPED,
}


@dataclass(slots=True)
class FaultRule:
    """One rule of a fault plan (the JSON object of the same shape).

    Attributes:
        action: ``fnmatch`` pattern over action names.
        fault: which fault.
        times: fire at most this many times (``None``: unbounded).
        rate: probability per applicable request, drawn from the seeded RNG.
        match: field name -> substring the request's field must contain.
        seconds: delay for ``slow_response``, hiding time for ``late_index``.
        amount: price increase in cents for ``price_change`` (per unit: a night
            of a room, one shop item in the booking world).
        draft: existing draft text for ``editor_append``.
        mode: how ``lost_response`` loses the answer: ``headers`` (default),
            ``close`` or ``reset`` (see ``LostMode``).
    """

    action: str
    fault: Fault
    times: int | None = None
    rate: float | None = None
    match: dict[str, str] = field(default_factory=dict)
    seconds: float = 2.0
    amount: int = 500
    draft: str = "Saved draft: "
    mode: LostMode = LostMode.HEADERS
    fired: int = 0

    def __post_init__(self) -> None:
        self.fault = Fault(self.fault)
        try:
            self.mode = LostMode(self.mode)
        except ValueError:
            raise ValueError(
                f"mode must be one of {[m.value for m in LostMode]}, not {self.mode!r}"
            ) from None
        if self.mode is not LostMode.HEADERS and self.fault is not Fault.LOST_RESPONSE:
            raise ValueError("'mode' applies to lost_response only")
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise ValueError("rate must be between 0 and 1")
        if self.times is not None and self.times < 0:
            raise ValueError("times must be >= 0")
        if not 0.0 <= self.seconds <= MAX_DELAY:
            raise ValueError(f"seconds must be between 0 and {MAX_DELAY}")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FaultRule:
        """Build a rule from its JSON object; unknown fields are an error."""
        known = {"action", "fault", "times", "rate", "match", "seconds", "amount", "draft", "mode"}
        extra = set(data) - known
        if extra:
            raise ValueError(f"unknown rule fields: {sorted(extra)}")
        if "action" not in data or "fault" not in data:
            raise ValueError("a rule needs 'action' and 'fault'")
        match = data.get("match") or {}
        if not isinstance(match, dict):
            raise ValueError("'match' must be an object")
        return cls(
            action=str(data["action"]),
            fault=Fault(data["fault"]),
            times=None if data.get("times") is None else int(data["times"]),
            rate=None if data.get("rate") is None else float(data["rate"]),
            match={str(k): str(v) for k, v in match.items()},
            seconds=float(data.get("seconds", 2.0)),
            amount=int(data.get("amount", 500)),
            draft=str(data.get("draft", "Saved draft: ")),
            mode=str(data.get("mode", "headers")),  # type: ignore[arg-type]
        )

    def to_json(self) -> dict[str, Any]:
        """The rule as JSON, with how often it fired."""
        out = asdict(self)
        out["fault"] = self.fault.value
        out["mode"] = self.mode.value
        return out

    def applies(self, action: str, fields: Mapping[str, str]) -> bool:
        """Action pattern and field matches, ignoring times and rate."""
        if not fnmatch.fnmatchcase(action, self.action):
            return False
        return all(want in fields.get(name, "") for name, want in self.match.items())

    @property
    def commits(self) -> bool:
        """Whether the action still commits when this fault fires."""
        return self.fault in _COMMITTING


@dataclass(frozen=True, slots=True)
class FiredFault:
    """A fault that fired for one request, with its parameters."""

    fault: Fault
    seconds: float
    amount: int
    draft: str
    mode: LostMode = LostMode.HEADERS


class FaultPlan:
    """Thread-safe set of rules plus the seeded RNG and the request log."""

    def __init__(self, rules: Iterable[FaultRule] = (), *, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._rng = random.Random(seed)
        self._log: list[dict[str, Any]] = []
        self.configure(rules, seed=seed)

    def configure(self, rules: Iterable[FaultRule], *, seed: int | None = None) -> None:
        """Replace the rules (and reseed the RNG when ``seed`` is given)."""
        with self._lock:
            self._rules = list(rules)
            if seed is not None:
                self._rng = random.Random(seed)

    def rules(self) -> list[dict[str, Any]]:
        """The current rules as JSON."""
        with self._lock:
            return [r.to_json() for r in self._rules]

    def reset(self, *, seed: int = 0) -> None:
        """No rules, fresh RNG, empty log."""
        with self._lock:
            self._rules = []
            self._rng = random.Random(seed)
            self._log = []

    def fire(
        self,
        action: str,
        fields: Mapping[str, str],
        *,
        method: str,
        path: str,
        user: str | None,
        connection: int | None = None,
        on_connection: int | None = None,
    ) -> list[FiredFault]:
        """Decide which faults fire for this request and log the request.

        ``connection`` is the serial number of the request's connection and
        ``on_connection`` its position on it (2 and up: a reused keep-alive
        connection), when the server tracks connections.
        """
        fired: list[FiredFault] = []
        with self._lock:
            for rule in self._rules:
                if not rule.applies(action, fields):
                    continue
                if rule.times is not None and rule.fired >= rule.times:
                    continue
                if rule.rate is not None and self._rng.random() >= rule.rate:
                    continue
                rule.fired += 1
                fired.append(
                    FiredFault(rule.fault, rule.seconds, rule.amount, rule.draft, rule.mode)
                )
            lost = next((f.mode.value for f in fired if f.fault is Fault.LOST_RESPONSE), None)
            self._log.append(
                {
                    "seq": len(self._log) + 1,
                    "at": time.time(),
                    "action": action,
                    "method": method,
                    "path": path,
                    "user": user,
                    "faults": [f.fault.value for f in fired],
                    "lost_mode": lost,
                    "connection": connection,
                    "on_connection": on_connection,
                }
            )
        return fired

    def log(self) -> list[dict[str, Any]]:
        """Every request seen so far, with the faults that fired."""
        with self._lock:
            return list(self._log)

    def counts(self) -> dict[str, int]:
        """How many requests each action received (server side, resends included)."""
        out: dict[str, int] = {}
        with self._lock:
            for entry in self._log:
                out[entry["action"]] = out.get(entry["action"], 0) + 1
        return out
