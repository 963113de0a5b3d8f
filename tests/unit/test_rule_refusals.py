"""Every refusal the rules make, by its type and its words (issue 23, item 2).

A refusal is behaviour a person reads: the error's class tells a program
what went wrong, its words tell the developer which value and why. Each case
below reaches one ``raise`` of ``src/actonce/_rules/`` (not the secret
scrubbing: ``secrets``, ``text``, ``detect``, ``scrub`` have their own tests)
and checks both, so a message emptied, replaced by ``None`` or re-cased is
caught as surely as a check removed. The words matched are the distinctive
part of each message, with the offending value where the message names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest

from actonce._rules import approvals as ap
from actonce._rules import operation_review as review
from actonce._rules.budgets import Pool, window_of
from actonce._rules.decision import Action, Observation, Situation, decide, outcome_of
from actonce._rules.errors import (
    InvalidKey,
    InvalidTransition,
    PayloadMismatch,
    ProtocolError,
    UsageError,
)
from actonce._rules.facts import Fact
from actonce._rules.firewall import (
    RefusalReason,
    RequestPattern,
    SubmitWindow,
    WriteRefusal,
)
from actonce._rules.holds import Draw, Gate
from actonce._rules.intents import Intent, IntentRef, currency_code, money, revise
from actonce._rules.keys import canonical_json, check_name, check_text, effect_key
from actonce._rules.lifecycle import check_transition
from actonce._rules.model import Confirmed, Policy, Status, Unavailable
from actonce._rules.operations import (
    Assessment,
    Next,
    OperationState,
    Role,
    StepState,
    assess,
)

REF = IntentRef("trip", 1)
KEY = "k" * 64


def packet(**changes: Any) -> ap.Packet:
    base: dict[str, Any] = {
        "packet_id": "apv-1",
        "intent": REF,
        "action": "book",
        "effect_key": KEY,
        "user": "ana",
        "created_at": 0.0,
        "expires_at": 100.0,
    }
    base.update(changes)
    return ap.Packet(**base)


def nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


def cyclic() -> list[Any]:
    x: list[Any] = []
    x.append(x)
    return x


def key(**extra: Any) -> Any:
    fields = {"tenant": "t", "actor": "a", "kind": "post", "object": "o", "operation": "create"}
    fields.update(extra)
    return effect_key(**fields)


SURROGATE = "a\udc80b"

# (id, call, error type, the words the message must hold: a regular expression)
CASES: list[tuple[str, Callable[[], Any], type[BaseException], str]] = [
    # --- keys -------------------------------------------------------------------------------
    ("key-empty-field", lambda: key(tenant=" "), InvalidKey,
     r"^key field 'tenant' must be a non-empty string$"),
    ("key-not-text-field", lambda: key(object=3), InvalidKey,
     r"^key field 'object' must be a non-empty string$"),
    ("key-volatile", lambda: key(Attempt=2), InvalidKey,
     r"^key field 'Attempt' looks volatile; a key must be the same on every retry$"),
    ("key-secret-name", lambda: key(password="x"), InvalidKey,
     r"^key field 'password' looks like a secret; a key's fields are stored in clear$"),
    ("key-extra-type", lambda: key(part=1.5), InvalidKey,
     r"^key field 'part' must be a string, number or boolean$"),
    ("key-url-credentials", lambda: key(object="https://u:pw@h.example/x"), InvalidKey,
     r"^key field 'object' holds a URL with credentials or a token; a key's fields are "
     r"stored in clear \(leave the secret out of the key\)$"),
    ("key-secret-value", lambda: key(object="card 4111 1111 1111 1111"), InvalidKey,
     r"^key field 'object' holds what looks like a secret \(a card number, a cookie, a code "
     r"after a secret word\); a key's fields are stored in clear$"),
    ("json-nan", lambda: canonical_json({"a": float("nan")}), InvalidKey,
     r"^NaN and infinity have no canonical JSON form$"),
    ("json-deep", lambda: canonical_json(nested(101)), InvalidKey,
     r"^nested deeper than 100 levels$"),
    ("json-cycle", lambda: canonical_json(cyclic()), InvalidKey,
     r"^a value that contains itself has no JSON form$"),
    ("json-key-type", lambda: canonical_json({1: "x"}), InvalidKey,
     r"^JSON object keys must be strings, not int$"),
    ("json-set", lambda: canonical_json({"a": {1}}), InvalidKey,
     r"^set has no canonical JSON form$"),
    ("json-mapping-not-a-dict", lambda: canonical_json(MappingProxyType({"a": 1})), InvalidKey,
     r"^not canonical JSON: Object of type mappingproxy is not JSON serializable$"),
    ("json-surrogate-key", lambda: canonical_json({SURROGATE: 1}), InvalidKey,
     r"^an object key holds a lone surrogate, which has no UTF-8 form$"),
    ("json-surrogate-string", lambda: canonical_json([SURROGATE]), InvalidKey,
     r"^a string holds a lone surrogate, which has no UTF-8 form$"),
    ("text-surrogate", lambda: check_text(SURROGATE, "the label"), InvalidKey,
     r"^the label holds a lone surrogate, which has no UTF-8 form$"),
    ("name-empty", lambda: check_name("  ", "a lease name"), UsageError,
     r"^a lease name must be a non-empty string, not '  '$"),
    ("name-not-text", lambda: check_name(None, "a run id"), UsageError,
     r"^a run id must be a non-empty string, not None$"),
    ("name-long-value-cut", lambda: check_name(7, "x" * 3), UsageError,
     r"^xxx must be a non-empty string, not 7$"),
    ("name-too-long", lambda: check_name("n" * 513, "a kind"), UsageError,
     r"^a kind is 513 characters long; at most 512$"),
    ("name-nul", lambda: check_name("a\x00b", "an owner"), UsageError,
     r"^an owner cannot contain a NUL character$"),
    ("name-surrogate", lambda: check_name(SURROGATE, "a worker"), InvalidKey,
     r"^a worker holds a lone surrogate"),
    # --- lifecycle and the decision table ---------------------------------------------------
    ("transition", lambda: check_transition(Status.CONFIRMED, Status.CLAIMED),
     InvalidTransition, r"^the lifecycle has no edge confirmed -> claimed$"),
    ("transition-none", lambda: check_transition(None, None), InvalidTransition,
     r"^the lifecycle has no edge \(none\) -> \(none\)$"),
    ("transition-to-none", lambda: check_transition(Status.EXECUTING, None),
     InvalidTransition, r"^the lifecycle has no edge executing -> \(none\)$"),
    ("decide-no-cell", lambda: decide(Situation.DECLINED, Observation.CONFIRMED),
     ProtocolError, r"^no decision for \(declined, confirmed\)$"),
    ("outcome-claim", lambda: outcome_of(Action.CLAIM, Situation.NEW, reconcile=False,
                                         performed=False, hard_stop=False),
     ProtocolError, r"^a claim ends only a reconcile or a run that performed$"),
    ("outcome-verify", lambda: outcome_of(Action.VERIFY, Situation.OWNED, reconcile=False,
                                          performed=False, hard_stop=False),
     ProtocolError, r"^verify does not end a run$"),
    # --- model ------------------------------------------------------------------------------
    ("confirmed-count", lambda: Confirmed("r", count=0), UsageError,
     r"^Confirmed\.count must be a whole number >= 1, not 0$"),
    ("confirmed-count-bool", lambda: Confirmed("r", count=True), UsageError,
     r"^Confirmed\.count must be a whole number >= 1, not True$"),
    ("confirmed-ref", lambda: Confirmed(5), UsageError,  # type: ignore[arg-type]
     r"^Confirmed\.result_ref is a string or None, not int$"),
    ("confirmed-refs-str", lambda: Confirmed("r", 2, "ab"), UsageError,  # type: ignore[arg-type]
     r"^Confirmed\.refs is a tuple of strings, not str$"),
    ("confirmed-refs-set", lambda: Confirmed("r", 2, {"a"}), UsageError,  # type: ignore[arg-type]
     r"^Confirmed\.refs is a tuple of strings, not set$"),
    ("confirmed-refs-items", lambda: Confirmed("r", 2, ("a", 1)), UsageError,  # type: ignore[arg-type]
     r"^Confirmed\.refs holds strings only$"),
    ("unavailable", lambda: Unavailable(5), UsageError,  # type: ignore[arg-type]
     r"^Unavailable\.reason is a string, not int$"),
    ("policy-negative", lambda: Policy(settle_seconds=-1), UsageError,
     r"^Policy\.settle_seconds must be a finite number of seconds >= 0, not -1$"),
    ("policy-lease-zero", lambda: Policy(lease_seconds=0), UsageError,
     r"^Policy\.lease_seconds must be a finite number of seconds > 0, not 0$"),
    ("policy-nan", lambda: Policy(verify_backoff=float("nan")), UsageError,
     r"^Policy\.verify_backoff must be a finite number of seconds >= 0, not nan$"),
    ("policy-bool-seconds", lambda: Policy(verify_backoff_max=True), UsageError,
     r"^Policy\.verify_backoff_max must be a finite number of seconds >= 0, not True$"),
    ("policy-attempts", lambda: Policy(verify_attempts=0), UsageError,
     r"^Policy\.verify_attempts must be a whole number >= 1, not 0$"),
    ("policy-attempts-bool", lambda: Policy(verify_attempts=True), UsageError,
     r"^Policy\.verify_attempts must be a whole number >= 1, not True$"),
    ("policy-attempts-float", lambda: Policy(verify_attempts=2.0), UsageError,  # type: ignore[arg-type]
     r"^Policy\.verify_attempts must be a whole number >= 1, not 2\.0$"),
    ("policy-flag", lambda: Policy(wait_for_settle=1), UsageError,  # type: ignore[arg-type]
     r"^Policy\.wait_for_settle must be True or False, not 1$"),
    ("policy-flag-2", lambda: Policy(absence_authoritative="yes"), UsageError,  # type: ignore[arg-type]
     r"^Policy\.absence_authoritative must be True or False, not 'yes'$"),
    ("policy-flag-3", lambda: Policy(verify_after_claim=None), UsageError,  # type: ignore[arg-type]
     r"^Policy\.verify_after_claim must be True or False, not None$"),
    # --- intents and money ------------------------------------------------------------------
    ("money-float", lambda: money(1.5, "the total"), UsageError,
     r"^the total must be a Decimal, an int or a decimal string, not 1\.5$"),
    ("money-bool", lambda: money(True), UsageError,
     r"^an amount must be a Decimal, an int or a decimal string, not True$"),
    ("money-negative", lambda: money("-1", "a draw"), UsageError,
     r"^a draw must be a finite, non-negative decimal, not '-1'$"),
    ("money-text", lambda: money("ten"), UsageError,
     r"^an amount must be a finite, non-negative decimal, not 'ten'$"),
    ("money-infinite", lambda: money(Decimal("Infinity")), UsageError,
     r"^an amount must be a finite, non-negative decimal, not Decimal\('Infinity'\)$"),
    ("money-object", lambda: money([1]), UsageError,
     r"^an amount must be a finite, non-negative decimal, not \[1\]$"),
    ("money-too-much", lambda: money(10**15 + 1, "a limit"), UsageError,
     r"^a limit must be at most 1,000,000,000,000,000, not 1000000000000001$"),
    ("currency", lambda: currency_code("eur"), UsageError,
     r"^currency is a 3-letter ISO 4217 code such as 'EUR', not 'eur'$"),
    ("currency-digit", lambda: currency_code("E1R"), UsageError,
     r"^currency is a 3-letter ISO 4217 code such as 'EUR', not 'E1R'$"),
    ("currency-accent", lambda: currency_code("ÉUR"), UsageError,
     r"^currency is a 3-letter ISO 4217 code such as 'EUR', not 'ÉUR'$"),
    ("currency-not-text", lambda: currency_code(978), UsageError,
     r"^currency is a 3-letter ISO 4217 code such as 'EUR', not 978$"),
    ("currency-what", lambda: currency_code("EURO", "the unit"), UsageError,
     r"^the unit is a 3-letter ISO 4217 code such as 'EUR', not 'EURO'$"),
    ("intent-id", lambda: Intent(" ", "booking"), UsageError,
     r"^an intent needs intent_id \(a non-empty string\)$"),
    ("intent-kind", lambda: Intent("trip", None), UsageError,  # type: ignore[arg-type]
     r"^an intent needs kind \(a non-empty string\)$"),
    ("intent-id-long", lambda: Intent("i" * 257, "booking"), UsageError,
     r"^intent_id is longer than 256 characters$"),
    ("intent-kind-long", lambda: Intent("trip", "k" * 257), UsageError,
     r"^kind is longer than 256 characters$"),
    ("intent-version", lambda: Intent("trip", "booking", version=0), UsageError,
     r"^an intent's version is a whole number >= 1, not 0$"),
    ("intent-version-bool", lambda: Intent("trip", "booking", version=True), UsageError,
     r"^an intent's version is a whole number >= 1, not True$"),
    ("intent-quantity", lambda: Intent("trip", "booking", quantity=0), UsageError,
     r"^quantity must be a whole number >= 1, not 0$"),
    ("intent-quantity-bool", lambda: Intent("trip", "booking", quantity=True), UsageError,
     r"^quantity must be a whole number >= 1, not True$"),
    ("intent-quantity-float", lambda: Intent("trip", "booking", quantity=2.0),  # type: ignore[arg-type]
     UsageError, r"^quantity must be a whole number >= 1, not 2\.0$"),
    ("intent-ceiling", lambda: Intent("trip", "booking", price_ceiling=1.5),  # type: ignore[arg-type]
     UsageError, r"^price_ceiling must be a Decimal, an int or a decimal string, not 1\.5$"),
    ("intent-currency", lambda: Intent("trip", "booking", currency="euro"), UsageError,
     r"^currency is a 3-letter ISO 4217 code such as 'EUR', not 'euro'$"),
    ("intent-ceiling-currency", lambda: Intent("trip", "booking", price_ceiling=Decimal(5)),
     UsageError, r"^a price ceiling needs its currency$"),
    ("intent-material", lambda: Intent("trip", "booking", material=("zeta", "alpha", "text")),
     UsageError, r"^unknown material field\(s\): alpha, zeta$"),
    ("intent-material-fixed", lambda: Intent("trip", "booking",
                                             material=("version", "material", "kind", "intent_id")),
     UsageError, r"^unknown material field\(s\): intent_id, kind, material, version$"),
    ("intent-not-json", lambda: Intent("trip", "booking", constraints={"a": {1}}), InvalidKey,
     r"^set has no canonical JSON form$"),
    ("revise-fixed", lambda: revise(Intent("trip", "booking"), version=3, kind="x"), UsageError,
     r"^kind, version cannot be revised$"),
    ("revise-unknown", lambda: revise(Intent("trip", "booking"), zeta=1, alpha=2), UsageError,
     r"^an intent has no field\(s\) alpha, zeta$"),
    # --- facts, holds, budgets --------------------------------------------------------------
    ("fact-name", lambda: Fact(" ", 1, observed_at=0.0), UsageError, r"^a fact needs a name$"),
    ("fact-name-type", lambda: Fact(None, 1, observed_at=0.0), UsageError,  # type: ignore[arg-type]
     r"^a fact needs a name$"),
    ("fact-observed", lambda: Fact("price", 1, observed_at=float("inf")), UsageError,
     r"^a fact's observed_at must be a finite time, not inf$"),
    ("fact-observed-text", lambda: Fact("price", 1, observed_at="now"),  # type: ignore[arg-type]
     UsageError, r"^a fact's observed_at must be a finite time, not 'now'$"),
    ("fact-valid-until", lambda: Fact("price", 1, observed_at=0.0, valid_until=float("nan")),
     UsageError, r"^a fact's valid_until must be a finite time, not nan$"),
    ("draw-pool", lambda: Draw(" ", Decimal(1)), UsageError, r"^a draw names a budget pool$"),
    ("draw-pool-type", lambda: Draw(None, Decimal(1)), UsageError,  # type: ignore[arg-type]
     r"^a draw names a budget pool$"),
    ("draw-amount", lambda: Draw("posts", Decimal(-1)), UsageError,
     r"^a draw must be a finite, non-negative decimal, not Decimal\('-1'\)$"),
    ("gate-twice", lambda: Gate(draws=(Draw("b", Decimal(1)), Draw("a", Decimal(1)),
                                       Draw("b", Decimal(2)), Draw("a", Decimal(1)))),
     UsageError, r"^a gate draws on each pool once; 'a', 'b' is named more than once "
     r"\(draw the sum instead\)$"),
    ("pool-name", lambda: Pool(" ", Decimal(1)), UsageError,
     r"^a budget pool needs a name \(at most 200 characters\)$"),
    ("pool-name-type", lambda: Pool(None, Decimal(1)), UsageError,  # type: ignore[arg-type]
     r"^a budget pool needs a name \(at most 200 characters\)$"),
    ("pool-name-long", lambda: Pool("p" * 201, Decimal(1)), UsageError,
     r"^a budget pool needs a name \(at most 200 characters\)$"),
    ("pool-name-surrogate", lambda: Pool(SURROGATE, Decimal(1)), InvalidKey,
     r"^a budget pool's name holds a lone surrogate"),
    ("pool-name-control", lambda: Pool("a\tb", Decimal(1)), UsageError,
     r"^a budget pool's name holds a control character: 'a\\tb'$"),
    ("pool-limit", lambda: Pool("posts", Decimal(-1)), UsageError,
     r"^a budget limit must be a finite, non-negative decimal, not Decimal\('-1'\)$"),
    ("pool-unit", lambda: Pool("spend", Decimal(1), unit="eur"), UsageError,
     r"^a pool's unit \('count' or a currency code\) is a 3-letter ISO 4217 code such as "
     r"'EUR', not 'eur'$"),
    ("pool-count-fraction", lambda: Pool("posts", Decimal("1.5")), UsageError,
     r"^a count pool's limit is a whole number, not 1\.5$"),
    ("pool-window-name", lambda: Pool("posts", Decimal(1), window="month"), UsageError,
     r"^a window is one of hour, day, week or seconds, not 'month'$"),
    ("pool-window-zero", lambda: Pool("posts", Decimal(1), window=0), UsageError,
     r"^a window in seconds must be a positive number, not 0$"),
    ("window-bool", lambda: window_of(True, 0.0), UsageError,  # type: ignore[arg-type]
     r"^a window in seconds must be a positive number, not True$"),
    ("window-inf", lambda: window_of(float("inf"), 0.0), UsageError,
     r"^a window in seconds must be a positive number, not inf$"),
    ("window-negative", lambda: window_of(-60, 0.0), UsageError,
     r"^a window in seconds must be a positive number, not -60$"),
    # --- approvals --------------------------------------------------------------------------
    ("packet-id", lambda: packet(packet_id=" "), UsageError,
     r"^an approval packet needs packet_id$"),
    ("packet-action", lambda: packet(action=""), UsageError, r"^an approval packet needs action$"),
    ("packet-key", lambda: packet(effect_key=None), UsageError,
     r"^an approval packet needs effect_key$"),
    ("packet-user", lambda: packet(user=" "), UsageError, r"^an approval packet needs user$"),
    ("packet-amount", lambda: packet(amount=1.5, currency="EUR"), UsageError,
     r"^amount must be a Decimal, an int or a decimal string, not 1\.5$"),
    ("packet-ceiling", lambda: packet(ceiling="-3", currency="EUR"), UsageError,
     r"^ceiling must be a finite, non-negative decimal, not '-3'$"),
    ("packet-currency", lambda: packet(amount=Decimal(5)), UsageError,
     r"^an amount or a ceiling needs its currency$"),
    ("packet-ceiling-currency", lambda: packet(ceiling=Decimal(5)), UsageError,
     r"^an amount or a ceiling needs its currency$"),
    ("packet-above", lambda: packet(amount=Decimal(6), ceiling=Decimal(5), currency="EUR"),
     UsageError, r"^the amount 6 is above the ceiling 5$"),
    ("packet-expiry", lambda: packet(created_at=5.0, expires_at=5.0), UsageError,
     r"^an approval packet must expire after it was made$"),
    ("packet-status", lambda: packet(status="maybe"), ValueError, r"'maybe' is not a valid"),
    ("answer-word", lambda: ap.answer(packet(), "yes", by="ana", now=1.0, intent_current=True),
     UsageError, r"^an answer is 'approve' or 'deny', not 'yes'$"),
    ("details-type", lambda: ap.request_details(["a"]), UsageError,
     r"^an approval's details map names to the values shown, not list$"),
    ("details-nan", lambda: ap.request_details({"total": float("inf")}), UsageError,
     r"^an approval's details hold NaN or an infinity: show a number$"),
    ("details-object", lambda: ap.request_details({"when": {1, 2}}), UsageError,
     r"^an approval's details are JSON values \(text, numbers, lists, mappings\): "
     r"Object of type set is not JSON serializable$"),
    ("facts-text", lambda: ap.request_facts("price"), UsageError,
     r"^an approval's facts are a list of Fact values, not 'price'$"),
    ("facts-one-fact", lambda: ap.request_facts(Fact("price", "5", observed_at=0.0)),
     UsageError, r"^an approval's facts are a list of Fact values, not Fact\(name='price'"),
    ("facts-mapping", lambda: ap.request_facts({"price": 5}), UsageError,
     r"^an approval's facts are a list of Fact values, not \{'price': 5\}$"),
    ("facts-not-iterable", lambda: ap.request_facts(5), UsageError,
     r"^an approval's facts are a list of Fact values, not 5$"),
    ("facts-bytes", lambda: ap.request_facts(b"x"), UsageError,
     r"^an approval's facts are a list of Fact values, not b'x'$"),
    ("facts-item", lambda: ap.request_facts([Fact("price", "5", observed_at=0.0), "total"]),
     UsageError, r"^an approval's facts are Fact values \(Fact\(name, value, observed_at=\.\.\.\)\), "
     r"not 'total'$"),
    ("request-key", lambda: ap.check_request_key(
        REF, canonical_json({"object": "trip", "intent_version": 2})),
     UsageError, r"^the effect key is one of trip@v2, not of trip@v1: make it with "
     r"intent_key\(intent, \.\.\.\) for the version the packet is for$"),
    ("request-key-other", lambda: ap.check_request_key(
        REF, canonical_json({"object": "cruise", "intent_version": 1})),
     UsageError, r"^the effect key is one of cruise@v1, not of trip@v1"),
    ("keys-none", lambda: ap.SigningKeys(()), UsageError,
     r"^approval signing needs at least one key$"),
    ("keys-kid", lambda: ap.SigningKeys((("bad id", b"k" * 16),)), UsageError,
     r"^a signing key id is 1-32 characters of \[A-Za-z0-9\._-\]$"),
    ("keys-kid-long", lambda: ap.SigningKeys((("k" * 33, b"k" * 16),)), UsageError,
     r"^a signing key id is 1-32 characters"),
    ("keys-short", lambda: ap.SigningKeys((("k1", b"k" * 15),)), UsageError,
     r"^a signing key needs at least 16 bytes$"),
    ("keys-twice", lambda: ap.SigningKeys((("k2", b"a" * 16), ("k1", b"b" * 16),
                                           ("k2", b"c" * 16), ("k1", b"d" * 16))),
     UsageError, r"^two signing keys share the key id 'k1', 'k2'$"),
    ("keys-parse", lambda: ap.SigningKeys.parse("k1" + "00" * 16), UsageError,
     r"^ACTONCE_APPROVAL_KEYS must hold 'kid:hex\[,kid:hex\.\.\.\]'$"),
    ("keys-parse-two-colons", lambda: ap.SigningKeys.parse("k1:" + "00" * 16 + ":00"),
     UsageError, r"^ACTONCE_APPROVAL_KEYS must hold 'kid:hex\[,kid:hex\.\.\.\]'$"),
    ("keys-parse-hex", lambda: ap.SigningKeys.parse("k1:zz", source="--keys"), UsageError,
     r"^--keys must hold 'kid:hex\[,kid:hex\.\.\.\]'$"),
    # --- operations and decisions about them ------------------------------------------------
    ("op-empty", lambda: assess([]), UsageError, r"^an operation needs at least one step$"),
    ("op-two-pivots", lambda: assess([StepState("a", Role.PIVOT), StepState("b", Role.PIVOT)]),
     UsageError, r"^an operation has at most one pivot step$"),
    ("op-no-undo", lambda: assess([StepState("hold", Role.COMPENSATABLE),
                                   StepState("book", Role.PIVOT)]),
     UsageError, r"^step 'hold' is compensatable but has no undo$"),
    ("op-retriable-first", lambda: assess([StepState("mail", Role.RETRIABLE),
                                           StepState("book", Role.PIVOT)]),
     UsageError, r"^retriable step 'mail' must come after the pivot$"),
    ("decision-word", lambda: review.decision_of("retry"), UsageError,
     r"^an operation decision is one of retry_undo, undone_by_hand, accept, abandon, "
     r"withdraw, not 'retry'$"),
    ("decision-step", lambda: review.judge(
        "accept", a=Assessment(OperationState.NEEDS_REVIEW, Next.STOP, 0, "x"),
        steps=[StepState("book", Role.PIVOT)], decisions=[], step="pay"),
     UsageError, r"^the operation has no step 'pay'$"),
    # --- the write firewall -----------------------------------------------------------------
    ("pattern-types", lambda: RequestPattern(b"POST", "/x"), UsageError,  # type: ignore[arg-type]
     r"^a request pattern's method and path are text$"),
    ("pattern-path-type", lambda: RequestPattern("POST", None), UsageError,  # type: ignore[arg-type]
     r"^a request pattern's method and path are text$"),
    ("pattern-safe-method", lambda: RequestPattern("get", "/x"), UsageError,
     r"^a request pattern's method is a mutating method \(POST, PUT, PATCH, DELETE …\) or "
     r"'\*', not 'get'$"),
    ("pattern-bad-method", lambda: RequestPattern("PO ST", "/x"), UsageError,
     r"^a request pattern's method is a mutating method .* not 'PO ST'$"),
    ("pattern-path", lambda: RequestPattern("POST", "notes"), UsageError,
     r"^a request pattern's path starts with '/' \(or is '\*'\), not 'notes'$"),
    ("pattern-star", lambda: RequestPattern("POST", "/a*/b"), UsageError,
     r"^a request pattern's path has no query and '\*' only at its end: '/a\*/b'$"),
    ("pattern-star-before-the-end", lambda: RequestPattern("POST", "/a*b"), UsageError,
     r"^a request pattern's path has no query and '\*' only at its end: '/a\*b'$"),
    ("pattern-query", lambda: RequestPattern("POST", "/a?b=1"), UsageError,
     r"^a request pattern's path has no query and '\*' only at its end: '/a\?b=1'$"),
    ("pattern-fragment", lambda: RequestPattern("POST", "/a#b"), UsageError,
     r"^a request pattern's path has no query .*'/a#b'$"),
    ("pattern-origin-type", lambda: RequestPattern("POST", "/x", origin=5),  # type: ignore[arg-type]
     UsageError, r"^a request pattern's origin is text \(https://host\[:port\]\)$"),
    ("pattern-origin", lambda: RequestPattern("POST", "/x", origin="ftp://h.example"),
     UsageError, r"^origin must be http\(s\)://host\[:port\], not 'ftp://h\.example'$"),
    ("pattern-origin-hostless", lambda: RequestPattern("POST", "/x", origin="https://"),
     UsageError, r"^origin must be http\(s\)://host\[:port\], not 'https://'$"),
    ("pattern-beacon", lambda: RequestPattern("POST", "/x", beacon=1),  # type: ignore[arg-type]
     UsageError, r"^beacon is True or False$"),
    ("window-empty", lambda: SubmitWindow("https://h.example", declared=()), UsageError,
     r"^an effect declares at least one request \(RequestPattern values\)$"),
    ("window-not-pattern", lambda: SubmitWindow("https://h.example", declared=("POST /x",)),  # type: ignore[arg-type]
     UsageError, r"^an effect declares at least one request \(RequestPattern values\)$"),
    ("window-beacon", lambda: SubmitWindow(
        "https://h.example", declared=(RequestPattern("POST", "/x", beacon=True),)),
     UsageError, r"^a beacon is never an effect's submit: allowlist it instead$"),
    ("refusal-actor", lambda: WriteRefusal(" ", "POST", "/x", RefusalReason.UNDECLARED),
     UsageError, r"^a refusal names its actor \(1 to 200 characters\)$"),
    ("refusal-actor-long", lambda: WriteRefusal("a" * 201, "POST", "/x", RefusalReason.SECOND),
     UsageError, r"^a refusal names its actor \(1 to 200 characters\)$"),
    ("refusal-actor-type", lambda: WriteRefusal(None, "POST", "/x", RefusalReason.SECOND),  # type: ignore[arg-type]
     UsageError, r"^a refusal names its actor"),
    ("refusal-method", lambda: WriteRefusal("bot", "PO ST", "/x", RefusalReason.SECOND),
     UsageError, r"^a refusal's method is an HTTP method, not 'PO ST'$"),
    ("refusal-method-type", lambda: WriteRefusal("bot", 5, "/x", RefusalReason.SECOND),  # type: ignore[arg-type]
     UsageError, r"^a refusal's method is an HTTP method, not 5$"),
    ("refusal-safe", lambda: WriteRefusal("bot", "head", "/x", RefusalReason.SECOND),
     UsageError, r"^head changes nothing: the firewall never refuses it$"),
    ("refusal-url", lambda: WriteRefusal("bot", "POST", None, RefusalReason.SECOND),  # type: ignore[arg-type]
     UsageError, r"^a refusal's url and page are text$"),
    ("refusal-page", lambda: WriteRefusal("bot", "POST", "/x", RefusalReason.SECOND, page=None),  # type: ignore[arg-type]
     UsageError, r"^a refusal's url and page are text$"),
    ("refusal-reason", lambda: WriteRefusal("bot", "POST", "/x", "late"),  # type: ignore[arg-type]
     UsageError, r"^a refusal's reason is one of \['outside_effect', 'undeclared', "
     r"'out_of_order', 'second', 'other_origin'\], not 'late'$"),
    ("refusal-key", lambda: WriteRefusal("bot", "POST", "/x", RefusalReason.SECOND,
                                         effect_key=5),  # type: ignore[arg-type]
     UsageError, r"^a refusal's effect_key is text or None$"),
    ("refusal-via", lambda: WriteRefusal("bot", "POST", "/x", RefusalReason.SECOND, via="CDP"),
     UsageError, r"^via is a short lower-case name \('playwright', 'cdp'\), not 'CDP'$"),
    ("refusal-via-type", lambda: WriteRefusal("bot", "POST", "/x", RefusalReason.SECOND,
                                              via=None),  # type: ignore[arg-type]
     UsageError, r"^via is a short lower-case name .* not None$"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "words"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_refusal_says_what_and_why(
    call: Callable[[], Any], error: type[BaseException], words: str
) -> None:
    with pytest.raises(error) as caught:
        call()
    assert type(caught.value) is error or error is ValueError
    assert re.search(words, str(caught.value)), str(caught.value)


def test_a_payload_mismatch_names_the_key_and_both_hashes_cut_short() -> None:
    err = PayloadMismatch("k" * 20 + "tail", "s" * 12 + "STORED", "g" * 12 + "GIVEN")
    assert str(err) == (
        f"effect {'k' * 16} was recorded with payload {'s' * 12}, not {'g' * 12}; "
        "a changed payload needs a new key"
    )
    assert (err.key, err.stored_hash, err.given_hash) == (
        "k" * 20 + "tail", "s" * 12 + "STORED", "g" * 12 + "GIVEN",
    )  # fmt: skip
    assert isinstance(err, UsageError)


def test_a_refused_answer_or_commit_says_why_in_words() -> None:
    """Refusals that are answers, not errors: an answer's and a commit's reasons, whole."""
    p = packet(amount=Decimal(90), ceiling=Decimal(100), currency="EUR")
    got = ap.answer(p, "approve", by="bo", now=1.0, intent_current=True)
    assert got == ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.PENDING,
                                  "'bo' may not answer 'ana''s packet")  # fmt: skip
    approved = replace(p, status=ap.ApprovalStatus.APPROVED)
    got = ap.answer(approved, ap.Decision.DENY, by="ana", now=1.0, intent_current=True)
    assert got == ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.APPROVED,
                                  "already approved: a later deny cannot change it")  # fmt: skip
    voided = replace(p, status=ap.ApprovalStatus.VOIDED)
    got = ap.answer(voided, "deny", by="ana", now=1.0, intent_current=True)
    assert got == ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.VOIDED,
                                  "the packet is voided")  # fmt: skip
    got = ap.answer(p, "approve", by="ana", now=100.0, intent_current=True)
    assert got == ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.EXPIRED,
                                  "the packet has expired")  # fmt: skip
    got = ap.answer(p, "approve", by="ana", now=1.0, intent_current=False)
    assert got == ap.AnswerResult(ap.Answered.REFUSED, ap.ApprovalStatus.VOIDED,
                                  "trip@v1 has been superseded")  # fmt: skip
    got = ap.answer(approved, "approve", by="ana", now=1.0, intent_current=True)
    assert got == ap.AnswerResult(ap.Answered.SAME, ap.ApprovalStatus.APPROVED,
                                  "the same answer again: nothing changed")  # fmt: skip


def test_a_key_that_names_no_intent_version_is_the_callers_to_choose() -> None:
    for scope in (None, "not json", "[1, 2]", canonical_json({"object": "cruise"})):
        assert ap.check_request_key(REF, scope) is None
    assert (
        ap.check_request_key(REF, canonical_json({"object": "trip", "intent_version": 1})) is None
    )


def test_an_operation_that_cannot_be_judged_is_refused_before_any_rule_runs() -> None:
    """``_check`` runs first: an ill-formed list is refused even with decisions given."""
    with pytest.raises(UsageError, match=r"^an operation needs at least one step$"):
        assess([], decisions=(), now=0.0)
    # A retriable step after the pivot, and one with no pivot at all, are well formed.
    assert assess([StepState("book", Role.PIVOT), StepState("mail", Role.RETRIABLE)]).next is (
        Next.RUN
    )
    assert assess([StepState("mail", Role.RETRIABLE)]).reason == "mail runs next"
