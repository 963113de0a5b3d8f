"""The rules' plain values, whole, at their edges (issue 23, item 2).

Facts and what a refresh means for an approval (``Judgement``), budget
pools, their windows and why a draw does not fit, intents and revisions,
effect keys' scopes, holds and their settlement, verdicts and policies: each
is stated as a whole value, at the exact threshold where one rule gives way
to the next, and with the types an int or a string must not be mistaken for
(``True`` is an int to Python, not to these rules).
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

import pytest

from actonce._rules.budgets import WINDOWS, Pool, PoolUsage, over, window_of
from actonce._rules.errors import UsageError
from actonce._rules.facts import (
    DEFAULT_WINDOWS,
    Fact,
    Freshness,
    Judgement,
    facts_from_json,
    facts_json,
    freshness,
    judge,
    relied_on,
)
from actonce._rules.holds import Draw, Gate, Hold, HoldKind, HoldStatus, Settle, settlement
from actonce._rules.intents import (
    MATERIAL,
    MAX_MONEY,
    Intent,
    IntentRef,
    IntentStatus,
    Revision,
    intent_key,
    money,
    revise,
)
from actonce._rules.keys import EffectKey, effect_key, is_name, payload_hash
from actonce._rules.model import Confirmed, Policy, Status

# --- facts ------------------------------------------------------------------------------------


def test_a_fact_is_trusted_for_its_names_window_unless_it_says_otherwise() -> None:
    assert DEFAULT_WINDOWS == {"price": 300.0, "total": 300.0, "availability": 120.0,
                               "session": 600.0, "*": 300.0}  # fmt: skip
    for name, window in (("price", 300.0), ("total", 300.0), ("availability", 120.0),
                         ("session", 600.0), ("seats", 300.0)):  # fmt: skip
        assert Fact(name, 1, observed_at=50.0).valid_until == 50.0 + window
    assert Fact("price", 1, observed_at=50.0, valid_until=60).valid_until == 60
    fact = Fact("total", Decimal("12.50"), observed_at=1.0, source="https://x.example/cart")
    assert fact.as_json() == {"name": "total", "value": "12.50", "observed_at": 1.0,
                              "valid_until": 301.0, "source": "https://x.example/cart"}  # fmt: skip
    assert Fact("price", 5, observed_at=2).as_json() == {
        "name": "price", "value": 5, "observed_at": 2, "valid_until": 302.0, "source": "",
    }  # fmt: skip
    assert facts_json([fact]) == [fact.as_json()]
    assert facts_from_json(facts_json([fact, Fact("session", True, observed_at=3.0)])) == (
        Fact("total", "12.50", observed_at=1.0, valid_until=301.0,
             source="https://x.example/cart"),
        Fact("session", True, observed_at=3.0),
    )  # fmt: skip


def test_a_fact_is_fresh_until_the_end_of_its_window_exactly() -> None:
    fact = Fact("price", "1", observed_at=0.0, valid_until=10.0)
    assert (fact.freshness(9.999), fact.freshness(10.0), fact.freshness(-5.0)) == (
        Freshness.FRESH, Freshness.STALE, Freshness.FRESH,
    )  # fmt: skip
    assert freshness(None, 0.0) is Freshness.UNAVAILABLE


def test_the_facts_a_commit_relies_on_are_the_newest_of_each_name() -> None:
    old_price = Fact("price", "10", observed_at=0.0)
    new_price = Fact("price", "11", observed_at=5.0)
    seats = Fact("seats", 2, observed_at=0.0)
    session = Fact("session", True, observed_at=5.0)
    assert relied_on([old_price, seats], [new_price, session]) == {
        "price": new_price, "seats": seats, "session": session,
    }  # fmt: skip
    assert relied_on([], []) == {}


F = Fact
JUDGEMENTS: list[tuple[str, Any, Decimal | None, str | None, Judgement]] = [
    ("not-refreshed", None, Decimal(110), "EUR",
     Judgement(False, "the facts could not be refreshed (unavailable)", None, True)),
    ("nothing-refreshed", [], Decimal(110), "EUR", Judgement(True, "", None, False)),
    ("under-the-ceiling", [F("price", "109.99", observed_at=0)], Decimal(110), "EUR",
     Judgement(True, "", Decimal("109.99"), False)),
    ("at-the-ceiling", [F("price", "110", observed_at=0)], Decimal(110), "EUR",
     Judgement(True, "", Decimal("110"), False)),
    ("above-the-ceiling", [F("price", "110.01", observed_at=0)], Decimal(110), "EUR",
     Judgement(False, "the refreshed price 110.01 is above the approved 110",
               Decimal("110.01"), False)),
    ("no-ceiling", [F("price", "9999", observed_at=0)], None, None,
     Judgement(True, "", Decimal("9999"), False)),
    ("the-total-counts-before-the-price",
     [F("price", "999", observed_at=0), F("total", {"amount": "100", "currency": "EUR"},
                                           observed_at=0)],
     Decimal(110), "EUR", Judgement(True, "", Decimal("100"), False)),
    ("a-total-above", [F("total", {"amount": "120"}, observed_at=0)], Decimal(110), "EUR",
     Judgement(False, "the refreshed total 120 is above the approved 110", Decimal("120"))),
    ("another-currency", [F("total", {"amount": "100", "currency": "USD"}, observed_at=0)],
     Decimal(110), "EUR", Judgement(False, "the total is in USD, the approval in EUR")),
    ("another-currency-no-approved-one",
     [F("price", {"amount": "100", "currency": "USD"}, observed_at=0)], Decimal(110), None,
     Judgement(True, "", Decimal("100"))),
    ("a-stale-fact", [F("seats", 2, observed_at=0, valid_until=1)], None, None,
     Judgement(False, "the refreshed fact 'seats' is not fresh", None, True)),
    ("not-available", [F("availability", False, observed_at=0), F("price", "90", observed_at=0)],
     Decimal(110), "EUR", Judgement(False, "no longer available", Decimal("90"), False)),
    ("available-is-only-true", [F("availability", "yes", observed_at=0)], None, None,
     Judgement(False, "no longer available", None, False)),
    ("available", [F("availability", True, observed_at=0)], None, None, Judgement(True)),
    ("session-expired", [F("session", False, observed_at=0), F("total", "5", observed_at=0)],
     None, None,
     Judgement(False, "the session expired: sign in again, then resume", Decimal(5), True)),
    ("session-live", [F("session", True, observed_at=0)], None, None, Judgement(True)),
]  # fmt: skip


@pytest.mark.parametrize(("refreshed", "ceiling", "currency", "expected"),
                         [j[1:] for j in JUDGEMENTS], ids=[j[0] for j in JUDGEMENTS])  # fmt: skip
def test_what_refreshed_facts_mean_for_an_approval(
    refreshed: Any, ceiling: Decimal | None, currency: str | None, expected: Judgement
) -> None:
    assert judge(refreshed, ceiling=ceiling, currency=currency, now=1.0) == expected


def test_a_judgement_defaults_to_no_reason_no_amount_and_no_pause() -> None:
    assert Judgement(True) == Judgement(True, "", None, False)


def test_a_refreshed_price_that_is_no_money_is_refused() -> None:
    with pytest.raises(UsageError, match=r"^the refreshed price must be a finite, non-negative"):
        judge([Fact("price", "-3", observed_at=0)], ceiling=None, currency=None, now=1.0)


# --- budgets ----------------------------------------------------------------------------------


def test_a_pool_and_its_usage_as_json() -> None:
    pool = Pool("posts", Decimal(10))
    assert (pool.unit, pool.window, pool.seconds) == ("count", "day", 86400.0)
    assert pool.as_json() == {"name": "posts", "limit": "10", "unit": "count", "window": "day"}
    usage = PoolUsage(pool, 0.0, 86400.0, Decimal(3), Decimal(4))
    assert (usage.used, usage.free) == (Decimal(7), Decimal(3))
    assert usage.as_json() == {"name": "posts", "limit": "10", "unit": "count", "window": "day",
                               "window_start": 0.0, "window_end": 86400.0, "reserved": "3",
                               "consumed": "4", "free": "3"}  # fmt: skip
    spent = PoolUsage(pool, 0.0, 1.0, Decimal(8), Decimal(5))
    assert spent.free == Decimal(0)  # over its limit (a smaller limit redefined): none left
    money_pool = Pool("spend", "500.50", unit="EUR", window=90)
    assert (money_pool.limit, money_pool.seconds) == (Decimal("500.50"), 90.0)
    assert money_pool.as_json() == {"name": "spend", "limit": "500.50", "unit": "EUR",
                                    "window": 90}  # fmt: skip
    assert Pool("p" * 200, Decimal(1)).name == "p" * 200  # 200 characters: fine


def test_why_a_draw_does_not_fit_its_pool() -> None:
    posts = PoolUsage(Pool("posts", Decimal(10)), 0, 1, Decimal(3), Decimal(4))
    assert over(posts, Draw("posts", Decimal(3))) is None  # exactly to the limit
    assert over(posts, Draw("posts", Decimal(4))) == (
        "budget 'posts' is spent: 7 of 10 used this day, 4 more would exceed it"
    )
    assert over(posts, Draw("posts", Decimal("0.5"))) == (
        "budget 'posts' counts whole actions, not 0.5"
    )
    spend = PoolUsage(Pool("spend", Decimal(500), unit="EUR", window=3600.5), 0, 1,
                      Decimal("400.5"), Decimal(0))  # fmt: skip
    assert over(spend, Draw("spend", Decimal("99.5"))) is None
    assert over(spend, Draw("spend", Decimal("0.25"))) is None  # money may be a fraction
    assert over(spend, Draw("spend", Decimal(100))) == (
        "budget 'spend' is spent: 400.5 EUR of 500 EUR used this window, "
        "100 EUR more would exceed it"
    )
    weekly = PoolUsage(Pool("spend", Decimal(5), unit="EUR", window="week"), 0, 1, Decimal(5),
                       Decimal(0))  # fmt: skip
    assert over(weekly, Draw("spend", Decimal(1))) == (
        "budget 'spend' is spent: 5 EUR of 5 EUR used this week, 1 EUR more would exceed it"
    )


def test_windows_are_aligned_on_the_hour_the_day_and_monday() -> None:
    assert WINDOWS == {"hour": (3600.0, 0.0), "day": (86400.0, 0.0),
                       "week": (604800.0, 345600.0)}  # fmt: skip
    monday = 4 * 86400.0  # 1970-01-05, the first Monday
    assert window_of("week", monday) == (monday, monday + 604800.0)
    assert window_of("week", monday - 1) == (monday - 604800.0, monday)
    assert window_of("day", 86400.0) == (86400.0, 172800.0)
    assert window_of("day", 86399.5) == (0.0, 86400.0)
    assert window_of("hour", 3600.0) == (3600.0, 7200.0)
    assert window_of(90, 100.0) == (90.0, 180.0)
    assert window_of(0.5, 0.75) == (0.5, 1.0)


# --- holds ------------------------------------------------------------------------------------


def test_holds_settle_with_the_verdict_and_stay_in_doubt() -> None:
    assert {s: settlement(s) for s in Status} == {
        Status.CONFIRMED: Settle.CONSUME, Status.FAILED: Settle.RELEASE,
        Status.ABANDONED: Settle.RELEASE, Status.CLAIMED: None, Status.EXECUTING: None,
        Status.UNKNOWN: None, Status.NEEDS_REVIEW: None,
    }  # fmt: skip
    assert [k.value for k in HoldKind] == ["intent", "approval", "budget"]
    assert [s.value for s in HoldStatus] == ["held", "consumed", "released"]
    hold = Hold(2, HoldKind.BUDGET, "posts", Decimal(1), HoldStatus.HELD, 5.0, None)
    assert hold._asdict() == {"fence": 2, "kind": HoldKind.BUDGET, "ref": "posts",
                              "amount": Decimal(1), "status": HoldStatus.HELD, "at": 5.0,
                              "settled_at": None}  # fmt: skip


def test_a_gate_is_empty_only_when_it_asks_for_nothing() -> None:
    assert Gate().empty
    assert Gate(amount=Decimal(5)).empty  # an amount alone is checked against no approval
    assert not Gate(intent=IntentRef("trip", 1)).empty
    assert not Gate(approval="apv-1").empty
    assert not Gate(draws=(Draw("posts", Decimal(1)),)).empty
    assert Gate(draws=(Draw("a", 1), Draw("b", 2))).draws == (Draw("a", 1), Draw("b", 2))  # type: ignore[arg-type]
    assert Draw("posts", "2.5").amount == Decimal("2.5")  # type: ignore[arg-type]


# --- money and intents ------------------------------------------------------------------------


def test_money_is_a_decimal_from_an_int_a_decimal_or_a_string() -> None:
    assert money(None) is None
    assert money(0) == Decimal(0)
    assert money("12.50") == Decimal("12.50") and str(money("12.50")) == "12.50"
    assert money(Decimal("1e3")) == Decimal(1000)
    assert money(MAX_MONEY) == MAX_MONEY == Decimal(10) ** 15  # the most: fine
    with pytest.raises(UsageError, match="at most"):
        money(MAX_MONEY + Decimal("0.01"))


INTENT = Intent("trip", "booking", user="ana", provider="Ibis", items=["room"], quantity=2,
                price_ceiling="120", currency="EUR", notes={"n": 1})  # type: ignore[arg-type]  # fmt: skip


def test_an_intent_as_json_and_back() -> None:
    assert INTENT.as_json() == {
        "intent_id": "trip", "kind": "booking", "user": "ana", "provider": "Ibis",
        "items": ["room"], "quantity": 2, "when": None, "destination": None,
        "price_ceiling": "120", "currency": "EUR", "recipient": None, "text": None,
        "constraints": {}, "notes": {"n": 1}, "version": 1,
        "material": ["provider", "items", "quantity", "when", "destination", "price_ceiling",
                     "currency", "recipient"],
    }  # fmt: skip
    assert Intent.from_json(INTENT.as_json()) == INTENT
    assert INTENT.items == ("room",) and INTENT.price_ceiling == Decimal(120)
    assert INTENT.ref == IntentRef("trip", 1) and str(INTENT.ref) == "trip@v1"
    assert (
        Intent.from_json({"intent_id": "x", "kind": "post", "items": None}).material
        == (MATERIAL["post"])
    )
    assert INTENT.stored() == INTENT
    secret = Intent("trip", "message", text="my password is hunter2")
    assert secret.stored().text != secret.text and "hunter2" not in str(secret.stored().text)
    assert Intent("trip", "booking", quantity=1).quantity == 1  # the least: fine
    assert Intent("t" * 256, "k" * 256).intent_id == "t" * 256  # the longest: fine


def test_each_kind_names_its_material_fields() -> None:
    assert MATERIAL == {
        "*": ("provider", "items", "quantity", "when", "destination", "price_ceiling",
              "currency", "recipient", "text"),
        "booking": ("provider", "items", "quantity", "when", "destination", "price_ceiling",
                    "currency", "recipient"),
        "purchase": ("provider", "items", "quantity", "when", "destination", "price_ceiling",
                     "currency", "recipient"),
        "message": ("recipient", "text", "when"),
        "post": ("text", "provider", "destination"),
    }  # fmt: skip
    assert Intent("x", "gift").material == MATERIAL["*"]
    assert Intent("x", "gift", material=("text",)).material == ("text",)
    assert [s.value for s in IntentStatus] == ["current", "superseded"]


def test_a_revision_says_what_changed_and_whether_it_was_material() -> None:
    cosmetic = revise(INTENT, notes={"n": 2}, user="ana")
    assert cosmetic == Revision(Intent.from_json({**INTENT.as_json(), "notes": {"n": 2}}),
                                False, ("notes",))  # fmt: skip
    material = revise(INTENT, quantity=3, notes={"n": 2})
    assert material == Revision(
        Intent.from_json({**INTENT.as_json(), "quantity": 3, "notes": {"n": 2}, "version": 2}),
        True, ("notes", "quantity"),
    )  # fmt: skip
    assert revise(INTENT) == Revision(INTENT, False, ())
    # A secret given again is the same once scrubbed: not a change.
    msg = Intent("m", "message", text="password: hunter2")
    assert revise(msg, text="password: hunter3") == Revision(
        Intent("m", "message", text="password: hunter3"), False, ()
    )


def test_an_intents_key_is_its_version_of_its_action() -> None:
    key = intent_key(INTENT, "book", tenant="t", actor="a")
    scope = ('{"actor":"a","intent_version":1,"kind":"book","object":"trip",'
             '"operation":"commit","tenant":"t"}')  # fmt: skip
    assert key == EffectKey(hashlib.sha256(scope.encode()).hexdigest(), scope)
    assert intent_key(IntentRef("trip", 1), "book", tenant="t", actor="a") == key
    assert str(key) == key.value


# --- keys -------------------------------------------------------------------------------------


def test_an_effect_keys_scope_is_every_field_in_canonical_json() -> None:
    key = effect_key(tenant="t", actor="a", kind="k", object="o", operation="op", part=3,
                     flag=True, none=None)  # fmt: skip
    scope = ('{"actor":"a","flag":true,"kind":"k","none":null,"object":"o","operation":"op",'
             '"part":3,"tenant":"t"}')  # fmt: skip
    assert key == EffectKey(hashlib.sha256(scope.encode()).hexdigest(), scope)
    assert payload_hash('{"a":1}') == hashlib.sha256(b'{"a":1}').hexdigest()
    # A URL with no credentials is a fine key field.
    assert effect_key(tenant="t", actor="a", kind="k", object="https://h.example/p?id=3",
                      operation="op").scope.count("https://h.example/p?id=3") == 1  # fmt: skip


def test_is_name_answers_whether_a_name_could_be_stored() -> None:
    assert is_name("a") and is_name("n" * 512)
    for bad in ("", " ", "n" * 513, "a\x00b", "a\udc80", None, 5):
        assert not is_name(bad), bad


# --- verdicts and policies --------------------------------------------------------------------


def test_a_confirmed_verdict_keeps_its_refs_only_when_they_say_more() -> None:
    assert Confirmed("u").refs == () and Confirmed("u", 1, ("u",)) == Confirmed("u")
    assert Confirmed("u", 1, ["u"]) == Confirmed("u")
    assert Confirmed("u", 1, ("v",)).refs == ("v",)  # one match, another ref: kept
    assert Confirmed("u", 2, ["u", "v"]).refs == ("u", "v")
    assert Confirmed(None, 2).refs == ()


def test_a_policy_backs_off_doubling_up_to_its_cap() -> None:
    p = Policy(verify_backoff=0.5, verify_backoff_max=3.0, lease_seconds=30.0)
    assert [p.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert type(p.backoff(1)) is float and p.heartbeat_seconds == 10.0
    d = Policy()
    assert (d.settle_seconds, d.absence_authoritative, d.verify_attempts, d.verify_backoff,
            d.verify_backoff_max, d.lease_seconds, d.verify_after_claim, d.wait_for_settle) == (
        5.0, False, 4, 0.25, 4.0, 60.0, True, False,
    )  # fmt: skip
    # The edges that are allowed: no settle window, no backoff, one attempt, an int.
    edge = Policy(settle_seconds=0, verify_backoff=0, verify_backoff_max=0, verify_attempts=1,
                  lease_seconds=1)  # fmt: skip
    assert (edge.backoff(3), edge.heartbeat_seconds) == (0.0, 1 / 3)
